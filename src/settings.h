/*
 * settings.h: the extension's settings (GUCs), defined and registered by
 * _PG_init() in pg_tide.c, read by the parts of tide.run_cycle().
 */
#ifndef TIDE_SETTINGS_H
#define TIDE_SETTINGS_H

/*
 * GUC tide.reason_updates_per_cycle: changed pending reasons a cycle writes
 * into tide.jobs rows; the rest wait in tide.reason_backlog.  -1: no limit.
 */
extern int	tide_reason_updates_per_cycle;

/*
 * GUC tide.cycle_lock_timeout, milliseconds: how long the cycle waits for a
 * job or node row another transaction holds before it skips such rows this
 * cycle.  0: skip them at once.
 */
extern int	tide_cycle_lock_timeout;

/* GUC tide.node_timeout, seconds: heartbeat age of a lost node (R-C3); 0: off */
extern int	tide_node_timeout;

/*
 * GUCs of start timeouts (R-T4, cycle_limits.c): tide.start_timeout,
 * seconds a placed job may take until all its replicas run (0: off), and
 * tide.start_attempts, the timeouts after which it fails.
 */
extern int	tide_start_timeout;
extern int	tide_start_attempts;

/*
 * GUCs of the recent workload shapes (cycle_shapes.c): tide.frag_shapes_jobs,
 * the last submitted jobs they come from (0: none, frag then uses the
 * pending requests), and tide.frag_shapes_refresh, seconds between the
 * cycle's refreshes (0: every cycle that loads, -1: never by the cycle).
 */
extern int	tide_frag_shapes_jobs;
extern int	tide_frag_shapes_refresh;

/*
 * GUC tide.fair_share_half_life, seconds: the half-life of the decayed
 * usage that orders queues of equal priority (R-O6, cycle_fair.c); 0: the
 * usage now, and the averages are neither read nor written.
 */
extern int	tide_fair_share_half_life;

/*
 * GUC tide.eviction_restart_cost, seconds: the GPU-time per GPU that
 * evicting a job throws away at least, however young it is (R-E4 least
 * harm: a restart reloads, recompiles, warms up).
 */
extern int	tide_eviction_restart_cost;

/*
 * GUC tide.incremental_load: a whole-cluster cycle keeps its load's rows in
 * its backend and the next one there reads only what changed
 * (cycle_cache.c).
 */
extern bool tide_incremental_load;

/*
 * GUC tide.check_incremental_load (for tests, not in the sample): an
 * incremental load also converts every job from its rows again and fails
 * if what it copied from the kept load's differs (cycle_jobs.c).
 */
extern bool tide_check_incremental_load;

#endif							/* TIDE_SETTINGS_H */
