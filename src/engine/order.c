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

/*
 * R-O3 then R-O1: retry lane, priority, created_at, id (then index: total),
 * as a key read once per job: the sort then reads a compact array instead
 * of the snapshot's jobs.
 */
typedef struct JobKey
{
	int64_t		lane;			/* the retry lane, then higher priority: smaller first */
	int64_t		created_at;
	int64_t		id;
	int32_t		j;
} JobKey;

static inline int64_t
job_lane(const TideJob *job)
{
	return ((int64_t) (job->is_retry ? 0 : 1) << 33) - (int64_t) job->priority;
}

static inline int
key_cmp(const JobKey *x, const JobKey *y)
{
	if (x->lane != y->lane)
		return x->lane < y->lane ? -1 : 1;
	if (x->created_at != y->created_at)
		return x->created_at < y->created_at ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->j < y->j ? -1 : x->j > y->j;
}

static int
cmp_key(const void *a, const void *b, void *ctx)
{
	(void) ctx;
	return key_cmp(a, b);
}

static inline void
swap_keys(JobKey *a, JobKey *b)
{
	JobKey		t = *a;

	*a = *b;
	*b = t;
}

/*
 * keys[0..n) sorted by key_cmp: a quicksort of the keys themselves (the
 * comparison inlined, keys moved as structs), insertion sort for short
 * runs, tide_sort past a depth that only adversarial input reaches.  The
 * order is total (indexes differ), so any correct sort gives the same
 * result: the lanes of a backlog whose created_at is not in id order are
 * sorted every cycle, and the generic sort's calls and byte swaps were
 * most of it.
 */
static void
sort_keys(JobKey *keys, int n, int depth)
{
	while (n > 16)
	{
		int			m = n / 2,
					i = -1,
					k = n;
		JobKey		pivot;

		if (depth-- == 0)
		{
			tide_sort(keys, n, sizeof(JobKey), cmp_key, NULL);
			return;
		}
		/* median of three: keys[0] <= keys[m] <= keys[n - 1] */
		if (key_cmp(&keys[m], &keys[0]) < 0)
			swap_keys(&keys[m], &keys[0]);
		if (key_cmp(&keys[n - 1], &keys[0]) < 0)
			swap_keys(&keys[n - 1], &keys[0]);
		if (key_cmp(&keys[n - 1], &keys[m]) < 0)
			swap_keys(&keys[n - 1], &keys[m]);
		pivot = keys[m];
		/* Hoare: [0, k] <= pivot <= [k + 1, n), both parts non-empty */
		for (;;)
		{
			do
				i++;
			while (key_cmp(&keys[i], &pivot) < 0);
			do
				k--;
			while (key_cmp(&keys[k], &pivot) > 0);
			if (i >= k)
				break;
			swap_keys(&keys[i], &keys[k]);
		}
		/* the smaller part by recursion, the larger by the loop */
		if (k + 1 < n - (k + 1))
		{
			sort_keys(keys, k + 1, depth);
			keys += k + 1;
			n -= k + 1;
		}
		else
		{
			sort_keys(keys + k + 1, n - (k + 1), depth);
			n = k + 1;
		}
	}
	for (int i = 1; i < n; i++)
	{
		JobKey		x = keys[i];
		int			k = i;

		for (; k > 0 && key_cmp(&keys[k - 1], &x) > 0; k--)
			keys[k] = keys[k - 1];
		keys[k] = x;
	}
}

/* The depth past which sort_keys hands over: twice the bits of n. */
static int
sort_depth(int n)
{
	int			d = 0;

	while (n > 0)
	{
		d += 2;
		n >>= 1;
	}
	return d;
}

/* Whether keys[0..n) are in order already. */
static bool
keys_sorted(const JobKey *keys, int n)
{
	for (int i = 1; i < n; i++)
		if (key_cmp(&keys[i - 1], &keys[i]) > 0)
			return false;
	return true;
}

#define MAX_LANES 32

/* Job j's key. */
static inline void
key_of(const TideSnapshot *s, int j, JobKey *key)
{
	const TideJob *job = &s->jobs[j];

	key->lane = job_lane(job);
	key->created_at = job->created_at;
	key->id = job->id;
	key->j = j;
}

