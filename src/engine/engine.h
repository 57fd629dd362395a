/*
 * engine.h: the pg_tide policy engine, snapshot in, decisions out.
 *
 * Plain C (no PostgreSQL headers): linked into pg_tide.so (src/cycle.c, the
 * SPI adapter), into tide-sim (trace replay) and into the C unit tests.
 * Rules cited as R-xx are in docs/policy.md; docs/scheduling.md describes the
 * policy as implemented.
 *
 * Life cycle
 *
 *   TideSnapshot *s = tide_snapshot_create(&mem);
 *   -- 1. intern every resource name (and card type) and label pair:
 *   tide_res_intern(s, "cpu"); tide_res_intern(s, "NVIDIA-H200"); ...
 *   tide_label_intern(s, "zone", "a");
 *   -- 2. size the arrays (fixes nres; vectors come zeroed, limits unlimited):
 *   tide_snapshot_alloc_cluster(s, nnodes, nqueues, nrunning);
 *   tide_snapshot_alloc_jobs(s, njobs, nroles);
 *   -- 3. fill s->nodes[i], s->queues[i], s->jobs[i] (see the structs), then
 *   tide_snapshot_finish(s, err, errlen);       -- validates, builds indexes
 *   -- 4. charge what already runs (node used, GPU shares, queue usage):
 *   tide_charge(s, node, queue, idle, res, gpus, gpu_milli, +1);
 *   -- 5. decide:
 *   TideResult *r = tide_decide(s);
 *
 * tide_decide() applies its placements to the snapshot (node used, GPU
 * shares, queue usage), so a caller that keeps the snapshot across calls
 * (tide-sim) sees the cluster after the cycle; to model a departure call
 * tide_charge(..., -1).  To run another cycle with other pending jobs, call
 * tide_snapshot_alloc_jobs() again (it replaces the job arrays), fill them,
 * then tide_decide() again (no need to call tide_snapshot_finish again
 * unless nodes or queues changed).  Holds (R-L2) live for one tide_decide()
 * call only.
 *
 * Memory: every array is taken from the caller's allocator (palloc in a
 * memory context in the server, malloc in the simulator): up front where
 * each job needs a slot; the few tables that hold only what is distinct
 * (failed shapes, reason lists) start small and double.  If mem.free is set, the
 * scratch memory and the result of a decide call are given back at the
 * start of the next call (so a long simulation does not grow); the arrays
 * of the snapshot itself are the caller's to release (an arena, or palloc
 * in a memory context that is deleted: everything goes with it).
 *
 * Determinism: the same snapshot gives the same decisions; every tie is
 * broken by node name, queue name or job id, never at random.
 */
#ifndef TIDE_ENGINE_H
#define TIDE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TIDE_MAX_GPUS		64		/* GPUs per node (a gpumask is a uint64) */
#define TIDE_MAX_RES		64		/* distinct resource names per snapshot */
#define TIDE_MAX_REASONS	4		/* blocking reasons kept per job (R-C2) */
#define TIDE_MAX_DOMAINS	16		/* distinct GPU topology domains per node */
#define TIDE_MAX_DEPTH		8		/* levels of a queue tree (R-O5), top = 1 */
#define TIDE_UNLIMITED		INT64_MAX	/* a limit that does not name a resource */
#define TIDE_TIME_UNKNOWN	INT64_MAX	/* an end time nobody knows */
#define TIDE_MILLI			1000	/* quantities are int64 milli-units */

/* Fixed resource indexes: tide_snapshot_create() interns these first. */
#define TIDE_RES_GPU		0
#define TIDE_RES_CPU		1

typedef struct TideMem
{
	void	   *(*alloc) (void *ctx, size_t size);	/* must not return NULL */
	void		(*free) (void *ctx, void *ptr);	/* may be NULL */
	void	   *ctx;
} TideMem;

typedef enum TideNodeState
{
	TIDE_NODE_READY = 0,
	TIDE_NODE_DRAINING = 1,		/* takes no new work, loses none */
	TIDE_NODE_DOWN = 2
} TideNodeState;

