/*
 * cycle_cache.h: the rows a whole-cluster cycle keeps for the next one in
 * the same backend, and what changed since (cycle_cache.c).
 */
#ifndef TIDE_CYCLE_CACHE_H
#define TIDE_CYCLE_CACHE_H

#include "postgres.h"

#include "cycle_recv.h"

/*
 * One load's view of the kept rows: made by cycle_cache_begin() under the
 * load's snapshot, used by the job and allocation loads.
 */
typedef struct CycleDelta
{
	bool		prune;			/* a cycle's load: xmin is set */
	bool		keep;			/* this load's rows are kept for the next */
	bool		incremental;	/* kept rows valid: read only changed jobs */
	uint64		xmin;			/* the load's snapshot xmin, or its own xid if older */
	int			nchanged;		/* changed job ids (incremental) */
	int64	   *changed;		/* sorted, each once */
	Datum		changed_array;	/* the same as a bigint[] */
	const char *why_full;		/* why not incremental (a debug message) */
} CycleDelta;

/*
 * Under the load's snapshot (SPI connected): whether the load may be
 * incremental, with the changed jobs.  cycle: a cycle's load (it prunes
 * after; else nothing kept is read or changed: tide.dry_run()); keep: it
 * keeps its rows (a whole-cluster cycle under tide.incremental_load);
 * whole: a whole-cluster cycle (one that keeps nothing drops what was kept).
 */
extern void cycle_cache_begin(CycleDelta *d, bool cycle, bool keep, bool whole);

/*
 * The rows of this load for the jobs query (jobs true) or the allocations
 * query, in the kept context: for a full load an empty set to stream into
 * (what was kept is dropped); for an incremental one the kept rows, less
 * those of changed jobs, with fresh (the changed jobs' rows as read now,
 * ordered by key) merged in by key.  Not keeping: NULL.
 */
extern CycleRowSet *cycle_cache_rows(CycleDelta *d, bool jobs, int job_col, const CycleRowSet *fresh);

/*
 * The context what is kept lives in, for a load that keeps its rows (else
 * NULL): what a load makes under it for the next one (the converted jobs,
 * cycle_jobs.c) is dropped with the kept rows, on abort too.
 */
extern MemoryContext cycle_cache_context(const CycleDelta *d);

/* The load completed: what it kept stands for its snapshot (until abort). */
extern void cycle_cache_loaded(const CycleDelta *d);

/*
 * After a cycle's load (a resource group's too: the rows must not pile up
 * where no whole-cluster cycle runs), whoever keeps rows: delete the
 * tide.job_changes rows every later load has seen (below xmin), a bounded
 * batch of them, oldest first, and record that in the scope's
 * tide.cycle_state row (a kept load older than the highest mark loads in
 * full).
 */
extern void cycle_cache_prune(const char *scope, uint64 xmin);

#endif							/* TIDE_CYCLE_CACHE_H */
