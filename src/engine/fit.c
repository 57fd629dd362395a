/*
 * fit.c: the fit checks every stage shares (fit.h): node filters (R-L4),
 * room on a node, card keys against a queue's limits (R-A1), and holds
 * with EASY backfill (R-L2), and what a job's shape is (the shape
 * cache's key).  Nothing here decides; the stages do.
 */
#include <string.h>

#include "fit.h"
#include "tree.h"

/* EASY backfill: a job that surely ends before shadow may use held resources. */
bool
tide_backfill_ok(const TideSnapshot *s, const TideJob *job, int64_t shadow)
{
	if (job->time_limit <= 0 || shadow == TIDE_TIME_UNKNOWN)
		return false;
	/* saturating: a huge time_limit ends "never", after any shadow */
	return tide_sat_add(s->now, job->time_limit) <= shadow;
}

/* Selector labels are a subset of the node's (both sorted), and not avoided. */
bool
tide_node_matches(const TideJob *job, const TideNode *n, int nodeidx, bool avoid)
{
	int			i = 0,
				k = 0;

	while (i < job->nselector)
	{
		while (k < n->nlabels && n->labels[k] < job->selector[i])
			k++;
		if (k == n->nlabels || n->labels[k] != job->selector[i])
			return false;
		i++;
	}
	for (int a = 0; avoid && a < job->navoid; a++)
		if (job->avoid[a] == nodeidx)
			return false;
	return true;
}

static bool
job_asks_gpu(const TideJob *job)
{
	for (int ri = 0; ri < job->nroles; ri++)
		if (job->roles[ri].request[TIDE_RES_GPU] > 0)
			return true;
	return false;
}

/*
 * Partition filter (R-L4): GPU roles go to GPU partitions of the job's card
 * type; roles without GPU go to CPU partitions, and to GPU partitions only
 * when the job asks GPUs elsewhere (a gang's CPU role stays near its
 * workers), the node allows CPU jobs (tide.nodes.allow_cpu_jobs), or the
 * snapshot-wide setting does.  Partitions split on allow_cpu_jobs, so
 * this stays a partition-level test.
 */
bool
tide_part_allowed(TideWork *w, int j, const TideRole *role, const TidePart *p)
{
	const TideJob *job = &w->s->jobs[j];

	if (p->group != w->info[j].group)
		return false;
	if (role->request[TIDE_RES_GPU] > 0)
		return p->gpu && (job->gpu_type < 0 || p->gpu_type == job->gpu_type);
	if (!p->gpu)
		return true;
	if (w->s->allow_cpu_jobs_on_gpu_nodes || p->allow_cpu)
		return true;
	return job_asks_gpu(job) && (job->gpu_type < 0 || p->gpu_type == job->gpu_type);
}

uint64_t
tide_node_gpus_for(const TideNode *n, int64_t gpu, bool use_held)
{
	int16_t		avail[TIDE_MAX_GPUS];
	int			g;

	if (gpu >= TIDE_MILLI)
		return tide_choose_whole_gpus(n, n->free_whole & ~(use_held ? n->held_mask : 0),
									  (int) (gpu / TIDE_MILLI));
	if (gpu <= 0)
		return 0;
	for (int k = 0; k < n->ngpus; k++)
		avail[k] = n->gpu_free[k] - (use_held ? n->gpu_held[k] : 0);
	g = tide_choose_fraction_gpu(n, avail, (int) gpu);
	return g >= 0 ? (uint64_t) 1 << g : 0;
}

/*
 * R-L4's exception: a retry keeps off the nodes where its previous attempt
 * failed only while another node of its group could hold it, empty: one
 * that is not down, matches its selector and card type, and is big enough
 * for a replica of every role.  Otherwise (a one-node cluster, say) it
 * would wait forever for a node that can never come.
 */