typedef enum TideService
{
	TIDE_SVC_UNKNOWN = 0,
	TIDE_SVC_TRAINING = 1,
	TIDE_SVC_INFERENCE = 2
} TideService;

typedef enum TidePlacementPolicy
{
	TIDE_PLACE_PACK = 0,		/* fullest node after placement */
	TIDE_PLACE_SPREAD = 1,		/* emptiest node after placement */
	TIDE_PLACE_FRAG = 2			/* R-L5 default: least growth of fragmentation (frag.c) */
} TidePlacementPolicy;

/*
 * A typical request of the workload, for TIDE_PLACE_FRAG (frag.c): one
 * replica's request (gpu in milli as in TideRole), its card type and
 * selector, and its weight (relative frequency, > 0).
 */
typedef struct TideWorkShape
{
	const int64_t *request;		/* [nres] */
	int32_t		gpu_type;		/* resource index of the card type, or -1 */
	const int32_t *selector;	/* sorted label ids, or NULL */
	int32_t		nselector;
	double		weight;
} TideWorkShape;

typedef enum TidePreemptWithin
{
	TIDE_PREEMPT_NEVER = 0,
	TIDE_PREEMPT_LOWER_PRIORITY = 1	/* R-E3: lower job priority, same queue */
} TidePreemptWithin;

/*
 * A node.  The caller fills the public part; vectors (length nres) are
 * allocated by tide_snapshot_alloc_cluster(), zeroed.  gpu_free and used
 * are cluster state: set them through tide_charge() (live allocations,
 * releasing ones included), not by hand.
 */
typedef struct TideNode
{
	/* filled by the caller */
	const char *name;			/* unique; ties break by it (R-L5) */
	int32_t		group;			/* resource group id (caller's numbering) */
	int32_t		state;			/* TideNodeState */
	int32_t		gpu_type;		/* resource index of the card type, or -1 */
	int32_t		ngpus;			/* 0..TIDE_MAX_GPUS; normally capacity[gpu]/1000 */
	int64_t    *capacity;		/* [nres] milli */
	int16_t		gpu_domain[TIDE_MAX_GPUS];	/* topology domain id per GPU (any ids) */
	const int32_t *labels;		/* sorted label ids (tide_label_intern) */
	int32_t		nlabels;
	bool		allow_cpu_jobs;	/* GPU node that takes CPU-only jobs (R-L4) */
	bool		unusable;		/* the caller found it malformed: no work for it */
	int64_t		heartbeat_at;	/* microseconds; not read by the engine (R-C3) */

	/* cluster state, maintained by tide_charge() and tide_decide() */
	int64_t    *used;			/* [nres] sum of live allocations */
	int16_t		gpu_free[TIDE_MAX_GPUS];	/* milli left per GPU, 1000 = free */

	/* engine private */
	uint64_t	free_whole;		/* GPUs with gpu_free == 1000 */
	uint64_t	domain_mask[TIDE_MAX_DOMAINS];	/* GPUs per domain, by domain id order */
	int32_t		ndomains;
	int32_t		pos;			/* position in the engine's name order */
	int32_t		part;			/* partition (group, card type) or -1 */
	int32_t		bucket;			/* bucket inside its partition, -1 = none */
	int64_t    *held;			/* [nres] held by reservations (R-L2) */
	int16_t		gpu_held[TIDE_MAX_GPUS];
	uint64_t	held_mask;		/* GPUs with gpu_held > 0 */
	int64_t		hold_shadow;	/* earliest start of a reserving job here */
	int64_t		hold_job;		/* id of the first job holding here */
	bool		in_held_list;
	uint32_t	stamp;			/* bumped on every change (frag.c memo) */
} TideNode;

/*
 * A queue.  quota and capability hold TIDE_UNLIMITED for every resource
 * they do not name (R-A1: a limit limits only what it names); card-type
 * keys are ordinary resources (intern the card type name).  has_quota false
 * (quota NULL or empty) means no guarantee: all its jobs are borrowing.
 */
