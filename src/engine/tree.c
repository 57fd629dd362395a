/*
 * tree.c: queue trees (R-O5, R-A3, R-E7).
 *
 * Queues may sit under a parent queue of the same resource group; jobs
 * live only in leaves.  An inner queue's usage is its subtree's
 * (tide_queue_apply keeps it, and the entitled usage of R-A3, at every
 * charge).  This file holds what the other stages ask of the tree:
 *
 *   admission (R-A3)  a capability at any level caps its subtree; a job is
 *                     guaranteed only when it also fits the entitled usage
 *                     of every queue above its leaf;
 *   order (R-O5)      the walk descends the tree: among the siblings with
 *                     pending work, R-O4's order (priority, share, name),
 *                     down to a leaf, whose next job goes (a heap per inner
 *                     queue); borrowing jobs go nearest lender first;
 *   reclaim (R-E7)    a victim is a reclaim candidate only while every
 *                     queue from its leaf up to where its path and the
 *                     preemptor's part is above its quota.
 *
 * A flat set of queues (no parents) never reaches this file: every caller
 * tests q->parent or max_depth first, so the flat walk is unchanged.
 */
#include <string.h>

#include "fit.h"
#include "reasons.h"
#include "share.h"
#include "tree.h"
#include "work.h"

/* The queue above q, NULL at the top. */
static inline const TideQueue *
up(const TideSnapshot *s, const TideQueue *q)
{
	return q->parent >= 0 ? &s->queues[q->parent] : NULL;
}

/*
 * For each queue, the resources some queue above it caps (tree_caps) or
 * gives a quota on (tree_quotas), one bit per resource (at most
 * TIDE_MAX_RES = 64): the checks below walk up only for those.  Once per
 * decide (the limits are the caller's input).
 */
void
tide_tree_prepare(TideWork *w)
{
	const TideSnapshot *s = w->s;

	w->tree_caps = tide_work_alloc(w, sizeof(uint64_t) * (s->nqueues + 1));
	w->tree_quotas = tide_work_alloc(w, sizeof(uint64_t) * (s->nqueues + 1));
	for (int q = 0; q < s->nqueues; q++)
	{
		int			d = 1;

		for (const TideQueue *a = up(s, &s->queues[q]); a && d < TIDE_MAX_DEPTH; a = up(s, a), d++)
			for (int r = 0; r < w->nres; r++)
			{
				if (a->capability[r] != TIDE_UNLIMITED)
					w->tree_caps[q] |= (uint64_t) 1 << r;
				if (a->quota[r] != TIDE_UNLIMITED)
					w->tree_quotas[q] |= (uint64_t) 1 << r;
			}
	}
}

/* The resources job j's minimum asks for, as a mask. */
static inline uint64_t
need_mask(const TideWork *w, const int64_t *need)
{
	uint64_t	m = 0;

	for (int r = 0; r < w->nres; r++)
		if (need[r] != 0)
			m |= (uint64_t) 1 << r;
	return m;
}

/*
 * R-A3, the levels above job j's leaf: each one's capability (usage, idle
 * usage and the job's minimum within it) and, when *quota_ok is still
 * true, its quota against its entitled usage, so that a sibling's borrowing
 * never turns a job within its own guarantee into a borrowing one.
 * quota_ok NULL: an idle job (capabilities only).  Reasons name the level.
 */
bool
tide_tree_admit(TideWork *w, int j, const int64_t *need, bool *quota_ok, TideOutcome *o)
{
	const TideSnapshot *s = w->s;
	int			leaf = s->jobs[j].queue;
	uint64_t	asks = need_mask(w, need);
	uint64_t	caps = w->tree_caps[leaf] & asks;
	uint64_t	quotas = quota_ok && *quota_ok ? w->tree_quotas[leaf] & asks : 0;
	bool		ok = true;
	int			d = 1;

	if ((caps | quotas) == 0)
		return true;
	for (const TideQueue *a = up(s, &s->queues[leaf]); a && d < TIDE_MAX_DEPTH; a = up(s, a), d++)
		for (uint64_t m = caps | quotas; m; m &= m - 1)
		{
			int			r = __builtin_ctzll(m);

			if (tide_over4(a->capability[r], a->usage[r], a->idle_usage[r], 0, need[r]))
			{
				tide_reason_tree_capability(w, o, r, leaf, tide_sat_add(a->usage[r], a->idle_usage[r]),
											need[r], a->capability[r], a - s->queues);
				ok = false;
			}
			if (quota_ok && *quota_ok && a->quota[r] != TIDE_UNLIMITED &&
				tide_over(a->quota[r], a->entitled[r], need[r]))
				*quota_ok = false;
		}
	return ok;
}

