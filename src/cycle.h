/*
 * cycle.h: what cycle.c, the order of tide.run_cycle(), tells the rest of
 * the extension.
 */
#ifndef TIDE_CYCLE_H
#define TIDE_CYCLE_H

/* Does this backend run a cycle now (tide._cycle_active() in SQL)? */
extern bool tide_cycle_is_active(void);

#endif							/* TIDE_CYCLE_H */