/*
 * Sort list[0..n) of job indexes, whose keys are keys[0..n) (in the same
 * order, written by the caller as it read the jobs in index order: read
 * here in the list's order they were a cache miss each), by their keys
 * (scratch: spread, room for n keys).  A backlog comes in id order, which is mostly created_at order,
 * in few lanes (retry lane x priority): the keys are spread by lane
 * (stable counting), and a lane already in order is left as it is; the
 * others, or every key when the lanes are many, are sorted.  The result is
 * the keys' total order whatever the input.
 */
static void
sort_jobs(int32_t *list, int n, JobKey *keys, JobKey *spread)
{
	int64_t		lanes[MAX_LANES];
	int32_t		start[MAX_LANES + 1];
	int			nlanes = 0;
	int			last = -1;

	if (n < 2 || keys_sorted(keys, n))
		return;
	/* the distinct lanes, ascending */
	for (int i = 0; i < n && nlanes <= MAX_LANES; i++)
	{
		int			k;

		if (last >= 0 && lanes[last] == keys[i].lane)
			continue;
		for (k = 0; k < nlanes && lanes[k] < keys[i].lane; k++)
			;
		if (k < nlanes && lanes[k] == keys[i].lane)
		{
			last = k;
			continue;
		}
		if (nlanes == MAX_LANES)
		{
			nlanes++;			/* too many: sort them all */
			break;
		}
		memmove(&lanes[k + 1], &lanes[k], sizeof(int64_t) * (nlanes - k));
		lanes[k] = keys[i].lane;
		nlanes++;
		last = k;
	}
	if (nlanes > MAX_LANES)
	{
		sort_keys(keys, n, sort_depth(n));
		for (int i = 0; i < n; i++)
			list[i] = keys[i].j;
		return;
	}
	/*
	 * Stable counting by lane, then each lane in order.  A key's lane
	 * becomes its rank among the lanes (ascending, so the keys compare as
	 * before) and is the counting pass's index.
	 */
	memset(start, 0, sizeof(int32_t) * (nlanes + 1));
	last = 0;
	for (int i = 0; i < n; i++)
	{
		if (lanes[last] != keys[i].lane)
			for (last = 0; lanes[last] != keys[i].lane; last++)
				;
		keys[i].lane = last;
		start[last + 1]++;
	}
	for (int k = 0; k < nlanes; k++)
		start[k + 1] += start[k];
	for (int i = 0; i < n; i++)
		spread[start[keys[i].lane]++] = keys[i];
	for (int k = 0, lo = 0; k < nlanes; lo = start[k], k++)
		if (!keys_sorted(spread + lo, start[k] - lo))
			sort_keys(spread + lo, start[k] - lo, sort_depth(start[k] - lo));
	for (int i = 0; i < n; i++)
		list[i] = spread[i].j;
}

/*
 * The order memo.  A backlog changes little between two cycles, and a
 * job's order key never changes while its row does not: the lists of the
 * last decide, kept by the caller (s->order_memo), give most of this
 * decide's order without a sort.  Per job in id order, its key, its list
 * (its queue, or the idle list) and its place there.  The snapshot's jobs
 * come in id order (the load's), and both are read side by side: a job
 * with the same id, list and key as in the memo keeps its place; the kept
 * jobs of a list come out in the order of their places, the others (new
 * or changed, few in a busy cycle) are sorted and merged in.  Nothing in
 * the memo is trusted: the kept jobs' keys must ascend as they are merged,
 * places out of range or repeated are refused, and a memo that serves
 * fewer than half of the jobs is dropped; then every list is sorted as
 * without a memo.  A memo of other jobs, or of another queue layout, costs
 * time; the order is the keys' total order either way.  Jobs whose ids do
 * not ascend (no load gives them, some tests do) neither use a memo nor
 * leave one.  One pass over the jobs writes their entries (the memo this
 * decide leaves, 32 bytes a job, or scratch), and one merge of those with
 * the memo makes every list, the idle one too.
 */
