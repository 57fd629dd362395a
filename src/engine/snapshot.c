/*
 * snapshot.c: building the engine's input: interning, arrays, the node
 * index (partitions by resource group and card type, buckets by free whole
 * GPUs), and charging live allocations to nodes and queues.
 */
#include <stdio.h>
#include <string.h>

#include "engine_int.h"
#include "hash.h"
#include "snapshot_int.h"
#include "sort.h"

/* Label pairs "key=value" interned to small integers (open addressing). */
typedef struct TideNames
{
	uint32_t	cap;			/* power of two */
	uint32_t	n;
	int32_t    *slots;			/* id + 1, 0 = empty */
	char	  **names;			/* [cap / 2] by id */
} TideNames;

void *
tide_alloc(TideSnapshot *s, size_t size)
{
	void	   *p = s->mem.alloc(s->mem.ctx, size ? size : 1);

	memset(p, 0, size ? size : 1);
	return p;
}

static void
tide_free(TideSnapshot *s, void *p)
{
	if (p && s->mem.free)
		s->mem.free(s->mem.ctx, p);
}

int64_t *
tide_vec_new(TideSnapshot *s)
{
	return tide_alloc(s, sizeof(int64_t) * (s->nres > 0 ? s->nres : 1));
}

/* Create an empty snapshot; "gpu" and "cpu" get the fixed indexes. */
TideSnapshot *
tide_snapshot_create(const TideMem *mem)
{
	TideSnapshot *s = mem->alloc(mem->ctx, sizeof(TideSnapshot));

	memset(s, 0, sizeof(*s));
	s->mem = *mem;
	tide_res_intern(s, "gpu");
	tide_res_intern(s, "cpu");
	return s;
}

int
tide_res_lookup(const TideSnapshot *s, const char *name)
{
	for (int i = 0; i < s->nres; i++)
		if (strcmp(s->res_names[i], name) == 0)
			return i;
	return -1;
}

/* Resource names are few (tens): a linear search is the fastest thing. */
int
tide_res_intern(TideSnapshot *s, const char *name)
{
	int			i = tide_res_lookup(s, name);
	size_t		len;
	char	   *copy;

	if (i >= 0)
		return i;
	if (s->frozen || s->nres >= TIDE_MAX_RES)
		return -1;
	len = strlen(name);
	copy = tide_alloc(s, len + 1);
	memcpy(copy, name, len);
	s->res_names[s->nres] = copy;
	return s->nres++;
}

/* A label lookup: the pairs so far and the key and value looked for. */
typedef struct NameKey
{
	char	  **names;
	const char *key;
	size_t		kl;
	const char *value;
} NameKey;

static bool
name_is(const void *ctx, int32_t entry)
{
	const NameKey *k = ctx;
	const char *n = k->names[entry];

	return strncmp(n, k->key, k->kl) == 0 && n[k->kl] == '=' && strcmp(n + k->kl + 1, k->value) == 0;
}

static uint64_t
name_entry_hash(const void *ctx, int32_t entry)
{
	const NameKey *k = ctx;

	return tide_hash_bytes(k->names[entry], strlen(k->names[entry]), TIDE_HASH_BASIS);
}

static void
names_grow(TideSnapshot *s, TideNames *t)
{
	uint32_t	ncap = t->cap ? t->cap * 2 : 64;
	int32_t    *slots = tide_alloc(s, sizeof(int32_t) * ncap);
	char	  **names = tide_alloc(s, sizeof(char *) * (ncap / 2));
	NameKey		key = {t->names, NULL, 0, NULL};

	tide_table_rehash(slots, ncap - 1, t->slots, t->cap, name_entry_hash, &key);
	for (uint32_t i = 0; i < t->n; i++)
		names[i] = t->names[i];
	tide_free(s, t->slots);
	tide_free(s, t->names);
	t->slots = slots;
	t->names = names;
	t->cap = ncap;
}

