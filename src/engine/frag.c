/*
 * frag.c: the fragmentation-aware node choice (TIDE_PLACE_FRAG, R-L5),
 * after Fragmentation Gradient Descent (Weng et al., "Beware of
 * Fragmentation", USENIX ATC'23).
 *
 * The typical workload is a list of request shapes with weights: the
 * snapshot's workload when the caller gives one (tide-sim: the trace's pod
 * shapes; the server: recent requests), else the pending jobs' own
 * requests, each role weighted by its replicas.  A shape weighs as the
 * GPUs it is expected to ask (frequency x GPU request): FGD counts pods,
 * which leaves the rare 8-GPU pods out of its typical workload and spends
 * the nodes they need (on openb it drops some before the cluster is 90%
 * asked).  Shapes asking no GPU are left out: they would add the same
 * amount to every choice.
 *
 * Fragmentation of a node for shape m: the free GPU milli that m cannot
 * use there.  All of it when m cannot run on the node at all (card type or
 * selector excluded, or any other resource it asks - CPU, memory, any
 * named resource - short, or too few GPUs with m's share free); else the
 * free milli on GPUs with less than m's per-GPU share left.  Beside it, at
 * a sixteenth of the weight, the free GPU milli m could use but has no
 * room for: when the CPU, memory or other resources left hold only k
 * copies of m, what is usable beyond k times m's GPU request.  FGD asks
 * only whether one more pod fits, so a node with 8 free GPUs and the cores
 * of one pod looks as good as an empty one, and the CPU-rich nodes are not
 * kept for the CPU-heavy pods.  The node's fragmentation is the weighted
 * sum over shapes.  The node chosen for a replica is the one where this
 * grows least if the replica goes there (with the GPUs the engine would
 * give it, gpus.c, R-L6).
 *
 * Where FGD is weak, this differs: every resource counts (FGD looks at GPU
 * and CPU only and so spends the few nodes with the memory for large pods),
 * and how many copies of a shape they leave room for (the term above),
 * scores are exact integers (weights scaled to 2^30, no rounding to 0..100),
 * and ties go to the fuller node (fewest free whole GPUs), then the least
 * free CPU, then the node name, never at random.
 *
 * Cost: the node's own fragmentation and the growth per (node, request)
 * are memoised across calls and invalidated by the node's stamp (bumped on
 * every change, snapshot.c) and by a change of workload.  Inside each
 * bucket of each allowed partition (bucket = free whole GPUs, place.c) the
 * first FRAG_LOOKAHEAD fitting nodes in name order are scored, so a
 * choice scores at most 65 x FRAG_LOOKAHEAD nodes per partition however
 * large the cluster (the fit tests of a bucket stop at its last scored
 * node); on the openb trace scoring every node did no better than 16 per
 * bucket.
 */
#include <string.h>

#include "fit.h"
#include "frag.h"
#include "hash.h"
#include "snapshot_int.h"
#include "work.h"

#define FRAG_MAX_SHAPES	64		/* shapes kept, heaviest first */
#define FRAG_ROOM_SHIFT	4		/* GPU milli lost counts 16 x milli short of room */
#define FRAG_COVER		95		/* derived workload: shapes covering 95% of replicas */
#define FRAG_LOOKAHEAD	16		/* fitting nodes scored per (partition, bucket) */
#define FRAG_MEMO		16		/* growth memo slots per node (direct mapped) */

typedef struct FragShape
{
	const int64_t *req;
	int64_t		gpu;			/* per replica, milli */
	int32_t		gpu_type;
	const int32_t *sel;
	int32_t		nsel;
	int64_t		weight;			/* scaled: sum over shapes TIDE_FRAG_ONE */
	int32_t		nneed;			/* resources other than gpu it asks */
	int8_t		need[TIDE_MAX_RES];
} FragShape;

typedef struct FragMemo
{
	uint64_t	key;
	uint32_t	stamp;
	uint32_t	gen;
	int64_t		delta;
} FragMemo;

typedef struct TideFrag
{
	const TideNode *nodes;		/* the node array the memo is for */
	int32_t		nnodes;
	uint32_t	gen;			/* bumped when the workload changes */
	uint64_t	wl_hash;
	const TideWorkShape *wl_ptr;	/* the caller's workload the shapes came from */
	int32_t		wl_n;
	int32_t		nshapes;
	FragShape	shapes[FRAG_MAX_SHAPES];
	uint32_t   *node_stamp;		/* [nnodes] stamp node_frag is for */
	uint32_t   *node_gen;
	int64_t    *node_frag;
	FragMemo   *memo;			/* [nnodes * FRAG_MEMO] */
} TideFrag;

