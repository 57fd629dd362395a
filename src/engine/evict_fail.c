/*
 * evict_fail.c: the preemptors that found no eviction, for evict.c: a
 * later preemptor of the same kind finds none either, and is not tried.
 */
#include "evict_int.h"
#include "hash.h"
#include "work.h"

/*
 * What decides whether job j can evict, hashed: its shape and what the
 * rules look at (fail_same() compares them exactly).  Nothing a failed
 * preemptor could use comes back later in the pass (victims only go, held
 * resources only grow), so a job like one that failed fails again.
 */
static uint64_t
fail_hash(const TideWork *w, int j)
{
	const TideJob *job = &w->s->jobs[j];
	const TideQueue *q = &w->s->queues[job->queue];
	uint64_t	h;

	h = tide_hash_mix(w->info[j].hash, (uint64_t) job->queue + 1);
	h = tide_hash_mix(h, (uint64_t) w->r->outcomes[j].klass);
	h = tide_hash_mix(h, (uint64_t) job->service);
	h = tide_hash_mix(h, job->preemptable);
	if (q->preemption_within == TIDE_PREEMPT_LOWER_PRIORITY)
		h = tide_hash_mix(h, (uint64_t) (int64_t) job->priority);
	if (q->owner_cap)
		h = tide_hash_mix(h, (uint64_t) (int64_t) job->owner);
	return h;
}

/*
 * Would jobs a and b (both cacheable, so both of a shape class, prep.c)
 * find the same evictions?  The same shape, queue, class, service and
 * protection; with R-E3 the same priority; with an owner limit (R-A4) the
 * same owner, whose holdings decide too.
 */
static bool
fail_same(const TideWork *w, int a, int b)
{
	const TideJob *x = &w->s->jobs[a];
	const TideJob *y = &w->s->jobs[b];
	const TideQueue *q = &w->s->queues[x->queue];

	return w->info[a].shape == w->info[b].shape && x->queue == y->queue &&
		w->r->outcomes[a].klass == w->r->outcomes[b].klass &&
		x->service == y->service && x->preemptable == y->preemptable &&
		(q->preemption_within != TIDE_PREEMPT_LOWER_PRIORITY || x->priority == y->priority) &&
		(!q->owner_cap || x->owner == y->owner);
}

typedef struct FailProbe
{
	const TideWork *w;
	int			j;
} FailProbe;

static bool
fail_is(const void *ctx, int32_t entry)
{
	const FailProbe *probe = ctx;

	return fail_same(probe->w, entry, probe->j);
}

static uint64_t
fail_entry_hash(const void *ctx, int32_t entry)
{
	return fail_hash(ctx, entry);
}

/*
 * Has a preemptor like j failed already (insert false), or record that j
 * failed (insert true)?  The table holds the first job of each kind that
 * failed, few: 256 slots to start, doubled at half full.  A job that is
 * not cacheable (prep.c; claims.c for the owners of claims) is never
 * judged by another's failure.
 */
bool
tide_evict_failed(TideWork *w, int j, bool insert)
{
	TideEvictWork *ev = w->ev;
	FailProbe	probe = {w, j};
	uint64_t	k;

	if (!w->info[j].cacheable)
		return false;
	if (insert && (uint64_t) (ev->nfailed + 1) * 2 > ev->failed_mask)
	{
		int32_t    *old = ev->failed;
		uint64_t	n = old ? ev->failed_mask + 1 : 0;

		ev->failed_mask = old ? ev->failed_mask * 2 + 1 : 255;
		ev->failed = tide_work_alloc(w, sizeof(int32_t) * (ev->failed_mask + 1));
		tide_table_rehash(ev->failed, ev->failed_mask, old, n, fail_entry_hash, w);
		if (old)
			tide_work_release(w, old);
	}
	if (!ev->failed)
		return false;
	k = tide_table_find(ev->failed, ev->failed_mask, fail_hash(w, j), fail_is, &probe);
	if (ev->failed[k])
		return true;
	if (insert)
	{
		ev->failed[k] = j + 1;
		ev->nfailed++;
	}
	return false;
}
