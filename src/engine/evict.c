/*
 * evict.c: evictions (R-E1 to R-E6): who may take resources from whom,
 * which victims, and holding what they free for the job they were evicted
 * for.
 *
 * After the walk (engine.c) every job left pending, in walk order, may
 * evict running jobs: R-E1 a guaranteed job idle jobs of its group and
 * preemptable jobs of reclaimable queues above their quota; R-E2 an
 * inference job preemptable training jobs of reclaimable queues of lower
 * priority; R-E3 lower-priority jobs of its own queue where it asks for
 * it (victim_rule; docs/evictions.md has the table).  Never a victim: a job with an allocation that is already releasing or on
 * a node that is not ready (a draining node loses nothing), a job that
 * started less than its queue's min_runtime ago, a job that could evict
 * the preemptor back (no ping-pong), and idle jobs never evict.
 *
 * Victims, least harm first (R-E4): idle, then lower priority, then the
 * least GPU-time thrown away (GPUs times the time since placed, at least
 * the restart cost), fewer GPUs, most recently placed, larger id.  Greedy:
 * release victims in that order until a dry run (the real placement code
 * on the real nodes and GPUs, gangs and topology included, after the
 * walk's admission with its owner limit, R-A4) places the preemptor; then
 * reprieve, most harmful first, every victim without which it still fits.
 * A preemptor of one replica then tries each node alone the same way and
 * keeps the cheapest set (one_node).  If no set fits, nothing is evicted.
 * A victim is a whole job (R-E5).
 *
 * Holding (R-E6): the dry run's placement becomes claims, written by the
 * adapter and given back in the next cycles' snapshots (claims.c).
 */
#include <string.h>

#include "admit.h"
#include "claims.h"
#include "evict.h"
#include "evict_int.h"
#include "evict_tree.h"
#include "fit.h"
#include "hash.h"
#include "place.h"
#include "reasons.h"
#include "sort.h"
#include "tree.h"
#include "work.h"

const char *
tide_rule_name(int rule)
{
	switch (rule)
	{
		case TIDE_RULE_IDLE:
			return "R-E1 idle job";
		case TIDE_RULE_RECLAIM:
			return "R-E1 reclaim";
		case TIDE_RULE_INFERENCE:
			return "R-E2 inference reclaim";
		case TIDE_RULE_PREEMPT:
			return "R-E3 preemption";
	}
	return "eviction";
}

/*
 * R-E4: the work evicting v throws away, in milli-GPU milliseconds: its
 * GPUs times the time since it was placed, at least the restart cost.  A
 * job without GPUs throws away no GPU-time.
 */
static int64_t
victim_harm(const TideSnapshot *s, const Victim *v)
{
	int64_t		age = v->placed_at > 0 ? tide_sat_sub(s->now, v->placed_at) : 0;

	if (age < s->restart_cost)
		age = s->restart_cost;
	return tide_sat_mul(v->gpu_milli, age / 1000);
}

/* The job of allocation a as a victim (its first allocation's fields). */
static void
victim_init(const TideWork *w, Victim *v, const TideRunning *a)
{
	const TideSnapshot *s = w->s;

	v->job_id = a->job_id;
	v->queue = a->queue;
	v->group = a->queue >= 0 && a->queue < s->nqueues ? w->ix->queue_group[a->queue] : -1;
	v->priority = a->priority;
	v->service = a->service;
	v->idle = a->idle;
	v->preemptable = a->preemptable;
}

/*
 * Group the live allocations into running jobs: the victim candidates.
 * A table by job id gathers them (a job's fields are those of its
 * allocation of least id, then index); order[] then holds each victim's
 * allocations together.  Neither the victims' order nor that of their
 * allocations decides anything: victims are ranked by their own fields,
 * which end with the job id, and what a victim frees is a sum.
 */
