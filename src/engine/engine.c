/*
 * engine.c: one scheduling decision over a snapshot (tide_decide).
 *
 * The walk (docs/policy.md, "The walk"):
 *   1. non-idle jobs, each next job taken from the queue R-O4 ranks first at
 *      that moment (queue priority, then dominant share of quota, of the
 *      usage decayed with the half-life when one is set (R-O6), then name), each queue's jobs in R-O3 then R-O1 order.  Guaranteed jobs
 *      (within quota, R-A1) are placed in this pass; borrowing jobs are set
 *      aside, so a borrowing job never takes what a guaranteed job of this
 *      cycle could use.
 *   2. the borrowing jobs, in the order they were set aside.
 *   3. idle jobs of each resource group, retry lane first, then R-O1 (R-O2).
 * A job that fits is placed, one that does not is skipped and the walk goes
 * on (R-L1); a reserving job that does not fit holds what it lacks (R-L2).
 * A job shape that failed fails again for the rest of the walk (nothing is
 * released inside a cycle), so the shape cache (prep.c) answers repeats in
 * O(1).
 */
#include <math.h>
#include <string.h>

#include "admit.h"
#include "claims.h"
#include "evict.h"
#include "frag.h"
#include "order.h"
#include "owner_order.h"
#include "place.h"
#include "prep.h"
#include "reserve.h"
#include "tree.h"
#include "work.h"

/*
 * Try to place job j (already admitted) in mode; fills its outcome.  A
 * failure is diagnosed once per shape (R-C2) and reserves when asked (R-L2).
 * The result says whether it was placed and which card key blocked it.
 */
static TidePlaceResult
try_place_one(TideWork *w, int j, int mode)
{
	TideOutcome *o = &w->r->outcomes[j];
	TideShapeProbe probe;
	int			start = w->r->nplacements;
	TidePlaceResult pr;

	if (w->info[j].cacheable)
	{
		int			same = tide_shape_find(w, j, mode, &probe);

		if (same >= 0)
		{
			const TideOutcome *rep = &w->r->outcomes[same];

			w->r->counters.shape_cache_hits++;
			o->status = rep->status;
			o->nreasons = rep->nreasons;
			o->reasons = rep->reasons;
			memset(&pr, 0, sizeof(pr));
			pr.fail_role = -1;
			pr.card.res = -1;
			pr.card.queue = -1;
			if (w->s->jobs[j].reserve && o->status == TIDE_PENDING)
				tide_reserve(w, j, mode, true);
			return pr;
		}
	}
	pr = tide_place_job(w, j, mode);
	if (pr.placed)
	{
		o->status = TIDE_PLACED;
		o->first_placement = start;
		o->nplacements = w->r->nplacements - start;
		o->nreasons = 0;
		return pr;
	}
	o->status = TIDE_PENDING;
	o->nreasons = 0;
	if (w->s->no_reasons && pr.fail_role >= 0)
		tide_diagnose_status(w, j, o, &pr);	/* the forecast: no texts */
	else if (tide_claims_waiting(w, j) && tide_diagnose_quiet(w, j, mode, o, &pr))
	{
		/* R-E6: a claim owner still waiting says only that, after the walk */
	}
	/* R-L4: a job that avoids nodes counts them from its shape's counts */
	else if (!w->info[j].avoid_shape || !tide_diagnose_avoider(w, j, mode, o, &pr))
		tide_diagnose(w, j, mode, o, &pr);
	/* a failure that depended on card quota is not a property of the shape */
	if (w->info[j].cacheable && pr.card.res < 0)
		tide_shape_remember(w, &probe, j);
	/* a job the card quota sends to the borrowing pass reserves there, once */
	if (w->s->jobs[j].reserve && o->status == TIDE_PENDING &&
		!(mode == MODE_GUARANTEED && pr.card.res >= 0 &&
		  pr.card.mode == MODE_GUARANTEED))
		tide_reserve(w, j, mode, true);
	return pr;
}

/* try_place_one, with the resources held for j by evictions (R-E6) freed for it. */
static TidePlaceResult
try_place(TideWork *w, int j, int mode)
{
	TidePlaceResult pr;

	tide_claims_take(w, j);
	pr = try_place_one(w, j, mode);
	tide_claims_give(w, j, pr.placed);
	return pr;
}

