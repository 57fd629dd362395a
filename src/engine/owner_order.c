/*
 * owner_order.c: owners within a queue (R-O7).
 *
 * A queue with owner_fair splits its non-idle jobs per owner, each owner's
 * in R-O3 then R-O1 order, and its next job is the head, among the owners'
 * heads, with the earliest (retry lane first, higher job priority, lower
 * owner share, earlier created_at, smaller id): job priority still wins,
 * and among equal priorities one owner's backlog of a thousand jobs takes
 * turns with a colleague's ten instead of going first.  The owners are a
 * heap per such queue, built for those queues only: a snapshot without
 * one builds nothing and the walk takes each queue's list as before.
 *
 * An owner's share is its non-idle usage in the queue averaged over time
 * like a queue's (R-O6, share.c: D := f D + (1 - f) U with f = 2^(-dt/h);
 * h = 0: the usage now), plus what this walk has placed for it (or set
 * aside for the borrowing pass, at its request), over the
 * queue's quota on the resources the quota names (the dominant one), or,
 * in a queue without a quota, over the capacity of its resource group's
 * ready nodes (card keys left out: the share is then the owner's usage of
 * the group, DRF).  Owners weigh equally, as users with equal shares in
 * Slurm's Fair Tree.
 *
 * The averages are kept per (queue, owner) in the snapshot (a table
 * sorted by queue then owner); the caller gives what it kept
 * (tide_owner_fair_keep), tide_decide() brings them up to now with the
 * usage of the live allocations (tide_owner_fair_decay), and the caller
 * reads them back to keep them (tide_owner_fair_row).
 */
#include <math.h>
#include <string.h>

#include "owner_order.h"
#include "share.h"
#include "sort.h"
#include "work.h"

/* The kept averages per (queue, owner); sorted by queue, owner after each decay. */
typedef struct TideOwnerFairs
{
	const TideQueue *queues;	/* the queue array the rows' indexes are of */
	int32_t		n;
	int32_t		cap;
	TideOwnerFair *rows;
} TideOwnerFairs;

static void
release(TideSnapshot *s, void *p)
{
	if (p && s->mem.free)
		s->mem.free(s->mem.ctx, p);
}

static double *
dvec_new(TideSnapshot *s)
{
	return tide_alloc(s, sizeof(double) * (s->nres > 0 ? s->nres : 1));
}

/* The snapshot's table; a new one when the queues were allocated again. */
static TideOwnerFairs *
fairs(TideSnapshot *s)
{
	TideOwnerFairs *t = s->owner_fair;

	if (!t || t->queues != s->queues)
	{
		t = s->owner_fair = tide_alloc(s, sizeof(TideOwnerFairs));
		t->queues = s->queues;
	}
	return t;
}

/* Room for at least cap rows in t. */
static void
fair_reserve(TideSnapshot *s, TideOwnerFairs *t, int32_t cap)
{
	TideOwnerFair *rows;

	if (cap <= t->cap)
		return;
	rows = tide_alloc(s, sizeof(TideOwnerFair) * cap);
	if (t->n > 0)
		memcpy(rows, t->rows, sizeof(TideOwnerFair) * t->n);
	release(s, t->rows);
	t->rows = rows;
	t->cap = cap;
}

/* A new row of (queue, owner) at the end, without vectors yet. */
static TideOwnerFair *
fair_add(TideSnapshot *s, TideOwnerFairs *t, int queue, int owner)
{
	TideOwnerFair *row;

	if (t->n == t->cap)
		fair_reserve(s, t, t->cap ? t->cap * 2 : 16);
	row = &t->rows[t->n++];
	row->queue = queue;
	row->owner = owner;
	row->decayed_at = TIDE_TIME_UNKNOWN;
	row->decayed = NULL;
	row->usage = NULL;
	return row;
}

/*
 * One resource of a kept average: decayed milli-units as of at.  The
 * resources of one pair come one after the other (a pair given again
 * later is merged at the decay, the larger value kept).
 */
