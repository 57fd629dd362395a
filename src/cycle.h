/*
 * cycle.h: settings of tide.run_cycle() (src/cycle.c), defined in pg_tide.c.
 */
#ifndef TIDE_CYCLE_H
#define TIDE_CYCLE_H

/*
 * GUC tide.reason_updates_per_cycle: changed pending reasons a cycle writes
 * into tide.jobs rows; the rest wait in tide.reason_backlog.  -1: no limit.
 */
extern int	tide_reason_updates_per_cycle;

#endif
