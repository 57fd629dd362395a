/*
 * place.c: putting one job's replicas on nodes (R-L3 to R-L5).
 *
 * Node filter (R-L4): ready, labels match the selector, card type matches
 * the job's gpu_type, CPU-only jobs off GPU nodes unless the setting allows
 * it, not a node where the job's previous attempt failed, room for the
 * replica (vector, and per GPU: whole free GPUs, or one GPU with the share).
 *
 * Node order (R-L5): frag by default, the least growth of fragmentation
 * (frag.c); pack: the fullest node after placement; spread: the emptiest.
 * Nodes are kept in buckets by free whole GPUs (GPU nodes) or by the bit
 * length of free CPU (CPU nodes); pack walks buckets from the fullest that
 * could fit upward, spread from the emptiest down; inside a bucket, node
 * name order.  A fraction of a GPU goes first to a node with a shared GPU.
 * A gang goes on as few nodes as possible: first the nodes it already uses,
 * then a node that holds all its remaining replicas of the role (best fit),
 * else the emptiest node.
 *
 * Gangs are all-or-nothing (R-L3): replicas are charged tentatively; if
 * fewer than min_available land, every tentative placement is rolled back.
 *
 * Why a job did not fit (tide_diagnose) is counted node by node; a job
 * that avoids nodes (R-L4) takes its shape's counts, made once, with its
 * avoided nodes moved aside (tide_diagnose_avoider); a claim owner still
 * waiting for its victims, whose reasons say only that, needs no counts
 * (tide_diagnose_quiet).
 */
#include <string.h>

#include "fit.h"
#include "frag.h"
#include "place.h"
#include "reasons.h"
#include "snapshot_int.h"

/* Allowed partitions of a role, card keys checked (blocks noted), in partition order. */
static int
allowed_parts(TideWork *w, int j, const TideRole *role, int mode, int32_t *out,
			  TideCardBlock *block)
{
	const TideGroup *g = &w->ix->groups[w->info[j].group];
	const TideJob *job = &w->s->jobs[j];
	int			n = 0;

	for (int pi = g->plo; pi < g->phi; pi++)
	{
		const TidePart *p = &w->ix->parts[pi];

		if (!tide_part_allowed(w, j, role, p))
			continue;
		if (!tide_part_card_ok(w, job, p, role, mode, block))
			continue;
		out[n++] = pi;
	}
	return n;
}

/*
 * A node of bucket b of partition p that takes req.  GPU buckets are exact
 * (free whole GPUs): the first fit in name order.  CPU buckets span a factor
 * of two of free CPU: among the first TIDE_LOOKAHEAD fits, the one with the
 * least free CPU left (pack) or the most (spread), ties by name.
 */
#define TIDE_LOOKAHEAD 32

static int
scan_bits(TideWork *w, int j, const TidePart *p, const uint64_t *bits, const int64_t *req,
		  bool spread)
{
	const TideJob *job = &w->s->jobs[j];
	int			best = -1;
	int64_t		best_free = 0;
	int			seen = 0;

	for (int wi = 0; wi < p->nwords; wi++)
	{
		uint64_t	word = bits[wi];

		while (word)
		{
			int			bit = __builtin_ctzll(word);
			int			ni = w->ix->order[p->lo + wi * 64 + bit];
			TideNode   *n = &w->s->nodes[ni];
			int64_t		free_cpu;

			word &= word - 1;
			if (!tide_node_matches(job, n, ni, w->info[j].avoids))
				continue;
			if (!tide_node_fits(w, job, n, req, false))
				continue;
			if (p->gpu)
				return ni;
			free_cpu = tide_sat_sub(n->capacity[TIDE_RES_CPU], n->used[TIDE_RES_CPU]);
			if (best < 0 || (spread ? free_cpu > best_free : free_cpu < best_free))
			{
				best = ni;
				best_free = free_cpu;
			}
			if (++seen >= TIDE_LOOKAHEAD)
				return best;
		}
	}
	return best;
}