void
tide_owner_fair_keep(TideSnapshot *s, int queue, int owner, int res, double decayed, int64_t at)
{
	TideOwnerFairs *t;
	TideOwnerFair *row;

	if (queue < 0 || queue >= s->nqueues || res < 0 || res >= s->nres)
		return;
	t = fairs(s);
	row = t->n > 0 ? &t->rows[t->n - 1] : NULL;
	if (!row || row->queue != queue || row->owner != owner || !row->decayed)
	{
		row = fair_add(s, t, queue, owner);
		row->decayed = dvec_new(s);
		row->usage = dvec_new(s);
	}
	row->decayed_at = at;
	if (isfinite(decayed) && decayed > 0)
		row->decayed[res] = decayed;
}

/* By queue, owner; a kept row before the placeholders of the same pair. */
static int
cmp_fair(const void *a, const void *b, void *ctx)
{
	const TideOwnerFair *x = a;
	const TideOwnerFair *y = b;

	(void) ctx;
	if (x->queue != y->queue)
		return x->queue < y->queue ? -1 : 1;
	if (x->owner != y->owner)
		return x->owner < y->owner ? -1 : 1;
	return (x->decayed == NULL) - (y->decayed == NULL);
}

/* The row of (queue, owner), NULL when none (the table sorted). */
static TideOwnerFair *
fair_find(const TideOwnerFairs *t, int queue, int owner)
{
	int			lo = 0,
				hi = t ? t->n : 0;

	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;
		const TideOwnerFair *m = &t->rows[mid];

		if (m->queue < queue || (m->queue == queue && m->owner < owner))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (t && lo < t->n && t->rows[lo].queue == queue && t->rows[lo].owner == owner)
		return &t->rows[lo];
	return NULL;
}

/* Does allocation a count towards an owner's share (R-O7)? */
static bool
fair_tracked(const TideSnapshot *s, const TideRunning *a)
{
	return a->queue >= 0 && a->queue < s->nqueues && s->queues[a->queue].owner_fair &&
		!a->idle && a->owner >= 0;
}

/* Add res to u, with the GPUs again as the node's card type (R-A1 card keys). */
static void
add_usage(const TideSnapshot *s, double *u, const TideNode *n, const int64_t *res)
{
	for (int r = 0; r < s->nres; r++)
		u[r] += (double) res[r];
	if (n && n->gpu_type >= 0 && res[TIDE_RES_GPU] > 0 && res[n->gpu_type] == 0)
		u[n->gpu_type] += (double) res[TIDE_RES_GPU];
}

/*
 * The rows one per pair sorted, as fair_table() leaves them, by sorting:
 * a placeholder row for every allocation counted, the table sorted, the
 * rows of one pair merged.  The general way, for owner ids too sparse
 * for fair_table().
 */
static void
fair_sort(TideSnapshot *s, TideOwnerFairs *t)
{
	int			n = 0;
	int32_t		tracked = 0;

	for (int i = 0; i < s->nrunning; i++)
		tracked += fair_tracked(s, &s->running[i]);
	/* one table for them all: growing it by doubling touches twice the pages */
	fair_reserve(s, t, t->n + tracked);
	for (int i = 0; i < s->nrunning; i++)
		if (fair_tracked(s, &s->running[i]))
			fair_add(s, t, s->running[i].queue, s->running[i].owner);
	if (t->n > 1)
		tide_sort(t->rows, t->n, sizeof(TideOwnerFair), cmp_fair, NULL);
	for (int i = 0; i < t->n; i++)
	{
		TideOwnerFair row = t->rows[i];
		TideOwnerFair *prev = n > 0 ? &t->rows[n - 1] : NULL;

		if (s->queues[row.queue].owner_fair && prev && prev->queue == row.queue &&
			prev->owner == row.owner)
		{
			for (int r = 0; row.decayed && r < s->nres; r++)
				if (row.decayed[r] > prev->decayed[r])
					prev->decayed[r] = row.decayed[r];
			row.queue = -1;		/* merged */
		}
		if (row.queue < 0 || !s->queues[row.queue].owner_fair)
		{
			release(s, row.decayed);
			release(s, row.usage);
			continue;
		}
		if (!row.decayed)
		{
			row.decayed = dvec_new(s);
			row.usage = dvec_new(s);
		}
		else
			memset(row.usage, 0, sizeof(double) * s->nres);
		t->rows[n++] = row;
	}
	t->n = n;
	for (int i = 0; i < s->nrunning; i++)
	{
		const TideRunning *a = &s->running[i];

		if (fair_tracked(s, a))
			add_usage(s, fair_find(t, a->queue, a->owner)->usage,
					  a->node >= 0 && a->node < s->nnodes ? &s->nodes[a->node] : NULL, a->res);
	}
}