static void
walk_record(TideWork *w, int j)
{
	w->r->outcomes[j].walk_pos = w->r->nwalk;
	w->r->walk[w->r->nwalk++] = j;
}

/*
 * The result's arrays and the walk's scratch, sized from the snapshot:
 * room for every replica's placement, a hold per reserving job and per
 * replica of it, the largest gang.
 */
static void
alloc_walk(TideWork *w)
{
	TideSnapshot *s = w->s;
	TideResult *r = w->r;
	int			nres = s->nres;
	int64_t		total_replicas = 0;
	int			max_replicas = 1;
	int64_t		hold_cap = 0;
	int64_t		max_running = 0;

	for (int j = 0; j < s->njobs; j++)
	{
		int			reps = tide_job_replicas(&s->jobs[j]);

		total_replicas += reps;
		if (reps > max_replicas)
			max_replicas = reps;
		if (s->jobs[j].reserve)
			hold_cap += 1 + reps;
	}
	{
		int32_t    *cnt = tide_alloc(s, sizeof(int32_t) * (s->nnodes + 1));

		for (int i = 0; i < s->nrunning; i++)
			if (s->running[i].node >= 0 && s->running[i].node < s->nnodes &&
				++cnt[s->running[i].node] > max_running)
				max_running = cnt[s->running[i].node];
		if (s->mem.free)
			s->mem.free(s->mem.ctx, cnt);
	}

	r->njobs = s->njobs;
	r->outcomes = tide_work_alloc(w, sizeof(TideOutcome) * (s->njobs + 1));
	/* room for every replica, written as placed: not zeroed, mostly untouched */
	r->placements = tide_work_alloc_raw(w, sizeof(TidePlacement) * (total_replicas + 1));
	r->holds = tide_work_alloc(w, sizeof(TideHold) * (hold_cap + 1));
	r->walk = tide_work_alloc_raw(w, sizeof(int32_t) * (s->njobs + 1));
	w->hold_res = tide_work_alloc(w, sizeof(int64_t) * nres * (hold_cap + 1));
	w->info = tide_work_alloc(w, sizeof(TideJobInfo) * (s->njobs + 1));
	w->queue_cards = tide_work_alloc(w, sizeof(bool) * (s->nqueues + 1));
	if (w->ix->max_depth > 1)
		tide_tree_prepare(w);	/* R-A3: what the levels above each leaf limit */
	w->gang_nodes = tide_work_alloc(w, sizeof(int32_t) * (max_replicas + 1));
	w->held_nodes = tide_work_alloc(w, sizeof(int32_t) * (s->nnodes + 1));
	w->held_queues = tide_work_alloc(w, sizeof(int32_t) * (s->nqueues + 1));
	w->run_tmp = tide_work_alloc(w, sizeof(int32_t) * (w->ix->nparts + max_running + 1));
	w->vec = tide_work_alloc(w, sizeof(int64_t) * (nres + 1));
	w->vec2 = tide_work_alloc(w, sizeof(int64_t) * (nres + 1));
	w->group_nonidle = tide_work_alloc(w, sizeof(int64_t) * nres * (w->ix->ngroups + 1));
}

/* Every job pending until the walk says otherwise; R-A2 checks without a node scan. */
static void
check_jobs(TideWork *w)
{
	for (int j = 0; j < w->s->njobs; j++)
	{
		TideOutcome *o = &w->r->outcomes[j];

		o->walk_pos = -1;
		o->first_placement = -1;
		o->status = TIDE_PENDING;
		w->info[j].bad = !tide_static_check(w, j, o);
		if (w->info[j].bad)
			o->status = TIDE_UNSCHEDULABLE;
	}
}

/*
 * The walk takes a queue's jobs in its order, which is not the order of the
 * jobs' arrays: each job's first touch would be a cache (and TLB) miss, the
 * biggest single cost of walking a backlog of 100k jobs that mostly stays
 * pending.  The job this far ahead in the same queue, usually the walk's
 * next picks but one, is asked for early.  Only a hint: nothing depends on
 * it being the job that comes.  The borrowing and idle passes take lists,
 * and ask for their jobs the same way.
 */
#define WALK_PREFETCH 4

