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

/*
 * GUC tide.cycle_lock_timeout, milliseconds: how long the cycle waits for a
 * job row another transaction holds before it skips such rows this cycle.
 * 0: skip them at once.
 */
extern int	tide_cycle_lock_timeout;

#endif