/*
 * fair_sort() without the sort, when the owner ids are few: a table of
 * (queue, owner) cells, each a kept row, a new one or none, read in
 * order to lay the rows out.  Each allocation then finds its row in one
 * step instead of a search (a busy cluster has tens of thousands).
 * Returns false, having changed nothing, when the ids are too sparse for
 * a table or a pair is kept twice (fair_sort() merges those).
 */
static bool
fair_table(TideSnapshot *s, TideOwnerFairs *t)
{
	int32_t		maxo = -1;
	int64_t		width,
				cells;
	int32_t    *cell;
	TideOwnerFair *rows;
	int			n = 0;

	for (int i = 0; i < s->nrunning; i++)
		if (fair_tracked(s, &s->running[i]) && s->running[i].owner > maxo)
			maxo = s->running[i].owner;
	for (int i = 0; i < t->n; i++)
	{
		if (t->rows[i].owner < 0 || !t->rows[i].decayed)
			return false;
		if (t->rows[i].owner > maxo)
			maxo = t->rows[i].owner;
	}
	width = (int64_t) maxo + 1;
	cells = width * s->nqueues;
	if (cells > 4 * ((int64_t) s->nrunning + t->n) + 4096)
		return false;
	/* cell of (q, o): 0 none, -1 a new row, else 1 + its row */
	cell = tide_alloc(s, sizeof(int32_t) * (cells + 1));
	for (int i = 0; i < t->n; i++)
	{
		const TideOwnerFair *row = &t->rows[i];
		int32_t    *c = &cell[row->queue * width + row->owner];

		if (!s->queues[row->queue].owner_fair)
			continue;
		if (*c)
		{
			release(s, cell);
			return false;
		}
		*c = i + 1;
		n++;
	}
	for (int i = 0; i < s->nrunning; i++)
	{
		const TideRunning *a = &s->running[i];
		int32_t    *c = &cell[a->queue * width + a->owner];

		if (fair_tracked(s, a) && *c == 0)
		{
			*c = -1;
			n++;
		}
	}
	/* the rows of the queues without owner_fair go */
	for (int i = 0; i < t->n; i++)
		if (!s->queues[t->rows[i].queue].owner_fair)
		{
			release(s, t->rows[i].decayed);
			release(s, t->rows[i].usage);
		}
	rows = tide_alloc(s, sizeof(TideOwnerFair) * (n + 1));
	n = 0;
	for (int q = 0; q < s->nqueues; q++)
		for (int64_t o = 0; s->queues[q].owner_fair && o < width; o++)
		{
			int32_t    *c = &cell[q * width + o];
			TideOwnerFair *row = &rows[n];

			if (*c > 0)
			{
				*row = t->rows[*c - 1];
				memset(row->usage, 0, sizeof(double) * s->nres);
			}
			else if (*c < 0)
			{
				row->queue = q;
				row->owner = (int32_t) o;
				row->decayed_at = TIDE_TIME_UNKNOWN;
				row->decayed = dvec_new(s);
				row->usage = dvec_new(s);
			}
			else
				continue;
			*c = ++n;
		}
	release(s, t->rows);
	t->rows = rows;
	t->n = t->cap = n;
	for (int i = 0; i < s->nrunning; i++)
	{
		const TideRunning *a = &s->running[i];

		if (fair_tracked(s, a))
			add_usage(s, rows[cell[a->queue * width + a->owner] - 1].usage,
					  a->node >= 0 && a->node < s->nnodes ? &s->nodes[a->node] : NULL, a->res);
	}
	release(s, cell);
	return true;
}

/*
 * Every pair of a queue with owner_fair brought up to s->now: one row per
 * pair kept or holding something now (rows of other queues dropped), its
 * usage the non-idle live allocations of s->running, and its average
 * decayed with it as a queue's is (share.c).  Nothing without such a queue.
 */