typedef struct MemoEntry
{
	int64_t		id;
	int64_t		lane;			/* job_lane() */
	int64_t		created_at;
	int32_t		list;			/* its queue, or -1: the idle list */
	int32_t		pos;			/* its place: index into the queues' list
								 * (queue q's range is starts[q] to
								 * starts[q + 1]) or the idle list; -1 none */
} MemoEntry;

struct TideOrderMemo
{
	TideMem		mem;			/* what it was allocated with */
	int32_t		njobs;
	int32_t		nqueues;
	int32_t		nidle;
	int32_t		kept;			/* jobs whose place came from the memo before */
	int32_t    *starts;			/* [nqueues + 1] the queues' ranges */
	MemoEntry  *e;				/* [njobs], ascending ids */
};

/*
 * This decide's entries (pos -1 until the lists are made), in the memo it
 * leaves when the caller asks for one (s->order_mem), else in scratch;
 * starts[q + 1] counts queue q's non-idle jobs, *nidle the idle ones.
 * NULL when the ids do not ascend (no memo used or left).
 */
static MemoEntry *
memo_entries(TideWork *w, int32_t *starts, int32_t *nidle)
{
	const TideSnapshot *s = w->s;
	size_t		head = (sizeof(TideOrderMemo) + 7) & ~(size_t) 7;
	size_t		size = head + sizeof(MemoEntry) * s->njobs + sizeof(int32_t) * (s->nqueues + 1);
	TideOrderMemo *m;
	int64_t		last = INT64_MIN;
	bool		ascending = true;
	int32_t		n = 0;

	m = s->order_mem.alloc ? s->order_mem.alloc(s->order_mem.ctx, size)
		: tide_work_alloc_raw(w, size);
	m->mem = s->order_mem;
	m->njobs = s->njobs;
	m->nqueues = s->nqueues;
	m->nidle = 0;
	m->kept = 0;
	m->e = (MemoEntry *) ((char *) m + head);
	m->starts = (int32_t *) (m->e + s->njobs);
	for (int j = 0; j < s->njobs; j++)
	{
		const TideJob *job = &s->jobs[j];
		MemoEntry  *e = &m->e[j];

		ascending &= job->id > last || j == 0;
		last = job->id;
		e->id = job->id;
		e->lane = job_lane(job);
		e->created_at = job->created_at;
		e->list = job->idle ? -1 : job->queue;
		e->pos = -1;
		if (job->idle)
			n++;
		else
			starts[job->queue + 1]++;
	}
	*nidle = n;
	if (s->order_mem.alloc && ascending)
		w->r->order_memo = m;
	else if (s->order_mem.alloc && s->order_mem.free)
		s->order_mem.free(s->order_mem.ctx, m);
	return ascending ? m->e : NULL;
}

void
tide_order_memo_free(TideOrderMemo *m)
{
	if (m && m->mem.free)
		m->mem.free(m->mem.ctx, m);
}

int32_t
tide_order_memo_kept(const TideOrderMemo *m)
{
	return m ? m->kept : 0;
}

/*
 * Every list from memo m and this decide's entries cur: the queues' into
 * list (ranges starts[0..nqueues]), the idle one (nidle jobs) into
 * w->idle_order.  Returns the number of jobs placed from the memo, or -1
 * when the memo does not serve (list is then half written: the caller
 * sorts).  One list is numbered like a queue here: the idle list is
 * nqueues of this decide, m->nqueues of the memo's places (which follow
 * the queues' there).
 */