/* Intern the label pair key=value; ids are dense from 0. */
int
tide_label_intern(TideSnapshot *s, const char *key, const char *value)
{
	TideNames  *t;
	size_t		kl = strlen(key),
				vl = strlen(value);
	uint64_t	h;
	uint64_t	k;
	char	   *copy;
	NameKey		nk;

	if (s->labels == NULL)
		s->labels = tide_alloc(s, sizeof(TideNames));
	t = s->labels;
	if (t->n + 1 > t->cap / 2)
		names_grow(s, t);
	h = tide_hash_bytes(key, kl, TIDE_HASH_BASIS);
	h = tide_hash_bytes("=", 1, h);
	h = tide_hash_bytes(value, vl, h);
	nk.names = t->names;
	nk.key = key;
	nk.kl = kl;
	nk.value = value;
	k = tide_table_find(t->slots, t->cap - 1, h, name_is, &nk);
	if (t->slots[k])
		return t->slots[k] - 1;
	copy = tide_alloc(s, kl + vl + 2);
	memcpy(copy, key, kl);
	copy[kl] = '=';
	memcpy(copy + kl + 1, value, vl);
	t->names[t->n] = copy;
	t->slots[k] = (int32_t) t->n + 1;
	return (int) t->n++;
}

const char *
tide_label_name(const TideSnapshot *s, int id)
{
	if (s->labels == NULL || id < 0 || (uint32_t) id >= s->labels->n)
		return "?";
	return s->labels->names[id];
}

static void
fill_unlimited(int64_t *v, int n)
{
	for (int i = 0; i < n; i++)
		v[i] = TIDE_UNLIMITED;
}

/*
 * Size the cluster arrays.  Fixes nres: resource names must all be interned
 * before.  Vectors come zeroed, queue limits unlimited, GPUs free.
 */
void
tide_snapshot_alloc_cluster(TideSnapshot *s, int nnodes, int nqueues, int nrunning)
{
	int			nres;
	int64_t    *pool;

	s->frozen = true;
	nres = s->nres;
	s->nnodes = nnodes;
	s->nodes = tide_alloc(s, sizeof(TideNode) * (nnodes > 0 ? nnodes : 1));
	pool = tide_alloc(s, sizeof(int64_t) * nres * 3 * (nnodes > 0 ? nnodes : 1));
	for (int i = 0; i < nnodes; i++)
	{
		TideNode   *n = &s->nodes[i];

		n->capacity = pool + (size_t) nres * (3 * i);
		n->used = pool + (size_t) nres * (3 * i + 1);
		n->held = pool + (size_t) nres * (3 * i + 2);
		n->gpu_type = -1;
		n->part = -1;
		n->bucket = -1;
		n->hold_shadow = TIDE_TIME_UNKNOWN;
		for (int g = 0; g < TIDE_MAX_GPUS; g++)
			n->gpu_free[g] = TIDE_MILLI;
	}
	s->nqueues = nqueues;
	s->queues = tide_alloc(s, sizeof(TideQueue) * (nqueues > 0 ? nqueues : 1));
	for (int i = 0; i < nqueues; i++)
	{
		TideQueue  *q = &s->queues[i];

		q->quota = tide_vec_new(s);
		q->capability = tide_vec_new(s);
		fill_unlimited(q->quota, nres);
		fill_unlimited(q->capability, nres);
		q->usage = tide_vec_new(s);
		q->idle_usage = tide_vec_new(s);
		q->entitled = tide_vec_new(s);
		q->held = tide_vec_new(s);
		q->decayed = tide_alloc(s, sizeof(double) * (nres > 0 ? nres : 1));
		q->decayed_at = TIDE_TIME_UNKNOWN;
		q->parent = -1;
		q->reclaimable = true;
		q->service = TIDE_SVC_TRAINING;
		q->hold_shadow = TIDE_TIME_UNKNOWN;
	}
	s->nrunning = nrunning;
	s->running = tide_alloc(s, sizeof(TideRunning) * (nrunning > 0 ? nrunning : 1));
	s->index = NULL;
	s->owners = NULL;			/* new queues: no owner has anything yet */
}

/* Size the pending-job arrays (replacing earlier ones); roles come zeroed. */
void
tide_snapshot_alloc_jobs(TideSnapshot *s, int njobs, int nroles)
{
	int64_t    *pool;

	s->frozen = true;
	s->njobs = njobs;
	s->jobs = tide_alloc(s, sizeof(TideJob) * (njobs > 0 ? njobs : 1));
	for (int i = 0; i < njobs; i++)
		s->jobs[i].gpu_type = -1;
	s->nroles = nroles;
	s->roles = tide_alloc(s, sizeof(TideRole) * (nroles > 0 ? nroles : 1));
	pool = tide_alloc(s, sizeof(int64_t) * s->nres * (nroles > 0 ? nroles : 1));
	for (int i = 0; i < nroles; i++)
		s->roles[i].request = pool + (size_t) s->nres * i;
}

/*
 * Index of the pending job with this id, -1 if none.  A binary search when
 * the jobs are in id order (the server loads them so), else a scan: any
 * order is correct, the usual one is fast.
 */
