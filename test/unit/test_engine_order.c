/*
 * test_engine_order.c: the walk's job order (order.c) against a plain
 * qsort with the rule's comparator (R-O3 retry lane, then R-O1 priority,
 * created_at, id, then the index).
 *
 * order.c sorts by keys read once, spreads them by lane and leaves a lane
 * that is in order already as it is: every shortcut must give the one
 * total order.  Random backlogs of 0 to 5,000 jobs in 1 to 12 queues, some
 * idle, in id order (the load's) or shuffled, with few or many priorities
 * (more lanes than the spread handles), ties on created_at and on ids
 * (the index decides), and retries; each queue's range and the idle list
 * are compared with the reference element by element.
 */
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "test_engine_fixture.h"
#include "order.h"
#include "work.h"

static const TideJob *ref_jobs;	/* qsort has no context argument */

/* The rule, read from the jobs as the engine read it before keys. */
static int
cmp_ref(const void *a, const void *b)
{
	int32_t		ia = *(const int32_t *) a,
				ib = *(const int32_t *) b;
	const TideJob *x = &ref_jobs[ia];
	const TideJob *y = &ref_jobs[ib];

	if (x->is_retry != y->is_retry)
		return x->is_retry ? -1 : 1;
	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	if (x->created_at != y->created_at)
		return x->created_at < y->created_at ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return ia < ib ? -1 : ia > ib;
}

static int
rnd(int n)
{
	return (int) (random() % n);
}

/* One backlog; returns how many ranges differed from the reference. */
static int
one_case(int njobs, int nqueues, int nprio, bool shuffled, int64_t created_span)
{
	FxArena		arena = {NULL, 0, 0};
	TideMem		mem = {fx_alloc, NULL, &arena};
	TideSnapshot *s = tide_snapshot_create(&mem);
	TideJob    *jobs = calloc(njobs + 1, sizeof(TideJob));
	int32_t    *starts = calloc(nqueues + 2, sizeof(int32_t));
	int32_t    *ref = calloc(njobs + 1, sizeof(int32_t));
	int32_t    *list,
			   *idle;
	int32_t		nidle;
	int			bad = 0,
				n;
	TideWork	w;

	for (int j = 0; j < njobs; j++)
	{
		jobs[j].id = 1000 + j - (rnd(50) == 0 ? 1 : 0);	/* some ids tie */
		jobs[j].queue = rnd(nqueues);
		jobs[j].priority = rnd(nprio) - nprio / 2;
		jobs[j].created_at = created_span ? j * 10 + rnd((int) created_span) : 7;
		jobs[j].is_retry = rnd(10) == 0;
		jobs[j].idle = rnd(6) == 0;
	}
	if (shuffled)
		for (int j = njobs - 1; j > 0; j--)
		{
			int			k = rnd(j + 1);
			TideJob		t = jobs[j];

			jobs[j] = jobs[k];
			jobs[k] = t;
		}
	s->jobs = jobs;
	s->njobs = njobs;
	s->nqueues = nqueues;
	ref_jobs = jobs;

	tide_work_begin(&w, s);
	list = tide_order_queue_jobs(&w, starts);
	for (int q = 0; q < nqueues; q++)
	{
		n = 0;
		for (int j = 0; j < njobs; j++)
			if (!jobs[j].idle && jobs[j].queue == q)
				ref[n++] = j;
		qsort(ref, n, sizeof(int32_t), cmp_ref);
		if (n != starts[q + 1] - starts[q] ||
			memcmp(ref, list + starts[q], sizeof(int32_t) * n) != 0)
			bad++;
	}
	idle = tide_order_idle_jobs(&w, &nidle);
	n = 0;
	for (int j = 0; j < njobs; j++)
		if (jobs[j].idle)
			ref[n++] = j;
	qsort(ref, n, sizeof(int32_t), cmp_ref);
	if (n != nidle || memcmp(ref, idle, sizeof(int32_t) * n) != 0)
		bad++;

	for (int i = 0; i < arena.n; i++)
		free(arena.p[i]);
	free(arena.p);
	free(ref);
	free(starts);
	free(jobs);
	return bad;
}

int
main(void)
{
	static const int sizes[] = {0, 1, 2, 3, 17, 200, 1000, 5000};
	int			bad = 0,
				cases = 0;

	srandom(20261127);
	for (int si = 0; si < (int) (sizeof(sizes) / sizeof(sizes[0])); si++)
		for (int nq = 1; nq <= 12; nq += 11)
			for (int shuffled = 0; shuffled <= 1; shuffled++)
			{
				/* few lanes, created_at in id order with jitter */
				bad += one_case(sizes[si], nq, 3, shuffled, 25);
				/* more lanes than the spread takes */
				bad += one_case(sizes[si], nq, 80, shuffled, 25);
				/* every created_at equal: ids and indexes decide */
				bad += one_case(sizes[si], nq, 2, shuffled, 0);
				/* in order already */
				bad += one_case(sizes[si], nq, 1, shuffled, 1);
				cases += 4;
			}
	is_int(bad, 0, "%d backlogs: every queue's order and the idle order are the rule's", cases);

	/* sixty more of random sizes, lanes and jitter */
	bad = 0;
	for (int i = 0; i < 60; i++)
		bad += one_case(rnd(3000), 1 + rnd(20), 1 + rnd(40), rnd(2), rnd(4) == 0 ? 0 : 1 + rnd(100));
	is_int(bad, 0, "sixty random backlogs in the rule's order");
	return done_testing();
}