static void
build_victims(TideWork *w)
{
	TideSnapshot *s = w->s;
	TideEvictWork *ev = w->ev;
	int			n = 0;
	uint64_t	mask = 255;
	int32_t    *slot;
	int32_t    *of = tide_work_alloc_raw(w, sizeof(int32_t) * (s->nrunning + 1));
	int32_t    *rep = tide_work_alloc_raw(w, sizeof(int32_t) * (s->nrunning + 1));

	while (mask < (uint64_t) s->nrunning * 2)
		mask = mask * 2 + 1;
	slot = tide_work_alloc(w, sizeof(int32_t) * (mask + 1));
	ev->order = tide_work_alloc_raw(w, sizeof(int32_t) * (s->nrunning + 1));
	ev->victims = tide_work_alloc_raw(w, sizeof(Victim) * (s->nrunning + 1));
	for (int i = 0; i < s->nrunning; i++)
	{
		const TideRunning *a = &s->running[i];
		uint64_t	k = tide_hash_slot(tide_hash_mix(0, (uint64_t) a->job_id), mask);
		Victim	   *v;

		while (slot[k] && ev->victims[slot[k] - 1].job_id != a->job_id)
			k = (k + 1) & mask;
		if (!slot[k])
		{
			slot[k] = ++n;
			rep[n - 1] = i;
			v = &ev->victims[n - 1];
			memset(v, 0, sizeof(Victim));
			victim_init(w, v, a);
		}
		else if (a->alloc_id < s->running[rep[slot[k] - 1]].alloc_id)
		{
			rep[slot[k] - 1] = i;	/* earlier in (alloc id, index) */
			victim_init(w, &ev->victims[slot[k] - 1], a);
		}
		of[i] = slot[k] - 1;
		v = &ev->victims[slot[k] - 1];
		v->count++;
		v->gpu_milli = tide_sat_add(v->gpu_milli, a->res[TIDE_RES_GPU]);
		if (a->placed_at > v->placed_at)
			v->placed_at = a->placed_at;
		if (a->releasing || a->node < 0 || a->node >= s->nnodes ||
			s->nodes[a->node].state != TIDE_NODE_READY)
			v->blocked = true;
	}
	ev->nvictims = n;
	for (int i = 0, at = 0; i < n; i++)
	{
		Victim	   *v = &ev->victims[i];

		v->first = at;
		at += v->count;
		v->count = 0;
		v->blocked |= v->queue < 0 || v->queue >= s->nqueues;
		v->harm = victim_harm(s, v);
	}
	for (int i = 0; i < s->nrunning; i++)
	{
		Victim	   *v = &ev->victims[of[i]];

		ev->order[v->first + v->count++] = i;
	}
	tide_work_release(w, slot);
	tide_work_release(w, rep);
	tide_work_release(w, of);
}

/*
 * The victims and the scratch that goes with them, made when the first
 * preemptor needs them (most busy cycles have none that gets this far);
 * false when nothing runs.  Victims change only by being evicted, so the
 * list is the same whenever it is made.
 */
static bool
victims_ready(TideWork *w)
{
	TideSnapshot *s = w->s;
	TideEvictWork *ev = w->ev;

	if (ev->victims)
		return ev->nvictims > 0;
	build_victims(w);
	if (ev->nvictims == 0)
		return false;
	ev->chosen = tide_work_alloc_raw(w, sizeof(Cand) * (ev->nvictims + 1));
	if (w->ix->max_depth > 1)
	{
		ev->tree_order = tide_work_alloc_raw(w, sizeof(int32_t) * (ev->nvictims + 1));
		ev->tree_pass = tide_work_alloc_raw(w, sizeof(int8_t) * (ev->nvictims + 1));
		ev->memo_leaf = -1;
		ev->order_leaf = -1;
		ev->kept_at = tide_work_alloc(w, sizeof(int32_t) * (s->nqueues + 1));
		ev->qpass = tide_work_alloc_raw(w, sizeof(int8_t) * (s->nqueues + 1));
		ev->qbelow_p = tide_work_alloc_raw(w, sizeof(int32_t) * (s->nqueues + 1));
		ev->qbelow_v = tide_work_alloc_raw(w, sizeof(int32_t) * (s->nqueues + 1));
	}
	ev->node_first = tide_work_alloc_raw(w, sizeof(int32_t) * (s->nnodes + 1));
	ev->node_victims = tide_work_alloc_raw(w, sizeof(int32_t) * (s->nrunning + 1));
	ev->alt = tide_work_alloc_raw(w, sizeof(Cand) * (ev->nvictims + 1));
	return true;
}

/* Charge (+1) or release (-1) every allocation of a victim (a whole job). */
static void
victim_apply(TideWork *w, const Victim *v, int sign)
{
	TideSnapshot *s = w->s;

	for (int k = 0; k < v->count; k++)
	{
		const TideRunning *a = &s->running[w->ev->order[v->first + k]];

		tide_charge_owned(s, a->node, a->queue, a->owner, a->idle, a->res, a->gpus, a->gpu_milli, sign);
	}
}