/* A candidate shape before scaling: request, type, selector, raw weight. */
typedef struct RawShape
{
	const int64_t *req;
	int32_t		gpu_type;
	const int32_t *sel;
	int32_t		nsel;
	double		weight;
	uint64_t	hash;
} RawShape;

static uint64_t
raw_hash(int nres, const RawShape *x)
{
	uint64_t	h = tide_hash_mix(tide_hash_vec(x->req, nres), (uint64_t) (x->gpu_type + 1));

	for (int i = 0; i < x->nsel; i++)
		h = tide_hash_mix(h, (uint64_t) x->sel[i]);
	return h;
}

static bool
raw_same(int nres, const RawShape *x, const RawShape *y)
{
	return x->gpu_type == y->gpu_type && x->nsel == y->nsel &&
		memcmp(x->req, y->req, sizeof(int64_t) * nres) == 0 &&
		(x->nsel == 0 || memcmp(x->sel, y->sel, sizeof(int32_t) * x->nsel) == 0);
}

/* Heavier first; equal weights in a fixed order (request, type, selector). */
static int
raw_before(int nres, const RawShape *x, const RawShape *y)
{
	if (x->weight != y->weight)
		return x->weight > y->weight;
	for (int r = 0; r < nres; r++)
		if (x->req[r] != y->req[r])
			return x->req[r] < y->req[r];
	if (x->gpu_type != y->gpu_type)
		return x->gpu_type < y->gpu_type;
	return x->hash < y->hash;
}

/*
 * Keep the heaviest shapes (up to FRAG_MAX_SHAPES, and for a derived
 * workload only as many as cover FRAG_COVER percent of the weight) and
 * scale their weights to TIDE_FRAG_ONE in sum.
 */
static void
set_shapes(TideFrag *f, int nres, RawShape *raw, int n, bool derived)
{
	double		total = 0,
				kept = 0,
				cum = 0;
	int			keep = 0;

	/* insertion sort of a partial prefix: n is small or only the top matters */
	/* a shape weighs as the GPUs it is expected to ask: frequency x GPU milli */
	for (int i = 0; i < n; i++)
	{
		raw[i].weight *= (double) raw[i].req[TIDE_RES_GPU];
		total += raw[i].weight;
	}
	for (int i = 0; i < n && keep < FRAG_MAX_SHAPES; i++)
	{
		int			best = i;

		if (derived && cum >= total * FRAG_COVER / 100.0)
			break;
		for (int k = i + 1; k < n; k++)
			if (raw_before(nres, &raw[k], &raw[best]))
				best = k;
		if (best != i)
		{
			RawShape	t = raw[i];

			raw[i] = raw[best];
			raw[best] = t;
		}
		cum += raw[i].weight;
		keep++;
	}
	for (int i = 0; i < keep; i++)
		kept += raw[i].weight;
	f->nshapes = keep;
	for (int i = 0; i < keep; i++)
	{
		FragShape  *m = &f->shapes[i];

		m->req = raw[i].req;
		m->gpu = raw[i].req[TIDE_RES_GPU];
		m->gpu_type = raw[i].gpu_type;
		m->sel = raw[i].sel;
		m->nsel = raw[i].nsel;
		m->weight = (int64_t) ((double) TIDE_FRAG_ONE * raw[i].weight / kept);
		if (m->weight < 1)
			m->weight = 1;
		m->nneed = 0;
		for (int r = 0; r < nres; r++)
			if (r != TIDE_RES_GPU && m->req[r] > 0)
				m->need[m->nneed++] = (int8_t) r;
	}
}

/* A collect() lookup: the shapes so far and the one looked for. */
typedef struct RawKey
{
	const RawShape *raw;
	const RawShape *x;
	int			nres;
} RawKey;

static bool
raw_is(const void *ctx, int32_t entry)
{
	const RawKey *key = ctx;

	return key->raw[entry].hash == key->x->hash &&
		raw_same(key->nres, &key->raw[entry], key->x);
}