/*
 * A replica's card key t (R-A1) at the levels above the leaf: capability
 * always, entitled quota in guaranteed mode.  Returns the first queue
 * that refuses it (*why: MODE_BORROW for its capability, MODE_GUARANTEED
 * for its quota), -1 when none does.
 */
int
tide_tree_card_block(const TideWork *w, const TideQueue *leaf, int t, int64_t add, int mode, int *why)
{
	int			d = 1;
	uint64_t	bit = (uint64_t) 1 << t;

	if (w->tree_caps && !((w->tree_caps[leaf - w->s->queues] |
						   (mode == MODE_GUARANTEED ? w->tree_quotas[leaf - w->s->queues] : 0)) & bit))
		return -1;				/* no level above limits t */
	for (const TideQueue *a = up(w->s, leaf); a && d < TIDE_MAX_DEPTH; a = up(w->s, a), d++)
	{
		*why = MODE_BORROW;
		if (tide_over4(a->capability[t], a->usage[t], a->idle_usage[t], 0, add))
			return a - w->s->queues;
		*why = MODE_GUARANTEED;
		if (mode == MODE_GUARANTEED && a->quota[t] != TIDE_UNLIMITED &&
			tide_over(a->quota[t], a->entitled[t], add))
			return a - w->s->queues;
	}
	return -1;
}

/* A replica beyond the gang minimum keeps every level above within capability. */
bool
tide_tree_extra_ok(const TideWork *w, const TideQueue *leaf, const TideNode *n, const int64_t *req)
{
	int			d = 1;
	bool		card = n->gpu_type >= 0 && req[TIDE_RES_GPU] > 0 && req[n->gpu_type] == 0;

	for (const TideQueue *a = up(w->s, leaf); a && d < TIDE_MAX_DEPTH; a = up(w->s, a), d++)
	{
		for (int r = 0; r < w->nres; r++)
			if (req[r] > 0 && tide_over4(a->capability[r], a->usage[r], a->idle_usage[r], 0, req[r]))
				return false;
		if (card && tide_over4(a->capability[n->gpu_type], a->usage[n->gpu_type],
							   a->idle_usage[n->gpu_type], 0, req[TIDE_RES_GPU]))
			return false;
	}
	return true;
}

/*
 * Where the paths of queues a and b part (R-E7): returns the depth of
 * their lowest common ancestor (0: none, they meet only at the group), and
 * sets *below_a and *below_b to the queues just under it on each side (a
 * and b themselves when they are top queues or siblings).  a == b: the
 * depth of a, with both set to a.
 */
int
tide_tree_parting(const TideSnapshot *s, int a, int b, int *below_a, int *below_b)
{
	*below_a = a;
	*below_b = b;
	if (a == b)
		return s->queues[a].depth;
	/* climb the deeper side to the other's depth */
	while (s->queues[a].depth > s->queues[b].depth)
	{
		*below_a = a;
		a = s->queues[a].parent;
	}
	while (s->queues[b].depth > s->queues[a].depth)
	{
		*below_b = b;
		b = s->queues[b].parent;
	}
	if (a == b)
		return s->queues[a].depth;	/* one was above the other */
	/* then both sides together until they share a parent (-1: the group) */
	for (int d = 0; s->queues[a].parent != s->queues[b].parent && d < TIDE_MAX_DEPTH; d++)
	{
		a = s->queues[a].parent;
		b = s->queues[b].parent;
	}
	*below_a = a;
	*below_b = b;
	return s->queues[a].depth - 1;
}

/* Does the queue hold more than its quota on some resource it names (R-E1)? */
bool
tide_queue_over_quota(const TideWork *w, const TideQueue *q)
{
	if (!q->has_quota)
	{
		for (int r = 0; r < w->nres; r++)
			if (q->usage[r] > 0)
				return true;
		return false;
	}
	for (int r = 0; r < w->nres; r++)
		if (q->quota[r] != TIDE_UNLIMITED && q->usage[r] > q->quota[r])
			return true;
	return false;
}

/*
 * R-E7: may the subtree from leaf up to upto (an ancestor of leaf, or leaf
 * itself) be made to give back: every queue on that part of the path
 * reclaimable and, with borrowed, above its quota (it borrowed what the
 * other side is owed)?
 */