/*
 * Could running job v, once evicted and pending, evict preemptor j back
 * after j runs (no ping-pong, R-E4)?  The rules seen from the other side.
 */
static bool
could_evict_back(const TideWork *w, const Victim *v, int j)
{
	const TideSnapshot *s = w->s;
	const TideJob *p = &s->jobs[j];
	const TideQueue *qv = &s->queues[v->queue];
	const TideQueue *qp = &s->queues[p->queue];
	const int64_t *need = tide_job_minreq(w, j);

	if (v->idle || p->idle || !p->preemptable)
		return false;			/* idle jobs never evict; j is protected */
	if (v->queue == p->queue)
		return qv->preemption_within == TIDE_PREEMPT_LOWER_PRIORITY && p->priority < v->priority;
	if (__builtin_expect(w->ix->max_depth > 1, 0))
		return tide_evict_tree_back(w, v, j);
	if (!qp->reclaimable)
		return false;
	if (v->service == TIDE_SVC_INFERENCE && p->service == TIDE_SVC_TRAINING &&
		qp->priority < qv->priority)
		return true;			/* R-E2 */
	/* R-E1: j's queue would borrow with j, and v would be guaranteed */
	{
		bool		p_borrows = !qp->has_quota;
		bool		v_guaranteed = qv->has_quota;

		for (int r = 0; r < w->nres && !p_borrows; r++)
			if (qp->quota[r] != TIDE_UNLIMITED && tide_sat_add(qp->usage[r], need[r]) > qp->quota[r])
				p_borrows = true;
		for (int r = 0; r < w->nres && v_guaranteed; r++)
			if (qv->quota[r] != TIDE_UNLIMITED && qv->usage[r] > qv->quota[r])
				v_guaranteed = false;
		return p_borrows && v_guaranteed;
	}
}

/* Which rule lets preemptor j evict v (0: none); e1..e3 say which j may use. */
static int
victim_rule(const TideWork *w, int j, bool e1, bool e2, bool e3, const Victim *v)
{
	const TideSnapshot *s = w->s;
	const TideJob *p = &s->jobs[j];
	const TideQueue *qv;
	const TideQueue *qp = &s->queues[p->queue];
	int			rule = 0;

	if (v->gone || v->blocked || v->group != w->info[j].group || v->job_id == p->id)
		return 0;
	qv = &s->queues[v->queue];
	if (qv->min_runtime > 0 && v->placed_at > 0 && tide_sat_sub(s->now, v->placed_at) < qv->min_runtime)
		return 0;				/* R-E4: just started */
	if (e1 && v->idle)
		rule = TIDE_RULE_IDLE;
	else if (e3 && v->queue == p->queue && (v->preemptable || v->idle) && v->priority < p->priority)
		rule = TIDE_RULE_PREEMPT;
	else if (__builtin_expect(w->ix->max_depth > 1, 0))
		rule = tide_evict_tree_rule(w, p, e1, e2, v);	/* R-E7 */
	else if (e2 && v->queue != p->queue && !v->idle && v->service == TIDE_SVC_TRAINING &&
			 v->preemptable && qv->reclaimable && qv->priority < qp->priority)
		rule = TIDE_RULE_INFERENCE;
	else if (e1 && v->queue != p->queue && !v->idle && v->preemptable && qv->reclaimable &&
			 tide_queue_over_quota(w, qv))
		rule = TIDE_RULE_RECLAIM;
	if (rule && could_evict_back(w, v, j))
		return 0;
	return rule;
}

/*
 * R-E4 least harm first: idle, lower priority, less GPU-time thrown away,
 * fewer GPUs, most recently placed, larger id (victims are whole jobs,
 * one per id).  As evict_legacy_order asks (tide-sim's comparison): idle,
 * lower priority, most recently placed, larger id.  Each victim's fields
 * become unsigned words compared in turn, so that the sort reads one
 * array instead of reaching into the victims at every comparison.
 */
typedef struct HarmKey
{
	uint64_t	k[5];
	int32_t		v;
} HarmKey;

#define SIGNED_KEY(x) ((uint64_t) (int64_t) (x) ^ ((uint64_t) 1 << 63))

static int
cmp_harm_key(const void *a, const void *b, void *ctx)
{
	const HarmKey *x = a;
	const HarmKey *y = b;

	(void) ctx;
	for (int i = 0; i < 5; i++)
		if (x->k[i] != y->k[i])
			return x->k[i] < y->k[i] ? -1 : 1;
	return x->v < y->v ? -1 : x->v > y->v;
}