/* The lowest bucket of partition p that could hold req. */
static int
start_bucket(const TidePart *p, const int64_t *req)
{
	int64_t		gpu = req[TIDE_RES_GPU];

	if (p->gpu)
	{
		if (gpu >= TIDE_MILLI)
			return gpu / TIDE_MILLI < TIDE_NBUCKETS ? (int) (gpu / TIDE_MILLI) : TIDE_NBUCKETS;
		return 0;
	}
	{
		int			b = tide_bitlen(req[TIDE_RES_CPU]);

		return b >= TIDE_NBUCKETS ? TIDE_NBUCKETS - 1 : b;
	}
}

/*
 * Bucketed search over the allowed partitions: ascending buckets (pack,
 * best fit) or descending (spread, and a gang's emptiest node).
 */
static int
search(TideWork *w, int j, const int32_t *parts, int nparts, const int64_t *req,
	   bool descending)
{
	int64_t		gpu = req[TIDE_RES_GPU];
	bool		shared_done = tide_is_fraction(gpu) && !descending;

	/* a fraction: a node with a shared GPU first (R-L6) */
	if (shared_done)
	{
		for (int i = 0; i < nparts; i++)
		{
			const TidePart *p = &w->ix->parts[parts[i]];
			int			ni;

			if (p->nshared == 0)
				continue;
			ni = scan_bits(w, j, p, p->shared, req, false);
			if (ni >= 0)
				return ni;
		}
	}
	for (int step = 0; step < TIDE_NBUCKETS; step++)
	{
		int			b = descending ? TIDE_NBUCKETS - 1 - step : step;

		for (int i = 0; i < nparts; i++)
		{
			const TidePart *p = &w->ix->parts[parts[i]];
			int			ni;

			if (p->count[b] == 0 || b < start_bucket(p, req))
				continue;

			/*
			 * A GPU node without a whole free GPU (bucket 0) takes a
			 * fraction only on a partly used GPU, which makes it shared:
			 * those were searched above, in the same order, and none fit.
			 */
			if (b == 0 && p->gpu && shared_done)
				continue;
			ni = scan_bits(w, j, p, p->bits + (size_t) b * p->nwords, req, descending);
			if (ni >= 0)
				return ni;
		}
	}
	return -1;
}

/* Choose a node for the next replica of role ri; rem replicas of it are left. */
static int
find_node(TideWork *w, int j, int ri, int mode, int rem, int32_t *parts, TideCardBlock *block)
{
	TideSnapshot *s = w->s;
	const TideJob *job = &s->jobs[j];
	const TideRole *role = &job->roles[ri];
	const int64_t *req = role->request;
	bool		spread = s->queues[job->queue].placement == TIDE_PLACE_SPREAD;
	int			nparts;
	int64_t		gpu = req[TIDE_RES_GPU];

	nparts = allowed_parts(w, j, role, mode, parts, block);
	if (nparts == 0)
		return -1;

	/* nodes this gang already uses, in the order it took them */
	for (int i = 0; i < w->ngang; i++)
	{
		int			ni = w->gang_nodes[i];
		TideNode   *n = &s->nodes[ni];
		bool		ok = false;

		for (int k = 0; k < nparts && !ok; k++)
			ok = parts[k] == n->part;
		if (ok && n->state == TIDE_NODE_READY && tide_node_matches(job, n, ni, w->info[j].avoids) &&
			tide_node_fits(w, job, n, req, false))
			return ni;
	}
	if (rem > 1 && !tide_is_fraction(gpu) && !spread)
	{
		/* one node for all remaining replicas of the role, best fit */
		int64_t    *agg = w->vec;
		int			ni;

		if (gpu / TIDE_MILLI * rem <= TIDE_MAX_GPUS)
		{
			/*
			 * saturating: rem x a request near the maximum overflows; a
			 * saturated aggregate fits no node, or only a node that holds
			 * at least one replica, which is all this search needs
			 */
			for (int r = 0; r < w->nres; r++)
				agg[r] = tide_sat_mul(req[r], rem);
			ni = search(w, j, parts, nparts, agg, false);
			if (ni >= 0)
				return ni;
		}
		/* else the emptiest node: the next replicas follow it */
		return search(w, j, parts, nparts, req, true);
	}
	if (s->queues[job->queue].placement == TIDE_PLACE_FRAG)
		return tide_frag_search(w, j, parts, nparts, req);
	return search(w, j, parts, nparts, req, spread);
}

