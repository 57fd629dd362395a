/*
 * prep.c: what tide_decide() derives from each job once, before the walk,
 * and the shape cache that the derived shape hash keys.
 *
 * Per job (TideJobInfo): its resource group, replica counts, gang minimum
 * (interned: a backlog has few distinct minimums), whether it keeps off
 * its failed nodes (R-L4), and the hash of its shape.  Per queue: whether
 * it limits a card type (R-A1 card keys).
 *
 * The shape cache: a job shape that failed fails again for the rest of the
 * walk (nothing is released inside a cycle), so the first failure's
 * outcome answers for every later job of the same shape and mode.
 */
#include <string.h>

#include "fit.h"
#include "hash.h"
#include "prep.h"
#include "work.h"

/*
 * The queue a shape's node search depends on: only a queue that limits a
 * card type filters nodes differently from another; -1 for the others, so
 * one failed shape answers for every queue without card limits.
 */
static int
shape_queue(const TideWork *w, const TideJob *job)
{
	return w->queue_cards[job->queue] ? job->queue : -1;
}

/* Everything that decides whether a job fits, hashed (the shape cache key). */
static uint64_t
shape_hash(const TideWork *w, const TideJob *job, const TideJobInfo *in)
{
	const TideSnapshot *s = w->s;
	uint64_t	h = tide_hash_mix(0, (uint64_t) (shape_queue(w, job) + 1));

	h = tide_hash_mix(h, job->idle);
	h = tide_hash_mix(h, (uint64_t) in->min_replicas);
	h = tide_hash_mix(h, (uint64_t) (job->gpu_type + 1));
	for (int i = 0; i < job->nselector; i++)
		h = tide_hash_mix(h, (uint64_t) job->selector[i]);
	for (int ri = 0; ri < job->nroles; ri++)
	{
		h = tide_hash_mix(h, (uint64_t) job->roles[ri].replicas);
		for (int r = 0; r < s->nres; r++)
			h = tide_hash_mix(h, (uint64_t) job->roles[ri].request[r]);
	}
	return h;
}

static bool
same_shape(const TideSnapshot *s, const TideWork *w, int a, int b)
{
	const TideJob *x = &s->jobs[a];
	const TideJob *y = &s->jobs[b];

	if (shape_queue(w, x) != shape_queue(w, y) || x->idle != y->idle || x->gpu_type != y->gpu_type ||
		x->nroles != y->nroles || x->nselector != y->nselector ||
		w->info[a].min_replicas != w->info[b].min_replicas)
		return false;
	for (int i = 0; i < x->nselector; i++)
		if (x->selector[i] != y->selector[i])
			return false;
	for (int ri = 0; ri < x->nroles; ri++)
		if (x->roles[ri].replicas != y->roles[ri].replicas ||
			memcmp(x->roles[ri].request, y->roles[ri].request, sizeof(int64_t) * s->nres) != 0)
			return false;
	return true;
}

/*
 * The shape table holds the failed shapes, few even in a large backlog:
 * it starts small and doubles at half full.
 */
static void
shapes_grow(TideWork *w)
{
	TideShape  *old = w->shapes;
	uint64_t	n = old ? w->shape_mask + 1 : 0;

	w->shape_mask = old ? w->shape_mask * 2 + 1 : 255;
	w->shapes = tide_work_alloc(w, sizeof(TideShape) * (w->shape_mask + 1));
	for (uint64_t i = 0; i < n; i++)
		if (old[i].job)
		{
			uint64_t	k = tide_hash_slot(old[i].hash, w->shape_mask);

			while (w->shapes[k].job)
				k = (k + 1) & w->shape_mask;
			w->shapes[k] = old[i];
		}
	if (old)
		tide_work_release(w, old);
}

/*
 * The shape cache's entry for job j placed in mode: *found when a job of
 * the same shape already failed in that mode (its outcome answers for j),
 * else the free slot where tide_shape_remember() records j if it fails.
 */
TideShape *
tide_shape_find(TideWork *w, int j, int mode, bool *found)
{
	uint64_t	h;
	uint64_t	k;

	if (!w->queue_cards[w->s->jobs[j].queue] && mode != MODE_IDLE)
		mode = MODE_BORROW;		/* modes differ only in card checks */
	h = tide_hash_mix(w->info[j].hash, (uint64_t) mode);
	if ((uint64_t) (w->nshapes + 1) * 2 > w->shape_mask)
		shapes_grow(w);
	k = tide_hash_slot(h, w->shape_mask);

	*found = false;
	while (w->shapes[k].job)
	{
		TideShape  *e = &w->shapes[k];

		if (e->hash == h && e->mode == mode && same_shape(w->s, w, e->job - 1, j))
		{
			*found = true;
			return e;
		}
		k = (k + 1) & w->shape_mask;
	}
	w->shapes[k].hash = h;
	w->shapes[k].mode = mode;
	return &w->shapes[k];
}

/* Job j failed in the mode its slot (from tide_shape_find) was found for. */
void
tide_shape_remember(TideWork *w, TideShape *slot, int j)
{
	slot->job = j + 1;
	w->nshapes++;
}