static uint64_t
raw_entry_hash(const void *ctx, int32_t entry)
{
	const RawKey *key = ctx;

	return key->raw[entry].hash;
}

/* The slot table of collect() doubled. */
static int32_t *
grow_slots(TideWork *w, int32_t *old, uint64_t *tcap, const RawKey *key)
{
	uint64_t	cap = *tcap * 2;
	int32_t    *slot = tide_work_alloc(w, sizeof(int32_t) * cap);

	tide_table_rehash(slot, cap - 1, old, *tcap, raw_entry_hash, key);
	tide_work_release(w, old);
	*tcap = cap;
	return slot;
}

/* Collect the raw shapes: the snapshot's workload or the pending jobs' roles. */
static int
collect(TideWork *w, RawShape *raw, int cap, bool *derived)
{
	TideSnapshot *s = w->s;
	int			n = 0;

	*derived = s->nworkload <= 0;
	if (!*derived)
	{
		for (int i = 0; i < s->nworkload && n < cap; i++)
		{
			const TideWorkShape *ws = &s->workload[i];

			if (ws->request == NULL || ws->request[TIDE_RES_GPU] <= 0 || !(ws->weight > 0))
				continue;
			raw[n].req = ws->request;
			raw[n].gpu_type = ws->gpu_type;
			raw[n].sel = ws->selector;
			raw[n].nsel = ws->selector ? ws->nselector : 0;
			raw[n].weight = ws->weight;
			n++;
		}
		for (int i = 0; i < n; i++)
			raw[i].hash = raw_hash(s->nres, &raw[i]);
		return n;
	}
	{
		/* distinct role requests of the pending jobs, open addressing */
		uint64_t	tcap = 256;
		int32_t    *slot;
		RawKey		key;

		slot = tide_work_alloc(w, sizeof(int32_t) * tcap);
		key.raw = raw;
		key.nres = s->nres;
		for (int j = 0; j < s->njobs; j++)
		{
			const TideJob *job = &s->jobs[j];

			for (int ri = 0; ri < job->nroles; ri++)
			{
				const TideRole *role = &job->roles[ri];
				RawShape	x;
				uint64_t	k;

				if (role->replicas <= 0 || role->request[TIDE_RES_GPU] <= 0 || n >= cap)
					continue;
				x.req = role->request;
				x.gpu_type = job->gpu_type;
				x.sel = job->selector;
				x.nsel = job->nselector;
				x.weight = role->replicas;
				x.hash = raw_hash(s->nres, &x);
				key.x = &x;
				k = tide_table_find(slot, tcap - 1, x.hash, raw_is, &key);
				if (slot[k])
					raw[slot[k] - 1].weight += x.weight;
				else
				{
					raw[n] = x;
					slot[k] = ++n;
					if ((uint64_t) n * 2 > tcap)
						slot = grow_slots(w, slot, &tcap, &key);
				}
			}
		}
	}
	return n;
}

void
tide_frag_begin(TideWork *w)
{
	TideSnapshot *s = w->s;
	TideFrag   *f = s->frag;
	RawShape   *raw;
	int			cap;
	int			n;
	bool		any = false;
	bool		derived;
	uint64_t	h;

	for (int q = 0; q < s->nqueues && !any; q++)
		any = s->queues[q].placement == TIDE_PLACE_FRAG;
	if (!any)
		return;
	if (f == NULL || f->nodes != s->nodes || f->nnodes != s->nnodes)
	{
		int			nn = s->nnodes + 1;

		f = tide_alloc(s, sizeof(TideFrag));
		f->nodes = s->nodes;
		f->nnodes = s->nnodes;
		f->node_stamp = tide_alloc(s, sizeof(uint32_t) * nn);
		f->node_gen = tide_alloc(s, sizeof(uint32_t) * nn);
		f->node_frag = tide_alloc(s, sizeof(int64_t) * nn);
		f->memo = tide_alloc(s, sizeof(FragMemo) * nn * FRAG_MEMO);
		f->gen = 1;
		s->frag = f;
	}
	if (s->nworkload > 0 && f->wl_ptr == s->workload && f->wl_n == s->nworkload)
		return;					/* the same workload as last time */
	f->wl_ptr = s->nworkload > 0 ? s->workload : NULL;
	f->wl_n = s->nworkload;
	cap = s->nworkload > 0 ? s->nworkload : s->nroles;
	raw = tide_work_alloc_raw(w, sizeof(RawShape) * (cap + 1));
	n = collect(w, raw, cap, &derived);
	set_shapes(f, s->nres, raw, n, derived);
	h = tide_hash_mix(0, (uint64_t) f->nshapes);
	for (int i = 0; i < f->nshapes; i++)
	{
		const FragShape *m = &f->shapes[i];

		h = tide_hash_mix(h, tide_hash_vec(m->req, s->nres));
		h = tide_hash_mix(h, (uint64_t) (m->gpu_type + 1));
		h = tide_hash_mix(h, (uint64_t) m->weight);
		for (int k = 0; k < m->nsel; k++)
			h = tide_hash_mix(h, (uint64_t) m->sel[k]);
	}
	if (h != f->wl_hash)
	{
		f->wl_hash = h;
		if (++f->gen == 0)
			f->gen = 1;
	}
}