/* Place one replica on node ni: choose GPUs (R-L6), charge node and queue. */
static void
commit_replica(TideWork *w, int j, int ri, int rep, int ni)
{
	TideSnapshot *s = w->s;
	const TideJob *job = &s->jobs[j];
	const int64_t *req = job->roles[ri].request;
	TideNode   *n = &s->nodes[ni];
	int64_t		gpu = req[TIDE_RES_GPU];
	bool		use_held = tide_node_holds_apply(w, job, n);
	uint64_t	mask = tide_node_gpus_for(n, gpu, use_held);
	int			milli = gpu > 0 && gpu < TIDE_MILLI ? (int) gpu : 0;
	TidePlacement *pl;

	tide_node_apply(s, n, req, mask, milli, +1);
	tide_queue_apply(s, &s->queues[job->queue], n, job->idle, job->owner, req, +1);
	pl = &w->r->placements[w->r->nplacements++];
	pl->job = j;
	pl->role = ri;
	pl->replica = rep;
	pl->node = ni;
	pl->res = req;
	pl->gpus = mask;
	pl->gpu_milli = milli;
	for (int i = 0; i < w->ngang; i++)
		if (w->gang_nodes[i] == ni)
			return;
	w->gang_nodes[w->ngang++] = ni;
}

/*
 * Undo tentative placements from index start on: a gang that did not reach
 * its minimum (R-L3), or an eviction dry run (evict.c).
 */
void
tide_rollback(TideWork *w, int start)
{
	TideSnapshot *s = w->s;

	for (int i = w->r->nplacements - 1; i >= start; i--)
	{
		TidePlacement *pl = &w->r->placements[i];
		const TideJob *job = &s->jobs[pl->job];
		TideNode   *n = &s->nodes[pl->node];

		tide_node_apply(s, n, pl->res, pl->gpus, pl->gpu_milli, -1);
		tide_queue_apply(s, &s->queues[job->queue], n, job->idle, job->owner, pl->res, -1);
	}
	w->r->nplacements = start;
}

/*
 * Place job j in the given mode; placed when at least its gang minimum
 * landed (R-L3).  Replicas beyond the minimum are placed when they fit and
 * the queue stays within capability.  On failure nothing stays placed and
 * the result says how far it got.
 */
TidePlaceResult
tide_place_job(TideWork *w, int j, int mode)
{
	TideSnapshot *s = w->s;
	const TideJob *job = &s->jobs[j];
	int			start = w->r->nplacements;
	int			placed = 0;
	int			min = w->info[j].min_replicas;
	int			left = w->info[j].total_replicas;
	int32_t    *parts = w->run_tmp;
	TidePlaceResult res;

	w->ngang = 0;
	res.fail_role = -1;
	res.card.res = -1;
	res.card.mode = 0;
	res.card.queue = -1;
	for (int ri = 0; ri < job->nroles; ri++)
	{
		const TideRole *role = &job->roles[ri];

		for (int rep = 0; rep < role->replicas; rep++)
		{
			int			ni;

			if (placed + left < min)
				break;			/* the minimum is out of reach */
			ni = find_node(w, j, ri, mode, role->replicas - rep, parts, &res.card);
			if (ni >= 0 && placed >= min &&
				!tide_extra_replica_ok(w, job, &s->nodes[ni], role->request))
				ni = -1;
			if (ni < 0)
			{
				if (res.fail_role < 0)
					res.fail_role = ri;
				left -= role->replicas - rep;
				break;
			}
			commit_replica(w, j, ri, rep, ni);
			placed++;
			left--;
		}
	}
	res.placed_count = placed;
	res.placed = placed >= min && placed > 0;
	if (!res.placed)
		tide_rollback(w, start);
	return res;
}

/* What tide_diagnose() counts over the group's nodes, filter by filter. */
typedef struct Diagnosis
{
	int			typed;			/* partition allowed */
	int			labeled;		/* and labels match */
	int			staticok;		/* and big enough, empty */
	int			ready;			/* and ready */
	int			avoided;		/* of those: the job's failed nodes (R-L4) */
	int			card;			/* card keys over the queue's limits */
	int			held;			/* would fit but for holds (R-L2) */
	int			fit;			/* would fit */
	int64_t		hold_job;		/* the first holder met */
	int			shortc[TIDE_MAX_RES];	/* nodes short of each resource */
	int			bigres;			/* a resource a replica is too big for */
	int64_t		largest;		/* the most of it a node has */
} Diagnosis;

