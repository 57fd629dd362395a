/*
 * reconcile.h: what to do about one claim.  The rows the database
 * returned (work assigned to this node, evictions, work it released) and
 * the table of known allocations go in; one action per row comes out.
 * Nothing here talks to the database, the file system or processes, so
 * it is tested on its own (test/unit/test_launcher_reconcile.c).
 */
#ifndef TIDE_LAUNCHER_RECONCILE_H
#define TIDE_LAUNCHER_RECONCILE_H

#include "alloc.h"

typedef enum ClaimKind
{
	CLAIM_RUN,					/* assigned here: run it (tide.claim) */
	CLAIM_STOP,					/* being evicted (tide.claim_evictions) */
	CLAIM_GONE,					/* runs here, but the database released it */
	CLAIM_WARN					/* runs here, its job has a warning before its
								 * time limit: when it is due (R-T2) */
} ClaimKind;

typedef struct ClaimRow
{
	ClaimKind	kind;
	int64_t		id;
	int64_t		job_id;
	int			replica;
	const char *token;			/* tide.allocations.token; "" for CLAIM_GONE
								 * and CLAIM_WARN (those name our own) */
	const char *cvd;			/* CUDA_VISIBLE_DEVICES ("" without a GPU) */
	const char *command;		/* NULL: none */
	const char *role;			/* NULL: none */
	const char *gpu_milli;		/* NULL: a whole GPU or none */
	const char *env;			/* NULL: none (else SpawnSpec's form) */
	const char *workdir;		/* NULL: none */
	const char *array_id;		/* NULL: not an array member */
	const char *array_index;
	double		grace;			/* the job's grace_period in seconds; < 0:
								 * none (the launcher's) (R-T3) */
	bool		warns;			/* CLAIM_RUN: the job has a time_limit and a
								 * warn_before (R-T2) */
	bool		warn_known;		/* CLAIM_WARN: the job runs, warn_in holds */
	double		warn_in;		/* ... seconds from the claim to the warning
								 * (<= 0: due now) */
} ClaimRow;

typedef enum ActionKind
{
	ACT_NONE,					/* nothing to do */
	ACT_OWE_STARTED,			/* known and still assigned: report the start
								 * again (the last report did not arrive) */
	ACT_START,					/* unknown: start it */
	ACT_NO_COMMAND,				/* unknown, the job has no command: report
								 * exit code 127 */
	ACT_ADOPT_ONLY,				/* unknown, but nothing may start now (the
								 * state directory refuses writes) */
	ACT_STOP,					/* stop it (an eviction) */
	ACT_GONE,					/* stop it: the database released it while it
								 * ran here */
	ACT_WARN,					/* known: note when its warning is due */
	ACT_REPLACED,				/* its id names another allocation than the
								 * one running here (an id handed out again
								 * after a failover, R-C7): stop ours; the
								 * new one waits until ours has ended */
	ACT_WAIT					/* do nothing now; a later claim returns it
								 * again (an eviction of the new allocation
								 * of a reused id, while ours runs) */
} ActionKind;

typedef struct Action
{
	ActionKind	kind;
	int			row;			/* index into the claim's rows */
	bool		unknown;		/* not in the table: ask the state directory
								 * first (an earlier launcher's shepherd may
								 * have started it) */
} Action;

bool		reconcile_no_command(const char *command);
bool		reconcile_other(const Alloc *a, const ClaimRow *r);
int			reconcile(const ClaimRow *rows, int nrows, bool can_start, Action *actions);

/*
 * The GPU fence (R-C8): the allocation of the table that holds a GPU that
 * a start of (cvd, gpu_milli) needs, past one card's worth, or NULL when
 * it may start.  *gpu: the GPU (-1: the holder's GPUs are not known).
 */
const Alloc *fence_holder(const char *cvd, int gpu_milli, int *gpu);

#endif							/* TIDE_LAUNCHER_RECONCILE_H */