static inline void
prefetch(const void *p)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
	/* gcc's dead-code pass drops __builtin_prefetch here (gcc 12, -O1 up) */
	__asm__ volatile ("prefetcht0 %0"::"m" (*(const char *) p));
#elif defined(__GNUC__)
	__builtin_prefetch(p);
#endif
}

/* Both ends of an entry: an entry may straddle two cache lines. */
static inline void
prefetch_entry(const void *p, size_t size)
{
	prefetch(p);
	prefetch((const char *) p + size - 1);
}

static inline void
prefetch_job(const TideWork *w, int j)
{
	prefetch_entry(&w->s->jobs[j], sizeof(TideJob));
	prefetch_entry(&w->info[j], sizeof(TideJobInfo));
	prefetch_entry(&w->r->outcomes[j], sizeof(TideOutcome));
}

/*
 * Pass 1: non-idle jobs, R-O4 across queues; guaranteed jobs are placed,
 * borrowing ones set aside in deferred (their count returned).
 */
static int
walk_queues(TideWork *w, int32_t *deferred)
{
	TideSnapshot *s = w->s;
	TideResult *r = w->r;
	int32_t    *qstart = tide_work_alloc(w, sizeof(int32_t) * (s->nqueues + 2));
	int32_t    *qnext = tide_work_alloc(w, sizeof(int32_t) * (s->nqueues + 1));
	int32_t    *qlist;
	int			ndeferred = 0;
	bool		tree = w->ix->max_depth > 1;
	TideQueueHeap heap;
	TideTreeHeap theap;
	TideLeaves	leaves;

	qlist = tide_order_queue_jobs(w, qstart);
	for (int q = 0; q < s->nqueues; q++)
		qnext[q] = qstart[q];
	if (tree)
		tide_tree_heap_init(w, &theap, qstart);	/* R-O5 */
	else
		tide_queue_heap_init(w, &heap, qstart);
	tide_leaf_begin(w, &leaves, qlist, qstart);	/* R-O7: owners in a queue */
	for (;;)
	{
		int			q = tree ? tide_tree_heap_top(&theap) : (heap.n > 0 ? heap.q[0] : -1);
		int			j;
		TideOutcome *o;
		int			klass;
		bool		placed = false;

		if (q < 0)
			break;
		j = tide_leaf_next(&leaves, q, qlist, qnext);
		/* (a queue in owner order asks for its own: owner_order.c) */
		if (qnext[q] + WALK_PREFETCH < qstart[q + 1] && !tide_leaf_owned(&leaves, q))
			prefetch_job(w, qlist[qnext[q] + WALK_PREFETCH]);
		o = &r->outcomes[j];
		if (w->info[j].bad)
			walk_record(w, j);
		else if ((klass = tide_admit(w, j, o)) == TIDE_CLASS_NONE)
		{
			o->klass = TIDE_CLASS_NONE;
			if (s->jobs[j].reserve)
				tide_reserve(w, j, MODE_BORROW, false);
			walk_record(w, j);
		}
		else if (klass == TIDE_CLASS_BORROWING)
		{
			o->klass = TIDE_CLASS_BORROWING;
			deferred[ndeferred++] = j;
		}
		else
		{
			TidePlaceResult pr;

			o->klass = TIDE_CLASS_GUARANTEED;
			pr = try_place(w, j, MODE_GUARANTEED);
			placed = pr.placed;
			if (!placed && pr.card.res >= 0 && pr.card.mode == MODE_GUARANTEED &&
				o->status == TIDE_PENDING)
			{
				/* card quota left no guaranteed place: try borrowing later */
				o->nreasons = 0;
				o->klass = TIDE_CLASS_BORROWING;
				deferred[ndeferred++] = j;
			}
			else
				walk_record(w, j);
		}
		tide_leaf_done(w, &leaves, q, j, placed);
		if (qnext[q] == qstart[q + 1])
		{
			if (tree)
				tide_tree_heap_pop(&theap, q, placed);
			else
				tide_queue_heap_pop(&heap);
		}
		else if (placed)
		{
			if (tree)
				tide_tree_heap_update(&theap, q);
			else
				tide_queue_heap_update(&heap);
		}
	}
	if (tree)
		tide_tree_order_lenders(w, deferred, ndeferred);	/* R-A3: nearest first */
	return ndeferred;
}