int
tide_job_index(const TideSnapshot *s, int64_t id)
{
	int			lo = 0,
				hi = s->njobs - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (s->jobs[mid].id == id)
			return mid;
		if (s->jobs[mid].id < id)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	for (int j = 0; j < s->njobs; j++)
		if (s->jobs[j].id == id)
			return j;
	return -1;
}

int
tide_bitlen(int64_t v)
{
	int			b = 0;

	while (v > 0 && b < 64)
	{
		b++;
		v >>= 1;
	}
	return b;
}

/* The bucket of a node inside its partition: free whole GPUs, or log2 of free cpu. */
int
tide_bucket_of(const TideSnapshot *s, const TideNode *n, const TidePart *p)
{
	int			b;

	(void) s;
	if (n->state != TIDE_NODE_READY)
		return -1;
	if (p->gpu)
		return __builtin_popcountll(n->free_whole);
	b = tide_bitlen(tide_sat_sub(n->capacity[TIDE_RES_CPU], n->used[TIDE_RES_CPU]));
	return b >= TIDE_NBUCKETS ? TIDE_NBUCKETS - 1 : b;
}

static inline void
bit_set(uint64_t *w, int i)
{
	w[i >> 6] |= (uint64_t) 1 << (i & 63);
}

static inline void
bit_clear(uint64_t *w, int i)
{
	w[i >> 6] &= ~((uint64_t) 1 << (i & 63));
}

/* Recompute a node's GPU summary and move it to its bucket after a change. */
void
tide_node_reindex(TideSnapshot *s, TideNode *n)
{
	uint64_t	whole = 0;
	bool		shared = false;

	for (int g = 0; g < n->ngpus; g++)
	{
		if (n->gpu_free[g] >= TIDE_MILLI)
			whole |= (uint64_t) 1 << g;
		else if (n->gpu_free[g] > 0)
			shared = true;
	}
	n->free_whole = whole;
	n->stamp++;
	if (s->index && n->part >= 0)
	{
		TidePart   *p = &s->index->parts[n->part];
		int			rel = n->pos - p->lo;
		int			b = tide_bucket_of(s, n, p);
		bool		was_shared = (p->shared[rel >> 6] >> (rel & 63)) & 1;

		if (b != n->bucket)
		{
			if (n->bucket >= 0)
			{
				bit_clear(p->bits + (size_t) n->bucket * p->nwords, rel);
				p->count[n->bucket]--;
			}
			if (b >= 0)
			{
				bit_set(p->bits + (size_t) b * p->nwords, rel);
				p->count[b]++;
			}
			n->bucket = b;
		}
		if (n->state != TIDE_NODE_READY)
			shared = false;
		if (shared != was_shared)
		{
			if (shared)
			{
				bit_set(p->shared, rel);
				p->nshared++;
			}
			else
			{
				bit_clear(p->shared, rel);
				p->nshared--;
			}
		}
	}
}

/*
 * Add (sign +1) or remove (-1) an allocation's resources on a node.  Used
 * saturates (satmath.h): live allocations the caller charges may sum past
 * int64, and a saturated node must stay full, not wrap to empty.
 */
void
tide_node_apply(TideSnapshot *s, TideNode *n, const int64_t *res,
				uint64_t gpus, int gpu_milli, int sign)
{
	for (int r = 0; r < s->nres; r++)
		n->used[r] = tide_sat_charge(n->used[r], res[r], sign);
	for (int g = 0; g < n->ngpus; g++)
	{
		int			f;

		if (!((gpus >> g) & 1))
			continue;
		/* in int, clamped before the int16 store: a share >= 1000 must not wrap */
		if (gpu_milli > 0)
			f = sign > 0 ? n->gpu_free[g] - (gpu_milli < TIDE_MILLI ? gpu_milli : TIDE_MILLI)
				: n->gpu_free[g] + (gpu_milli < TIDE_MILLI ? gpu_milli : TIDE_MILLI);
		else
			f = sign > 0 ? 0 : TIDE_MILLI;
		if (f < 0)
			f = 0;
		if (f > TIDE_MILLI)
			f = TIDE_MILLI;
		n->gpu_free[g] = (int16_t) f;
	}
	tide_node_reindex(s, n);
}

/*
 * What each owner holds in each queue with an owner_cap (R-A4): one usage
 * vector per (queue, owner) pair met, idle jobs included, in an open
 * addressing table that doubles at half full.  It lives with the snapshot
 * (a simulator's kept snapshot keeps it across decide calls); queues
 * without an owner_cap never reach it, so a cluster without owner limits
 * pays one test per charge.
 */
