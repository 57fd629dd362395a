/*
 * cycle_limits.h: a job's run bounded at both ends, steps of
 * tide.run_cycle() before its load (cycle_limits.c,
 * extension/63_run_limits.sql).
 */
#ifndef TIDE_CYCLE_LIMITS_H
#define TIDE_CYCLE_LIMITS_H

/*
 * Stop the running jobs whose time limit has passed (R-T1), and release
 * the placed jobs not running within tide.start_timeout (R-T4), both
 * through evictions.  A cycle that stopped any is not quiet, and neither
 * is the next cycle of any other scope (the change counter is bumped).
 * Inside SPI; returns how many jobs it stopped or released.
 */
extern int	tide_cycle_run_limits(void);

#endif							/* TIDE_CYCLE_LIMITS_H */
