/*
 * evict_tree.c: evictions in a queue tree (R-E7), for evict.c.
 *
 * Where a preemptor's path and a victim's part decides whether R-E1 or
 * R-E2 lets the one take from the other (the victim's side must be
 * reclaimable down to its leaf and, for R-E1, above its quota at every
 * level), whether the victim could take back (no ping-pong), and in which
 * pass the victim is tried (nearest subtrees first).  The parting points
 * of a preemptor leaf with every queue are worked out once for the
 * preemptors of that leaf.  A flat set of queues never comes here.
 */
#include "evict_int.h"
#include "evict_tree.h"
#include "tree.h"

/*
 * Where preemptor leaf pq's path parts from every queue's (R-E7), kept for
 * the preemptor leaf last asked about: preemptors of one leaf come in a
 * row, and a victim's queue then costs a lookup instead of a climb.
 */
static void
tree_memo(const TideWork *w, int pq)
{
	TideEvictWork *ev = w->ev;
	const TideSnapshot *s = w->s;

	if (ev->memo_leaf == pq)
		return;
	for (int vq = 0; vq < s->nqueues; vq++)
	{
		int			depth = tide_tree_parting(s, pq, vq, &ev->qbelow_p[vq], &ev->qbelow_v[vq]);

		ev->qpass[vq] = (int8_t) (vq == pq ? 1 : w->ix->max_depth - depth);
	}
	ev->memo_leaf = pq;
}

/*
 * R-E7, R-E1 and R-E2 in a queue tree, for a victim in another leaf: where
 * the preemptor's path and the victim's part, the subtree on the victim's
 * side must be reclaimable all the way down to the victim's leaf and, for
 * R-E1, above its quota at every level (it borrowed what the preemptor's
 * side is owed); R-E2 compares the priorities of the two queues just below
 * the parting point.
 */
int
tide_evict_tree_rule(const TideWork *w, const TideJob *p, bool e1, bool e2, const Victim *v)
{
	const TideSnapshot *s = w->s;
	int			below_p,
				below_v;

	if (v->queue == p->queue || v->idle || !v->preemptable)
		return 0;
	tree_memo(w, p->queue);
	below_p = w->ev->qbelow_p[v->queue];
	below_v = w->ev->qbelow_v[v->queue];
	if (e2 && v->service == TIDE_SVC_TRAINING &&
		s->queues[below_v].priority < s->queues[below_p].priority && tide_tree_reclaimable(w, v->queue, below_v, false))
		return TIDE_RULE_INFERENCE;
	if (e1 && tide_tree_reclaimable(w, v->queue, below_v, true))
		return TIDE_RULE_RECLAIM;
	return 0;
}

/*
 * Could v, pending again, reclaim from preemptor j in a tree (no ping-pong
 * across levels)?  The rules of tide_evict_tree_rule with the roles swapped: j's side
 * would be above its quota with j at every level below the parting point
 * (or v an inference job of a higher-priority side), and v's leaf within
 * its quota.
 */
bool
tide_evict_tree_back(const TideWork *w, const Victim *v, int j)
{
	const TideSnapshot *s = w->s;
	const TideJob *p = &s->jobs[j];
	const TideQueue *qv = &s->queues[v->queue];
	const int64_t *need = tide_job_minreq(w, j);
	int			below_p,
				below_v;
	bool		v_guaranteed = qv->has_quota;

	tree_memo(w, p->queue);
	below_p = w->ev->qbelow_p[v->queue];
	below_v = w->ev->qbelow_v[v->queue];
	if (!tide_tree_reclaimable(w, p->queue, below_p, false))
		return false;
	if (v->service == TIDE_SVC_INFERENCE && p->service == TIDE_SVC_TRAINING &&
		s->queues[below_p].priority < s->queues[below_v].priority)
		return true;			/* R-E2 */
	for (int r = 0; r < w->nres && v_guaranteed; r++)
		if (qv->quota[r] != TIDE_UNLIMITED && qv->usage[r] > qv->quota[r])
			v_guaranteed = false;
	if (!v_guaranteed)
		return false;
	/* every queue from j's leaf up to below_p would be above its quota with j */
	for (int q = p->queue, d = 0; q >= 0 && d < TIDE_MAX_DEPTH; q = s->queues[q].parent, d++)
	{
		const TideQueue *x = &s->queues[q];
		bool		over = !x->has_quota;

		for (int r = 0; r < w->nres && !over; r++)
			if (x->quota[r] != TIDE_UNLIMITED && tide_sat_add(x->usage[r], need[r]) > x->quota[r])
				over = true;
		if (!over)
			return false;
		if (q == below_p)
			break;
	}
	return true;
}