typedef struct TideOwners
{
	uint64_t	mask;			/* slots - 1 */
	int32_t    *slot;			/* entry + 1, 0 = empty */
	int32_t		n;
	int32_t		cap;			/* entries allocated */
	int32_t    *queue;			/* [cap] */
	int32_t    *owner;			/* [cap] */
	int64_t    *usage;			/* [cap * nres] */
} TideOwners;

static inline uint64_t
owner_hash(int queue, int owner)
{
	return tide_hash_mix(tide_hash_mix(0, (uint64_t) queue), (uint64_t) owner);
}

/* The slot of (queue, owner), or the empty slot where it goes. */
static uint64_t
owner_slot(const TideOwners *t, int queue, int owner)
{
	uint64_t	k = tide_hash_slot(owner_hash(queue, owner), t->mask);

	while (t->slot[k] && !(t->queue[t->slot[k] - 1] == queue && t->owner[t->slot[k] - 1] == owner))
		k = (k + 1) & t->mask;
	return k;
}

const int64_t *
tide_owner_usage(const TideSnapshot *s, int queue, int owner)
{
	const TideOwners *t = s->owners;
	uint64_t	k;

	if (!t || owner < 0)
		return NULL;
	k = owner_slot(t, queue, owner);
	return t->slot[k] ? t->usage + (size_t) (t->slot[k] - 1) * s->nres : NULL;
}

/* Room for one more entry: the entry arrays and the slots doubled as needed. */
static void
owners_grow(TideSnapshot *s)
{
	TideOwners *t = s->owners;

	if (!t)
	{
		t = s->owners = tide_alloc(s, sizeof(TideOwners));
		t->mask = 63;
		t->slot = tide_alloc(s, sizeof(int32_t) * (t->mask + 1));
	}
	if (t->n >= t->cap)
	{
		int32_t		cap = t->cap ? t->cap * 2 : 16;
		int32_t    *q = tide_alloc(s, sizeof(int32_t) * cap);
		int32_t    *o = tide_alloc(s, sizeof(int32_t) * cap);
		int64_t    *u = tide_alloc(s, sizeof(int64_t) * (size_t) cap * s->nres);

		if (t->n > 0)
		{
			memcpy(q, t->queue, sizeof(int32_t) * t->n);
			memcpy(o, t->owner, sizeof(int32_t) * t->n);
			memcpy(u, t->usage, sizeof(int64_t) * (size_t) t->n * s->nres);
		}
		tide_free(s, t->queue);
		tide_free(s, t->owner);
		tide_free(s, t->usage);
		t->queue = q;
		t->owner = o;
		t->usage = u;
		t->cap = cap;
	}
	if ((uint64_t) (t->n + 1) * 2 > t->mask)
	{
		int32_t    *old = t->slot;
		uint64_t	nold = t->mask + 1;

		t->mask = t->mask * 2 + 1;
		t->slot = tide_alloc(s, sizeof(int32_t) * (t->mask + 1));
		for (uint64_t i = 0; i < nold; i++)
			if (old[i])
				t->slot[owner_slot(t, t->queue[old[i] - 1], t->owner[old[i] - 1])] = old[i];
		tide_free(s, old);
	}
}

/* The usage vector of (queue, owner), made (zeroed) when new. */
static int64_t *
owner_entry(TideSnapshot *s, int queue, int owner)
{
	uint64_t	k;

	if (s->owners)
	{
		k = owner_slot(s->owners, queue, owner);
		if (s->owners->slot[k])
			return s->owners->usage + (size_t) (s->owners->slot[k] - 1) * s->nres;
	}
	owners_grow(s);
	k = owner_slot(s->owners, queue, owner);
	s->owners->queue[s->owners->n] = queue;
	s->owners->owner[s->owners->n] = owner;
	s->owners->slot[k] = ++s->owners->n;
	return s->owners->usage + (size_t) (s->owners->n - 1) * s->nres;
}

/* Add (sign +1) or remove (-1) res, with its card key, in vector u. */
static inline void
usage_apply(const TideSnapshot *s, int64_t *u, const TideNode *n, const int64_t *res, int sign)
{
	/* saturating: a queue's live allocations may sum past int64 (satmath.h) */
	for (int r = 0; r < s->nres; r++)
		u[r] = tide_sat_charge(u[r], res[r], sign);
	if (n && n->gpu_type >= 0 && res[TIDE_RES_GPU] > 0 && res[n->gpu_type] == 0)
		u[n->gpu_type] = tide_sat_charge(u[n->gpu_type], res[TIDE_RES_GPU], sign);
}

