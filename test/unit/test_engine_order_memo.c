/*
 * test_engine_order_memo.c: the walk's job order taken from the order memo
 * of an earlier decide (order.c) against the order sorted afresh, which
 * test_engine_order.c holds to the rule (R-O3 retry lane, then R-O1
 * priority, created_at, id).
 *
 * Random backlogs of up to 3,000 jobs in 1 to 12 queues, in id order (the
 * load's), decided again and again with random changes in between: jobs
 * leave, arrive with the largest ids or between existing ones (a held job
 * released), change priority, created_at, retry lane, idleness or queue;
 * the number of queues grows and shrinks.  Each decide is given the memo
 * of the one before, or an older one, or one of another backlog, or none;
 * every queue's range and the idle list must be the rule's order, and most
 * decides must have taken most of their order from the memo (else the
 * test proves nothing).  Backlogs whose ids do not ascend must neither use
 * a memo nor leave one.
 */
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "test_engine_fixture.h"
#include "order.h"
#include "work.h"

static int
rnd(int n)
{
	return (int) (random() % n);
}

static void *
memo_alloc(void *ctx, size_t size)
{
	void	   *p = malloc(size);

	(void) ctx;
	if (!p)
		abort();
	return p;
}

static void
memo_free(void *ctx, void *p)
{
	(void) ctx;
	free(p);
}

/* A backlog that lives across decides: jobs in id order. */
typedef struct Backlog
{
	TideJob    *jobs;
	int			n,
				cap,
				nqueues,
				nprio;
	int64_t		next_id;
} Backlog;

static void
random_job(Backlog *b, TideJob *job, int64_t id)
{
	memset(job, 0, sizeof(*job));
	job->id = id;
	job->queue = rnd(b->nqueues);
	job->priority = rnd(b->nprio) - b->nprio / 2;
	job->created_at = id * 3 + rnd(40);	/* mostly in id order, with jitter */
	if (rnd(8) == 0)
		job->created_at = rnd(1000);	/* some far out of it */
	job->is_retry = rnd(12) == 0;
	job->idle = rnd(7) == 0;
}

static void
backlog_init(Backlog *b, int n)
{
	b->cap = n + 64;
	b->jobs = calloc(b->cap, sizeof(TideJob));
	b->nqueues = 1 + rnd(12);
	b->nprio = 1 + rnd(rnd(3) == 0 ? 60 : 5);
	b->n = 0;
	for (int j = 0; j < n; j++)
		random_job(b, &b->jobs[b->n++], 10 * (j + 1));	/* room between ids */
	b->next_id = 10 * (n + 1);
}

static void
backlog_insert(Backlog *b, const TideJob *job)
{
	int			at = b->n;

	if (b->n == b->cap)
	{
		b->cap *= 2;
		b->jobs = realloc(b->jobs, sizeof(TideJob) * b->cap);
	}
	while (at > 0 && b->jobs[at - 1].id > job->id)
		at--;
	if (at > 0 && b->jobs[at - 1].id == job->id)
		return;					/* taken */
	memmove(&b->jobs[at + 1], &b->jobs[at], sizeof(TideJob) * (b->n - at));
	b->jobs[at] = *job;
	b->n++;
}

/* What happens between two cycles: busy (a few) or many changes. */
static void
backlog_change(Backlog *b)
{
	int			many = rnd(10) == 0 ? b->n / 3 + 1 : 1 + rnd(20);

	for (int c = 0; c < many; c++)
	{
		int			what = rnd(9);
		TideJob		job;

		if (b->n == 0)
			what = 1;
		if (what == 0)
		{
			int			at = rnd(b->n);	/* leaves */

			memmove(&b->jobs[at], &b->jobs[at + 1], sizeof(TideJob) * (b->n - at - 1));
			b->n--;
		}
		else if (what == 1)
		{
			random_job(b, &job, b->next_id);	/* arrives */
			b->next_id += 1 + rnd(5);
			backlog_insert(b, &job);
		}
		else if (what == 2)
		{
			/* released after a hold: an old id between others */
			random_job(b, &job, 1 + rnd((int) b->next_id));
			backlog_insert(b, &job);
		}
		else
		{
			TideJob    *x = &b->jobs[rnd(b->n)];

			if (what == 3)
				x->priority = rnd(b->nprio) - b->nprio / 2;
			else if (what == 4)
				x->created_at += rnd(3) - 1;
			else if (what == 5)
				x->is_retry = !x->is_retry;
			else if (what == 6)
				x->idle = !x->idle;
			else if (what == 7)
				x->queue = rnd(b->nqueues);
			else
				x->priority += 0;	/* touched, unchanged */
		}
	}
	if (rnd(25) == 0)
	{
		/* queues added or dropped: the jobs of a dropped one move */
		b->nqueues = 1 + rnd(12);
		for (int j = 0; j < b->n; j++)
			if (b->jobs[j].queue >= b->nqueues)
				b->jobs[j].queue = rnd(b->nqueues);
	}
}

typedef struct Decided
{
	int			bad;			/* lists that differ from the sorted ones */
	int			listed;			/* jobs in the lists */
	int32_t		kept;			/* of them placed from the memo */
	TideOrderMemo *memo;		/* the one this decide left */
} Decided;

/*
 * The lists (the queues' then the idle one) of jobs[0..n) into out, with
 * memo (may be NULL) given, a new one asked for when keep; the new one in
 * *left.
 */
