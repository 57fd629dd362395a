/*
 * reserve.c: reservations (R-L2, seed 000) with EASY backfill (Slurm).
 *
 * A job with reserve = true that cannot start holds what it still lacks:
 * its queue's headroom for its gang minimum, and on the nodes where it
 * would start soonest, the free resources (and GPUs) its replicas need.
 * Jobs later in the walk cannot use held resources, except a job with a
 * time_limit that ends before the reserving job's expected start (its
 * shadow time, computed from the end times of the allocations running on
 * those nodes).  Holds last for one cycle: the next cycle recomputes them.
 * Whether a job may use held resources (tide_backfill_ok) is a fit check:
 * admission and placement ask it too, so it lives in fit.c.
 */
#include <string.h>

#include "fit.h"
#include "reserve.h"
#include "work.h"

/* Running allocations grouped by node (CSR), built on first need. */
static void
build_running_index(TideWork *w)
{
	TideSnapshot *s = w->s;
	int32_t    *fill;

	if (w->run_start)
		return;
	w->run_start = tide_work_alloc(w, sizeof(int32_t) * (s->nnodes + 1));
	w->run_list = tide_work_alloc(w, sizeof(int32_t) * (s->nrunning + 1));
	fill = tide_work_alloc(w, sizeof(int32_t) * (s->nnodes + 1));
	for (int i = 0; i < s->nrunning; i++)
		if (s->running[i].node >= 0 && s->running[i].node < s->nnodes)
			w->run_start[s->running[i].node + 1]++;
	for (int n = 0; n < s->nnodes; n++)
		w->run_start[n + 1] += w->run_start[n];
	memcpy(fill, w->run_start, sizeof(int32_t) * s->nnodes);
	for (int i = 0; i < s->nrunning; i++)
		if (s->running[i].node >= 0 && s->running[i].node < s->nnodes)
			w->run_list[fill[s->running[i].node]++] = i;
}

/* Free on node n of resource r, holds taken out, saturated (satmath.h). */
static inline int64_t
node_avail(const TideNode *n, int r)
{
	return tide_sat_sub(tide_sat_sub(n->capacity[r], n->used[r]), n->held[r]);
}

/*
 * When could one replica of req start on node n?  now if it fits (holds
 * aside); else the end time of the running allocation whose release makes
 * it fit, releasing in end-time order; TIDE_TIME_UNKNOWN if that needs an
 * allocation whose end nobody knows.
 */
static int64_t
shadow_time(TideWork *w, int ni, const int64_t *req)
{
	TideSnapshot *s = w->s;
	TideNode   *n = &s->nodes[ni];
	int64_t    *avail = w->vec2;
	int			whole;
	int			lo,
				hi,
				cnt;
	int32_t    *idx;
	int64_t		gpu = req[TIDE_RES_GPU];

	build_running_index(w);
	for (int r = 0; r < w->nres; r++)
		avail[r] = node_avail(n, r);
	whole = __builtin_popcountll(n->free_whole & ~n->held_mask);
	lo = w->run_start[ni];
	hi = w->run_start[ni + 1];
	cnt = hi - lo;
	idx = w->run_tmp + w->ix->nparts;	/* after the partition scratch */
	/* insertion sort by end_at, then alloc_id: nodes run few allocations */
	for (int i = 0; i < cnt; i++)
	{
		int32_t		x = w->run_list[lo + i];
		int			k = i;

		while (k > 0 &&
			   (s->running[idx[k - 1]].end_at > s->running[x].end_at ||
				(s->running[idx[k - 1]].end_at == s->running[x].end_at &&
				 s->running[idx[k - 1]].alloc_id > s->running[x].alloc_id)))
		{
			idx[k] = idx[k - 1];
			k--;
		}
		idx[k] = x;
	}
	for (int i = -1; i < cnt; i++)
	{
		bool		ok = true;

		if (i >= 0)
		{
			const TideRunning *a = &s->running[idx[i]];

			if (a->end_at == TIDE_TIME_UNKNOWN)
				return TIDE_TIME_UNKNOWN;
			for (int r = 0; r < w->nres; r++)
				avail[r] = tide_sat_add(avail[r], a->res[r]);
			if (a->gpu_milli == 0)
				whole += __builtin_popcountll(a->gpus);
		}
		for (int r = 0; r < w->nres && ok; r++)
			if (req[r] > avail[r])
				ok = false;
		if (ok && gpu >= TIDE_MILLI && whole < gpu / TIDE_MILLI)
			ok = false;
		if (ok)
			return i < 0 ? s->now : s->running[idx[i]].end_at;
	}
	return TIDE_TIME_UNKNOWN;
}