/*
 * R-A3: what child c adds to its parent's entitled usage of r, given its
 * own entitled usage e of r (its usage when it is a leaf).
 */
static inline int64_t
tree_contrib(const TideQueue *c, int r, int64_t e)
{
	if (!c->has_quota)
		return 0;
	if (c->quota[r] == TIDE_UNLIMITED)
		return e;
	return e < c->quota[r] ? e : c->quota[r];
}

/*
 * A leaf in a tree (R-O5): charge it and every queue above it, and carry
 * the change of entitled usage up the path (R-A3).  The walk up stops at
 * TIDE_MAX_DEPTH, so parents that form a loop (refused by the SQL checks
 * and by tide_snapshot_finish) cannot hang it.
 */
static void
tree_apply(TideSnapshot *s, TideQueue *leaf, const TideNode *n, bool idle,
		   const int64_t *res, int sign)
{
	int64_t		before[TIDE_MAX_RES];
	TideQueue  *c = leaf;
	int			nres = s->nres;

	if (!idle)
		memcpy(before, leaf->usage, sizeof(int64_t) * nres);
	usage_apply(s, idle ? leaf->idle_usage : leaf->usage, n, res, sign);
	if (!idle)
		memcpy(leaf->entitled, leaf->usage, sizeof(int64_t) * nres);
	for (int d = 1; d < TIDE_MAX_DEPTH && c->parent >= 0 && c->parent < s->nqueues; d++)
	{
		TideQueue  *p = &s->queues[c->parent];

		usage_apply(s, idle ? p->idle_usage : p->usage, n, res, sign);
		if (!idle)
			for (int r = 0; r < nres; r++)
			{
				int64_t		moved = tide_sat_sub(tree_contrib(c, r, c->entitled[r]),
												 tree_contrib(c, r, before[r]));

				/* before[] now carries p's entitled usage before the change */
				before[r] = p->entitled[r];
				p->entitled[r] = tide_sat_add(p->entitled[r], moved);
			}
		c = p;
	}
}

/*
 * Charge a queue: the resources plus, on a node with a card type T, the
 * GPUs again as T (R-A1 card keys) unless the request names T itself; and
 * the same to the owner's usage when the queue has an owner limit (R-A4).
 */
void
tide_queue_apply(TideSnapshot *s, TideQueue *q, const TideNode *n, bool idle,
				 int owner, const int64_t *res, int sign)
{
	if (__builtin_expect(q->parent >= 0, 0))
		tree_apply(s, q, n, idle, res, sign);
	else
		usage_apply(s, idle ? q->idle_usage : q->usage, n, res, sign);
	if (__builtin_expect(q->owner_cap != NULL, 0) && owner >= 0)
		usage_apply(s, owner_entry(s, (int) (q - s->queues), owner), n, res, sign);
}

/* Charge (+1) or release (-1) a live allocation on its node and queue. */
void
tide_charge(TideSnapshot *s, int node, int queue, bool idle,
			const int64_t *res, uint64_t gpus, int gpu_milli, int sign)
{
	tide_charge_owned(s, node, queue, -1, idle, res, gpus, gpu_milli, sign);
}

/* tide_charge, with the owner's usage in the queue (R-A4) when it is tracked. */
void
tide_charge_owned(TideSnapshot *s, int node, int queue, int owner, bool idle,
				  const int64_t *res, uint64_t gpus, int gpu_milli, int sign)
{
	TideNode   *n = (node >= 0 && node < s->nnodes) ? &s->nodes[node] : NULL;

	if (n)
		tide_node_apply(s, n, res, gpus, gpu_milli, sign);
	if (queue >= 0 && queue < s->nqueues)
		tide_queue_apply(s, &s->queues[queue], n, idle, owner, res, sign);
}