/* Selector labels are a subset of the node's (both sorted). */
static bool
labels_ok(const int32_t *sel, int nsel, const TideNode *n)
{
	int			k = 0;

	for (int i = 0; i < nsel; i++)
	{
		while (k < n->nlabels && n->labels[k] < sel[i])
			k++;
		if (k == n->nlabels || n->labels[k] != sel[i])
			return false;
	}
	return true;
}

/*
 * Fragmentation of node n with extra (or NULL) charged on top of its use
 * and per-GPU free shares gfree: see the file header.
 */
static int64_t
frag_value(const TideFrag *f, const TideNode *n, const int64_t *extra, const int16_t *gfree)
{
	int64_t		idle = 0;
	int			whole = 0;
	int64_t		total = 0;

	for (int g = 0; g < n->ngpus; g++)
	{
		idle += gfree[g];
		whole += gfree[g] >= TIDE_MILLI;
	}
	if (idle == 0)
		return 0;
	for (int i = 0; i < f->nshapes; i++)
	{
		const FragShape *m = &f->shapes[i];
		int64_t		lost = idle;
		bool		runs = (m->gpu_type < 0 || m->gpu_type == n->gpu_type) &&
			labels_ok(m->sel, m->nsel, n);
		int64_t		copies = idle;	/* of m the other resources leave room for */
		int64_t		short_room = 0;

		for (int k = 0; k < m->nneed && runs; k++)
		{
			int			r = m->need[k];
			int64_t		avail = tide_sat_sub(n->capacity[r], n->used[r]);

			if (extra)
				avail = tide_sat_sub(avail, extra[r]);
			runs = avail >= m->req[r];
			if (avail / m->req[r] < copies)
				copies = avail / m->req[r];
		}
		if (runs && m->gpu >= TIDE_MILLI)
		{
			if (whole >= m->gpu / TIDE_MILLI)
				lost = idle - (int64_t) whole * TIDE_MILLI;
		}
		else if (runs)
		{
			lost = 0;
			for (int g = 0; g < n->ngpus; g++)
				if (gfree[g] < m->gpu)
					lost += gfree[g];
		}
		/* usable by m, but by fewer copies than its GPUs could hold */
		if (lost < idle && copies * m->gpu < idle - lost)
			short_room = idle - lost - copies * m->gpu;
		total += m->weight * ((lost << FRAG_ROOM_SHIFT) + short_room);
	}
	return total;
}

int64_t
tide_frag_node(TideWork *w, const TideNode *n)
{
	TideFrag   *f = w->s->frag;
	int			ni = (int) (n - w->s->nodes);

	if (f->node_stamp[ni] != n->stamp || f->node_gen[ni] != f->gen)
	{
		f->node_frag[ni] = frag_value(f, n, NULL, n->gpu_free);
		f->node_stamp[ni] = n->stamp;
		f->node_gen[ni] = f->gen;
	}
	return f->node_frag[ni];
}

/* Growth of node n's fragmentation if one replica of req went there. */
static int64_t
delta_of(TideWork *w, const TideNode *n, const int64_t *req, bool use_held)
{
	TideFrag   *f = w->s->frag;
	int64_t		gpu = req[TIDE_RES_GPU];
	int16_t		gfree[TIDE_MAX_GPUS];

	memcpy(gfree, n->gpu_free, sizeof(int16_t) * n->ngpus);
	if (gpu > 0)
	{
		uint64_t	mask = tide_node_gpus_for(n, gpu, use_held);

		if (mask == 0)
			return INT64_MAX;
		for (int g = 0; g < n->ngpus; g++)
			if ((mask >> g) & 1)
				gfree[g] = gpu >= TIDE_MILLI ? 0 : gfree[g] - (int16_t) gpu;
	}
	return frag_value(f, n, req, gfree) - tide_frag_node(w, n);
}