typedef struct TideQueue
{
	const char *name;
	int32_t		group;

	/*
	 * R-O5: index of the parent queue (same group), -1 for a top queue
	 * (tide_snapshot_alloc sets -1), set before tide_snapshot_finish(),
	 * which checks the tree and builds its index, and before any
	 * tide_charge().  Jobs live only in leaves; an inner queue's usage is
	 * its subtree's, kept by the engine.
	 */
	int32_t		parent;
	int32_t		priority;		/* R-O4: higher first */
	int32_t		placement;		/* TidePlacementPolicy */
	int32_t		service;		/* default service type of its jobs */
	bool		reclaimable;	/* others may evict its jobs (R-E1, R-E2) */
	int32_t		preemption_within;	/* TidePreemptWithin (R-E3) */
	int64_t		min_runtime;	/* microseconds a job runs before eviction (R-E4) */
	bool		has_quota;
	int64_t    *quota;			/* [nres], TIDE_UNLIMITED where not named */
	int64_t    *capability;		/* [nres], TIDE_UNLIMITED where not named */

	/*
	 * R-A4: the most one owner's jobs (idle ones included) may hold in the
	 * queue, [nres] with TIDE_UNLIMITED where not named; NULL: no owner
	 * limit, and owners are not tracked for the queue at all.  The caller
	 * allocates it (tide_vec_new) when the queue has one.
	 */
	int64_t    *owner_cap;

	/*
	 * R-O7: order the queue's jobs of equal priority by their owner's share
	 * (owner_order.c), owners tracked in jobs and allocations; false: R-O3
	 * then R-O1 only (seed 000).
	 */
	bool		owner_fair;

	/* cluster state, maintained by tide_charge() and tide_decide() */
	int64_t    *usage;			/* [nres] non-idle usage incl. card keys; of
								 * an inner queue, its subtree's (R-O5) */
	int64_t    *idle_usage;		/* [nres] idle usage incl. card keys, ditto */

	/*
	 * R-O6: non-idle usage averaged over time (milli-units, like usage) as
	 * of decayed_at (microseconds; TIDE_TIME_UNKNOWN: never, the average
	 * starts now).  The caller gives what it kept (zero for a new queue);
	 * tide_fair_decay() brings it up to now, and tide_decide() calls it.
	 */
	double	   *decayed;		/* [nres] */
	int64_t		decayed_at;

	/* engine private */
	int32_t		depth;			/* R-O5: 1 for a top queue */
	bool		inner;			/* has child queues: holds no jobs itself */

	/*
	 * R-A3: entitled usage of an inner queue [nres], the part of its
	 * subtree's non-idle usage within its children's quotas: the sum over
	 * its children of min(entitled, quota) per resource the child's quota
	 * names, the child's whole entitled usage where it names none, 0 for a
	 * child without a quota.  A leaf's entitled usage is its usage.
	 */
	int64_t    *entitled;
	int64_t    *held;			/* [nres] queue headroom held (R-L2) */
	int64_t		hold_job;
	int64_t		hold_shadow;
} TideQueue;

/* One task role of a job: replicas x request. */
typedef struct TideRole
{
	const char *name;			/* e.g. "main"; roles are walked in array order */
	int32_t		replicas;
	int64_t    *request;		/* [nres] per replica; request[gpu] in milli */
} TideRole;

/* A pending job. */
typedef struct TideJob
{
	int64_t		id;				/* ties break by it (R-O1) */
	int32_t		queue;			/* index into queues */
	int32_t		priority;		/* R-O1: higher first */
	int64_t		created_at;		/* microseconds; earlier first */
	bool		idle;			/* R-O2 */
	bool		reserve;		/* R-L2 */
	bool		is_retry;		/* R-O3 retry lane */
	bool		preemptable;
	int32_t		service;		/* TideService */
	int32_t		min_available;	/* R-L3; <= 0: all replicas */
	int32_t		gpu_type;		/* resource index of the card type, or -1 */
	const int32_t *selector;	/* sorted label ids the node must have */
	int32_t		nselector;
	int64_t		time_limit;		/* microseconds, 0 = none (R-L2 backfill) */
	const int32_t *avoid;		/* node indexes of failed attempts (R-L4) */
	int32_t		navoid;
	TideRole   *roles;			/* nroles >= 1 */
	int32_t		nroles;
	int32_t		unknown_name;	/* 1 + index into the snapshot's unknown_names
								 * when it asks for what no node offers, 0 = no */
	int32_t		owner;			/* owner id (R-A4), index into owner_names;
								 * read only in queues with an owner_cap;
								 * negative: counted against no owner */
} TideJob;