/* need + req * take, saturated (satmath.h); one test when nothing overflows. */
static inline int64_t
need_add(int64_t need, int64_t req, int take)
{
	int64_t		p,
				sum;

	if (__builtin_expect(!__builtin_mul_overflow(req, (int64_t) take, &p) &&
						 !__builtin_add_overflow(need, p, &sum), 1))
		return sum;
	return tide_sat_add(need, tide_sat_mul(req, take));
}

/*
 * Where the gang minimum need[0..nres-1] is in w->minreq, stored there if
 * new: a backlog has few distinct minimums, so jobs share them instead of
 * each filling a vector.  Open addressing over offset + 1, grown at half
 * full.
 */
static int32_t
minreq_intern(TideWork *w, const int64_t *need)
{
	size_t		bytes = sizeof(int64_t) * w->nres;
	uint64_t	h = 0;
	uint32_t	k;

	for (int r = 0; r < w->nres; r++)
		h = tide_hash_mix(h, (uint64_t) need[r]);
	if ((w->nminreq + 1) * 2 > (int32_t) w->minreq_mask)
	{
		int32_t    *old = w->minreq_slot;
		uint32_t	n = old ? w->minreq_mask + 1 : 0;

		w->minreq_mask = old ? w->minreq_mask * 2 + 1 : 255;
		w->minreq_slot = tide_work_alloc(w, sizeof(int32_t) * (w->minreq_mask + 1));
		w->minreq = tide_work_grow(w, w->minreq, bytes * w->nminreq,
								   bytes * (w->minreq_mask + 1) / 2);
		for (uint32_t i = 0; i < n; i++)
			if (old[i])
			{
				const int64_t *v = w->minreq + old[i] - 1;
				uint64_t	g = 0;

				for (int r = 0; r < w->nres; r++)
					g = tide_hash_mix(g, (uint64_t) v[r]);
				k = (uint32_t) tide_hash_slot(g, w->minreq_mask);
				while (w->minreq_slot[k])
					k = (k + 1) & w->minreq_mask;
				w->minreq_slot[k] = old[i];
			}
		if (old)
			tide_work_release(w, old);
	}
	k = (uint32_t) tide_hash_slot(h, w->minreq_mask);
	while (w->minreq_slot[k])
	{
		if (memcmp(w->minreq + w->minreq_slot[k] - 1, need, bytes) == 0)
			return w->minreq_slot[k] - 1;
		k = (k + 1) & w->minreq_mask;
	}
	memcpy(w->minreq + (size_t) w->nminreq * w->nres, need, bytes);
	w->minreq_slot[k] = w->nminreq * w->nres + 1;
	return w->nminreq++ * w->nres;
}

/* Derived per-job data: group, replica counts, gang minimum vector, shape hash. */
void
tide_prepare_jobs(TideWork *w)
{
	TideSnapshot *s = w->s;

	/* which queues limit a card type (a node's gpu_type) */
	for (int q = 0; q < s->nqueues; q++)
		for (int pi = 0; pi < w->ix->nparts; pi++)
		{
			int			t = w->ix->parts[pi].gpu_type;

			if (t >= 0 && (s->queues[q].capability[t] != TIDE_UNLIMITED ||
						   s->queues[q].quota[t] != TIDE_UNLIMITED))
				w->queue_cards[q] = true;
		}

	for (int j = 0; j < s->njobs; j++)
	{
		TideJob    *job = &s->jobs[j];
		TideJobInfo *in = &w->info[j];
		int64_t    *need = w->vec;
		int			left;

		memset(need, 0, sizeof(int64_t) * w->nres);

		in->group = (job->queue >= 0 && job->queue < s->nqueues) ? w->ix->queue_group[job->queue] : -1;
		in->total_replicas = tide_job_replicas(job);
		in->min_replicas = job->min_available > 0 && job->min_available < in->total_replicas
			? job->min_available : in->total_replicas;
		left = in->min_replicas;
		for (int ri = 0; ri < job->nroles && left > 0; ri++)
		{
			const TideRole *role = &job->roles[ri];
			int			take = role->replicas < left ? role->replicas : left;

			if (take <= 0)
				continue;		/* no replicas: nothing to add (never subtract) */

			/*
			 * replicas x request and the sum over roles saturate: a minimum
			 * of INT64_MAX is "too large to count" (tide_static_check)
			 */
			for (int r = 0; r < w->nres; r++)
				need[r] = need_add(need[r], role->request[r], take);
			if (job->gpu_type >= 0 && role->request[job->gpu_type] == 0)
				need[job->gpu_type] = need_add(need[job->gpu_type], role->request[TIDE_RES_GPU], take);
			left -= take;
		}
		in->minreq = minreq_intern(w, need);
		in->avoids = job->navoid > 0 && tide_other_node_could_hold(w, j);
		in->cacheable = job->navoid == 0 && job->time_limit == 0;
		in->hash = in->cacheable ? shape_hash(w, job, in) : 0;
	}
}