void
tide_owner_fair_decay(TideSnapshot *s)
{
	TideOwnerFairs *t;
	bool		any = false;

	for (int q = 0; q < s->nqueues && !any; q++)
		any = s->queues[q].owner_fair;
	if (!any)
		return;
	t = fairs(s);
	if (!fair_table(s, t))
		fair_sort(s, t);
	for (int i = 0; i < t->n; i++)
	{
		TideOwnerFair *row = &t->rows[i];
		double		f;

		if (!tide_decay_step(s, &row->decayed_at, &f))
			continue;
		for (int r = 0; r < s->nres; r++)
			row->decayed[r] = f * row->decayed[r] + (1.0 - f) * row->usage[r];
	}
}

int
tide_owner_fair_count(const TideSnapshot *s)
{
	return s->owner_fair && s->owner_fair->queues == s->queues ? s->owner_fair->n : 0;
}

const TideOwnerFair *
tide_owner_fair_row(const TideSnapshot *s, int i)
{
	return &s->owner_fair->rows[i];
}

/* Nothing held now and an average below min_milli everywhere: forgettable. */
bool
tide_owner_fair_negligible(const TideSnapshot *s, const TideOwnerFair *row, double min_milli)
{
	for (int r = 0; r < s->nres; r++)
		if (row->usage[r] > 0 || row->decayed[r] >= min_milli)
			return false;
	return true;
}

/* ---------------------------------------------------------------- the walk */

/* Positions in a queue's list by owner, then position: each owner's stays in order. */
static int
cmp_by_owner(const void *a, const void *b, void *ctx)
{
	const int32_t *own = ctx;
	int32_t		pa = *(const int32_t *) a,
				pb = *(const int32_t *) b;

	if (own[pa] != own[pb])
		return own[pa] < own[pb] ? -1 : 1;
	return pa < pb ? -1 : pa > pb;
}

/*
 * Owner o's dominant share: the largest used / denom over the counted
 * resources (those with denom > 0, in resource order).
 */
static double
owner_share(const TideLeafOwners *lo, int o)
{
	const double *u = lo->used + (size_t) o * lo->ncounted;
	double		share = 0.0;

	for (int k = 0; k < lo->ncounted; k++)
	{
		double		x = u[k] / lo->denom[k];

		if (x > share)
			share = x;
	}
	return share;
}

/*
 * add_usage() on the counted resources only (u: an owner's row of used),
 * the same additions in the same order: a share reads nothing else.
 */
static void
add_counted(const TideLeafOwners *lo, double *u, const TideNode *n, const int64_t *res)
{
	for (int k = 0; k < lo->ncounted; k++)
		u[k] += (double) res[lo->counted[k]];
	if (n && n->gpu_type >= 0 && res[TIDE_RES_GPU] > 0 && res[n->gpu_type] == 0 &&
		lo->slot[n->gpu_type] >= 0)
		u[lo->slot[n->gpu_type]] += (double) res[TIDE_RES_GPU];
}

/*
 * R-O7: owner x's head job before owner y's: the retry lane, then higher
 * priority (both the lane's rank), lower share, then earlier created_at
 * and smaller id, which within a lane is the earlier place in the queue's
 * list (sorted by them, order.c).  Job ids are unique, so two owners'
 * places never tie.
 */
static inline bool
obefore(const TideOwnerHead *x, const TideOwnerHead *y)
{
	return x->hi < y->hi || (x->hi == y->hi && x->lo < y->lo);
}

/* A share's bits, which order shares as they do (0 and -0 alike). */
static inline uint64_t
share_bits(double share)
{
	uint64_t	bits = 0;

	if (share > 0)
		memcpy(&bits, &share, sizeof(bits));
	return bits;
}

/* The share bits of h's key. */
static inline uint64_t
head_share_bits(const TideOwnerHead *h)
{
	return (h->hi << 32) | (h->lo >> 32);
}

/*
 * h's owner keyed by its next job (it has one) and the share whose bits
 * are sb, without reading the job: its place in the list, and the lane
 * that place is in (an owner's places only grow, so its lane only moves
 * on from the one in h).  What the walk reads of that job when the
 * owner's turn comes (the job, its derived data, its outcome) and the job
 * after it are asked of memory now: the walk learns which job comes next
 * only from the heap, too late to overlap the wait, and an owner's jobs
 * are scattered over s->jobs.
 */