/*
 * A live allocation (assigned, running or releasing).  Optional input:
 * tide_charge() is what makes it count; the list gives end times for EASY
 * backfill (R-L2) and the eviction candidates (R-E1 to R-E5).
 */
typedef struct TideRunning
{
	int64_t		alloc_id;
	int64_t		job_id;
	int32_t		queue;
	int32_t		node;
	bool		idle;
	bool		preemptable;
	bool		releasing;
	int32_t		service;
	int32_t		priority;
	int64_t		started_at;		/* microseconds, 0 = not started */
	int64_t		end_at;			/* started_at + time_limit, or TIDE_TIME_UNKNOWN */
	int64_t		placed_at;		/* started, else assigned (R-E4 min_runtime, least harm) */
	const int64_t *res;			/* [nres] */
	uint64_t	gpus;
	int32_t		gpu_milli;		/* fractional share, or 0 */
	int32_t		owner;			/* owner id as in TideJob; charged by
								 * tide_charge_owned() */
} TideRunning;

/*
 * Resources held for a preemptor (R-E6): where its dry run placed it when
 * an earlier cycle evicted jobs for it (evict.c).  Only job_id may use
 * them; the engine holds the part that is free now (the victims' part is
 * still used while they stop).  waiting: some victims have not stopped.
 */
typedef struct TideClaim
{
	int64_t		job_id;			/* the preemptor */
	int32_t		job;			/* new claims: the preemptor's index into snapshot jobs */
	int32_t		role;			/* new claims: role index and replica of the placement */
	int32_t		replica;
	int32_t		node;
	const int64_t *res;			/* [nres] */
	uint64_t	gpus;
	int32_t		gpu_milli;
	bool		waiting;
} TideClaim;

typedef struct TideSnapshot
{
	TideMem		mem;
	int64_t		now;			/* microseconds */
	bool		allow_cpu_jobs_on_gpu_nodes;	/* R-L4 setting */
	int64_t		half_life;		/* R-O6, microseconds; 0: share of the usage now */

	int32_t		nres;
	const char *res_names[TIDE_MAX_RES];

	/*
	 * What jobs ask for that nothing in the cluster names (a resource, or a
	 * card type), as the reasons' texts ("no node offers resource rdma"),
	 * one per name: such a job can
	 * never fit (R-A2) and is marked unschedulable without its names
	 * entering res_names, which nodes and queues need.  The caller's array.
	 */
	int32_t		nunknown;
	const char *const *unknown_names;

	int32_t		nnodes;
	TideNode   *nodes;
	int32_t		nqueues;
	TideQueue  *queues;
	int32_t		njobs;
	TideJob    *jobs;
	int32_t		nroles;
	TideRole   *roles;			/* pool for jobs[i].roles */
	int32_t		nrunning;
	TideRunning *running;

	/*
	 * The typical workload for TIDE_PLACE_FRAG: optional; when empty the
	 * pending jobs' own requests are used.  Read again when the pointer
	 * or the count changes: to change it between decide calls on a kept
	 * snapshot, give a new array, do not edit the old one in place.
	 */
	int32_t		nworkload;
	const TideWorkShape *workload;

	/*
	 * The forecast (forecast.c) sets it: decide without the pending
	 * reasons' node scan (R-C2), whose texts it never shows.  The
	 * decisions are the same; outcomes carry fewer reasons, and jobs with
	 * a time limit share the failed-shape cache with those of the same
	 * limit (prep.c).
	 */
	bool		no_reasons;

	/* evictions (evict.c, R-E1 to R-E6): off unless evict is set */
	bool		evict;
	int64_t		restart_cost;	/* R-E4 least harm: GPU-time a restart costs
								 * at least, per GPU, microseconds */
	bool		evict_legacy_order;	/* tide-sim's "before": R-E4 as it was
										 * (idle, priority, most recently
										 * placed; no per-node try) */
	int32_t		nclaims;
	TideClaim  *claims;

	/*
	 * Owners (R-A4): jobs and allocations name them by id; owner_names[id]
	 * is what reasons print (a number when id >= nowners).  The caller's
	 * array; only queues with an owner_cap look at owners.
	 */
	int32_t		nowners;
	const char *const *owner_names;

	/*
	 * The order memo (order.c): the job order of an earlier decide, which
	 * this one reuses for the jobs whose queue and order key (R-O3, R-O1)
	 * did not change, instead of sorting every queue again.  NULL, or the
	 * r->order_memo of an earlier decide, kept by the caller.  It is
	 * checked against the jobs themselves: a memo of other jobs costs time,
	 * never changes the order.  order_mem.alloc set: the decide leaves its
	 * own memo in r->order_memo, allocated there, for the next; the caller
	 * gives it back (tide_order_memo_free) or deletes what order_mem
	 * allocates from.  Used only when the job ids ascend (the load's order).
	 */
	const struct TideOrderMemo *order_memo;
	TideMem		order_mem;

	struct TideIndex *index;	/* engine private */
	struct TideOwners *owners;	/* engine private: usage per (queue, owner) */
	struct TideOwnerFairs *owner_fair;	/* engine private: R-O7 averages */
	struct TideNames *labels;	/* engine private */
	struct TideResult *last;	/* engine private */
	struct TideFrag *frag;		/* engine private: frag.c memo */
	bool		frozen;			/* nres fixed */
} TideSnapshot;