/* Node order: group, CPU before GPU, card type name, allow_cpu_jobs, name, index. */
static int
cmp_node_order(const void *a, const void *b, void *ctx)
{
	const TideSnapshot *s = ctx;
	int32_t		ia = *(const int32_t *) a,
				ib = *(const int32_t *) b;
	const TideNode *x = &s->nodes[ia];
	const TideNode *y = &s->nodes[ib];
	int			c;
	bool		xg = x->ngpus > 0,
				yg = y->ngpus > 0;

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	if (xg != yg)
		return xg ? 1 : -1;		/* CPU nodes first */
	if (x->gpu_type != y->gpu_type)
	{
		const char *xn = x->gpu_type >= 0 ? s->res_names[x->gpu_type] : "";
		const char *yn = y->gpu_type >= 0 ? s->res_names[y->gpu_type] : "";

		if ((c = strcmp(xn, yn)) != 0)
			return c;
	}
	if (xg && x->allow_cpu_jobs != y->allow_cpu_jobs)
		return x->allow_cpu_jobs ? 1 : -1;
	if ((c = strcmp(x->name, y->name)) != 0)
		return c;
	return ia < ib ? -1 : ia > ib;
}

/* Whether two nodes fall in one partition: cmp_node_order before the name. */
static bool
same_part(const TideNode *x, const TideNode *y)
{
	bool		xg = x->ngpus > 0;

	return x->group == y->group && xg == (y->ngpus > 0) && x->gpu_type == y->gpu_type &&
		(!xg || x->allow_cpu_jobs == y->allow_cpu_jobs);
}

#define MAX_NODE_PARTS 64

/*
 * order[0..nn) := the nodes by cmp_node_order.  Nodes come in name order
 * (the load reads them so) and fall in few partitions: each node's
 * partition is found once, the partitions are ordered, the nodes spread
 * over them keeping their order (stable counting), and a partition whose
 * names are in order already is left as it is.  The result is the
 * comparator's total order whatever the input; with many partitions, or
 * names out of order, it sorts as before.
 */
static void
order_nodes(TideSnapshot *s, int32_t *order, int nn)
{
	int32_t		first[MAX_NODE_PARTS];	/* a node of each partition */
	int32_t		rank[MAX_NODE_PARTS];
	int32_t		start[MAX_NODE_PARTS + 1];
	int32_t		fill[MAX_NODE_PARTS];
	int32_t    *part = tide_alloc(s, sizeof(int32_t) * (nn + 1));
	int			np = 0;

	for (int i = 0; i < nn; i++)
	{
		int			p = np > 0 && same_part(&s->nodes[first[np - 1]], &s->nodes[i]) ? np - 1 : -1;

		for (int k = 0; p < 0 && k < np; k++)
			if (same_part(&s->nodes[first[k]], &s->nodes[i]))
				p = k;
		if (p < 0)
		{
			if (np == MAX_NODE_PARTS)
			{
				for (int k = 0; k < nn; k++)
					order[k] = k;
				tide_sort(order, nn, sizeof(int32_t), cmp_node_order, s);
				return;
			}
			first[np] = i;
			p = np++;
		}
		part[i] = p;
	}
	/* the partitions in order: any two nodes of two differ before their names */
	for (int k = 0; k < np; k++)
		order[k] = k;
	for (int k = 1; k < np; k++)
		for (int m = k; m > 0 && cmp_node_order(&first[order[m - 1]], &first[order[m]], s) > 0; m--)
		{
			int32_t		t = order[m];

			order[m] = order[m - 1];
			order[m - 1] = t;
		}
	for (int k = 0; k < np; k++)
		rank[order[k]] = k;
	memset(start, 0, sizeof(start));
	for (int i = 0; i < nn; i++)
		start[rank[part[i]] + 1]++;
	for (int k = 0; k < np; k++)
		start[k + 1] += start[k];
	memcpy(fill, start, sizeof(int32_t) * np);
	for (int i = 0; i < nn; i++)
		order[fill[rank[part[i]]]++] = i;
	for (int k = 0; k < np; k++)
	{
		int32_t    *o = order + start[k];
		int			n = start[k + 1] - start[k];
		bool		sorted = true;

		for (int i = 1; i < n && sorted; i++)
			sorted = cmp_node_order(&o[i - 1], &o[i], s) < 0;
		if (!sorted)
			tide_sort(o, n, sizeof(int32_t), cmp_node_order, s);
	}
}

/* Queues by name, then index. */
static int
cmp_queue_name(const void *a, const void *b, void *ctx)
{
	const TideSnapshot *s = ctx;
	int32_t		ia = *(const int32_t *) a,
				ib = *(const int32_t *) b;
	int			c = strcmp(s->queues[ia].name, s->queues[ib].name);

	if (c != 0)
		return c;
	return ia < ib ? -1 : ia > ib;
}

/*
 * Normalise a node's topology into per-domain GPU masks (by domain id
 * order).  More distinct domains than TIDE_MAX_DOMAINS: the topology is
 * ignored (one domain) rather than the node refused.
 */