/*
 * R-E7's pass of victim v for preemptor j in a tree: idle victims first
 * (0), then victims of j's own leaf and those whose path parts from j's
 * deepest (1), ..., those whose path parts from j's only at the group
 * last (max_depth).
 */
int
tide_evict_tree_pass(const TideWork *w, int j, const Victim *v)
{
	if (v->idle)
		return 0;
	if (v->queue < 0)
		return 1;
	tree_memo(w, w->s->jobs[j].queue);
	return w->ev->qpass[v->queue];
}

/* Is the order of tide_evict_tree_order() for preemptor j's leaf made? */
bool
tide_evict_tree_order_made(const TideWork *w, int j)
{
	int			leaf = w->s->jobs[j].queue;

	return w->ev->kept_at[leaf] > 0 || w->ev->order_leaf == leaf;
}

/*
 * The victims in the order preemptor j takes them in a tree (R-E7): by
 * tide_evict_tree_pass(), each pass in harm order (a stable counting sort
 * of harm[]).  The order depends on the preemptor's leaf alone, and the
 * walk alternates between leaves: each leaf's order is made once and kept
 * (up to TREE_ORDERS_KEPT victim indexes in all; past that, a leaf's order
 * is made again whenever the preemptors' leaf changes).
 */
#define TREE_ORDERS_KEPT (8 * 1024 * 1024)

const int32_t *
tide_evict_tree_order(TideWork *w, int j)
{
	TideEvictWork *ev = w->ev;
	int			leaf = w->s->jobs[j].queue;
	int32_t		at[TIDE_MAX_DEPTH + 2] = {0};
	int32_t    *order;

	if (ev->kept_at[leaf] > 0)
		return ev->kept + (size_t) (ev->kept_at[leaf] - 1) * ev->nvictims;
	if (ev->order_leaf == leaf)
		return ev->tree_order;
	if (!ev->kept)
	{
		ev->nkept_max = TREE_ORDERS_KEPT / (ev->nvictims + 1);
		if (ev->nkept_max > w->s->nqueues)
			ev->nkept_max = w->s->nqueues;
		/* not zeroed: a page is touched only when an order is written there */
		ev->kept = tide_work_alloc_raw(w, sizeof(int32_t) * ((size_t) ev->nkept_max * ev->nvictims + 1));
	}
	if (ev->nkept < ev->nkept_max)
	{
		order = ev->kept + (size_t) ev->nkept++ * ev->nvictims;
		ev->kept_at[leaf] = ev->nkept;
	}
	else
	{
		order = ev->tree_order;
		ev->order_leaf = leaf;
	}
	for (int h = 0; h < ev->nvictims; h++)
	{
		ev->tree_pass[h] = (int8_t) tide_evict_tree_pass(w, j, &ev->victims[ev->harm[h]]);
		at[ev->tree_pass[h] + 1]++;
	}
	for (int k = 1; k <= TIDE_MAX_DEPTH + 1; k++)
		at[k] += at[k - 1];
	for (int h = 0; h < ev->nvictims; h++)
		order[at[ev->tree_pass[h]]++] = ev->harm[h];
	return order;
}
