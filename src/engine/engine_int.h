/*
 * engine_int.h: structures shared by the engine's files, not part of the API.
 *
 * A file calls only files listed below it, and the four stages never
 * call each other, so the calls form no circle:
 *
 *   engine.c     tide_decide(): the walk (R-O, R-L1), the shape cache
 *   evict.c      evictions after the walk (R-E1 to R-E6); its dry runs
 *                admit and place a job as the walk would
 *   ----------------------------------------------------------- stages
 *   order.c      which job first (R-O1 to R-O4)
 *   admit.c      may the queue hold the job (R-A1), can it ever (R-A2)
 *   place.c      a job's replicas on nodes (R-L3 to R-L6), why not
 *   reserve.c    reservations (R-L2)
 *   ----------------------------------------------------- below them
 *   frag.c       the frag node order (R-L5), for place.c (frag.h)
 *   fit.c        does it fit: node and partition filters, room on a
 *                node, the GPUs a replica would get, card keys, holds
 *                and backfill (fit.h)
 *   gpus.c       which GPUs of a node (R-L6)
 *   reason_memo.c > reasons.c   pending-reason texts (R-C2)
 *   work.c       scratch memory of one decide call
 *   snapshot.c   the input: interning, node index, charging
 *   sort.c       tide_sort (sort.h); headers hash.h and satmath.h
 *
 * Every stage can be read and tested with only the files below it.
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
} TideIndex;

typedef struct TideShape
{
	uint64_t	hash;
	int32_t		job;			/* representative job + 1, 0 = empty */
	int32_t		mode;
} TideShape;

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
	int32_t		minreq;			/* its gang minimum: w->minreq + minreq */
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
	uint32_t	minreq_mask;
	TideJobInfo *info;			/* [njobs] */
	bool	   *queue_cards;	/* [nqueues] limits a card type (R-A1 card keys) */
	int32_t	   *gang_nodes;		/* distinct nodes used by the job being placed */
	int32_t		ngang;
	int32_t	   *held_nodes;
	int32_t		nheld;
	int32_t	   *held_queues;
	int32_t		nheld_queues;
	TideShape  *shapes;			/* failed shapes, NULL until the first */
	uint64_t	shape_mask;
	int32_t		nshapes;
	int64_t    *vec;			/* [nres] scratch */
	int64_t    *vec2;			/* [nres] scratch */
	int64_t    *group_nonidle;	/* [ngroups * nres] for idle admission */
	int32_t	   *run_start;		/* CSR of running allocations per node, or NULL */
	int32_t	   *run_list;
	int32_t	   *run_tmp;
	/* set while placing one job */
	int32_t		fail_role;
	int32_t		placed_count;
	int32_t		card_blocked_res;	/* a card key that excluded a partition, or -1 */
	int32_t		card_blocked_mode;
	int64_t    *hold_res;		/* [hold capacity * nres] pool for TideHold.res */
	struct TideReasonSets *rsets;	/* reasons.c: r->reasons by content */
	struct TideBlocks *blocks;	/* what to give back when mem.free is set */
	struct TideEvictWork *ev;	/* evict.c: claims and victims, NULL when off */
} TideWork;

/* work.c */
extern void tide_work_begin(TideWork *w, TideSnapshot *s);
extern void *tide_work_alloc(TideWork *w, size_t size);
extern void *tide_work_alloc_raw(TideWork *w, size_t size);
extern void *tide_work_table(TideWork *w, size_t elem, uint64_t *mask);
extern void tide_work_release(TideWork *w, void *p);
extern void *tide_work_grow(TideWork *w, void *old, size_t old_size, size_t new_size);

/* snapshot.c */
extern void tide_node_reindex(TideSnapshot *s, TideNode *n);
extern void tide_node_apply(TideSnapshot *s, TideNode *n, const int64_t *res,
							uint64_t gpus, int gpu_milli, int sign);
extern void tide_queue_apply(TideSnapshot *s, TideQueue *q, const TideNode *n,
							 bool idle, const int64_t *res, int sign);
extern int	tide_bucket_of(const TideSnapshot *s, const TideNode *n, const TidePart *p);
extern int	tide_bitlen(int64_t v);
extern const char *tide_label_name(const TideSnapshot *s, int id);

/* order.c */
extern int32_t *tide_order_queue_jobs(TideWork *w, int32_t *starts);
extern int32_t *tide_order_idle_jobs(TideWork *w, int32_t *nidle);
extern double tide_queue_share(const TideSnapshot *s, const TideQueue *q);

/* admit.c */
extern int	tide_admit(TideWork *w, int j, TideOutcome *o);
extern bool tide_admit_idle(TideWork *w, int j, TideOutcome *o);
extern bool tide_static_check(TideWork *w, int j, TideOutcome *o);

/* place.c */
extern bool tide_place_job(TideWork *w, int j, int mode);
extern void tide_rollback(TideWork *w, int start);
extern void tide_diagnose(TideWork *w, int j, int mode, TideOutcome *o);

/* reserve.c */
extern void tide_reserve(TideWork *w, int j, int mode, bool admitted);
extern void tide_holds_clear(TideWork *w);

/* evict.c (R-E1 to R-E6): no-ops unless the snapshot's evict is set */
extern void tide_claims_begin(TideWork *w);
extern void tide_claims_take(TideWork *w, int j);
extern void tide_claims_give(TideWork *w, int j, bool placed);
extern void tide_evict_pass(TideWork *w);

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