/* Outcome of one job. */
typedef enum TideStatus
{
	TIDE_PENDING = 0,			/* left pending, reasons say why */
	TIDE_PLACED = 1,
	TIDE_UNSCHEDULABLE = 2		/* R-A2: can never fit as things stand */
} TideStatus;

typedef enum TideClass
{
	TIDE_CLASS_NONE = 0,
	TIDE_CLASS_GUARANTEED = 1,	/* within quota (R-A1) */
	TIDE_CLASS_BORROWING = 2,	/* above quota, within capability */
	TIDE_CLASS_IDLE = 3
} TideClass;

/* A blocking reason, rendered to text by tide_reason_text() (R-C2). */
typedef struct TideReason
{
	int16_t		code;			/* TIDE_R_* in reasons.c */
	int16_t		res;			/* resource index or -1 */
	int32_t		role;			/* role index or -1 */
	int64_t		a,
				b,
				c;				/* numbers (milli or counts) */
	int64_t		ref;			/* a job id, node index, queue index... */
} TideReason;

typedef struct TideOutcome
{
	int32_t		status;			/* TideStatus */
	int32_t		klass;			/* TideClass when considered */
	int32_t		walk_pos;		/* position in the walk (R-O1..R-O4), -1 if none */
	int32_t		first_placement;	/* index into placements, -1 if none */
	int32_t		nplacements;
	int32_t		nreasons;
	int32_t		reasons;		/* its reasons: r->reasons[reasons ..
								 * reasons + nreasons - 1], shared by
								 * every job with the same reasons;
								 * tide_outcome_reasons() */
	int32_t		evict_state;	/* TideEvictState (evict.c) */
} TideOutcome;

/* One replica placed on one node. */
typedef struct TidePlacement
{
	int32_t		job;			/* index into snapshot jobs */
	int32_t		role;			/* index into the job's roles */
	int32_t		replica;		/* 0-based, per role */
	int32_t		node;			/* index into snapshot nodes */
	const int64_t *res;			/* [nres] = the role's request */
	uint64_t	gpus;			/* GPU mask: whole GPUs, or the one shared GPU */
	int32_t		gpu_milli;		/* share of that GPU for a fractional request, else 0 */
} TidePlacement;