/*
 * Count node ni, for role ri of job j, into d: how far it passes the
 * filters.  avoid: whether the job's failed nodes count as avoided (R-L4).
 */
static void
diagnose_node(TideWork *w, int j, int ri, int mode, int ni, bool avoid, Diagnosis *d,
			  TideCardBlock *block)
{
	TideSnapshot *s = w->s;
	const TideJob *job = &s->jobs[j];
	const TideRole *role = &job->roles[ri];
	const int64_t *req = role->request;
	TideNode   *n = &s->nodes[ni];
	const TidePart *p = &w->ix->parts[n->part];
	int			small;

	if (!tide_part_allowed(w, j, role, p))
		return;
	d->typed++;
	{
		TideJob		nosel = *job;

		nosel.navoid = 0;
		if (!tide_node_matches(&nosel, n, ni, false))
			return;
	}
	d->labeled++;
	small = tide_node_too_small(w, n, req);
	if (d->bigres < 0)
		d->bigres = small;
	if (d->bigres >= 0)
	{
		int64_t		have = d->bigres == TIDE_RES_GPU && n->ngpus * (int64_t) TIDE_MILLI < n->capacity[d->bigres]
			? n->ngpus * (int64_t) TIDE_MILLI : n->capacity[d->bigres];

		if (have > d->largest)
			d->largest = have;
	}
	if (small >= 0)
		return;
	d->staticok++;
	if (n->state != TIDE_NODE_READY)
		return;
	d->ready++;
	if (!tide_node_matches(job, n, ni, avoid))
	{
		d->avoided++;
		return;
	}
	if (!tide_part_card_ok(w, job, p, role, mode, block))
	{
		d->card++;
		return;
	}
	if (tide_node_fits(w, job, n, req, false))
		d->fit++;
	else if (tide_node_fits(w, job, n, req, true))
	{
		d->held++;
		if (d->hold_job == 0)
			d->hold_job = n->hold_job;
	}
	else
	{
		for (int r = 0; r < w->nres; r++)
			if (req[r] > 0 && tide_sat_sub(n->capacity[r], n->used[r]) < req[r])
				d->shortc[r]++;
		if (req[TIDE_RES_GPU] > 0 &&
			tide_sat_sub(n->capacity[TIDE_RES_GPU], n->used[TIDE_RES_GPU]) >= req[TIDE_RES_GPU])
			d->shortc[TIDE_RES_GPU]++;	/* enough in sum, not on one GPU / whole GPUs */
	}
}

/* Count, for role ri of job j in group g, how far its nodes pass the filters. */
static void
diagnose_count(TideWork *w, int j, int ri, int mode, const TideGroup *g, bool avoid, Diagnosis *d,
			   TideCardBlock *block)
{
	memset(d, 0, sizeof(*d));
	d->bigres = -1;
	for (int k = g->lo; k < g->hi; k++)
		diagnose_node(w, j, ri, mode, w->ix->order[k], avoid, d, block);
}

/* The ready nodes without room: how many, and the two resources most short. */
static void
diagnose_no_room(TideWork *w, TideOutcome *o, int ri, const Diagnosis *d)
{
	const int  *shortc = d->shortc;
	int			nshort = d->ready - d->avoided - d->card - d->held - d->fit;
	int			r1 = -1,
				r2 = -1;

	if (nshort > 0)
	{
		for (int r = 0; r < w->nres; r++)
		{
			if (shortc[r] == 0)
				continue;
			if (r1 < 0 || shortc[r] > shortc[r1])
			{
				r2 = r1;
				r1 = r;
			}
			else if (r2 < 0 || shortc[r] > shortc[r2])
				r2 = r;
		}
		tide_reason_no_room(w, o, r1, ri, nshort, r1 >= 0 ? shortc[r1] : 0, r2 >= 0 ? shortc[r2] : 0, r2);
	}
}

static void diagnose_reasons(TideWork *w, int j, TideOutcome *o, const TidePlaceResult *pr,
							 const Diagnosis *dp);