static void
note_held_node(TideWork *w, TideNode *n, int ni)
{
	if (!n->in_held_list)
	{
		n->in_held_list = true;
		n->hold_shadow = TIDE_TIME_UNKNOWN;
		n->hold_job = 0;
		w->held_nodes[w->nheld++] = ni;
	}
}

/* Hold on node ni what one replica of req can take of its free resources. */
static void
hold_on_node(TideWork *w, int j, int ni, const int64_t *req, int64_t shadow)
{
	TideSnapshot *s = w->s;
	TideNode   *n = &s->nodes[ni];
	TideHold   *h = &w->r->holds[w->r->nholds++];
	int64_t		gpu = req[TIDE_RES_GPU];

	note_held_node(w, n, ni);
	h->job = j;
	h->node = ni;
	h->res = w->hold_res + (size_t) (h - w->r->holds) * w->nres;
	h->shadow = shadow;
	for (int r = 0; r < w->nres; r++)
	{
		int64_t		avail = node_avail(n, r);
		int64_t		take = req[r] < avail ? req[r] : avail;

		if (take > 0)
		{
			n->held[r] = tide_sat_add(n->held[r], take);
			h->res[r] = take;
		}
	}
	if (gpu >= TIDE_MILLI)
	{
		uint64_t	avail = n->free_whole & ~n->held_mask;
		int			k = (int) (gpu / TIDE_MILLI);
		int			have = __builtin_popcountll(avail);
		uint64_t	m = tide_choose_whole_gpus(n, avail, k < have ? k : have);

		for (int g = 0; g < n->ngpus; g++)
			if ((m >> g) & 1)
				n->gpu_held[g] = TIDE_MILLI;
		n->held_mask |= m;
		h->gpus = m;
	}
	else if (gpu > 0)
	{
		int			best = -1,
					bestav = 0;

		for (int g = 0; g < n->ngpus; g++)
		{
			int			av = n->gpu_free[g] - n->gpu_held[g];

			if (av > bestav)
			{
				best = g;
				bestav = av;
			}
		}
		if (best >= 0)
		{
			n->gpu_held[best] += bestav < gpu ? bestav : gpu;
			n->held_mask |= (uint64_t) 1 << best;
			h->gpus = (uint64_t) 1 << best;
		}
	}
	if (n->hold_job == 0)
		n->hold_job = s->jobs[j].id;
}

/*
 * Job j (reserve = true) could not start: hold its queue headroom, and
 * (when admitted) node resources for each replica of its minimum on the
 * node where it would start soonest.  The holds' shadow is the latest
 * replica start: the job starts when all its minimum can.
 */