/* The victims in R-E4's order (ev->harm), made when a preemptor first needs it. */
static const int32_t *
harm_order(TideWork *w)
{
	TideEvictWork *ev = w->ev;
	bool		legacy = w->s->evict_legacy_order;
	HarmKey    *keys;

	if (ev->harm)
		return ev->harm;
	keys = tide_work_alloc_raw(w, sizeof(HarmKey) * (ev->nvictims + 1));
	for (int i = 0; i < ev->nvictims; i++)
	{
		const Victim *v = &ev->victims[i];
		HarmKey    *k = &keys[i];

		k->k[0] = ((uint64_t) !v->idle << 32) | (uint32_t) ((uint32_t) v->priority ^ 0x80000000u);
		k->k[1] = legacy ? 0 : SIGNED_KEY(v->harm);
		k->k[2] = legacy ? 0 : SIGNED_KEY(v->gpu_milli);
		k->k[3] = ~SIGNED_KEY(v->placed_at);
		k->k[4] = ~SIGNED_KEY(v->job_id);
		k->v = i;
	}
	tide_sort(keys, ev->nvictims, sizeof(HarmKey), cmp_harm_key, NULL);
	ev->harm = tide_work_alloc_raw(w, sizeof(int32_t) * (ev->nvictims + 1));
	for (int i = 0; i < ev->nvictims; i++)
		ev->harm[i] = keys[i].v;
	tide_work_release(w, keys);
	return ev->harm;
}

/* The victims in the order preemptor j takes them (R-E4; R-E7 in a tree). */
static const int32_t *
victim_order(TideWork *w, int j)
{
	harm_order(w);
	return w->ev->tree_order ? tide_evict_tree_order(w, j) : w->ev->harm;
}

/* Is the order preemptor j takes the victims in made already? */
static bool
order_made(const TideWork *w, int j)
{
	return w->ev->harm && (!w->ev->tree_order || tide_evict_tree_order_made(w, j));
}

/*
 * Dry run (R-E4): would job j be admitted and placed now?  On success the
 * placements stay charged from index *start on; the caller keeps them or
 * rolls them back.
 */
static bool
dry_run(TideWork *w, int j, bool card_quota, int *start)
{
	TideOutcome scratch;
	int			klass;
	int			mode;

	memset(&scratch, 0, sizeof(scratch));
	w->r->counters.dry_runs++;
	klass = tide_admit(w, j, &scratch);
	if (klass == TIDE_CLASS_NONE)
		return false;
	mode = card_quota || klass == TIDE_CLASS_GUARANTEED ? MODE_GUARANTEED : MODE_BORROW;
	*start = w->r->nplacements;
	return tide_place_job(w, j, mode).placed;
}

/* Aggregate check before a dry run: could the usable free space hold j's minimum? */
static bool
enough_in_sum(const TideWork *w, int j, const int64_t *free_sum, const int64_t *cap_sum)
{
	const int64_t *need = tide_job_minreq(w, j);

	for (int r = 0; r < w->nres; r++)
		if (cap_sum[r] > 0 && need[r] > free_sum[r])
			return false;
	return true;
}

/*
 * Add what victim v frees on nodes j can use to free_sum; true when one of
 * those nodes now has room for a replica of j (only then can a dry run
 * that failed before succeed).
 */
static bool
victim_sum(TideWork *w, int j, const Victim *v, const bool *usable, int64_t *free_sum)
{
	const TideJob *job = &w->s->jobs[j];
	bool		room = false;

	for (int k = 0; k < v->count; k++)
	{
		const TideRunning *a = &w->s->running[w->ev->order[v->first + k]];

		if (!usable[a->node])
			continue;
		for (int r = 0; r < w->nres; r++)
			free_sum[r] = tide_sat_add(free_sum[r], a->res[r]);
		for (int ri = 0; ri < job->nroles && !room; ri++)
			room = tide_node_fits(w, job, &w->s->nodes[a->node], job->roles[ri].request, true);
	}
	return room;
}

/*
 * The nodes job j could use (usable), what is free on them (free_sum) and
 * their capacity (cap_sum); false when there is none.
 */