/*
 * Why did job j not fit (R-C2, R-A2)?  One pass over the group's nodes for
 * the role that failed (pr from tide_place_job), counting each filter;
 * every blocking reason found is kept, and card keys that block are noted
 * in pr->card.  Sets o->status to unschedulable when no node could ever
 * take one replica.
 */
void
tide_diagnose(TideWork *w, int j, int mode, TideOutcome *o, TidePlaceResult *pr)
{
	const TideJob *job = &w->s->jobs[j];
	Diagnosis	d;

	if (w->info[j].group < 0)
	{
		tide_reason_no_nodes(w, o, job->queue);
		o->status = TIDE_UNSCHEDULABLE;
		return;
	}
	diagnose_count(w, j, pr->fail_role >= 0 ? pr->fail_role : 0, mode,
				   &w->ix->groups[w->info[j].group], w->info[j].avoids, &d, &pr->card);
	diagnose_reasons(w, j, o, pr, &d);
}

/* The reasons of job j's failure from the counts of its nodes (tide_diagnose). */
static void
diagnose_reasons(TideWork *w, int j, TideOutcome *o, const TidePlaceResult *pr, const Diagnosis *dp)
{
	TideSnapshot *s = w->s;
	const TideJob *job = &s->jobs[j];
	int			ri = pr->fail_role >= 0 ? pr->fail_role : 0;
	const TideRole *role = &job->roles[ri];
	const int64_t *req = role->request;
	Diagnosis	d = *dp;
	int			bigres,
				staticok,
				held,
				avoided;
	int64_t		largest,
				hold_job;

	bigres = d.bigres;
	largest = d.largest;
	staticok = d.staticok;
	held = d.held;
	avoided = d.avoided;
	hold_job = d.hold_job;

	if (d.typed == 0)
	{
		if (req[TIDE_RES_GPU] > 0)
			tide_reason_no_type(w, o, ri, job->gpu_type);
		else
			tide_reason_cpu_on_gpu(w, o, ri);
		o->status = TIDE_UNSCHEDULABLE;
		return;
	}
	if (d.labeled == 0)
	{
		tide_reason_no_label(w, o, ri, j);
		o->status = TIDE_UNSCHEDULABLE;
		return;
	}
	if (staticok == 0)
	{
		tide_reason_too_big(w, o, bigres, ri, req[bigres], largest);
		o->status = TIDE_UNSCHEDULABLE;
		return;
	}
	if (d.ready == 0)
	{
		tide_reason_not_ready(w, o, ri, staticok, job->gpu_type);
		return;
	}
	if (w->info[j].min_replicas > 1)
		tide_reason_gang(w, o, ri, w->info[j].min_replicas, pr->placed_count);
	if (held > 0)
		tide_reason_held(w, o, ri, held, hold_job);
	if (d.card > 0 && pr->card.res >= 0)
	{
		const TideQueue *q = &s->queues[job->queue];
		int			t = pr->card.res;

		if (pr->card.queue >= 0)
		{
			/* R-A3: a queue above the leaf */
			const TideQueue *a = &s->queues[pr->card.queue];

			if (pr->card.mode == MODE_GUARANTEED)
				tide_reason_card_quota(w, o, t, ri, a->entitled[t], req[TIDE_RES_GPU], a->quota[t],
									   pr->card.queue);
			else
				tide_reason_tree_capability(w, o, t, job->queue, tide_sat_add(a->usage[t], a->idle_usage[t]),
											req[TIDE_RES_GPU], a->capability[t], pr->card.queue);
		}
		else if (pr->card.mode == MODE_OWNER)
			tide_reason_owner_limit(w, o, t, job->owner, tide_owner_held(w, job, t), req[TIDE_RES_GPU],
									q->owner_cap[t], job->queue);
		else if (pr->card.mode == MODE_GUARANTEED)
			tide_reason_card_quota(w, o, t, ri, q->usage[t], req[TIDE_RES_GPU], q->quota[t], job->queue);
		else
			tide_reason_card_cap(w, o, t, ri, tide_sat_add(q->usage[t], q->idle_usage[t]), req[TIDE_RES_GPU],
								 q->capability[t], job->queue);
	}
	if (avoided > 0 && d.fit == 0)
		tide_reason_avoid(w, o, ri, avoided);
	diagnose_no_room(w, o, ri, &d);
}