int64_t
tide_frag_delta(TideWork *w, const TideNode *n, const int64_t *req, bool use_held)
{
	TideFrag   *f = w->s->frag;
	int			ni = (int) (n - w->s->nodes);
	uint64_t	key = tide_hash_mix(tide_hash_vec(req, w->nres), use_held);
	FragMemo   *e = &f->memo[(size_t) ni * FRAG_MEMO + (key >> 60) % FRAG_MEMO];

	if (e->key == key && e->stamp == n->stamp && e->gen == f->gen)
		return e->delta;
	e->key = key;
	e->stamp = n->stamp;
	e->gen = f->gen;
	e->delta = delta_of(w, n, req, use_held);
	return e->delta;
}

/* The lowest bucket of partition p that could hold req (as place.c). */
static int
first_bucket(const TidePart *p, const int64_t *req)
{
	int64_t		gpu = req[TIDE_RES_GPU];

	if (!p->gpu)
	{
		int			b = tide_bitlen(req[TIDE_RES_CPU]);

		return b >= TIDE_NBUCKETS ? TIDE_NBUCKETS - 1 : b;
	}
	if (gpu >= TIDE_MILLI)
		return gpu / TIDE_MILLI < TIDE_NBUCKETS ? (int) (gpu / TIDE_MILLI) : TIDE_NBUCKETS;
	return 0;
}

/*
 * Every fitting node of the allowed partitions, least growth first; ties
 * by fewest free whole GPUs (the pack order), then least free CPU, then
 * node name.
 */
int
tide_frag_search(TideWork *w, int j, const int32_t *parts, int nparts, const int64_t *req)
{
	TideSnapshot *s = w->s;
	const TideJob *job = &s->jobs[j];
	int			best = -1;
	int64_t		best_delta = 0;
	int			best_bucket = 0;
	int64_t		best_cpu = 0;

	for (int i = 0; i < nparts; i++)
	{
		const TidePart *p = &w->ix->parts[parts[i]];

		for (int b = first_bucket(p, req); b < TIDE_NBUCKETS; b++)
		{
			const uint64_t *bits = p->bits + (size_t) b * p->nwords;
			int			seen = 0;

			if (p->count[b] == 0)
				continue;

			for (int wi = 0; wi < p->nwords && seen < FRAG_LOOKAHEAD; wi++)
			{
				uint64_t	word = bits[wi];

				/* without a whole free GPU, only a shared one can take a share */
				if (b == 0 && p->gpu && req[TIDE_RES_GPU] > 0)
					word &= p->shared[wi];
				while (word && seen < FRAG_LOOKAHEAD)
				{
					int			ni = w->ix->order[p->lo + wi * 64 + __builtin_ctzll(word)];
					TideNode   *n = &s->nodes[ni];
					bool		use_held;
					int64_t		d,
								cpu;

					word &= word - 1;
					if (!tide_node_matches(job, n, ni, w->info[j].avoids) || !tide_node_fits(w, job, n, req, false))
						continue;
					use_held = n->in_held_list && !tide_backfill_ok(s, job, n->hold_shadow);
					seen++;
					d = tide_frag_delta(w, n, req, use_held);
					if (d == INT64_MAX)
						continue;
					cpu = tide_sat_sub(n->capacity[TIDE_RES_CPU], n->used[TIDE_RES_CPU]);
					if (best >= 0)
					{
						if (d != best_delta)
						{
							if (d > best_delta)
								continue;
						}
						else if (b != best_bucket)
						{
							if (b > best_bucket)
								continue;
						}
						else if (cpu != best_cpu)
						{
							if (cpu > best_cpu)
								continue;
						}
						else if (strcmp(n->name, s->nodes[best].name) >= 0)
							continue;
					}
					best = ni;
					best_delta = d;
					best_bucket = b;
					best_cpu = cpu;
				}
			}
		}
	}
	return best;
}
