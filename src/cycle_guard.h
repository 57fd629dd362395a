/*
 * cycle_guard.h: the cycle's own writes without per-row triggers, and the
 * set-based guards that replace them (cycle_guard.c).
 */
#ifndef TIDE_CYCLE_GUARD_H
#define TIDE_CYCLE_GUARD_H

#include "cycle_snapshot.h"
#include "cycle_rows.h"

/* flags of cycle_execute() */
#define CYCLE_WRITING		1	/* tide._writer() is 'cycle_write' meanwhile */
#define CYCLE_NO_TRIGGERS	2	/* and no trigger fires (implies CYCLE_WRITING) */

/* One statement of the cycle's own (SPI_execute_with_args, no row limit). */
extern int	cycle_execute(const char *sql, int nargs, Oid *types, Datum *args, int flags);

/*
 * sql, waiting at most tide.cycle_lock_timeout for row locks; if that runs
 * out (what: "a job row", for the log), skip_sql, its SKIP LOCKED form.
 * Leaves the result in SPI_tuptable.
 */
extern int	cycle_execute_waiting(const char *sql, const char *skip_sql, int nargs, Oid *types,
								  Datum *args, int flags, const char *what);

/*
 * Lock the nodes the engine placed on and check R-C4 over them with what
 * the placements add; set dropped[j] for the jobs placed on a node that is
 * gone, not ready, held by another transaction or would be overcommitted.
 * Returns how many jobs it dropped.
 */
extern int	cycle_lock_nodes(const CycleLoad *l, const TideResult *r, const CycleTypes *types,
							 bool *dropped);

/* Wake the launcher of each node whose text datum is set (nnodes slots). */
extern void cycle_notify_nodes(Datum *node_text, int nnodes);

#endif