/*
 * What of tide_diagnose() the walk uses, without its reasons (the
 * forecast, s->no_reasons): the status.  A job is unschedulable when no
 * node of its group, empty, could hold one replica of the role that
 * failed (R-A2): a scan that stops at the first such node.  The card key
 * that blocked (pr->card) needs no scan: tide_place_job() checked every
 * partition the diagnosis would, for that role and mode, with the queue's
 * usage as high or higher (its own tentative replicas), so the diagnosis
 * never changes whether a key blocked or whether it was the quota.
 */
void
tide_diagnose_status(TideWork *w, int j, TideOutcome *o, const TidePlaceResult *pr)
{
	TideSnapshot *s = w->s;
	const TideJob *job = &s->jobs[j];
	const TideRole *role = &job->roles[pr->fail_role];
	const TideGroup *g;

	if (w->info[j].group < 0)
	{
		o->status = TIDE_UNSCHEDULABLE;
		return;
	}
	g = &w->ix->groups[w->info[j].group];
	for (int pi = g->plo; pi < g->phi; pi++)
	{
		const TidePart *p = &w->ix->parts[pi];
		bool		big = true;

		if (!tide_part_allowed(w, j, role, p))
			continue;
		for (int r = 0; r < w->nres && big; r++)
			big = role->request[r] <= p->maxcap[r];
		if (!big || (role->request[TIDE_RES_GPU] >= TIDE_MILLI &&
					 role->request[TIDE_RES_GPU] / TIDE_MILLI > p->maxgpus))
			continue;
		for (int k = p->lo; k < p->hi; k++)
		{
			int			ni = w->ix->order[k];
			const TideNode *n = &s->nodes[ni];

			if (tide_node_matches(job, n, ni, false) && tide_node_too_small(w, n, role->request) < 0)
				return;
		}
	}
	o->status = TIDE_UNSCHEDULABLE;
}

/*
 * What tide_diagnose() leaves for the walk, without its reasons and
 * without counting every node: for a job whose reasons are replaced after
 * the walk (a claim owner whose victims are still stopping, claims.c).
 * Its status is tide_diagnose_status()'s.  Its card key (pr->card) is the
 * one tide_diagnose() notes: that counts each node that passes every
 * filter before the card check (partition, labels, size, ready, not
 * avoided) through tide_part_card_ok(), whose answer depends on the
 * node's partition only, and a partition twice changes nothing more than
 * once; so each partition whose key blocks is checked once, in group
 * order, if one of its nodes gets that far (a scan to the first such
 * node).  False, with the outcome untouched, when the job failed before a
 * role was tried or no node could ever take a replica: then it keeps
 * tide_diagnose()'s reasons (an unschedulable owner lapses).
 */
bool
tide_diagnose_quiet(TideWork *w, int j, int mode, TideOutcome *o, TidePlaceResult *pr)
{
	TideSnapshot *s = w->s;
	const TideJob *job = &s->jobs[j];
	const TideRole *role;
	const TideGroup *g;

	if (pr->fail_role < 0 || w->info[j].group < 0)
		return false;
	tide_diagnose_status(w, j, o, pr);
	if (o->status != TIDE_PENDING)
	{
		o->status = TIDE_PENDING;
		return false;
	}
	role = &job->roles[pr->fail_role];
	g = &w->ix->groups[w->info[j].group];
	for (int pi = g->plo; pi < g->phi; pi++)
	{
		const TidePart *p = &w->ix->parts[pi];

		if (!tide_part_allowed(w, j, role, p) || tide_part_card_ok(w, job, p, role, mode, NULL))
			continue;
		for (int k = p->lo; k < p->hi; k++)
		{
			int			ni = w->ix->order[k];
			const TideNode *n = &s->nodes[ni];

			if (n->state == TIDE_NODE_READY && tide_node_matches(job, n, ni, w->info[j].avoids) &&
				tide_node_too_small(w, n, role->request) < 0)
			{
				tide_part_card_ok(w, job, p, role, mode, &pr->card);
				break;
			}
		}
	}
	return true;
}