static int
order_from_memo(TideWork *w, const TideOrderMemo *m, const MemoEntry *cur,
				const int32_t *starts, int32_t nidle, int32_t *list)
{
	const TideSnapshot *s = w->s;
	int			ngroups = s->nqueues + 1,
				nq = m->starts[m->nqueues],
				nprev = nq + m->nidle,
				n = starts[s->nqueues] + nidle,
				nkept = 0,
				nfresh = 0,
				i = 0;
	JobKey	   *kept,
			   *fresh,
			   *grouped = NULL;
	uint8_t    *have;
	int32_t    *fstart = NULL,
			   *idle;

	if (n == 0 || nprev == 0)
		return -1;
	idle = tide_work_alloc_raw(w, sizeof(int32_t) * (nidle + 1));
	kept = tide_work_alloc_raw(w, sizeof(JobKey) * (nprev + 1));
	have = tide_work_alloc(w, nprev + 1);
	fresh = tide_work_alloc_raw(w, sizeof(JobKey) * (n + 1));

	/* this decide's jobs and the memo's side by side, both in id order */
	for (int j = 0; j < s->njobs; j++)
	{
		const MemoEntry *c = &cur[j],
				   *e;
		int			lo,
					hi;
		JobKey		k;

		k.lane = c->lane;
		k.created_at = c->created_at;
		k.id = c->id;
		k.j = j;
		while (i < m->njobs && m->e[i].id < c->id)
			i++;
		e = &m->e[i];
		if (i == m->njobs || e->id != c->id || e->list != c->list ||
			e->lane != c->lane || e->created_at != c->created_at)
		{
			fresh[nfresh++] = k;
			continue;
		}
		/* its place among the memo's: the idle list's follow the queues' */
		lo = c->list < 0 ? 0 : c->list < m->nqueues ? m->starts[c->list] : 0;
		hi = c->list < 0 ? m->nidle : c->list < m->nqueues ? m->starts[c->list + 1] : 0;
		if (e->pos < lo || e->pos >= hi || have[e->pos + (c->list < 0 ? nq : 0)])
		{
			fresh[nfresh++] = k;
			continue;
		}
		have[e->pos + (c->list < 0 ? nq : 0)] = 1;
		kept[e->pos + (c->list < 0 ? nq : 0)] = k;
		nkept++;
	}
	if (nkept * 2 < n)
	{
		nkept = -1;
		goto done;
	}

	/* the fresh jobs by list (stable counting), each list sorted */
	fstart = tide_work_alloc(w, sizeof(int32_t) * (ngroups + 2));
	grouped = tide_work_alloc_raw(w, sizeof(JobKey) * (nfresh + 1));
#define GROUP_OF(k) (cur[(k).j].list < 0 ? s->nqueues : cur[(k).j].list)
	for (int f = 0; f < nfresh; f++)
		fstart[GROUP_OF(fresh[f]) + 2]++;
	for (int g = 0; g < ngroups; g++)
		fstart[g + 2] += fstart[g + 1];
	for (int f = 0; f < nfresh; f++)
		grouped[fstart[GROUP_OF(fresh[f]) + 1]++] = fresh[f];
#undef GROUP_OF
	for (int g = 0; g < ngroups; g++)
		sort_keys(grouped + fstart[g], fstart[g + 1] - fstart[g],
				  sort_depth(fstart[g + 1] - fstart[g]));

	/* each list: its kept jobs in the memo's order, the fresh merged in */
	for (int g = 0; g < ngroups; g++)
	{
		bool		is_idle = g == s->nqueues;
		int32_t    *to = is_idle ? idle : list;
		int			at = is_idle ? 0 : starts[g],
					end = is_idle ? nidle : starts[g + 1],
					f = fstart[g],
					fe = fstart[g + 1],
					p = is_idle ? nq : g < m->nqueues ? m->starts[g] : 0,
					pe = is_idle ? nprev : g < m->nqueues ? m->starts[g + 1] : 0,
					prev = -1;

		for (;;)
		{
			while (p < pe && !have[p])
				p++;
			if (p < pe && (f == fe || key_cmp(&kept[p], &grouped[f]) < 0))
			{
				/* the memo's order must be the keys' */
				if (prev >= 0 && key_cmp(&kept[prev], &kept[p]) >= 0)
				{
					nkept = -1;
					goto done;
				}
				prev = p;
				to[at++] = kept[p++].j;
			}
			else if (f < fe)
				to[at++] = grouped[f++].j;
			else
				break;
		}
		if (at != end)
		{
			nkept = -1;
			goto done;
		}
	}
	w->idle_order = idle;
	w->nidle_order = nidle;
done:
	if (grouped)
	{
		tide_work_release(w, grouped);
		tide_work_release(w, fstart);
	}
	tide_work_release(w, fresh);
	tide_work_release(w, have);
	tide_work_release(w, kept);
	if (nkept < 0)
		tide_work_release(w, idle);
	return nkept;
}

