/*
 * engine_int.h: the types the engine's files share, not part of the API:
 * the node index (partitions, groups), the per-job data derived once per
 * decide, and TideWork, the state of one tide_decide() call.  Each file's
 * functions are declared in its own header (order.h, admit.h, place.h,
 * reserve.h, evict.h, claims.h, prep.h, fit.h, frag.h, work.h,
 * snapshot_int.h, sort.h); docs/development.md draws how they call each
 * other.
 */
#ifndef TIDE_ENGINE_INT_H
#define TIDE_ENGINE_INT_H

#include "engine.h"
#include "satmath.h"

#define TIDE_NBUCKETS 65		/* free whole GPUs 0..64, or bit length of free cpu */

/* Placement modes: which limits a partition's card key is checked against. */
#define MODE_GUARANTEED 1
#define MODE_BORROW		2
#define MODE_IDLE		3
#define MODE_OWNER		4		/* only in a TideCardBlock: the owner limit (R-A4) */

typedef struct TidePart
{
	int32_t		group;			/* index into groups */
	int32_t		gpu_type;		/* resource index or -1 */
	bool		gpu;			/* nodes with GPUs */
	bool		allow_cpu;		/* GPU nodes that take CPU-only jobs */
	int32_t		lo,
				hi;				/* range in order[] */
	int32_t		nwords;
	uint64_t   *bits;			/* [TIDE_NBUCKETS * nwords] ready nodes by bucket */
	int32_t		count[TIDE_NBUCKETS];
	uint64_t   *shared;			/* [nwords] ready nodes with a partly used GPU */
	int32_t		nshared;
	int64_t    *maxcap;			/* [nres] component-wise max over all its nodes */
	int32_t		maxgpus;
} TidePart;

typedef struct TideGroup
{
	int32_t		id;				/* caller's group id */
	int32_t		lo,
				hi;				/* node range in order[] */
	int32_t		plo,
				phi;			/* partition range */
	int64_t    *capacity;		/* [nres] ready nodes, card keys included */
} TideGroup;

typedef struct TideIndex
{
	int32_t	   *order;			/* node indexes by (group, gpu, type, name) */
	int32_t		nparts;
	TidePart   *parts;
	int32_t		ngroups;
	TideGroup  *groups;
	int32_t	   *queue_group;	/* [nqueues] group index or -1 */
	int32_t	   *queue_rank;		/* [nqueues] rank of the name */
	int32_t		max_depth;		/* R-O5: 1 when no queue has a parent */
	int32_t	   *child_start;	/* [nqueues + 2] CSR of the children of each
								 * queue in child_list; entry nqueues: the
								 * top queues */
	int32_t	   *child_list;		/* [nqueues] */
} TideIndex;

/* Per job, derived once per decide. */
typedef struct TideJobInfo
{
	int32_t		total_replicas;
	int32_t		min_replicas;
	int32_t		group;			/* group index or -1 */
	bool		bad;			/* R-A2 found at prep */
	bool		avoids;			/* R-L4: keeps off its failed nodes (another
								 * node of the group could hold it) */
	bool		cacheable;
	bool		avoid_shape;	/* avoids nodes, else cacheable: diagnosed
								 * from its shape's counts (place.c) */
	int32_t		minreq;			/* its gang minimum: w->minreq + minreq */
	int32_t		shape;			/* the first job of its shape (prep.c), -1
								 * when it has no shape hash; set by
								 * tide_prepare_jobs (zero before it, which
								 * would read as job 0's class) */
	uint64_t	hash;
} TideJobInfo;

typedef struct TideWork
{
	TideSnapshot *s;
	TideIndex  *ix;
	TideResult *r;
	int			nres;
	int64_t    *minreq;			/* distinct gang minimums [nres] each, card key
								 * if known: tide_job_minreq() */
	int32_t		nminreq;
	int32_t    *minreq_slot;	/* their hash table */
	uint64_t	minreq_mask;
	TideJobInfo *info;			/* [njobs] */
	bool	   *queue_cards;	/* [nqueues] limits a card type (R-A1 card keys) */
	uint64_t   *tree_caps;		/* [nqueues] R-A3: resources (bit r) some queue
								 * above it caps; NULL in a flat set */
	uint64_t   *tree_quotas;	/* [nqueues] the same for quotas */
	int32_t	   *gang_nodes;		/* distinct nodes used by the job being placed */
	int32_t		ngang;
	int32_t	   *held_nodes;
	int32_t		nheld;
	int32_t	   *held_queues;
	int32_t		nheld_queues;
	int32_t    *class_slot;		/* prep.c: the shapes' first jobs (hash.h) */
	uint64_t	class_mask;
	int32_t		nclasses;
	struct TideShape *shapes;	/* prep.c: failed shapes, NULL until the first */
	int32_t    *shape_slot;		/* their table (hash.h) */
	uint64_t	shape_mask;
	int32_t		nshapes;
	struct TideAvoidDiag *avoid_diags;	/* place.c: shapes' diagnoses for
										 * the jobs that avoid nodes */
	int32_t		navoid_diags;
	int32_t		avoid_diags_cap;
	int64_t    *vec;			/* [nres] scratch */
	int64_t    *vec2;			/* [nres] scratch */
	int64_t    *group_nonidle;	/* [ngroups * nres] for idle admission */
	int32_t    *idle_order;		/* order.c: the idle list when the memo made it
								 * with the queues', else NULL */
	int32_t		nidle_order;
	int32_t	   *run_start;		/* CSR of running allocations per node, or NULL */
	int32_t	   *run_list;
	int32_t	   *run_tmp;
	int64_t    *hold_res;		/* [hold capacity * nres] pool for TideHold.res */
	struct TideReasonSets *rsets;	/* reasons.c: r->reasons by content */
	struct TideBlocks *blocks;	/* what to give back when mem.free is set */
	struct TideClaimWork *claims;	/* claims.c: R-E6 claims, NULL when off */
	struct TideEvictWork *ev;	/* evict.c: victims, NULL when off */
} TideWork;

/*
 * reasons.c: every stage adds pending reasons (R-C2).  work.h and
 * snapshot_int.h are included for reasons.c, which reaches them through
 * this header.
 */
#include "snapshot_int.h"
#include "work.h"

/* helpers */

/* Job j's gang minimum [nres]. */
static inline const int64_t *
tide_job_minreq(const TideWork *w, int j)
{
	return w->minreq + w->info[j].minreq;
}

/* A job's replicas over all roles (negative counts as 0), saturated. */
static inline int32_t
tide_job_replicas(const TideJob *job)
{
	int32_t		n = 0;

	for (int ri = 0; ri < job->nroles; ri++)
		n = tide_sat_add32(n, job->roles[ri].replicas > 0 ? job->roles[ri].replicas : 0);
	return n;
}

static inline int64_t
tide_role_gpu(const TideRole *r)
{
	return r->request[TIDE_RES_GPU];
}

static inline bool
tide_is_fraction(int64_t g)
{
	return g > 0 && g < TIDE_MILLI;
}

#endif							/* TIDE_ENGINE_INT_H */