static inline void
set_head(const TideWork *w, TideLeafOwners *lo, TideOwnerHead *h, uint64_t sb)
{
	const TideSnapshot *s = w->s;
	int			o = h->owner;
	int32_t		i = lo->next[o];
	uint32_t	at = (uint32_t) lo->at[i];
	int32_t		j = lo->list[at];
	uint64_t	lane = h->hi >> 32;

	__builtin_prefetch(&w->info[j]);
	__builtin_prefetch(&w->r->outcomes[j], 1);
	if (i + 1 < lo->start[o + 1])
		__builtin_prefetch(&s->jobs[lo->list[lo->at[i + 1]]]);
	while (at >= (uint32_t) lo->bound[lane + 1])
		lane++;
	h->hi = (lane << 32) | (sb >> 32);
	h->lo = (sb << 32) | at;
}

/* The heap's entry i moved down to its place. */
static inline void
osift_down(TideLeafOwners *lo, int i)
{
	TideOwnerHead *heap = lo->heap;
	TideOwnerHead x = heap[i];
	int			n = lo->nheap;

	for (;;)
	{
		int			c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && obefore(&heap[c + 1], &heap[c]))
			c++;
		if (!obefore(&heap[c], &x))
			break;
		heap[i] = heap[c];
		i = c;
	}
	heap[i] = x;
}

/*
 * What owner shares of queue q divide by: its quota where it names a
 * resource, else its group's ready capacity without card keys.  Only the
 * resources with something to divide by count (lo->counted, their
 * divisors lo->denom in the same order, lo->slot the way back): the walk
 * keeps and divides the owners' usage of those alone.
 */
static void
leaf_denom(TideWork *w, TideLeafOwners *lo, int q)
{
	const TideSnapshot *s = w->s;
	const TideQueue *queue = &s->queues[q];
	size_t		room = (size_t) s->nres + 1;
	/* one block: the divisors by resource, the counted ones', counted, slot */
	double	   *d = tide_work_alloc(w, (2 * sizeof(double) + 2 * sizeof(int32_t)) * room);
	double	   *denom = d + room;
	int			g = w->ix->queue_group[q];

	lo->counted = (int32_t *) (denom + room);
	lo->slot = lo->counted + room;
	if (queue->has_quota)
	{
		for (int r = 0; r < s->nres; r++)
			if (queue->quota[r] != TIDE_UNLIMITED && queue->quota[r] > 0)
				d[r] = (double) queue->quota[r];
	}
	else if (g >= 0)
	{
		for (int r = 0; r < s->nres; r++)
			d[r] = (double) w->ix->groups[g].capacity[r];
		for (int i = 0; i < s->nnodes; i++)
			if (s->nodes[i].gpu_type >= 0)
				d[s->nodes[i].gpu_type] = 0;
	}
	for (int r = 0; r < s->nres; r++)
	{
		lo->slot[r] = -1;
		if (d[r] > 0)
		{
			lo->slot[r] = lo->ncounted;
			lo->counted[lo->ncounted] = r;
			denom[lo->ncounted++] = d[r];
		}
	}
	lo->denom = denom;
}

/*
 * The positions 0..n-1 of a queue's list by owner into pos (own[k]: the
 * owner of the list's job k), each owner's in list order: a counting sort
 * when the owner ids are few for n, else a sort.
 */
static void
group_by_owner(TideWork *w, const int32_t *own, int n, int32_t *pos)
{
	int32_t		lo = INT32_MAX,
				hi = INT32_MIN;

	for (int k = 0; k < n; k++)
	{
		lo = own[k] < lo ? own[k] : lo;
		hi = own[k] > hi ? own[k] : hi;
	}
	if ((int64_t) hi - lo < 4 * (int64_t) n + 64)
	{
		int32_t    *fill = tide_work_alloc(w, sizeof(int32_t) * ((size_t) (hi - lo) + 2));

		for (int k = 0; k < n; k++)
			fill[own[k] - lo + 1]++;
		for (int32_t o = 0; o < hi - lo; o++)
			fill[o + 1] += fill[o];
		for (int k = 0; k < n; k++)
			pos[fill[own[k] - lo]++] = k;
	}
	else
	{
		for (int k = 0; k < n; k++)
			pos[k] = k;
		tide_sort(pos, n, sizeof(int32_t), cmp_by_owner, (void *) own);
	}
}