bool
tide_other_node_could_hold(TideWork *w, int j)
{
	const TideSnapshot *s = w->s;
	const TideJob *job = &s->jobs[j];

	for (int ni = 0; ni < s->nnodes; ni++)
	{
		const TideNode *n = &s->nodes[ni];
		bool		holds = true;

		if (n->part < 0 || n->state == TIDE_NODE_DOWN ||
			!tide_node_matches(job, n, ni, true))
			continue;
		for (int ri = 0; ri < job->nroles && holds; ri++)
		{
			const TideRole *role = &job->roles[ri];

			holds = role->replicas <= 0 ||
				(tide_part_allowed(w, j, role, &w->ix->parts[n->part]) &&
				 tide_node_too_small(w, n, role->request) < 0);
		}
		if (holds)
			return true;
	}
	return false;
}

/*
 * Could node n, empty, hold one replica of req?  -1 if so, else the first
 * resource it is too small on (TIDE_RES_GPU for too few GPUs).
 */
int
tide_node_too_small(const TideWork *w, const TideNode *n, const int64_t *req)
{
	for (int r = 0; r < w->nres; r++)
		if (req[r] > n->capacity[r])
			return r;
	if (req[TIDE_RES_GPU] >= TIDE_MILLI && req[TIDE_RES_GPU] / TIDE_MILLI > n->ngpus)
		return TIDE_RES_GPU;
	return -1;
}

/* Room for one replica of req on node n (vector and GPUs). */
bool
tide_node_fits(TideWork *w, const TideJob *job, const TideNode *n,
			   const int64_t *req, bool ignore_holds)
{
	bool		use_held = !ignore_holds && tide_node_holds_apply(w, job, n);
	int64_t		gpu = req[TIDE_RES_GPU];

	w->r->counters.node_checks++;
	for (int r = 0; r < w->nres; r++)
	{
		int64_t		avail;

		if (req[r] == 0)
			continue;
		/* saturating: used may exceed capacity, held adds on top (satmath.h) */
		avail = tide_sat_sub(n->capacity[r], n->used[r]);
		if (use_held)
			avail = tide_sat_sub(avail, n->held[r]);
		if (avail < req[r])
			return false;
	}
	if (gpu >= TIDE_MILLI)
	{
		uint64_t	m = n->free_whole & ~(use_held ? n->held_mask : 0);

		return __builtin_popcountll(m) >= gpu / TIDE_MILLI;
	}
	if (gpu > 0)
	{
		for (int g = 0; g < n->ngpus; g++)
			if (n->gpu_free[g] - (use_held ? n->gpu_held[g] : 0) >= gpu)
				return true;
		return false;
	}
	return true;
}

/*
 * May this job's replica land in partition p as far as card keys go?  A
 * node of card type T charges the replica's GPUs as T too (R-A1): checked
 * against capability always, and against quota in guaranteed mode.
 * Usage includes tentative replicas of the job being placed.
 */
bool
tide_part_card_ok(TideWork *w, const TideJob *job, const TidePart *p,
				  const TideRole *role, int mode, TideCardBlock *block)
{
	const TideQueue *q = &w->s->queues[job->queue];
	int			t = p->gpu_type;
	int64_t		add = role->request[TIDE_RES_GPU];
	int64_t		held;

	if (t < 0 || add == 0 || role->request[t] != 0)
		return true;
	{
		int			applies = -1;

		held = tide_queue_held(w, job, q, t, &applies);
	}
	if (tide_over4(q->capability[t], q->usage[t], q->idle_usage[t], held, add))
	{
		if (block)
		{
			block->res = t;
			block->mode = MODE_BORROW;
			block->queue = -1;
		}
		return false;
	}
	if (q->owner_cap && job->owner >= 0 &&
		tide_over(q->owner_cap[t], tide_owner_held(w, job, t), add))
	{
		/* R-A4: the card key counts towards the owner limit too */
		if (block)
		{
			block->res = t;
			block->mode = MODE_OWNER;
			block->queue = -1;
		}
		return false;
	}
	if (mode == MODE_GUARANTEED && q->quota[t] != TIDE_UNLIMITED &&
		tide_over4(q->quota[t], q->usage[t], held, 0, add))
	{
		if (block && block->res < 0)
		{
			block->res = t;
			block->mode = MODE_GUARANTEED;
			block->queue = -1;
		}
		return false;
	}
	/* R-A3: the levels above the leaf (capability; quota when guaranteed) */
	if (__builtin_expect(q->parent >= 0, 0))
	{
		int			why;
		int			a = tide_tree_card_block(w, q, t, add, mode, &why);

		if (a >= 0)
		{
			if (block && block->res < 0)
			{
				block->res = t;
				block->mode = why;
				block->queue = a;
			}
			return false;
		}
	}
	return true;
}

