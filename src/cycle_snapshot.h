/*
 * cycle_snapshot.h: the engine's snapshot as tide.run_cycle() loaded it
 * (filled by cycle_load.c and cycle_jobs.c), with what the write phases
 * need beside it.  A type only: every file that reads or fills it includes
 * this, none of them calls another for it.
 */
#ifndef TIDE_CYCLE_SNAPSHOT_H
#define TIDE_CYCLE_SNAPSHOT_H

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
	bool		kept;			/* a cycle's load: xmin is set, to prune */
	bool		incremental;	/* it read only what changed (cycle_cache.c) */
	uint64		xmin;			/* kept: its snapshot's xmin (xid8) */
} CycleLoad;

#endif							/* TIDE_CYCLE_SNAPSHOT_H */