/*
 * The counts of a shape's role without avoided nodes, kept for the jobs of
 * that shape that avoid some (R-L4).  They hold while the walk has placed
 * and held nothing more since they were made: nothing else changes a node.
 */
typedef struct TideAvoidDiag
{
	int32_t		job;			/* the job they were counted for */
	int32_t		role;
	int32_t		mode;
	int32_t		nplacements;	/* the walk when they were counted */
	int32_t		nholds;
	bool		usable;			/* no card key and no hold met */
	Diagnosis	d;
} TideAvoidDiag;

/* Role ri's counts now for job j, its shape's: counted again if stale. */
static const TideAvoidDiag *
avoid_diag(TideWork *w, int j, int ri, int mode)
{
	TideAvoidDiag *e = NULL;
	TideCardBlock block;

	for (int i = 0; i < w->navoid_diags && !e; i++)
		if (w->avoid_diags[i].role == ri && w->avoid_diags[i].mode == mode &&
			w->info[w->avoid_diags[i].job].group == w->info[j].group &&
			tide_same_shape(w, w->avoid_diags[i].job, j))
			e = &w->avoid_diags[i];
	if (e && e->nplacements == w->r->nplacements && e->nholds == w->r->nholds)
		return e;
	if (!e)
	{
		if (w->navoid_diags == w->avoid_diags_cap)
		{
			int			cap = w->avoid_diags_cap ? w->avoid_diags_cap * 2 : 16;

			w->avoid_diags = tide_work_grow(w, w->avoid_diags, sizeof(TideAvoidDiag) * w->avoid_diags_cap,
											sizeof(TideAvoidDiag) * cap);
			w->avoid_diags_cap = cap;
		}
		e = &w->avoid_diags[w->navoid_diags++];
		e->role = ri;
		e->mode = mode;
	}
	e->job = j;
	e->nplacements = w->r->nplacements;
	e->nholds = w->r->nholds;
	memset(&block, 0, sizeof(block));
	block.res = -1;
	block.queue = -1;
	diagnose_count(w, j, ri, mode, &w->ix->groups[w->info[j].group], false, &e->d, &block);
	e->usable = block.res < 0 && e->d.card == 0 && e->d.held == 0;
	return e;
}

/*
 * Why did job j, which keeps off some nodes (R-L4), not fit?  The same
 * answer as tide_diagnose's, from its shape's counts with its avoided
 * nodes moved to "avoided": one pass over the group's nodes per shape,
 * not per job.  False when the counts would need more (a card key, a
 * hold): then tide_diagnose counts node by node.
 */
bool
tide_diagnose_avoider(TideWork *w, int j, int mode, TideOutcome *o, const TidePlaceResult *pr)
{
	const TideJob *job = &w->s->jobs[j];
	const TideGroup *g = &w->ix->groups[w->info[j].group];
	int			ri = pr->fail_role >= 0 ? pr->fail_role : 0;
	const TideAvoidDiag *e;
	Diagnosis	d;

	if (pr->card.res >= 0)
		return false;
	e = avoid_diag(w, j, ri, mode);
	if (!e->usable)
		return false;
	d = e->d;
	for (int a = 0; a < job->navoid; a++)
	{
		int			ni = job->avoid[a];
		bool		again = false;
		Diagnosis	one;
		TideCardBlock block;

		if (ni < 0 || ni >= w->s->nnodes || w->s->nodes[ni].part < g->plo || w->s->nodes[ni].part >= g->phi)
			continue;
		for (int b = 0; b < a && !again; b++)
			again = job->avoid[b] == ni;
		if (again)
			continue;
		memset(&one, 0, sizeof(one));
		one.bigres = -1;
		memset(&block, 0, sizeof(block));
		block.res = -1;
		block.queue = -1;
		diagnose_node(w, j, ri, mode, ni, false, &one, &block);
		if (one.ready == 0)
			continue;
		if (one.card || one.held || block.res >= 0)
			return false;
		d.fit -= one.fit;
		for (int r = 0; r < w->nres; r++)
			d.shortc[r] -= one.shortc[r];
		d.avoided++;
	}
	diagnose_reasons(w, j, o, pr, &d);
	return true;
}