/* A replica beyond the gang minimum must still keep the queue within capability. */
bool
tide_extra_replica_ok(TideWork *w, const TideJob *job, const TideNode *n,
					  const int64_t *req)
{
	const TideQueue *q = &w->s->queues[job->queue];

	for (int r = 0; r < w->nres; r++)
		if (req[r] > 0 && tide_over4(q->capability[r], q->usage[r], q->idle_usage[r], q->held[r], req[r]))
			return false;
	if (n->gpu_type >= 0 && req[TIDE_RES_GPU] > 0 && req[n->gpu_type] == 0 &&
		tide_over4(q->capability[n->gpu_type], q->usage[n->gpu_type], q->idle_usage[n->gpu_type],
				   q->held[n->gpu_type], req[TIDE_RES_GPU]))
		return false;
	if (__builtin_expect(q->owner_cap != NULL, 0) && job->owner >= 0)
	{
		/* R-A4: nor the owner past its limit */
		for (int r = 0; r < w->nres; r++)
			if (req[r] > 0 && tide_over(q->owner_cap[r], tide_owner_held(w, job, r), req[r]))
				return false;
		if (n->gpu_type >= 0 && req[TIDE_RES_GPU] > 0 && req[n->gpu_type] == 0 &&
			tide_over(q->owner_cap[n->gpu_type], tide_owner_held(w, job, n->gpu_type), req[TIDE_RES_GPU]))
			return false;
	}
	if (__builtin_expect(q->parent >= 0, 0) && !tide_tree_extra_ok(w, q, n, req))
		return false;			/* R-A3: nor a queue above it past its capability */
	return true;
}

/* Is node ni one that job j could use (ready, labels, card type, role)? */
bool
tide_node_usable(TideWork *w, int j, int ni)
{
	TideSnapshot *s = w->s;
	const TideJob *job = &s->jobs[j];
	const TideNode *n = &s->nodes[ni];

	if (n->state != TIDE_NODE_READY || n->part < 0 || !tide_node_matches(job, n, ni, w->info[j].avoids))
		return false;
	for (int ri = 0; ri < job->nroles; ri++)
		if (tide_part_allowed(w, j, &job->roles[ri], &w->ix->parts[n->part]))
			return true;
	return false;
}

/*
 * The queue a shape's node search depends on: only a queue that limits a
 * card type filters nodes differently from another; -1 for the others, so
 * one failed shape answers for every queue without card limits.
 */
int
tide_shape_queue(const TideWork *w, const TideJob *job)
{
	return w->queue_cards[job->queue] ? job->queue : -1;
}

/*
 * Are jobs a and b of the same shape: all that decides where they fit
 * and why not, but the nodes they avoid (the shape cache, prep.c)?
 */
bool
tide_same_shape(const TideWork *w, int a, int b)
{
	const TideSnapshot *s = w->s;
	const TideJob *x = &s->jobs[a];
	const TideJob *y = &s->jobs[b];

	/* prep.c's classes are this very equality, decided once per job */
	if (w->info[a].shape >= 0 && w->info[b].shape >= 0)
		return w->info[a].shape == w->info[b].shape;
	if (tide_shape_queue(w, x) != tide_shape_queue(w, y) || x->idle != y->idle || x->gpu_type != y->gpu_type ||
		x->nroles != y->nroles || x->nselector != y->nselector || x->time_limit != y->time_limit ||
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
