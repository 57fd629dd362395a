/*
 * cycle_load.h: the load phase of tide.run_cycle() (cycle_load.c): every
 * query the cycle reads with, turned into the engine's snapshot.
 */
#ifndef TIDE_CYCLE_LOAD_H
#define TIDE_CYCLE_LOAD_H

#include "postgres.h"

#include "storage/itemptr.h"

#include "engine.h"

/*
 * What the load gives the write phases: the snapshot, and for its roles
 * and jobs what the engine does not keep but the writes need.  The role
 * arrays are in snapshot role order; job j's roles are
 * role_base[j] .. role_base[j] + s->jobs[j].nroles - 1, so a placement's
 * or a claim's (job, role) is role_base[job] + role.
 */
typedef struct CycleLoad
{
	MemoryContext mcxt;			/* the snapshot's memory */
	const char *group;			/* the resource group loaded, NULL: all */
	TideSnapshot *s;
	Datum	   *role_request;	/* [nroles] resvec datum of each role's request */
	char	  **role_name;		/* [nroles] */
	ItemPointerData *role_tid;	/* [nroles] ctid of the task row loaded */
	int32	   *role_base;		/* [njobs] index of the job's first role */
	ItemPointerData *job_tid;	/* [njobs] ctid of the job row loaded */
	char	  **job_reason;		/* [njobs] current pending_reason or NULL */
} CycleLoad;

/*
 * R-C3 (cycle_lost.c): mark down the nodes whose launcher went silent for longer than
 * tide.node_timeout (a write: before the load, so that it sees them down);
 * returns the jobs hit.
 */
extern int	tide_cycle_nodes_lost(void);

/*
 * The nodes tide_cycle_nodes_lost() would mark down now, and why, without
 * writing (for tide.dry_run()); returns how many.
 */
extern int	tide_cycle_nodes_to_lose(char ***names, char ***reasons);

/*
 * Load nodes, queues, pending jobs and their tasks, live allocations,
 * the resources held for preemptors (R-E6) and the typical workload of frag
 * queues (cycle_shapes.c) into a snapshot allocated in mcxt, evictions on.
 * Must run inside SPI_connect(); the loaded texts live until SPI_finish().
 */
extern void tide_cycle_load(CycleLoad *l, MemoryContext mcxt, const char *group);

#endif							/* TIDE_CYCLE_LOAD_H */