static bool
usable_space(TideWork *w, int j, bool *usable, int64_t *free_sum, int64_t *cap_sum)
{
	TideSnapshot *s = w->s;
	bool		any_usable = false;

	for (int ni = 0; ni < s->nnodes; ni++)
		any_usable |= (usable[ni] = tide_node_usable(w, j, ni));
	if (!any_usable)
		return false;
	memset(free_sum, 0, sizeof(int64_t) * w->nres);
	memset(cap_sum, 0, sizeof(int64_t) * w->nres);
	for (int ni = 0; ni < s->nnodes; ni++)
		if (usable[ni])
			for (int k = 0; k < w->nres; k++)
			{
				/* saturating: sums over up to every node (only a pre-check) */
				free_sum[k] = tide_sat_add(free_sum[k],
										   tide_sat_sub(s->nodes[ni].capacity[k], s->nodes[ni].used[k]));
				cap_sum[k] = tide_sat_add(cap_sum[k], s->nodes[ni].capacity[k]);
			}
	return true;
}

/* What a preemptor may evict (R-E1 to R-E3) and the space it could use. */
typedef struct Preemptor
{
	int			j;
	bool		e1,
				e2,
				e3;
	bool	   *usable;			/* [nnodes] */
	int64_t    *free_sum;		/* [nres] */
	int64_t    *cap_sum;		/* [nres] */
} Preemptor;

/* Does victim v hold something on a node preemptor p could use? */
static bool
victim_useful(const TideWork *w, const Preemptor *p, const Victim *v)
{
	for (int k = 0; k < v->count; k++)
		if (p->usable[w->s->running[w->ev->order[v->first + k]].node])
			return true;
	return false;
}

/*
 * Is some victim a candidate for p (a rule allows it and, when useful is
 * set, it holds something p could use)?  Asked in the victims' own order,
 * before the order p takes them in is made: most preemptors find none,
 * and then need no order at all.
 */
static bool
any_candidate(const TideWork *w, const Preemptor *p, bool useful)
{
	const TideEvictWork *ev = w->ev;

	for (int i = 0; i < ev->nvictims; i++)
	{
		const Victim *v = &ev->victims[i];

		if (victim_rule(w, p->j, p->e1, p->e2, p->e3, v) && (!useful || victim_useful(w, p, v)))
			return true;
	}
	return false;
}

/*
 * Greedy, least harm first: release candidates (a rule allows them, they
 * hold something j could use) until a dry run places j.  A dry run is
 * tried only when the usable free space could hold j's minimum and a
 * node just freed has room for one of its replicas.  The released victims
 * are in chosen[0..*nch-1]; true when j fits with them gone.
 */
static bool
release_until_fit(TideWork *w, const Preemptor *p, Cand *chosen, int *nch)
{
	TideEvictWork *ev = w->ev;
	int			j = p->j;
	bool		dirty = false;
	int			start;
	const int32_t *list;

	if (!order_made(w, j) && !any_candidate(w, p, true))
		return false;
	/* R-E7: in a tree, the candidates nearest first, each pass in harm order */
	list = victim_order(w, j);
	for (int h = 0; h < ev->nvictims; h++)
	{
		int			vi = list[h];
		Victim	   *v = &ev->victims[vi];
		int			rule = victim_rule(w, j, p->e1, p->e2, p->e3, v);

		if (!rule || !victim_useful(w, p, v))
			continue;
		victim_apply(w, v, -1);
		dirty |= victim_sum(w, j, v, p->usable, p->free_sum);
		chosen[*nch].v = vi;
		chosen[*nch].rule = rule;
		(*nch)++;
		if (dirty && enough_in_sum(w, j, p->free_sum, p->cap_sum))
		{
			dirty = false;
			if (dry_run(w, j, p->e1 || p->e2, &start))
			{
				tide_rollback(w, start);
				return true;
			}
		}
	}
	return false;
}

/* Reprieve, most harmful first, every victim j can do without; the count left. */
static int
reprieve(TideWork *w, const Preemptor *p, Cand *chosen, int nch)
{
	int			start;

	for (int k = nch - 2; k >= 0; k--)
	{
		Victim	   *v = &w->ev->victims[chosen[k].v];

		victim_apply(w, v, +1);
		if (dry_run(w, p->j, p->e1 || p->e2, &start))
		{
			tide_rollback(w, start);
			memmove(&chosen[k], &chosen[k + 1], sizeof(Cand) * (nch - k - 1));
			nch--;
		}
		else
			victim_apply(w, v, -1);
	}
	return nch;
}