/* Pass 2: borrowing jobs, in the order they were set aside. */
static void
walk_borrowing(TideWork *w, const int32_t *deferred, int ndeferred)
{
	for (int i = 0; i < ndeferred; i++)
	{
		int			j = deferred[i];
		TideOutcome *o = &w->r->outcomes[j];

		if (i + WALK_PREFETCH < ndeferred)
			prefetch_job(w, deferred[i + WALK_PREFETCH]);

		o->nreasons = 0;
		if (tide_admit(w, j, o) == TIDE_CLASS_NONE)
		{
			o->status = TIDE_PENDING;
			if (w->s->jobs[j].reserve)
				tide_reserve(w, j, MODE_BORROW, false);
		}
		else
			try_place(w, j, MODE_BORROW);
		walk_record(w, j);
	}
}

/* Pass 3: idle jobs (R-O2), after every non-idle job. */
static void
walk_idle(TideWork *w)
{
	TideSnapshot *s = w->s;
	int			nres = s->nres;
	int32_t		nidle;
	int32_t    *idle = tide_order_idle_jobs(w, &nidle);

	for (int g = 0; g < w->ix->ngroups; g++)
		for (int q = 0; q < s->nqueues; q++)
			if (w->ix->queue_group[q] == g && !s->queues[q].inner)	/* leaves: inner
																		 * queues sum them */
				for (int k = 0; k < nres; k++)
					w->group_nonidle[(size_t) g * nres + k] =
						tide_sat_add(w->group_nonidle[(size_t) g * nres + k], s->queues[q].usage[k]);
	for (int i = 0; i < nidle; i++)
	{
		int			j = idle[i];
		TideOutcome *o = &w->r->outcomes[j];

		if (i + WALK_PREFETCH < nidle)
			prefetch_job(w, idle[i + WALK_PREFETCH]);

		o->klass = TIDE_CLASS_IDLE;
		if (!w->info[j].bad)
		{
			if (!tide_admit_idle(w, j, o))
			{
				if (s->jobs[j].reserve)
					tide_reserve(w, j, MODE_IDLE, false);
			}
			else
				try_place(w, j, MODE_IDLE);
		}
		walk_record(w, j);
	}
}

static void
count_outcomes(TideResult *r)
{
	for (int j = 0; j < r->njobs; j++)
	{
		TideOutcome *o = &r->outcomes[j];

		r->counters.jobs_considered++;
		if (o->status == TIDE_PLACED)
			r->counters.jobs_placed++;
		else if (o->status == TIDE_UNSCHEDULABLE)
			r->counters.jobs_unschedulable++;
		else
			r->counters.jobs_pending++;
	}
	r->counters.placements = r->nplacements;
	r->counters.holds = r->nholds;
}

TideResult *
tide_decide(TideSnapshot *s)
{
	TideWork	w;
	int32_t    *deferred;
	int			ndeferred;

	if (!s->index)
		tide_snapshot_finish(s, NULL, 0);
	tide_fair_decay(s);			/* R-O6: the shares' averages up to now */
	tide_owner_fair_decay(s);	/* R-O7: the owners' too */
	tide_work_begin(&w, s);
	alloc_walk(&w);

	/* holds from an earlier call on a kept snapshot never survive */
	for (int i = 0; i < s->nnodes; i++)
		if (s->nodes[i].in_held_list)
			w.held_nodes[w.nheld++] = i;
	for (int i = 0; i < s->nqueues; i++)
		if (s->queues[i].hold_job)
			w.held_queues[w.nheld_queues++] = i;
	tide_holds_clear(&w);

	tide_prepare_jobs(&w);
	tide_frag_begin(&w);
	tide_claims_begin(&w);
	check_jobs(&w);

	deferred = tide_work_alloc_raw(&w, sizeof(int32_t) * (s->njobs + 1));
	ndeferred = walk_queues(&w, deferred);
	walk_borrowing(&w, deferred, ndeferred);
	walk_idle(&w);

	/* evictions for jobs left pending (evict.c, when the snapshot asks) */
	tide_holds_clear(&w);
	tide_evict_pass(&w);

	count_outcomes(w.r);
	/* holds are visible in r->holds; the snapshot forgets them now */
	tide_holds_clear(&w);
	tide_claims_end(&w);
	return w.r;
}