/*
 * Non-idle jobs grouped by queue (counting sort), each queue sorted, or
 * taken from the memo of the decide before (s->order_memo) with the idle
 * list.  starts[q]..starts[q+1] is queue q's range in the returned array.
 */
int32_t *
tide_order_queue_jobs(TideWork *w, int32_t *starts)
{
	TideSnapshot *s = w->s;
	int32_t    *list = tide_work_alloc(w, sizeof(int32_t) * (s->njobs + 1));
	int32_t    *fill = tide_work_alloc(w, sizeof(int32_t) * (s->nqueues + 1));
	int32_t		most = 0,
				nidle = 0;
	MemoEntry  *cur = NULL;
	int			kept = -1;
	JobKey	   *keys,
			   *spread;

	for (int q = 0; q <= s->nqueues; q++)
		starts[q] = 0;
	if (s->order_mem.alloc || s->order_memo)
		cur = memo_entries(w, starts, &nidle);
	else
		for (int j = 0; j < s->njobs; j++)
			if (!s->jobs[j].idle)
				starts[s->jobs[j].queue + 1]++;
	for (int q = 0; q < s->nqueues; q++)
		starts[q + 1] += starts[q];
	if (cur && s->order_memo)
		kept = order_from_memo(w, s->order_memo, cur, starts, nidle, list);
	if (kept < 0)
	{
		for (int q = 0; q < s->nqueues; q++)
		{
			fill[q] = starts[q];
			if (starts[q + 1] - starts[q] > most)
				most = starts[q + 1] - starts[q];
		}
		keys = tide_work_alloc_raw(w, sizeof(JobKey) * (starts[s->nqueues] + 1));
		spread = tide_work_alloc_raw(w, sizeof(JobKey) * (most + 1));
		for (int j = 0; j < s->njobs; j++)
			if (!s->jobs[j].idle)
			{
				int32_t		at = fill[s->jobs[j].queue]++;

				list[at] = j;
				key_of(s, j, &keys[at]);
			}
		for (int q = 0; q < s->nqueues; q++)
			sort_jobs(list + starts[q], starts[q + 1] - starts[q], keys + starts[q], spread);
		tide_work_release(w, spread);
		tide_work_release(w, keys);
	}
	if (w->r->order_memo)
	{
		TideOrderMemo *out = w->r->order_memo;

		memcpy(out->starts, starts, sizeof(int32_t) * (s->nqueues + 1));
		for (int p = 0; p < starts[s->nqueues]; p++)
			out->e[list[p]].pos = p;
		out->kept = kept > 0 ? kept : 0;
	}
	tide_work_release(w, fill);
	return list;
}

/*
 * Idle jobs of all groups, retry lane first then R-O1 (groups never
 * interact): sorted, or as the memo made them with the queues' lists.
 */
int32_t *
tide_order_idle_jobs(TideWork *w, int32_t *nidle)
{
	TideSnapshot *s = w->s;
	TideOrderMemo *out = w->r->order_memo;
	int32_t    *list = w->idle_order;
	int			n = w->nidle_order;
	JobKey	   *keys,
			   *spread;

	if (!list)
	{
		list = tide_work_alloc(w, sizeof(int32_t) * (s->njobs + 1));
		n = 0;
		for (int j = 0; j < s->njobs; j++)
			if (s->jobs[j].idle)
				n++;
		keys = tide_work_alloc_raw(w, sizeof(JobKey) * (n + 1));
		spread = tide_work_alloc_raw(w, sizeof(JobKey) * (n + 1));
		n = 0;
		for (int j = 0; j < s->njobs; j++)
			if (s->jobs[j].idle)
			{
				list[n] = j;
				key_of(s, j, &keys[n++]);
			}
		sort_jobs(list, n, keys, spread);
		tide_work_release(w, spread);
		tide_work_release(w, keys);
	}
	if (out)
	{
		out->nidle = n;
		for (int p = 0; p < n; p++)
			out->e[list[p]].pos = p;
	}
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
