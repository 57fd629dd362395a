/*
 * cycle.h: what the parts of tide.run_cycle() share: its settings (defined
 * in pg_tide.c) and the timer of its phases.
 *
 *   cycle.c        orchestration: lock, cycle row, load, decide, write, record
 *   cycle_load.c   every query the cycle reads with, into the engine's snapshot
 *   cycle_jobs.c   the pending jobs and their tasks, streamed into it
 *   cycle_lost.c   nodes whose launcher went silent (R-C3), marked down
 *   cycle_recv.c   a load query's rows streamed to a callback, no tuple table
 *   cycle_place.c  placements written: jobs, allocations, reasons, backlog
 *   cycle_evict.c  evictions written: victims and held resources
 *   cycle_rows.c   the arrays the writes unnest, the labels the load reads
 *   cycle_shapes.c the typical workload of frag queues: refreshed, loaded
 */
#ifndef TIDE_CYCLE_H
#define TIDE_CYCLE_H

#include <time.h>

#include "portability/instr_time.h"

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
 * GUCs of the recent workload shapes (cycle_shapes.c): tide.frag_shapes_jobs,
 * the last submitted jobs they come from (0: none, frag then uses the
 * pending requests), and tide.frag_shapes_refresh, seconds between the
 * cycle's refreshes (0: every cycle that loads, -1: never by the cycle).
 */
extern int	tide_frag_shapes_jobs;
extern int	tide_frag_shapes_refresh;

/* Milliseconds since start (the phase timings of tide.cycles). */
static inline double
cycle_elapsed_ms(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

/*
 * This thread's CPU milliseconds: the debug timings give it beside the
 * wall time, which a busy machine stretches.
 */
static inline double
cycle_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

#endif