/*
 * What a set of victims costs (R-E4), compared in this order: the
 * farthest R-E7 pass it reaches (idle 0; 1 in a flat set of queues), the
 * highest priority of a victim that is not idle, the GPU-time thrown
 * away, the GPUs, the jobs.  Adding a victim never makes it less.
 */
typedef struct SetCost
{
	int32_t		pass;
	int32_t		priority;
	int64_t		harm;
	int64_t		gpus;
	int32_t		jobs;
} SetCost;

static void
cost_add(const TideWork *w, int j, const Victim *v, SetCost *c)
{
	int			pass = w->ix->max_depth > 1 ? tide_evict_tree_pass(w, j, v) : !v->idle;

	if (c->jobs == 0 || pass > c->pass)
		c->pass = pass;
	if (!v->idle && (c->jobs == 0 || v->priority > c->priority))
		c->priority = v->priority;
	c->harm = tide_sat_add(c->harm, v->harm);
	c->gpus = tide_sat_add(c->gpus, v->gpu_milli);
	c->jobs++;
}

static SetCost
set_cost(const TideWork *w, int j, const Cand *set, int n)
{
	SetCost		c;

	memset(&c, 0, sizeof(c));
	c.priority = INT32_MIN;
	for (int k = 0; k < n; k++)
		cost_add(w, j, &w->ev->victims[set[k].v], &c);
	return c;
}

static int
cmp_cost(const SetCost *x, const SetCost *y)
{
	if (x->pass != y->pass)
		return x->pass < y->pass ? -1 : 1;
	if (x->priority != y->priority)
		return x->priority < y->priority ? -1 : 1;
	if (x->harm != y->harm)
		return x->harm < y->harm ? -1 : 1;
	if (x->gpus != y->gpus)
		return x->gpus < y->gpus ? -1 : 1;
	return x->jobs < y->jobs ? -1 : x->jobs > y->jobs;
}

/*
 * The candidates in list order, per node they hold something on (a
 * victim on several nodes is in each node's list once).
 */
static void
bucket_by_node(TideWork *w, const int32_t *list)
{
	TideSnapshot *s = w->s;
	TideEvictWork *ev = w->ev;
	int32_t    *at = ev->node_first;

	memset(at, 0, sizeof(int32_t) * (s->nnodes + 1));
	for (int pass = 0; pass < 2; pass++)
	{
		for (int h = 0; h < ev->nvictims; h++)
			for (int k = 0; k < ev->victims[list[h]].count; k++)
			{
				const Victim *v = &ev->victims[list[h]];
				int			n = s->running[ev->order[v->first + k]].node;
				bool		seen = n < 0 || n >= s->nnodes;

				for (int q = 0; q < k && !seen; q++)
					seen = s->running[ev->order[v->first + q]].node == n;
				if (seen)
					continue;	/* once per node */
				if (pass == 0)
					at[n + 1]++;
				else
					ev->node_victims[at[n]++] = list[h];
			}
		if (pass == 0)
			for (int n = 0; n < s->nnodes; n++)
				at[n + 1] += at[n];
	}
	/* pass 1 moved each start to the next node's: shift back */
	for (int n = s->nnodes; n > 0; n--)
		at[n] = at[n - 1];
	at[0] = 0;
}

/*
 * R-E4 across nodes, for a preemptor of one replica: on each node it
 * could use, candidates there in least-harm order until it fits, then
 * reprieve; the cheapest set (set_cost) wins over the greedy one in
 * chosen[0..nch-1], which is released on entry.  The winner is released
 * on return; its count is returned.
 */