/* Resources held for a reserving job (R-L2); node -1: queue headroom. */
typedef struct TideHold
{
	int32_t		job;
	int32_t		node;
	int64_t    *res;			/* [nres] */
	uint64_t	gpus;
	int64_t		shadow;			/* expected start, TIDE_TIME_UNKNOWN if unknown */
} TideHold;

/* A pending job and evictions (R-E6), TideOutcome.evict_state. */
typedef enum TideEvictState
{
	TIDE_EV_NONE = 0,
	TIDE_EV_WAITING = 1,		/* its victims are still stopping: held for it */
	TIDE_EV_LAPSED = 2,			/* held resources were free and it still did not fit */
	TIDE_EV_EVICTED = 3			/* this cycle evicted jobs for it (new claims) */
} TideEvictState;

/* Which rule chose a victim (R-E1 to R-E3). */
typedef enum TideEvictRule
{
	TIDE_RULE_IDLE = 1,			/* R-E1: an idle job yields to a guaranteed one */
	TIDE_RULE_RECLAIM = 2,		/* R-E1: borrowing job of a reclaimable queue */
	TIDE_RULE_INFERENCE = 3,	/* R-E2: training yields to inference */
	TIDE_RULE_PREEMPT = 4		/* R-E3: lower priority in the same queue */
} TideEvictRule;

/* One job evicted (all its allocations: R-E5) for a preemptor. */
typedef struct TideEviction
{
	int64_t		job_id;			/* the victim */
	int32_t		queue;			/* the victim's queue */
	int32_t		rule;			/* TideEvictRule */
	int32_t		preemptor;		/* index into snapshot jobs */
} TideEviction;

typedef struct TideCounters
{
	int64_t		jobs_considered;
	int64_t		jobs_placed;
	int64_t		jobs_pending;
	int64_t		jobs_unschedulable;
	int64_t		placements;
	int64_t		holds;
	int64_t		shape_cache_hits;
	int64_t		node_checks;	/* fit tests done: the work measure */
	int64_t		jobs_evicted;	/* victims (evict.c) */
	int64_t		preemptors;		/* jobs that evicted */
	int64_t		dry_runs;		/* eviction dry runs */
} TideCounters;

typedef struct TideResult
{
	int32_t		njobs;
	TideOutcome *outcomes;		/* [njobs], same order as snapshot jobs */
	int32_t		nplacements;
	TidePlacement *placements;	/* grouped by job, in walk order */
	int32_t		nholds;
	TideHold   *holds;
	int32_t	   *walk;			/* [nwalk] job indexes in the order considered */
	int32_t		nwalk;
	TideCounters counters;
	/* evictions (snapshot evict set): victims, and what to hold for whom */
	int32_t		nevictions;
	TideEviction *evictions;
	int32_t		nnew_claims;
	TideClaim  *new_claims;		/* job_id = preemptor, waiting = true */
	/* the distinct reason lists of the outcomes, stored once each */
	int32_t		nreasons;
	TideReason *reasons;
	/* the order memo for the next decide (s->order_mem set), the caller's */
	struct TideOrderMemo *order_memo;
} TideResult;

/* The reasons of an outcome of r: o->nreasons of them. */
static inline const TideReason *
tide_outcome_reasons(const TideResult *r, const TideOutcome *o)
{
	return o->nreasons > 0 ? r->reasons + o->reasons : r->reasons;
}

/* snapshot.c */
extern TideSnapshot *tide_snapshot_create(const TideMem *mem);
extern int	tide_res_intern(TideSnapshot *s, const char *name);	/* -1: full or frozen */
extern int	tide_res_lookup(const TideSnapshot *s, const char *name);	/* -1: unknown */
extern int	tide_label_intern(TideSnapshot *s, const char *key, const char *value);
extern void tide_snapshot_alloc_cluster(TideSnapshot *s, int nnodes, int nqueues, int nrunning);
extern void tide_snapshot_alloc_jobs(TideSnapshot *s, int njobs, int nroles);
extern int64_t *tide_vec_new(TideSnapshot *s);	/* zeroed [nres] */
extern void *tide_alloc(TideSnapshot *s, size_t size);	/* zeroed */
extern bool tide_snapshot_finish(TideSnapshot *s, char *err, size_t errlen);
extern void tide_charge(TideSnapshot *s, int node, int queue, bool idle,
						const int64_t *res, uint64_t gpus, int gpu_milli, int sign);