static void
node_domains(TideNode *n)
{
	int16_t		ids[TIDE_MAX_DOMAINS];
	int			nd = 0;

	memset(n->domain_mask, 0, sizeof(n->domain_mask));
	for (int g = 0; g < n->ngpus; g++)
	{
		int			d = 0;

		while (d < nd && ids[d] != n->gpu_domain[g])
			d++;
		if (d == nd)
		{
			if (nd == TIDE_MAX_DOMAINS)
			{
				memset(n->domain_mask, 0, sizeof(n->domain_mask));
				n->domain_mask[0] = n->ngpus >= 64 ? ~(uint64_t) 0 : (((uint64_t) 1 << n->ngpus) - 1);
				n->ndomains = 1;
				return;
			}
			/* keep ids sorted so domain order does not depend on GPU order */
			while (d > 0 && ids[d - 1] > n->gpu_domain[g])
			{
				ids[d] = ids[d - 1];
				n->domain_mask[d] = n->domain_mask[d - 1];
				d--;
			}
			ids[d] = n->gpu_domain[g];
			n->domain_mask[d] = 0;
			nd++;
		}
		n->domain_mask[d] |= (uint64_t) 1 << g;
	}
	n->ndomains = nd;
}

/*
 * R-O5: check the queues' parents (in range, same group, no loop, at most
 * TIDE_MAX_DEPTH levels; the SQL checks refuse all of these first) and
 * build the tree: depths, inner queues, children lists.
 */
static bool
queue_tree(TideSnapshot *s, TideIndex *ix, char *err, size_t errlen)
{
	int			nq = s->nqueues;
	int32_t    *fill;

	ix->max_depth = 1;
	ix->child_start = tide_alloc(s, sizeof(int32_t) * (nq + 2));
	ix->child_list = tide_alloc(s, sizeof(int32_t) * (nq + 1));
	for (int i = 0; i < nq; i++)
	{
		TideQueue  *q = &s->queues[i];
		int			depth = 1;

		q->inner = false;
		for (int p = q->parent; p != -1; p = s->queues[p].parent)
		{
			if (p < 0 || p >= nq)
			{
				snprintf(err, errlen, "queue %s has a parent that is not in the snapshot", q->name);
				return false;
			}
			if (s->queues[p].group != q->group)
			{
				snprintf(err, errlen, "queue %s is not in the resource group of its parent %s",
						 q->name, s->queues[p].name);
				return false;
			}
			if (++depth > TIDE_MAX_DEPTH)
			{
				snprintf(err, errlen, "queue %s is more than %d levels deep (or its parents form a loop)",
						 q->name, TIDE_MAX_DEPTH);
				return false;
			}
		}
		q->depth = depth;
		if (depth > ix->max_depth)
			ix->max_depth = depth;
	}
	/* children of each queue, then the top queues, each list by index */
	for (int i = 0; i < nq; i++)
		ix->child_start[(s->queues[i].parent >= 0 ? s->queues[i].parent : nq) + 1]++;
	for (int i = 0; i <= nq; i++)
		ix->child_start[i + 1] += ix->child_start[i];
	fill = tide_alloc(s, sizeof(int32_t) * (nq + 1));
	memcpy(fill, ix->child_start, sizeof(int32_t) * (nq + 1));
	for (int i = 0; i < nq; i++)
	{
		int			p = s->queues[i].parent >= 0 ? s->queues[i].parent : nq;

		ix->child_list[fill[p]++] = i;
		if (p < nq)
			s->queues[p].inner = true;
	}
	tide_free(s, fill);
	return true;
}

/*
 * Validate and build the index: node order by (group, gpu, card type, name),
 * partitions, buckets, group capacities, queue groups and name ranks.
 */