static int
one_node(TideWork *w, const Preemptor *p, const int32_t *list, Cand *chosen, int nch)
{
	TideSnapshot *s = w->s;
	TideEvictWork *ev = w->ev;
	int			j = p->j;
	const TideJob *job = &s->jobs[j];
	SetCost		best;
	Cand	   *alt = ev->alt;
	int			start;

	if (w->info[j].total_replicas != 1 || job->nroles != 1)
		return nch;
	best = set_cost(w, j, chosen, nch);
	for (int k = nch - 1; k >= 0; k--)
		victim_apply(w, &ev->victims[chosen[k].v], +1);
	bucket_by_node(w, list);
	for (int n = 0; n < s->nnodes; n++)
	{
		SetCost		acc;
		int			nalt = 0;

		if (!p->usable[n] || ev->node_first[n] == ev->node_first[n + 1])
			continue;
		acc = set_cost(w, j, NULL, 0);
		for (int b = ev->node_first[n]; b < ev->node_first[n + 1]; b++)
		{
			Victim	   *v = &ev->victims[ev->node_victims[b]];
			int			rule = victim_rule(w, j, p->e1, p->e2, p->e3, v);

			if (!rule)
				continue;
			cost_add(w, j, v, &acc);
			if (cmp_cost(&acc, &best) >= 0)
				break;			/* no cheaper here */
			victim_apply(w, v, -1);
			alt[nalt].v = ev->node_victims[b];
			alt[nalt].rule = rule;
			nalt++;
			if (!tide_node_fits(w, job, &s->nodes[n], job->roles[0].request, true) ||
				!dry_run(w, j, p->e1 || p->e2, &start))
				continue;
			tide_rollback(w, start);
			nalt = reprieve(w, p, alt, nalt);
			acc = set_cost(w, j, alt, nalt);
			if (cmp_cost(&acc, &best) < 0)
			{
				best = acc;
				memcpy(chosen, alt, sizeof(Cand) * nalt);
				nch = nalt;
			}
			break;
		}
		for (int k = nalt - 1; k >= 0; k--)
			victim_apply(w, &ev->victims[alt[k].v], +1);
	}
	for (int k = 0; k < nch; k++)
		victim_apply(w, &ev->victims[chosen[k].v], -1);
	return nch;
}

/*
 * The placements from start on become j's claims (R-E6), not placed but
 * held; the chosen victims are evicted.
 */
static void
record_eviction(TideWork *w, int j, int start, const Cand *chosen, int nch)
{
	TideResult *r = w->r;
	TideEvictWork *ev = w->ev;
	const TideJob *job = &w->s->jobs[j];
	TideOutcome *o = &r->outcomes[j];

	for (int i = start; i < r->nplacements; i++)
	{
		const TidePlacement *pl = &r->placements[i];
		TideClaim  *cl = &r->new_claims[r->nnew_claims++];

		cl->job_id = job->id;
		cl->job = j;
		cl->role = pl->role;
		cl->replica = pl->replica;
		cl->node = pl->node;
		cl->res = pl->res;
		cl->gpus = pl->gpus;
		cl->gpu_milli = pl->gpu_milli;
		cl->waiting = true;
	}
	r->nplacements = start;		/* not placed: held */

	for (int k = 0; k < nch; k++)
	{
		Victim	   *v = &ev->victims[chosen[k].v];
		TideEviction *e = &r->evictions[r->nevictions++];

		v->gone = true;
		e->job_id = v->job_id;
		e->queue = v->queue;
		e->rule = chosen[k].rule;
		e->preemptor = j;
	}
	o->evict_state = TIDE_EV_EVICTED;
	o->nreasons = 0;
	if (nch == 0)
	{
		tide_reason_evict_wait(w, o);	/* on what earlier victims free */
		return;
	}
	tide_reason_evicting(w, o, nch);
	r->counters.preemptors++;
	r->counters.jobs_evicted += nch;
}

/* Try to make room for job j by evicting; true when it evicted. */
static bool
evict_for(TideWork *w, int j, bool *usable, int64_t *free_sum, int64_t *cap_sum)
{
	TideSnapshot *s = w->s;
	const TideJob *job = &s->jobs[j];
	TideOutcome *o = &w->r->outcomes[j];
	Preemptor	p;
	Cand	   *chosen;
	int			nch = 0;
	int			start = w->r->nplacements;

	p.j = j;
	p.e1 = o->klass == TIDE_CLASS_GUARANTEED;
	p.e2 = job->service == TIDE_SVC_INFERENCE && o->klass != TIDE_CLASS_NONE;
	p.e3 = s->queues[job->queue].preemption_within == TIDE_PREEMPT_LOWER_PRIORITY;
	p.usable = usable;
	p.free_sum = free_sum;
	p.cap_sum = cap_sum;
	if (!(p.e1 || p.e2 || p.e3))
		return false;
	if (tide_evict_failed(w, j, false))
		return false;

	/*
	 * Before this pass's first eviction only victims can make room: when
	 * no rule lets j take any, j fails whatever nodes it could use, and
	 * they need not be counted.
	 */
	if (w->r->nevictions == 0 && (!victims_ready(w) || !any_candidate(w, &p, false)))
	{
		tide_evict_failed(w, j, true);
		return false;
	}
	if (!usable_space(w, j, usable, free_sum, cap_sum))
	{
		tide_evict_failed(w, j, true);
		return false;
	}
	/* what this cycle's victims free beyond their preemptors' needs first */
	if (w->r->nevictions > 0 && dry_run(w, j, p.e1 || p.e2, &start))
	{
		record_eviction(w, j, start, NULL, 0);
		return true;
	}
	if (!victims_ready(w))
		return false;			/* nothing runs: nothing to evict */
	chosen = w->ev->chosen;
	if (!release_until_fit(w, &p, chosen, &nch))
	{
		for (int k = nch - 1; k >= 0; k--)
			victim_apply(w, &w->ev->victims[chosen[k].v], +1);
		tide_evict_failed(w, j, true);
		return false;
	}
	nch = reprieve(w, &p, chosen, nch);
	if (!s->evict_legacy_order)
		nch = one_node(w, &p, victim_order(w, j), chosen, nch);

	/* the placement that is held for j (R-E6): charged as if j ran */
	if (!dry_run(w, j, p.e1 || p.e2, &start))
	{
		for (int k = nch - 1; k >= 0; k--)
			victim_apply(w, &w->ev->victims[chosen[k].v], +1);
		return false;			/* cannot happen: the same state fitted */
	}
	record_eviction(w, j, start, chosen, nch);
	return true;
}