/* Jobs x and y in the same lane of a queue's list: retry lane and priority alike. */
static inline bool
same_lane(const TideJob *x, const TideJob *y)
{
	return x->is_retry == y->is_retry && x->priority == y->priority;
}

/*
 * Where each lane of a queue's list (n jobs in R-O3, R-O1 order, so each
 * lane in one piece) starts, into bound when not NULL; returns the number
 * of lanes.  Each end is found by galloping then halving: a few jobs read
 * per lane, where the lanes are few and long, instead of every job.
 */
static int32_t
lane_starts(const TideSnapshot *s, const int32_t *list, int n, int32_t *bound)
{
	int32_t		nl = 0;

	for (int k = 0; k < n;)
	{
		const TideJob *x = &s->jobs[list[k]];
		int64_t		lo = k,
					hi = (int64_t) k + 1,
					step = 1;

		if (bound)
			bound[nl] = k;
		nl++;
		/* list[lo] in x's lane; list[hi] not, or hi == n */
		while (hi < n && same_lane(x, &s->jobs[list[hi]]))
		{
			lo = hi;
			step *= 2;
			hi = k + step;
		}
		if (hi > n)
			hi = n;
		while (hi - lo > 1)
		{
			int64_t		mid = lo + (hi - lo) / 2;

			if (same_lane(x, &s->jobs[list[mid]]))
				lo = mid;
			else
				hi = mid;
		}
		k = (int) hi;
	}
	return nl;
}

/* The starts of the lanes of a queue's list, then n. */
static int32_t *
lane_bounds(TideWork *w, const int32_t *list, int n)
{
	int32_t		nl = lane_starts(w->s, list, n, NULL);
	int32_t    *bound = tide_work_alloc_raw(w, sizeof(int32_t) * ((size_t) nl + 1));

	lane_starts(w->s, list, n, bound);
	bound[nl] = n;
	return bound;
}

/*
 * Queue q's n jobs (list, in R-O3, R-O1 order) split per owner, owners in
 * a heap; own: room for n, the scratch of every queue in turn.
 */
static TideLeafOwners *
leaf_build(TideWork *w, int q, const int32_t *list, int n, int32_t *own)
{
	const TideSnapshot *s = w->s;
	TideLeafOwners *lo = tide_work_alloc(w, sizeof(TideLeafOwners));
	int32_t    *at = tide_work_alloc_raw(w, sizeof(int32_t) * n);

	/* the owners read once: the list's jobs are scattered over s->jobs */
	for (int k = 0; k < n; k++)
		own[k] = s->jobs[list[k]].owner;
	group_by_owner(w, own, n, at);
	lo->list = list;
	lo->at = at;
	lo->bound = lane_bounds(w, list, n);
	/* room for an owner per job; only the first nown + 1 are written */
	lo->start = tide_work_alloc_raw(w, sizeof(int32_t) * (n + 1));
	for (int k = 0; k < n; k++)
		if (k == 0 || own[at[k]] != own[at[k - 1]])
			lo->start[lo->nown++] = k;
	lo->start[lo->nown] = n;
	lo->next = tide_work_alloc(w, sizeof(int32_t) * lo->nown);
	lo->heap = tide_work_alloc(w, sizeof(TideOwnerHead) * lo->nown);
	leaf_denom(w, lo, q);
	lo->used = tide_work_alloc(w, sizeof(double) * ((size_t) lo->nown * lo->ncounted + 1));
	lo->shape_of = tide_work_alloc(w, sizeof(int32_t) * SHAPE_SLOTS);
	lo->shape_add = tide_work_alloc_raw(w, sizeof(double) * ((size_t) SHAPE_SLOTS * lo->ncounted + 1));
	for (int o = 0; o < lo->nown; o++)
	{
		const TideOwnerFair *row = fair_find(s->owner_fair, q, own[at[lo->start[o]]]);

		lo->next[o] = lo->start[o];
		for (int k = 0; row && k < lo->ncounted; k++)
			lo->used[(size_t) o * lo->ncounted + k] = row->decayed[lo->counted[k]];
		lo->heap[o].owner = o;
		set_head(w, lo, &lo->heap[o], share_bits(owner_share(lo, o)));
	}
	lo->nheap = lo->nown;
	for (int i = lo->nheap / 2 - 1; i >= 0; i--)
		osift_down(lo, i);
	return lo;
}