bool
tide_snapshot_finish(TideSnapshot *s, char *err, size_t errlen)
{
	TideIndex  *ix = tide_alloc(s, sizeof(TideIndex));
	int			nn = s->nnodes;
	int			nres = s->nres;

	if (err && errlen)
		err[0] = '\0';
	for (int i = 0; i < nn; i++)
	{
		TideNode   *n = &s->nodes[i];

		if (n->ngpus < 0 || n->ngpus > TIDE_MAX_GPUS)
		{
			snprintf(err, errlen, "node %s has %d GPUs, at most %d are supported",
					 n->name, n->ngpus, TIDE_MAX_GPUS);
			return false;
		}
		node_domains(n);
	}
	ix->order = tide_alloc(s, sizeof(int32_t) * (nn + 1));
	order_nodes(s, ix->order, nn);

	/* count partitions and groups */
	ix->parts = tide_alloc(s, sizeof(TidePart) * (nn + 1));
	ix->groups = tide_alloc(s, sizeof(TideGroup) * (nn + 1));
	for (int k = 0; k < nn; k++)
	{
		TideNode   *n = &s->nodes[ix->order[k]];
		TideNode   *prev = k > 0 ? &s->nodes[ix->order[k - 1]] : NULL;
		bool		newgroup = !prev || prev->group != n->group;
		bool		newpart = newgroup || (prev->ngpus > 0) != (n->ngpus > 0) ||
			prev->gpu_type != n->gpu_type ||
			(n->ngpus > 0 && prev->allow_cpu_jobs != n->allow_cpu_jobs);

		if (newgroup)
		{
			TideGroup  *g = &ix->groups[ix->ngroups++];

			g->id = n->group;
			g->lo = k;
			g->plo = ix->nparts;
			g->capacity = tide_vec_new(s);
		}
		if (newpart)
		{
			TidePart   *p = &ix->parts[ix->nparts++];

			p->group = ix->ngroups - 1;
			p->gpu_type = n->gpu_type;
			p->gpu = n->ngpus > 0;
			p->allow_cpu = p->gpu && n->allow_cpu_jobs;
			p->lo = k;
			p->maxcap = tide_vec_new(s);
		}
		ix->groups[ix->ngroups - 1].hi = k + 1;
		ix->groups[ix->ngroups - 1].phi = ix->nparts;
		ix->parts[ix->nparts - 1].hi = k + 1;
		n->pos = k;
		n->part = ix->nparts - 1;
		n->bucket = -1;
	}
	for (int pi = 0; pi < ix->nparts; pi++)
	{
		TidePart   *p = &ix->parts[pi];

		p->nwords = (p->hi - p->lo + 63) / 64;
		p->bits = tide_alloc(s, sizeof(uint64_t) * TIDE_NBUCKETS * p->nwords);
		p->shared = tide_alloc(s, sizeof(uint64_t) * p->nwords);
		for (int k = p->lo; k < p->hi; k++)
		{
			TideNode   *n = &s->nodes[ix->order[k]];
			TideGroup  *g = &ix->groups[p->group];

			for (int r = 0; r < nres; r++)
				if (n->capacity[r] > p->maxcap[r])
					p->maxcap[r] = n->capacity[r];
			if (n->ngpus > p->maxgpus)
				p->maxgpus = n->ngpus;
			if (n->state == TIDE_NODE_READY)
			{
				/* saturating: 10k nodes near the int64 maximum sum past it */
				for (int r = 0; r < nres; r++)
					g->capacity[r] = tide_sat_add(g->capacity[r], n->capacity[r]);
				if (n->gpu_type >= 0 && n->capacity[n->gpu_type] == 0)
					g->capacity[n->gpu_type] = tide_sat_add(g->capacity[n->gpu_type],
															n->capacity[TIDE_RES_GPU]);
			}
		}
	}
	s->index = ix;
	for (int i = 0; i < nn; i++)
		tide_node_reindex(s, &s->nodes[i]);

	/* queues: group index and name rank (R-O4 ties) */
	ix->queue_group = tide_alloc(s, sizeof(int32_t) * (s->nqueues + 1));
	ix->queue_rank = tide_alloc(s, sizeof(int32_t) * (s->nqueues + 1));
	{
		int32_t    *qo = tide_alloc(s, sizeof(int32_t) * (s->nqueues + 1));

		for (int i = 0; i < s->nqueues; i++)
			qo[i] = i;
		tide_sort(qo, s->nqueues, sizeof(int32_t), cmp_queue_name, s);
		for (int i = 0; i < s->nqueues; i++)
			ix->queue_rank[qo[i]] = i;
		tide_free(s, qo);
	}
	for (int i = 0; i < s->nqueues; i++)
	{
		ix->queue_group[i] = -1;
		for (int g = 0; g < ix->ngroups; g++)
			if (ix->groups[g].id == s->queues[i].group)
				ix->queue_group[i] = g;
	}
	return queue_tree(s, ix, err, errlen);
}

void
tide_snapshot_destroy(TideSnapshot *s)
{
	/* Without a free function the caller's context owns everything. */
	if (!s->mem.free)
		return;
	/* Individual blocks are many; callers with free() use an arena anyway. */
	s->mem.free(s->mem.ctx, s);
}