/* tide_charge, and the owner's usage in the queue when it has an owner_cap (R-A4) */
extern void tide_charge_owned(TideSnapshot *s, int node, int queue, int owner, bool idle,
							  const int64_t *res, uint64_t gpus, int gpu_milli, int sign);
/* what owner holds in queue (idle jobs included, card keys too), NULL: nothing */
extern const int64_t *tide_owner_usage(const TideSnapshot *s, int queue, int owner);
extern void tide_snapshot_destroy(TideSnapshot *s);
extern int	tide_job_index(const TideSnapshot *s, int64_t id);	/* -1: not pending */

/* engine.c */
extern TideResult *tide_decide(TideSnapshot *s);

/* order.c: an order memo (r->order_memo) given back; NULL is fine */
typedef struct TideOrderMemo TideOrderMemo;
extern void tide_order_memo_free(TideOrderMemo *m);

/* share.c: every queue's decayed usage brought up to s->now (R-O6) */
extern void tide_fair_decay(TideSnapshot *s);

/*
 * owner_order.c: the owners' usage averaged over time in queues with
 * owner_fair (R-O7), kept per (queue, owner) like a queue's (R-O6).  The
 * caller gives what it kept, one resource at a time (decayed in
 * milli-units as of at; TIDE_TIME_UNKNOWN: starts now); tide_decide()
 * brings every pair up to s->now with the owner's non-idle usage in the
 * live allocations (s->running), and the caller reads the pairs back to
 * keep them.  A pair with no usage now and an average below min_milli in
 * every resource may be forgotten (tide_owner_fair_negligible).
 */
typedef struct TideOwnerFair
{
	int32_t		queue;
	int32_t		owner;
	int64_t		decayed_at;
	double	   *decayed;		/* [nres] milli */
	double	   *usage;			/* [nres] milli, non-idle, as decided on */
} TideOwnerFair;

extern void tide_owner_fair_keep(TideSnapshot *s, int queue, int owner, int res,
								 double decayed, int64_t at);
extern void tide_owner_fair_decay(TideSnapshot *s);
extern int	tide_owner_fair_count(const TideSnapshot *s);
extern const TideOwnerFair *tide_owner_fair_row(const TideSnapshot *s, int i);
extern bool tide_owner_fair_negligible(const TideSnapshot *s, const TideOwnerFair *row,
									   double min_milli);

/* evict.c: text of a rule, for eviction reasons */
extern const char *tide_rule_name(int rule);

/* reasons.c: "; "-joined text of every reason of a job; returns strlen */
extern size_t tide_reason_text(const TideSnapshot *s, const TideResult *r,
							   int job, char *buf, size_t buflen);

/*
 * reasons.c: the reason of a job that asks for what no node of its group
 * offers (R-A2), a gpu_type (gpu_type true) or a resource of that name, as
 * the engine words it; the load gives it to the job (unknown_names).
 * Returns strlen.
 */
extern size_t tide_reason_unknown_text(bool gpu_type, const char *name, char *buf, size_t len);

/*
 * reason_memo.c: the same text, rendered once per distinct input (most of a
 * backlog shares a few reasons); *text_id numbers distinct texts from 0.
 * The memo and its texts live in the snapshot's memory.
 */
typedef struct TideReasonMemo TideReasonMemo;
extern TideReasonMemo *tide_reason_memo_create(TideSnapshot *s, const TideResult *r);
extern const char *tide_reason_memo_text(TideReasonMemo *m, int job, int32_t *text_id);

/* gpus.c: R-L6 choices, exposed for tests and the simulator */
extern uint64_t tide_choose_whole_gpus(const TideNode *n, uint64_t avail, int k);
extern int	tide_choose_fraction_gpu(const TideNode *n, const int16_t *avail_milli,
									 int milli);

#endif							/* TIDE_ENGINE_H */