void
tide_reserve(TideWork *w, int j, int mode, bool admitted)
{
	TideSnapshot *s = w->s;
	const TideJob *job = &s->jobs[j];
	TideQueue  *q = &s->queues[job->queue];
	const int64_t *need = tide_job_minreq(w, j);
	int64_t		job_shadow = s->now;
	int			first_hold = w->r->nholds;
	int			left;

	/*
	 * R-A4: a job its owner's limit holds back waits for its owner's own
	 * jobs to end; holding the queue's headroom would hold other owners
	 * back for it
	 */
	if (!admitted && !tide_owner_within(w, job, need))
		return;

	/* queue headroom */
	{
		TideHold   *h = &w->r->holds[w->r->nholds++];

		h->job = j;
		h->node = -1;
		h->res = w->hold_res + (size_t) (h - w->r->holds) * w->nres;
		for (int r = 0; r < w->nres; r++)
		{
			if (need[r] == 0)
				continue;
			q->held[r] = tide_sat_add(q->held[r], need[r]);
			h->res[r] = need[r];
		}

		/*
		 * The queue's first hold of this decide call: listed once for
		 * tide_holds_clear, and named after its first holder, whatever
		 * resources later holds add (ids are positive, 0 = no hold)
		 */
		if (q->hold_job == 0)
		{
			q->hold_job = job->id;
			w->held_queues[w->nheld_queues++] = job->queue;
		}
	}
	if (!admitted || w->info[j].group < 0)
	{
		q->hold_shadow = s->now;	/* start unknown: no backfill */
		w->r->holds[first_hold].shadow = TIDE_TIME_UNKNOWN;
		return;
	}

	left = w->info[j].min_replicas;
	for (int ri = 0; ri < job->nroles && left > 0; ri++)
	{
		const TideRole *role = &job->roles[ri];
		const TideGroup *g = &w->ix->groups[w->info[j].group];

		for (int rep = 0; rep < role->replicas && left > 0; rep++, left--)
		{
			int			best = -1;
			int64_t		best_shadow = 0;
			int64_t		best_lack = 0;

			for (int k = g->lo; k < g->hi; k++)
			{
				int			ni = w->ix->order[k];
				TideNode   *n = &s->nodes[ni];
				const TidePart *p = &w->ix->parts[n->part];
				int64_t		sh,
							lack = 0;

				if (n->state != TIDE_NODE_READY || !tide_part_allowed(w, j, role, p) ||
					!tide_node_matches(job, n, ni, w->info[j].avoids) ||
					!tide_part_card_ok(w, job, p, role, mode, NULL))
					continue;
				if (tide_node_too_small(w, n, role->request) >= 0)
					continue;
				sh = shadow_time(w, ni, role->request);
				for (int r = 0; r < w->nres; r++)
				{
					int64_t		avail = node_avail(n, r);

					/* per mille of the node lacking; saturating for huge values */
					if (role->request[r] > avail && n->capacity[r] > 0)
						lack = tide_sat_add(lack, tide_sat_muldiv(tide_sat_sub(role->request[r], avail),
																  1000, n->capacity[r]));
				}
				/* soonest start, then least lacking, then name order */
				if (best < 0 || sh < best_shadow || (sh == best_shadow && lack < best_lack))
				{
					best = ni;
					best_shadow = sh;
					best_lack = lack;
				}
			}
			if (best < 0)
				continue;
			if (best_shadow > job_shadow)
				job_shadow = best_shadow;
			hold_on_node(w, j, best, role->request, best_shadow);
		}
	}
	/*
	 * The job starts when its last replica can: that is every hold's shadow.
	 * A node's (or queue's) hold_shadow is the time by which a backfill job
	 * must end: the earliest shadow of its holders, now when one is unknown.
	 */
	{
		int64_t		until = job_shadow == TIDE_TIME_UNKNOWN ? s->now : job_shadow;

		for (int i = first_hold; i < w->r->nholds; i++)
		{
			TideHold   *h = &w->r->holds[i];

			h->shadow = job_shadow;
			if (h->node >= 0 && until < s->nodes[h->node].hold_shadow)
				s->nodes[h->node].hold_shadow = until;
		}
		if (until < q->hold_shadow)
			q->hold_shadow = until;
	}
}

/* Give back every hold: they last one decide call. */
void
tide_holds_clear(TideWork *w)
{
	TideSnapshot *s = w->s;

	for (int i = 0; i < w->nheld; i++)
	{
		TideNode   *n = &s->nodes[w->held_nodes[i]];

		memset(n->held, 0, sizeof(int64_t) * w->nres);
		memset(n->gpu_held, 0, sizeof(n->gpu_held));
		n->held_mask = 0;
		n->hold_shadow = TIDE_TIME_UNKNOWN;
		n->hold_job = 0;
		n->in_held_list = false;
	}
	w->nheld = 0;
	for (int i = 0; i < w->nheld_queues; i++)
	{
		TideQueue  *q = &s->queues[w->held_queues[i]];

		memset(q->held, 0, sizeof(int64_t) * w->nres);
		q->hold_job = 0;
		q->hold_shadow = TIDE_TIME_UNKNOWN;
	}
	w->nheld_queues = 0;
}