/*
 * Before the walk: the owners of every queue with owner_fair and jobs
 * (qlist and qstart as from tide_order_queue_jobs); L->leaf stays NULL
 * when there is none.
 */
void
tide_leaf_begin(TideWork *w, TideLeaves *L, const int32_t *qlist, const int32_t *qstart)
{
	const TideSnapshot *s = w->s;
	int32_t		most = 0;
	int32_t    *own;

	L->leaf = NULL;
	for (int q = 0; q < s->nqueues; q++)
		if (__builtin_expect(s->queues[q].owner_fair, 0) && qstart[q + 1] - qstart[q] > most)
			most = qstart[q + 1] - qstart[q];
	if (most == 0)
		return;
	L->leaf = tide_work_alloc(w, sizeof(TideLeafOwners *) * (s->nqueues + 1));
	own = tide_work_alloc_raw(w, sizeof(int32_t) * most);
	for (int q = 0; q < s->nqueues; q++)
		if (s->queues[q].owner_fair && qstart[q + 1] > qstart[q])
			L->leaf[q] = leaf_build(w, q, qlist + qstart[q], qstart[q + 1] - qstart[q], own);
}

/*
 * Owner o's share after job j, its head, was placed (grown by what j was
 * given) or set aside for the borrowing pass (by what it asks: a queue
 * above or without a quota places nothing in the first pass, and its
 * owners still take turns in the order set aside, which the second pass
 * keeps).
 */
static double
grown_share(const TideWork *w, TideLeafOwners *lo, int o, int j, bool placed)
{
	const TideSnapshot *s = w->s;
	const TideOutcome *out = &w->r->outcomes[j];
	double	   *u = lo->used + (size_t) o * lo->ncounted;

	if (placed)
	{
		for (int k = 0; k < out->nplacements; k++)
		{
			const TidePlacement *p = &w->r->placements[out->first_placement + k];

			add_counted(lo, u, p->node >= 0 ? &s->nodes[p->node] : NULL, p->res);
		}
	}
	else
	{
		/*
		 * The roles of the first job of j's shape (prep.c: the same roles,
		 * replicas and requests), few and in the cache, not j's own,
		 * which a walk in owner order reaches at random.  A shape of one
		 * task adds its request once: what it adds to each counted
		 * resource is kept for the next job of that shape (the same
		 * additions, one double each).
		 */
		int32_t		shape = w->info[j].shape >= 0 ? w->info[j].shape : j;
		int			slot = shape & (SHAPE_SLOTS - 1);
		double	   *add = lo->shape_add + (size_t) slot * lo->ncounted;
		const TideJob *job;

		if (lo->shape_of[slot] == shape + 1)
		{
			for (int k = 0; k < lo->ncounted; k++)
				u[k] += add[k];
			return owner_share(lo, o);
		}
		job = &s->jobs[shape];
		if (job->nroles == 1 && job->roles[0].replicas == 1)
		{
			lo->shape_of[slot] = shape + 1;
			for (int k = 0; k < lo->ncounted; k++)
				add[k] = (double) job->roles[0].request[lo->counted[k]];
		}
		for (int ri = 0; ri < job->nroles; ri++)
			for (int k = 0; k < job->roles[ri].replicas; k++)
				add_counted(lo, u, NULL, job->roles[ri].request);
	}
	return owner_share(lo, o);
}

/*
 * Job j, the first owner's head, was considered: its owner moves on to its
 * next job, its share grown when j was placed or set aside for the
 * borrowing pass, and sinks; out of the heap when it has no job left.
 */
void
tide_leaf_after(TideWork *w, TideLeafOwners *lo, int j, bool placed)
{
	TideOwnerHead *h = &lo->heap[0];
	int			o = h->owner;
	int32_t		i = ++lo->next[o];
	uint64_t	sb = head_share_bits(h);

	if (placed || w->r->outcomes[j].klass == TIDE_CLASS_BORROWING)
		sb = share_bits(grown_share(w, lo, o, j, placed));
	if (i == lo->start[o + 1])
	{
		*h = lo->heap[--lo->nheap];
		if (lo->nheap == 0)
			return;
	}
	else
		set_head(w, lo, h, sb);
	osift_down(lo, 0);
}
