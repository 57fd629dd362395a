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

/* Everything that decides whether a job fits, hashed (the shape cache key). */
static uint64_t
shape_hash(const TideWork *w, const TideJob *job, const TideJobInfo *in)
{
	const TideSnapshot *s = w->s;
	uint64_t	h = tide_hash_mix(0, (uint64_t) (tide_shape_queue(w, job) + 1));

	h = tide_hash_mix(h, job->idle);
	h = tide_hash_mix(h, (uint64_t) in->min_replicas);
	h = tide_hash_mix(h, (uint64_t) (job->gpu_type + 1));
	h = tide_hash_mix(h, (uint64_t) job->time_limit);
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

/* A shape cache lookup: the job and the key it is looked up by. */
typedef struct ShapeKey
{
	const TideWork *w;
	int			j;
	uint64_t	hash;
	int32_t		mode;
} ShapeKey;

static bool
shape_is(const void *ctx, int32_t entry)
{
	const ShapeKey *key = ctx;
	const TideShape *e = &key->w->shapes[entry];

	return e->hash == key->hash && e->mode == key->mode &&
		tide_same_shape(key->w, e->job, key->j);
}

static uint64_t
shape_entry_hash(const void *ctx, int32_t entry)
{
	const TideWork *w = ctx;

	return w->shapes[entry].hash;
}

/*
 * The prep's tables (the failed shapes, the gang minimums, the shape
 * classes) hold few entries even in a large backlog: each starts at 256
 * slots and doubles at half full.  Returns the slots doubled, the entries
 * rehashed by hash(ctx, entry), the old slots given back.
 */
static int32_t *
table_grow(TideWork *w, int32_t *old, uint64_t *mask, TideTableHash hash, const void *ctx)
{
	uint64_t	n = old ? *mask + 1 : 0;
	int32_t    *slot;

	*mask = old ? *mask * 2 + 1 : 255;
	slot = tide_work_alloc(w, sizeof(int32_t) * (*mask + 1));
	tide_table_rehash(slot, *mask, old, n, hash, ctx);
	if (old)
		tide_work_release(w, old);
	return slot;
}

/* The shape table and its entries, doubled. */
static void
shapes_grow(TideWork *w)
{
	uint64_t	cap = w->shape_slot ? (w->shape_mask + 1) * 2 : 256;

	w->shapes = tide_work_grow(w, w->shapes, sizeof(TideShape) * w->nshapes,
							   sizeof(TideShape) * cap / 2);
	w->shape_slot = table_grow(w, w->shape_slot, &w->shape_mask, shape_entry_hash, w);
}

/*
 * The shape cache for job j placed in mode: the job of the same shape
 * that already failed in that mode (its outcome answers for j), else -1;
 * probe says where tide_shape_remember() records j if it fails.
 */
int
tide_shape_find(TideWork *w, int j, int mode, TideShapeProbe *probe)
{
	ShapeKey	key;
	uint64_t	k;

	if (!w->queue_cards[w->s->jobs[j].queue] && mode != MODE_IDLE)
		mode = MODE_BORROW;		/* modes differ only in card checks */
	if ((uint64_t) (w->nshapes + 1) * 2 > w->shape_mask)
		shapes_grow(w);
	key.w = w;
	key.j = j;
	key.hash = tide_hash_mix(w->info[j].hash, (uint64_t) mode);
	key.mode = mode;
	k = tide_table_find(w->shape_slot, w->shape_mask, key.hash, shape_is, &key);
	probe->hash = key.hash;
	probe->mode = mode;
	probe->slot = k;
	return w->shape_slot[k] ? w->shapes[w->shape_slot[k] - 1].job : -1;
}

/* Job j failed in the mode probe (from tide_shape_find) was made for. */
void
tide_shape_remember(TideWork *w, const TideShapeProbe *probe, int j)
{
	TideShape  *e = &w->shapes[w->nshapes];

	e->hash = probe->hash;
	e->mode = probe->mode;
	e->job = j;
	w->shape_slot[probe->slot] = ++w->nshapes;
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

/* The distinct gang minimums (entries: offsets into vecs) and one to find. */
typedef struct MinreqKey
{
	const int64_t *vecs;
	int			nres;
	const int64_t *need;
} MinreqKey;

static bool
minreq_is(const void *ctx, int32_t entry)
{
	const MinreqKey *key = ctx;

	return memcmp(key->vecs + entry, key->need, sizeof(int64_t) * key->nres) == 0;
}

static uint64_t
minreq_entry_hash(const void *ctx, int32_t entry)
{
	const MinreqKey *key = ctx;

	return tide_hash_vec(key->vecs + entry, key->nres);
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
	MinreqKey	key;
	uint64_t	k;

	key.nres = w->nres;
	key.need = need;
	if ((uint64_t) (w->nminreq + 1) * 2 > w->minreq_mask)
	{
		uint64_t	cap = w->minreq_slot ? (w->minreq_mask + 1) * 2 : 256;

		w->minreq = tide_work_grow(w, w->minreq, bytes * w->nminreq, bytes * cap / 2);
		key.vecs = w->minreq;
		w->minreq_slot = table_grow(w, w->minreq_slot, &w->minreq_mask, minreq_entry_hash, &key);
	}
	key.vecs = w->minreq;
	k = tide_table_find(w->minreq_slot, w->minreq_mask, tide_hash_vec(need, w->nres), minreq_is, &key);
	if (w->minreq_slot[k])
		return w->minreq_slot[k] - 1;
	memcpy(w->minreq + (size_t) w->nminreq * w->nres, need, bytes);
	w->minreq_slot[k] = w->nminreq * w->nres + 1;
	return w->nminreq++ * w->nres;
}

/*
 * Shape classes: the first job of each shape, found by the shape hash and
 * tide_same_shape() while the job's data is fresh in the cache, so that
 * the walk's shape cache and the diagnoses compare two numbers instead of
 * two jobs' roles (tide_same_shape() answers from the classes once both
 * jobs have one).  Open addressing over job index + 1, grown at half full.
 */
static bool
class_is(const void *ctx, int32_t entry)
{
	const ShapeKey *key = ctx;

	return key->w->info[entry].hash == key->hash && tide_same_shape(key->w, entry, key->j);
}

static uint64_t
class_entry_hash(const void *ctx, int32_t entry)
{
	const TideWork *w = ctx;

	return w->info[entry].hash;
}

static int32_t
class_intern(TideWork *w, int j)
{
	ShapeKey	key;
	uint64_t	k;

	if ((uint64_t) (w->nclasses + 1) * 2 > w->class_mask)
		w->class_slot = table_grow(w, w->class_slot, &w->class_mask, class_entry_hash, w);
	key.w = w;
	key.j = j;
	key.hash = w->info[j].hash;
	key.mode = 0;
	k = tide_table_find(w->class_slot, w->class_mask, key.hash, class_is, &key);
	if (w->class_slot[k])
		return w->class_slot[k] - 1;
	w->class_slot[k] = j + 1;
	w->nclasses++;
	return j;
}

/* Derived per-job data: group, replica counts, gang minimum vector, shape hash and class. */
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
	/* R-A3: a leaf is card-limited when a queue above it is */
	for (int q = 0; q < s->nqueues; q++)
		for (int a = s->queues[q].parent, d = 1; a >= 0 && d < TIDE_MAX_DEPTH && !w->queue_cards[q];
			 a = s->queues[a].parent, d++)
			w->queue_cards[q] = w->queue_cards[a];

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
		/* a time limit decides backfill (R-L2): in the key, for the forecast */
		in->cacheable = job->navoid == 0 && (job->time_limit == 0 || s->no_reasons);
		/*
		 * A job that keeps off some nodes, else cacheable: its counts of
		 * nodes when it fails are its shape's, its avoided nodes aside
		 * (place.c)
		 */
		in->avoid_shape = in->avoids && job->time_limit == 0 && in->group >= 0 &&
			!s->queues[job->queue].owner_cap;
		in->hash = in->cacheable || in->avoid_shape ? shape_hash(w, job, in) : 0;
		in->shape = -1;			/* tide_same_shape() compares fields until set */
		if (in->cacheable || in->avoid_shape)
			in->shape = class_intern(w, j);
	}
}
