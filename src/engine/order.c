/*
 * order.c: which pending job is considered first (R-O1 to R-O4).
 *
 * Non-idle jobs are kept per queue, each queue's list in R-O3 then R-O1
 * order: retry jobs first, then higher priority, earlier created_at,
 * smaller id.  The walk (engine.c) takes the next job from the queue that
 * R-O4 ranks first at that moment: higher queue priority, then lower
 * dominant share of quota (of the usage now, or of the usage decayed over
 * tide.fair_share_half_life, R-O6: share.c), then queue name: the top of
 * the queue heap (tide_queue_heap_*) kept here.  Idle jobs come after every
 * non-idle job (R-O2), in one list per resource group: retry first, then
 * R-O1.
 */
#include <string.h>

#include "order.h"
#include "share.h"
#include "sort.h"
#include "work.h"

/* R-O3 then R-O1: retry lane, priority, created_at, id (then index: total). */
static int
cmp_job(const void *a, const void *b, void *ctx)
{
	const TideSnapshot *s = ctx;
	int32_t		ia = *(const int32_t *) a,
				ib = *(const int32_t *) b;
	const TideJob *x = &s->jobs[ia];
	const TideJob *y = &s->jobs[ib];

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

/*
 * Non-idle jobs grouped by queue (counting sort), each queue sorted.
 * starts[q]..starts[q+1] is queue q's range in the returned array.
 */
int32_t *
tide_order_queue_jobs(TideWork *w, int32_t *starts)
{
	TideSnapshot *s = w->s;
	int32_t    *list = tide_work_alloc(w, sizeof(int32_t) * (s->njobs + 1));
	int32_t    *fill = tide_work_alloc(w, sizeof(int32_t) * (s->nqueues + 1));
	for (int q = 0; q <= s->nqueues; q++)
		starts[q] = 0;
	for (int j = 0; j < s->njobs; j++)
		if (!s->jobs[j].idle)
			starts[s->jobs[j].queue + 1]++;
	for (int q = 0; q < s->nqueues; q++)
		starts[q + 1] += starts[q];
	for (int q = 0; q < s->nqueues; q++)
		fill[q] = starts[q];
	for (int j = 0; j < s->njobs; j++)
		if (!s->jobs[j].idle)
			list[fill[s->jobs[j].queue]++] = j;
	for (int q = 0; q < s->nqueues; q++)
		if (starts[q + 1] - starts[q] > 1)
			tide_sort(list + starts[q], starts[q + 1] - starts[q], sizeof(int32_t), cmp_job, s);
	return list;
}

/* Idle jobs of all groups, retry lane first then R-O1 (groups never interact). */
int32_t *
tide_order_idle_jobs(TideWork *w, int32_t *nidle)
{
	TideSnapshot *s = w->s;
	int32_t    *list = tide_work_alloc(w, sizeof(int32_t) * (s->njobs + 1));
	int			n = 0;
	for (int j = 0; j < s->njobs; j++)
		if (s->jobs[j].idle)
			list[n++] = j;
	tide_sort(list, n, sizeof(int32_t), cmp_job, s);
	*nidle = n;
	return list;
}

/* R-O4: queue a before queue b: higher priority, then lower share, then name. */
static inline bool
qbefore(const TideQueueHeap *h, int a, int b)
{
	return tide_queue_before(h->s, h->rank, h->share, a, b);
}

/* Queue q's share now (R-O4), of its decayed usage when base is kept (R-O6). */
static double
heap_share(const TideQueueHeap *h, int q)
{
	return tide_share(h->s, &h->s->queues[q],
					  h->base ? h->base + (size_t) q * h->s->nres : NULL);
}

static void
qsift_down(TideQueueHeap *h, int i)
{
	for (;;)
	{
		int			l = 2 * i + 1,
					r = l + 1,
					m = i;

		if (l < h->n && qbefore(h, h->q[l], h->q[m]))
			m = l;
		if (r < h->n && qbefore(h, h->q[r], h->q[m]))
			m = r;
		if (m == i)
			return;
		{
			int32_t		t = h->q[i];

			h->q[i] = h->q[m];
			h->q[m] = t;
		}
		i = m;
	}
}

/*
 * The R-O4 heap of the queues with non-idle jobs (starts as from
 * tide_order_queue_jobs): the top is the queue whose next job the walk
 * takes.
 */
void
tide_queue_heap_init(TideWork *w, TideQueueHeap *h, const int32_t *starts)
{
	const TideSnapshot *s = w->s;

	h->q = tide_work_alloc(w, sizeof(int32_t) * (s->nqueues + 1));
	h->share = tide_work_alloc(w, sizeof(double) * (s->nqueues + 1));
	h->s = s;
	h->rank = w->ix->queue_rank;
	h->n = 0;
	h->base = NULL;
	if (s->half_life > 0)
	{
		/* R-O6: what the walk places is added to the average from here */
		h->base = tide_work_alloc(w, sizeof(int64_t) * ((size_t) s->nqueues * s->nres + 1));
		for (int q = 0; q < s->nqueues; q++)
			memcpy(h->base + (size_t) q * s->nres, s->queues[q].usage, sizeof(int64_t) * s->nres);
	}
	for (int q = 0; q < s->nqueues; q++)
		if (starts[q + 1] > starts[q])
		{
			h->share[q] = heap_share(h, q);
			h->q[h->n++] = q;
		}
	for (int i = h->n / 2 - 1; i >= 0; i--)
		qsift_down(h, i);
}

/* The top queue has no job left: out of the heap. */
void
tide_queue_heap_pop(TideQueueHeap *h)
{
	h->q[0] = h->q[--h->n];
	qsift_down(h, 0);
}

/* The top queue placed a job: its share grew, it may sink. */
void
tide_queue_heap_update(TideQueueHeap *h)
{
	int			q = h->q[0];

	h->share[q] = heap_share(h, q);
	qsift_down(h, 0);
}