bool
tide_tree_reclaimable(const TideWork *w, int leaf, int upto, bool borrowed)
{
	const TideSnapshot *s = w->s;
	int			d = 0;

	for (int q = leaf; q >= 0 && d < TIDE_MAX_DEPTH; q = s->queues[q].parent, d++)
	{
		if (!s->queues[q].reclaimable || (borrowed && !tide_queue_over_quota(w, &s->queues[q])))
			return false;
		if (q == upto)
			return true;
	}
	return false;
}

/*
 * The depth of the nearest queue above leaf that has quota left to lend
 * for the minimum need (usage plus need within its quota on every
 * resource need names); 0 when none has.
 */
static int
lender_depth(const TideWork *w, int leaf, const int64_t *need)
{
	const TideSnapshot *s = w->s;
	uint64_t	quotas = w->tree_quotas[leaf] & need_mask(w, need);
	int			d = 1;

	for (const TideQueue *a = up(s, &s->queues[leaf]); a && d < TIDE_MAX_DEPTH; a = up(s, a), d++)
	{
		bool		room = a->has_quota;

		for (uint64_t m = quotas; m && room; m &= m - 1)
		{
			int			r = __builtin_ctzll(m);

			if (tide_over(a->quota[r], a->usage[r], need[r]))
				room = false;
		}
		if (room)
			return a->depth;
	}
	return 0;
}

/*
 * R-A3's borrowing order: the jobs set aside by the walk, nearest lender
 * first (the deepest queue above the leaf with quota to lend), then the
 * rest; within a depth in the order they were set aside (a stable counting
 * sort).  The depth depends on the leaf and the job's minimum alone, and
 * the usage does not change while they are ranked: it is worked out once
 * per pair (a backlog has few distinct minimums), and the pairs are read
 * first in a loop of their own, whose reads of scattered jobs overlap.
 */
void
tide_tree_order_lenders(TideWork *w, int32_t *deferred, int ndeferred)
{
	const TideSnapshot *s = w->s;
	int32_t    *depth;
	int32_t    *tmp;
	int32_t		count[TIDE_MAX_DEPTH + 2];
	int32_t		at[TIDE_MAX_DEPTH + 2];
	int			k = 0;
	int			stride = w->nres > 0 ? w->nres : 1;

	if (ndeferred < 2)
		return;
	depth = tide_work_alloc_raw(w, sizeof(int32_t) * ndeferred);
	tmp = tide_work_alloc_raw(w, sizeof(int32_t) * ndeferred);
	memset(count, 0, sizeof(count));
	if ((int64_t) s->nqueues * w->nminreq > (int64_t) ndeferred * 4 + 4096)
	{
		/* too many pairs to keep: each job on its own */
		for (int i = 0; i < ndeferred; i++)
		{
			depth[i] = lender_depth(w, s->jobs[deferred[i]].queue, tide_job_minreq(w, deferred[i]));
			count[depth[i]]++;
		}
	}
	else
	{
		/* depth + 1 per pair (leaf * distinct minimums + the minimum's), 0: not yet */
		int8_t	   *memo = tide_work_alloc(w, (size_t) s->nqueues * w->nminreq + 1);

		for (int i = 0; i < ndeferred; i++)
			depth[i] = s->jobs[deferred[i]].queue * w->nminreq + w->info[deferred[i]].minreq / stride;
		for (int i = 0; i < ndeferred; i++)
		{
			int			pair = depth[i];

			if (!memo[pair])
				memo[pair] = (int8_t) (1 + lender_depth(w, pair / w->nminreq,
														w->minreq + (size_t) (pair % w->nminreq) * stride));
			depth[i] = memo[pair] - 1;
			count[depth[i]]++;
		}
		tide_work_release(w, memo);
	}
	/* deepest first, no lender (0) last */
	for (int d = TIDE_MAX_DEPTH; d >= 0; d--)
	{
		at[d] = k;
		k += count[d];
	}
	for (int i = 0; i < ndeferred; i++)
		tmp[at[depth[i]]++] = deferred[i];
	memcpy(deferred, tmp, sizeof(int32_t) * ndeferred);
	tide_work_release(w, tmp);
	tide_work_release(w, depth);
}

/* The tree heap (R-O5) */

/* R-O4 among siblings: higher priority, then lower share, then name. */
static inline bool
before(const TideTreeHeap *h, int a, int b)
{
	return tide_queue_before(h->s, h->ix->queue_rank, h->share, a, b);
}