/*
 * The jobs that may evict, as a set of walk positions (one bit each):
 * left pending, not idle, not in error, not waiting for earlier victims,
 * and of a class or queue that some rule lets evict (R-E1: guaranteed,
 * R-E2: an inference job that may borrow, R-E3: a queue that preempts
 * within).  None of that changes during the pass.  Read in job order, not
 * walk order: the jobs' data is then read in the order it lies in memory.
 * NULL when there is none.
 */
static uint64_t *
preemptor_set(TideWork *w)
{
	TideSnapshot *s = w->s;
	TideResult *r = w->r;
	uint64_t   *set = NULL;

	for (int j = 0; j < s->njobs; j++)
	{
		const TideOutcome *o = &r->outcomes[j];
		const TideJob *job = &s->jobs[j];

		if (o->status != TIDE_PENDING || o->walk_pos < 0 || job->idle || w->info[j].bad ||
			o->evict_state == TIDE_EV_WAITING)
			continue;
		if (o->klass != TIDE_CLASS_GUARANTEED &&
			!(job->service == TIDE_SVC_INFERENCE && o->klass != TIDE_CLASS_NONE) &&
			s->queues[job->queue].preemption_within != TIDE_PREEMPT_LOWER_PRIORITY)
			continue;
		if (!set)
			set = tide_work_alloc(w, sizeof(uint64_t) * ((size_t) r->nwalk / 64 + 1));
		set[o->walk_pos / 64] |= (uint64_t) 1 << (o->walk_pos % 64);
	}
	return set;
}

/*
 * The eviction pass, after the walk: claim owners first (waiting or
 * lapsed, claims.c), then every job left pending that may evict, in walk
 * order.
 */
void
tide_evict_pass(TideWork *w)
{
	TideSnapshot *s = w->s;
	TideResult *r = w->r;
	int64_t		total = 0;
	uint64_t   *set;
	bool	   *usable;
	int64_t    *free_sum;
	int64_t    *cap_sum;

	if (!s->evict)
		return;
	w->ev = tide_work_alloc(w, sizeof(TideEvictWork));
	for (int j = 0; j < s->njobs; j++)
		total += w->info[j].total_replicas;
	/* written before read: pages are touched only as far as they are used */
	r->evictions = tide_work_alloc_raw(w, sizeof(TideEviction) * (s->nrunning + 1));
	r->new_claims = tide_work_alloc_raw(w, sizeof(TideClaim) * (total + 1));

	tide_claims_settle(w);

	if (s->nrunning == 0)
		return;					/* nothing to evict */
	set = preemptor_set(w);
	if (!set)
		return;
	usable = tide_work_alloc(w, sizeof(bool) * (s->nnodes + 1));
	free_sum = tide_work_alloc(w, sizeof(int64_t) * (w->nres + 1));
	cap_sum = tide_work_alloc(w, sizeof(int64_t) * (w->nres + 1));
	for (int b = 0; b <= r->nwalk / 64; b++)
		for (uint64_t word = set[b]; word; word &= word - 1)
			evict_for(w, r->walk[b * 64 + __builtin_ctzll(word)], usable, free_sum, cap_sum);
}