static void
make_lists(const TideJob *src, int n, int nqueues, const TideOrderMemo *memo, bool keep,
		   int32_t *out, TideOrderMemo **left)
{
	FxArena		arena = {NULL, 0, 0};
	TideMem		mem = {fx_alloc, NULL, &arena};
	TideMem		memo_mem = {memo_alloc, memo_free, NULL};
	TideSnapshot *s = tide_snapshot_create(&mem);
	TideJob    *jobs = calloc(n + 1, sizeof(TideJob));
	int32_t    *starts = calloc(nqueues + 2, sizeof(int32_t));
	int32_t    *list,
			   *idle;
	int32_t		nidle;
	TideWork	w;

	memcpy(jobs, src, sizeof(TideJob) * n);
	s->jobs = jobs;
	s->njobs = n;
	s->nqueues = nqueues;
	s->order_memo = memo;
	if (keep)
		s->order_mem = memo_mem;
	tide_work_begin(&w, s);
	list = tide_order_queue_jobs(&w, starts);
	idle = tide_order_idle_jobs(&w, &nidle);
	memcpy(out, list, sizeof(int32_t) * starts[nqueues]);
	memcpy(out + starts[nqueues], idle, sizeof(int32_t) * nidle);
	*left = w.r->order_memo;
	for (int i = 0; i < arena.n; i++)
		free(arena.p[i]);
	free(arena.p);
	free(starts);
	free(jobs);
}

/* The order of jobs[0..n) with memo (may be NULL) against it sorted afresh. */
static Decided
decide_order(const TideJob *jobs, int n, int nqueues, const TideOrderMemo *memo)
{
	int32_t    *sorted = calloc(n + 1, sizeof(int32_t));
	int32_t    *got = calloc(n + 1, sizeof(int32_t));
	TideOrderMemo *none;
	Decided		d = {0, 0, 0, NULL};

	make_lists(jobs, n, nqueues, NULL, false, sorted, &none);
	make_lists(jobs, n, nqueues, memo, true, got, &d.memo);
	d.bad = none != NULL || memcmp(sorted, got, sizeof(int32_t) * n) != 0;
	d.listed = n;
	d.kept = tide_order_memo_kept(d.memo);
	free(got);
	free(sorted);
	return d;
}

int
main(void)
{
	int			bad = 0,
				decides = 0,
				served = 0,
				no_memo_left = 0;
	int64_t		listed = 0,
				kept = 0;
	TideOrderMemo *foreign = NULL;

	srandom(20261127);
	for (int seq = 0; seq < 40; seq++)
	{
		Backlog		b;
		TideOrderMemo *memos[3] = {NULL, NULL, NULL};	/* newest first */
		int			rounds = 10 + rnd(20);

		backlog_init(&b, rnd(4) == 0 ? rnd(40) : rnd(3000));
		for (int r = 0; r < rounds; r++)
		{
			int			pick = rnd(20);
			const TideOrderMemo *give = memos[0];
			Decided		d;

			if (pick == 0)
				give = NULL;
			else if (pick == 1)
				give = memos[2] ? memos[2] : memos[1];	/* stale: an older cycle's */
			else if (pick == 2)
				give = foreign;	/* another backlog's */
			d = decide_order(b.jobs, b.n, b.nqueues, give);
			bad += d.bad;
			decides++;
			listed += d.listed;
			kept += d.kept;
			if (give == memos[0] && memos[0] && d.kept * 2 >= d.listed && d.listed > 0)
				served++;
			tide_order_memo_free(memos[2]);
			memos[2] = memos[1];
			memos[1] = memos[0];
			memos[0] = d.memo;
			backlog_change(&b);
		}
		tide_order_memo_free(foreign);
		foreign = memos[0];
		tide_order_memo_free(memos[1]);
		tide_order_memo_free(memos[2]);
		free(b.jobs);
	}
	is_int(bad, 0, "%d decides in 40 changing backlogs: every queue's order and the idle order are the sorted ones",
		   decides);
	ok(served > decides / 2 && kept * 10 > listed * 6,
	   "the memo served: %d decides took most of their order from the last one's memo, %lld of %lld jobs in all",
	   served, (long long) kept, (long long) listed);

	/* ids that do not ascend: no memo used, none left */
	bad = 0;
	for (int i = 0; i < 20; i++)
	{
		Backlog		b;
		Decided		d,
					e;

		backlog_init(&b, 50 + rnd(500));
		d = decide_order(b.jobs, b.n, b.nqueues, NULL);
		for (int k = 0; k < 3; k++)
		{
			int			x = k == 0 ? 0 : rnd(b.n),
						y = k == 0 ? 1 : rnd(b.n);
			TideJob		t = b.jobs[x];

			b.jobs[x] = b.jobs[y];
			b.jobs[y] = t;
		}
		if (rnd(2))
			b.jobs[1].id = b.jobs[0].id;	/* a tie: the index decides */
		e = decide_order(b.jobs, b.n, b.nqueues, d.memo);
		bad += e.bad;
		if (d.memo && !e.memo)
			no_memo_left++;
		tide_order_memo_free(d.memo);
		tide_order_memo_free(e.memo);
		free(b.jobs);
	}
	is_int(bad, 0, "jobs out of id order, given a memo: the sorted order");
	is_int(no_memo_left, 20, "jobs out of id order neither use a memo nor leave one");
	tide_order_memo_free(foreign);
	return done_testing();
}