static void
sift_down(const TideTreeHeap *h, int x, int i)
{
	int32_t    *v = h->heap + h->ix->child_start[x];
	int			n = h->n[x];

	for (;;)
	{
		int			l = 2 * i + 1,
					r = l + 1,
					m = i;

		if (l < n && before(h, v[l], v[m]))
			m = l;
		if (r < n && before(h, v[r], v[m]))
			m = r;
		if (m == i)
			return;
		{
			int32_t		t = v[i];

			v[i] = v[m];
			v[m] = t;
		}
		i = m;
	}
}

static inline int
parent_slot(const TideTreeHeap *h, int q)
{
	return h->s->queues[q].parent >= 0 ? h->s->queues[q].parent : h->s->nqueues;
}

static inline void
set_share(TideTreeHeap *h, int q)
{
	h->share[q] = tide_share(h->s, &h->s->queues[q],
							 h->base ? h->base + (size_t) q * h->s->nres : NULL);
}

/*
 * Build the heaps: every leaf with pending non-idle jobs (starts as from
 * tide_order_queue_jobs) and every queue above one.
 */
void
tide_tree_heap_init(TideWork *w, TideTreeHeap *h, const int32_t *starts)
{
	const TideSnapshot *s = w->s;
	int			nq = s->nqueues;
	bool	   *active = tide_work_alloc(w, sizeof(bool) * (nq + 1));

	h->s = s;
	h->ix = w->ix;
	h->heap = tide_work_alloc(w, sizeof(int32_t) * (nq + 1));
	h->n = tide_work_alloc(w, sizeof(int32_t) * (nq + 1));
	h->share = tide_work_alloc(w, sizeof(double) * (nq + 1));
	h->base = NULL;
	if (s->half_life > 0)
	{
		/* R-O6: what the walk places is added to the average from here */
		h->base = tide_work_alloc(w, sizeof(int64_t) * ((size_t) nq * s->nres + 1));
		for (int q = 0; q < nq; q++)
			memcpy(h->base + (size_t) q * s->nres, s->queues[q].usage, sizeof(int64_t) * s->nres);
	}
	for (int q = 0; q < nq; q++)
		if (starts[q + 1] > starts[q] && !s->queues[q].inner)
			for (int a = q, d = 0; a >= 0 && !active[a] && d < TIDE_MAX_DEPTH; a = s->queues[a].parent, d++)
				active[a] = true;
	for (int q = 0; q < nq; q++)
		if (active[q])
		{
			int			p = parent_slot(h, q);

			set_share(h, q);
			h->heap[h->ix->child_start[p] + h->n[p]++] = q;
		}
	for (int x = 0; x <= nq; x++)
		for (int i = h->n[x] / 2 - 1; i >= 0; i--)
			sift_down(h, x, i);
}

/* The leaf whose next job goes, -1 when no queue has pending work. */
int
tide_tree_heap_top(const TideTreeHeap *h)
{
	int			x = h->s->nqueues;

	if (h->n[x] == 0)
		return -1;
	for (int d = 0; d <= TIDE_MAX_DEPTH; d++)
	{
		int			q = h->heap[h->ix->child_start[x]];

		if (!h->s->queues[q].inner)
			return q;
		x = q;
	}
	return -1;
}

/*
 * The top leaf has no job left: out of its parent's heap, and so on up
 * while a heap empties.  placed: its last job was placed, so the shares of
 * the queues above it that stay grew.
 */
void
tide_tree_heap_pop(TideTreeHeap *h, int leaf, bool placed)
{
	int			q = leaf;

	for (int d = 0; d <= TIDE_MAX_DEPTH; d++)
	{
		int			x = parent_slot(h, q);
		int32_t    *v = h->heap + h->ix->child_start[x];

		/* q is on the path of tops: the top of x's heap */
		v[0] = v[--h->n[x]];
		sift_down(h, x, 0);
		if (x == h->s->nqueues)
			return;
		if (h->n[x] > 0)
		{
			if (placed)
				tide_tree_heap_update(h, x);
			return;
		}
		q = x;
	}
}

/*
 * Queue q, on the path of tops, placed a job (its leaf did): its share and
 * every ancestor's grew, they may sink.
 */
void
tide_tree_heap_update(TideTreeHeap *h, int q)
{
	for (int d = 0; q >= 0 && d < TIDE_MAX_DEPTH; d++)
	{
		set_share(h, q);
		sift_down(h, parent_slot(h, q), 0);
		q = h->s->queues[q].parent;
	}
}
