/*
 * fit.h: does it fit?  The checks that admission, placement, reservation
 * and eviction share, in one module below all of them (fit.c).  They read
 * the snapshot and the work state and change neither, except that
 * tide_node_fits() counts node_checks.
 *
 * Limits (R-A1): a queue's accounted usage never reaches INT64_MAX, which
 * means "this much or more" (satmath.h); the inline helpers below are the
 * limit tests every stage uses.
 */
#ifndef TIDE_FIT_H
#define TIDE_FIT_H

#include "engine_int.h"

/* A card key that excluded a partition (R-A1), from tide_part_card_ok(). */
typedef struct TideCardBlock
{
	int32_t		res;			/* the card type's resource, -1 none */
	int32_t		mode;			/* MODE_GUARANTEED: its quota; MODE_BORROW:
								 * capability; MODE_OWNER: the owner limit */
	int32_t		queue;			/* the queue above the leaf whose limit it
								 * is (R-A3), -1: the leaf's own */
} TideCardBlock;

/*
 * Would used + ask exceed limit?  used is a saturated sum (usage + held,
 * satmath.h).  Whatever the limit, the sum must stay below INT64_MAX: that
 * value means "this much or more" (a sum that saturated, a gang minimum
 * that did), so a queue is never let past what the engine can count, and
 * a queue whose usage saturated admits nothing.
 */
static inline bool
tide_over(int64_t limit, int64_t used, int64_t ask)
{
	int64_t		sum;

	/* unlimited (INT64_MAX) admits up to INT64_MAX - 1, a limit up to itself */
	if (__builtin_add_overflow(used, ask, &sum))
		return true;
	return sum > limit - (limit == TIDE_UNLIMITED);
}

/*
 * tide_over() of a + b + c + ask (usage, idle usage, held, an ask).  Fast path:
 * operands all below 2^61 (and not negative) cannot sum to INT64_MAX, so
 * only a limit that is not unlimited can be exceeded, as before saturation
 * was checked.  Otherwise any overflow on the way means over.
 */
static inline bool
tide_over4(int64_t limit, int64_t a, int64_t b, int64_t c, int64_t ask)
{
	int64_t		t1,
				t2,
				sum;

	if (__builtin_expect(((uint64_t) a | (uint64_t) b | (uint64_t) c | (uint64_t) ask) <
						 ((uint64_t) 1 << 61), 1))
		return limit != TIDE_UNLIMITED && a + b + c + ask > limit;
	if (__builtin_add_overflow(a, b, &t1) || __builtin_add_overflow(t1, c, &t2) ||
		__builtin_add_overflow(t2, ask, &sum))
		return true;
	return sum > limit - (limit == TIDE_UNLIMITED);
}

/* EASY backfill (R-L2): a job that surely ends before shadow may use held resources. */
extern bool tide_backfill_ok(const TideSnapshot *s, const TideJob *job, int64_t shadow);

/*
 * q->held[r] if the queue's hold applies to job (a job that ends before the
 * holder starts ignores it, EASY backfill), else 0.  *applies caches the
 * answer (-1 unknown): asked only when something is held, so queues
 * without holds (most) cost no call.
 */
static inline int64_t
tide_queue_held(TideWork *w, const TideJob *job, const TideQueue *q, int r, int *applies)
{
	if (q->held[r] == 0)
		return 0;
	if (*applies < 0)
		*applies = !tide_backfill_ok(w->s, job, q->hold_shadow);
	return *applies ? q->held[r] : 0;
}

/* Are a node's holds in force for this job (EASY backfill may ignore them)? */
static inline bool
tide_node_holds_apply(TideWork *w, const TideJob *job, const TideNode *n)
{
	return n->in_held_list && !tide_backfill_ok(w->s, job, n->hold_shadow);
}

/*
 * Selector labels are a subset of the node's, and, when avoid is set, the
 * node is not one where the job's previous attempt failed (R-L4).
 */
extern bool tide_node_matches(const TideJob *job, const TideNode *n, int nodeidx, bool avoid);

/* Is node ni one that job j could use (ready, labels, card type, role)? */
extern bool tide_node_usable(TideWork *w, int j, int ni);

/* Could a node of job j's group other than its failed ones ever hold it (R-L4)? */
extern bool tide_other_node_could_hold(TideWork *w, int j);

/* May role's replicas of job j go to partition p: group, GPU, card type (R-L4)? */
extern bool tide_part_allowed(TideWork *w, int j, const TideRole *role,
							  const TidePart *p);

/* -1 if node n, empty, could hold one replica of req, else a resource it lacks. */
extern int	tide_node_too_small(const TideWork *w, const TideNode *n, const int64_t *req);

/*
 * The GPUs one replica asking gpu (milli) gets on node n (R-L6), out of
 * what is free and, when use_held is set, not held: whole GPUs, or the one
 * GPU whose share a fraction takes; 0 when there are none.
 */
extern uint64_t tide_node_gpus_for(const TideNode *n, int64_t gpu, bool use_held);

/* Room for one replica of req on node n (vector and GPUs), holds unless ignored. */
extern bool tide_node_fits(TideWork *w, const TideJob *job, const TideNode *n,
						   const int64_t *req, bool ignore_holds);

/*
 * Card keys of a replica in partition p within the queue's limits (R-A1)?
 * If not and block is not NULL, block says which key and which limit.
 */
extern bool tide_part_card_ok(TideWork *w, const TideJob *job, const TidePart *p,
							  const TideRole *role, int mode, TideCardBlock *block);

/*
 * What the job's owner holds of resource r in its queue (R-A4); 0 when the
 * queue has no owner limit or nothing is held.
 */
static inline int64_t
tide_owner_held(const TideWork *w, const TideJob *job, int r)
{
	const int64_t *u = tide_owner_usage(w->s, job->queue, job->owner);

	return u ? u[r] : 0;
}

/* Does the job's owner stay within its queue's owner limit with need more (R-A4)? */
static inline bool
tide_owner_within(const TideWork *w, const TideJob *job, const int64_t *need)
{
	const int64_t *cap = w->s->queues[job->queue].owner_cap;

	if (__builtin_expect(cap == NULL, 1) || job->owner < 0)
		return true;
	for (int r = 0; r < w->nres; r++)
		if (need[r] > 0 && tide_over(cap[r], tide_owner_held(w, job, r), need[r]))
			return false;
	return true;
}

/* A replica beyond the gang minimum keeps the queue within capability and owner limit? */
extern bool tide_extra_replica_ok(TideWork *w, const TideJob *job, const TideNode *n,
								  const int64_t *req);

/* The queue a job's shape depends on (-1: any queue without card limits). */
extern int	tide_shape_queue(const TideWork *w, const TideJob *job);

/*
 * Are jobs a and b of the same shape (the shape cache, prep.c)?  Only
 * after tide_prepare_jobs(): it answers from the shape classes prep sets.
 */
extern bool tide_same_shape(const TideWork *w, int a, int b);

#endif							/* TIDE_FIT_H */
