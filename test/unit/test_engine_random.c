/*
 * test_engine_random.c: hundreds of random clusters and workloads through
 * the engine, checking the invariants after every decide call:
 *   - no node over capacity (R-C4), used equals the sum of allocations;
 *   - no GPU share above 1000, no GPU in two whole allocations, no whole
 *     allocation on a shared GPU (R-L6);
 *   - gangs all or nothing (R-L3);
 *   - placements respect the node filter (R-L4) and queue capability (R-A1);
 *   - no job left pending that would fit in the final state (R-L1: nothing
 *     skipped that fit), in workloads without reservations;
 *   - determinism: the same input twice gives the same decisions.
 */
#include "tap.h"
#include "test_engine_fixture.h"

static uint64_t rng;
static int64_t rechecked;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return n ? (uint32_t) (rng % n) : 0;
}

typedef struct Live
{
	int			node,
				queue;
	bool		idle;
	int64_t    *res;
	uint64_t	gpus;
	int			milli;
	int64_t		job;
} Live;

typedef struct World
{
	FxArena    *arena;
	TideSnapshot *s;
	Live	   *live;
	int			nlive;
	int			cap_live;
	int			res_mem;
	int			t4,
				h100;
	int32_t		labels[4];
	int64_t		next_id;
	bool		with_reserve;
} World;

static void
world_new(World *w, uint64_t seed, bool with_reserve)
{
	TideMem		mem = {fx_alloc, NULL, NULL};
	TideSnapshot *s;
	int			nn,
				nq,
				ngroups;

	memset(w, 0, sizeof(*w));
	rng = seed * 2654435761ULL + 88172645463325252ULL;
	nn = 1 + (int) rnd(12);
	nq = 1 + (int) rnd(4);
	ngroups = 1 + (int) rnd(2);
	w->arena = calloc(1, sizeof(FxArena));
	mem.ctx = w->arena;
	s = tide_snapshot_create(&mem);
	w->s = s;
	w->res_mem = tide_res_intern(s, "memory");
	w->t4 = tide_res_intern(s, "T4");
	w->h100 = tide_res_intern(s, "H100");
	w->labels[0] = tide_label_intern(s, "zone", "a");
	w->labels[1] = tide_label_intern(s, "zone", "b");
	w->labels[2] = tide_label_intern(s, "ib", "yes");
	w->with_reserve = with_reserve;
	tide_snapshot_alloc_cluster(s, nn, nq, 0);
	s->allow_cpu_jobs_on_gpu_nodes = rnd(4) == 0;
	for (int i = 0; i < nn; i++)
	{
		TideNode   *n = &s->nodes[i];
		char	   *name = tide_alloc(s, 16);
		int			kind = (int) rnd(5);
		int32_t    *lab = tide_alloc(s, sizeof(int32_t) * 2);

		snprintf(name, 16, "n%02d", (int) rnd(100) * 100 + i);
		n->name = name;
		n->group = (int) rnd(ngroups);
		n->state = rnd(10) == 0 ? TIDE_NODE_DRAINING : (rnd(15) == 0 ? TIDE_NODE_DOWN : TIDE_NODE_READY);
		n->capacity[TIDE_RES_CPU] = (int64_t) (8 << rnd(3)) * 1000;
		n->capacity[w->res_mem] = (int64_t) (16 << rnd(3)) * 1000 * 1024 * 1024 * 1024LL;
		n->ngpus = kind == 0 ? 0 : (kind <= 2 ? 8 : 4);
		n->capacity[TIDE_RES_GPU] = (int64_t) n->ngpus * 1000;
		n->gpu_type = n->ngpus == 0 ? -1 : (kind == 1 || kind == 3 ? w->t4 : w->h100);
		n->allow_cpu_jobs = n->ngpus > 0 && rnd(5) == 0;
		{
			int			nd = 1 << rnd(3);	/* 1, 2 or 4 domains */

			for (int g = 0; g < n->ngpus; g++)
				n->gpu_domain[g] = (int16_t) (g * nd / (n->ngpus ? n->ngpus : 1));
		}
		lab[0] = w->labels[rnd(2)];
		n->nlabels = 1;
		if (rnd(2))
		{
			lab[1] = w->labels[2];
			n->nlabels = 2;
			if (lab[1] < lab[0])
			{
				lab[1] = lab[0];
				lab[0] = w->labels[2];
			}
		}
		n->labels = lab;
	}
	for (int i = 0; i < nq; i++)
	{
		TideQueue  *q = &s->queues[i];
		char	   *name = tide_alloc(s, 16);

		snprintf(name, 16, "q%d", i);
		q->name = name;
		q->group = (int) rnd(ngroups);
		q->priority = (int) rnd(3);
		q->placement = rnd(5) == 0 ? TIDE_PLACE_SPREAD : TIDE_PLACE_PACK;
		if (rnd(2))
		{
			q->has_quota = true;
			q->quota[TIDE_RES_GPU] = (int64_t) (4 + rnd(16)) * 1000;
			if (rnd(3) == 0)
				q->quota[TIDE_RES_CPU] = (int64_t) (8 + rnd(64)) * 1000;
		}
		if (rnd(2))
			q->capability[TIDE_RES_GPU] = (int64_t) (8 + rnd(32)) * 1000;
		if (rnd(4) == 0)
			q->capability[w->h100] = (int64_t) (rnd(16)) * 1000;
		if (rnd(5) == 0)
			q->capability[TIDE_RES_CPU] = (int64_t) (16 + rnd(64)) * 1000;
	}
	{
		char		err[200];

		if (!tide_snapshot_finish(s, err, sizeof(err)))
		{
			printf("# %s\n", err);
			abort();
		}
	}
}

static void
world_jobs(World *w, int nj)
{
	TideSnapshot *s = w->s;
	int			nroles = 0;
	int			roles_of[256];

	for (int i = 0; i < nj; i++)
	{
		roles_of[i] = rnd(6) == 0 ? 2 : 1;
		nroles += roles_of[i];
	}
	tide_snapshot_alloc_jobs(s, nj, nroles);
	nroles = 0;
	for (int i = 0; i < nj; i++)
	{
		TideJob    *j = &s->jobs[i];

		j->id = ++w->next_id;
		j->queue = (int) rnd(s->nqueues);
		j->priority = (int) rnd(4);
		j->created_at = rnd(100);
		j->idle = rnd(5) == 0;
		j->is_retry = rnd(10) == 0;
		j->reserve = w->with_reserve && rnd(4) == 0;
		j->time_limit = w->with_reserve && rnd(3) == 0 ? 1 + rnd(100) : 0;
		j->gpu_type = rnd(6) == 0 ? (rnd(2) ? w->t4 : w->h100) : -1;
		if (rnd(6) == 0)
		{
			int32_t    *sel = tide_alloc(s, sizeof(int32_t));

			sel[0] = w->labels[rnd(3)];
			j->selector = sel;
			j->nselector = 1;
		}
		if (rnd(8) == 0 && s->nnodes > 0)
		{
			int32_t    *av = tide_alloc(s, sizeof(int32_t));

			av[0] = (int) rnd(s->nnodes);
			j->avoid = av;
			j->navoid = 1;
		}
		j->roles = &s->roles[nroles];
		j->nroles = roles_of[i];
		for (int ri = 0; ri < j->nroles; ri++)
		{
			TideRole   *r = &s->roles[nroles++];
			int			shape = (int) rnd(6);

			r->name = ri ? "worker" : "main";
			r->replicas = rnd(3) == 0 ? 1 + (int) rnd(4) : 1;
			r->request[TIDE_RES_CPU] = (int64_t) (1 + rnd(8)) * 500;
			r->request[w->res_mem] = (int64_t) (1 + rnd(8)) * 1000 * 1024 * 1024 * 1024LL;
			if (shape == 1)
				r->request[TIDE_RES_GPU] = (int64_t) (1 + rnd(8)) * 125;	/* fraction */
			else if (shape >= 2)
				r->request[TIDE_RES_GPU] = (int64_t) (1 << rnd(4)) * 1000;
		}
		if (rnd(4) == 0)
			j->min_available = 1 + (int) rnd(3);
	}
}

/* Record the placements of the last result as live allocations. */
static void
world_record(World *w, const TideResult *r)
{
	for (int i = 0; i < r->nplacements; i++)
	{
		const TidePlacement *p = &r->placements[i];
		const TideJob *job = &w->s->jobs[p->job];
		Live	   *l;

		if (w->nlive == w->cap_live)
		{
			w->cap_live = w->cap_live ? w->cap_live * 2 : 64;
			w->live = realloc(w->live, sizeof(Live) * w->cap_live);
		}
		l = &w->live[w->nlive++];
		l->node = p->node;
		l->queue = job->queue;
		l->idle = job->idle;
		l->res = tide_vec_new(w->s);
		memcpy(l->res, p->res, sizeof(int64_t) * w->s->nres);
		l->gpus = p->gpus;
		l->milli = p->gpu_milli;
		l->job = job->id;
	}
}

/* Release a random part of the live allocations (departures). */
static void
world_release(World *w)
{
	int			k = 0;

	for (int i = 0; i < w->nlive; i++)
	{
		Live	   *l = &w->live[i];

		if (rnd(3) == 0)
			tide_charge(w->s, l->node, l->queue, l->idle, l->res, l->gpus, l->milli, -1);
		else
			w->live[k++] = *l;
	}
	w->nlive = k;
}

static void
world_free(World *w)
{
	for (int i = 0; i < w->arena->n; i++)
		free(w->arena->p[i]);
	free(w->arena->p);
	free(w->arena);
	free(w->live);
}

/* Selector labels all on the node: written again, independently. */
static bool
selector_ok(const TideJob *j, const TideNode *n)
{
	for (int i = 0; i < j->nselector; i++)
	{
		bool		found = false;

		for (int k = 0; k < n->nlabels; k++)
			found |= n->labels[k] == j->selector[i];
		if (!found)
			return false;
	}
	return true;
}

/*
 * R-L4: labels match, and the node is not one of the job's failed attempts
 * unless no other node like it (same group, card type and CPU-job rule, not
 * down, labels matching) is big enough for a replica of every role.
 */
static bool
label_ok(const TideSnapshot *s, const TideJob *j, const TideNode *n, int ni)
{
	bool		avoided = false;

	if (!selector_ok(j, n))
		return false;
	for (int a = 0; a < j->navoid; a++)
		avoided |= j->avoid[a] == ni;
	if (!avoided)
		return true;
	for (int oi = 0; oi < s->nnodes; oi++)
	{
		const TideNode *o = &s->nodes[oi];
		bool		other = true;

		for (int a = 0; a < j->navoid; a++)
			other &= j->avoid[a] != oi;
		if (!other || o->state == TIDE_NODE_DOWN || o->unusable || o->group != n->group ||
			o->gpu_type != n->gpu_type || (o->ngpus > 0) != (n->ngpus > 0) ||
			o->allow_cpu_jobs != n->allow_cpu_jobs || !selector_ok(j, o))
			continue;
		for (int ri = 0; ri < j->nroles && other; ri++)
		{
			for (int r = 0; r < s->nres; r++)
				other &= j->roles[ri].request[r] <= o->capacity[r];
			other &= j->roles[ri].request[TIDE_RES_GPU] <= (int64_t) o->ngpus * TIDE_MILLI;
		}
		if (other)
			return false;		/* such a node exists: the failed one is off limits */
	}
	return true;
}

/* Every invariant of the header comment; returns the number of violations. */
static int
check(World *w, const TideResult *r, const char *what)
{
	TideSnapshot *s = w->s;
	int			bad = 0;
	int			nres = s->nres;
	int64_t    *used = calloc((size_t) s->nnodes * nres, sizeof(int64_t));
	int		   *whole = calloc((size_t) s->nnodes * 64, sizeof(int));
	int		   *share = calloc((size_t) s->nnodes * 64, sizeof(int));

	for (int i = 0; i < w->nlive; i++)
	{
		Live	   *l = &w->live[i];

		for (int k = 0; k < nres; k++)
			used[(size_t) l->node * nres + k] += l->res[k];
		for (int g = 0; g < 64; g++)
			if ((l->gpus >> g) & 1)
			{
				if (l->milli)
					share[l->node * 64 + g] += l->milli;
				else
					whole[l->node * 64 + g]++;
			}
	}
	for (int ni = 0; ni < s->nnodes; ni++)
	{
		TideNode   *n = &s->nodes[ni];

		for (int k = 0; k < nres; k++)
		{
			if (n->used[k] != used[(size_t) ni * nres + k] && bad++ < 3)
				diag("%s: node %s %s used %lld, allocations sum %lld", what, n->name,
					 s->res_names[k], (long long) n->used[k], (long long) used[(size_t) ni * nres + k]);
			if (n->used[k] > n->capacity[k] && bad++ < 3)
				diag("%s: node %s over capacity on %s", what, n->name, s->res_names[k]);
		}
		for (int g = 0; g < 64; g++)
		{
			int			wh = whole[ni * 64 + g],
						sh = share[ni * 64 + g];

			if ((wh > 1 || (wh == 1 && sh > 0) || sh > 1000 || (g >= n->ngpus && (wh || sh))) && bad++ < 3)
				diag("%s: node %s GPU %d: %d whole, %d milli shared", what, n->name, g, wh, sh);
			if (g < n->ngpus && n->gpu_free[g] != (wh ? 0 : 1000 - sh) && bad++ < 3)
				diag("%s: node %s GPU %d free %d, expected %d", what, n->name, g, n->gpu_free[g], wh ? 0 : 1000 - sh);
		}
	}
	for (int q = 0; q < s->nqueues; q++)
		for (int k = 0; k < nres; k++)
		{
			TideQueue  *qq = &s->queues[q];

			if (qq->capability[k] != TIDE_UNLIMITED &&
				qq->usage[k] + qq->idle_usage[k] > qq->capability[k] && bad++ < 3)
				diag("%s: queue %s over capability on %s", what, qq->name, s->res_names[k]);
		}
	for (int j = 0; j < s->njobs; j++)
	{
		const TideOutcome *o = &r->outcomes[j];
		const TideJob *job = &s->jobs[j];
		int			total = 0,
					min;

		for (int ri = 0; ri < job->nroles; ri++)
			total += job->roles[ri].replicas;
		min = job->min_available > 0 && job->min_available < total ? job->min_available : total;
		if (o->status == TIDE_PLACED && (o->nplacements < min || o->nplacements > total) && bad++ < 3)
			diag("%s: job %lld placed %d of min %d", what, (long long) job->id, o->nplacements, min);
		if (o->status != TIDE_PLACED && o->nplacements != 0 && bad++ < 3)
			diag("%s: job %lld not placed but has placements", what, (long long) job->id);
		if (o->status != TIDE_PLACED && o->nreasons == 0 && bad++ < 3)
			diag("%s: job %lld left without a reason", what, (long long) job->id);
		for (int i = 0; i < o->nplacements; i++)
		{
			const TidePlacement *p = &r->placements[o->first_placement + i];
			const TideNode *n = &s->nodes[p->node];
			int64_t		gpu = p->res[TIDE_RES_GPU];

			if (p->job != j || n->state != TIDE_NODE_READY || !label_ok(s, job, n, p->node) ||
				n->group != s->queues[job->queue].group)
			{
				if (bad++ < 3)
					diag("%s: job %lld on node %s breaks the node filter", what, (long long) job->id, n->name);
			}
			if (gpu > 0 && job->gpu_type >= 0 && n->gpu_type != job->gpu_type && bad++ < 3)
				diag("%s: job %lld on the wrong card type", what, (long long) job->id);
			if (gpu >= 1000 && __builtin_popcountll(p->gpus) != gpu / 1000 && bad++ < 3)
				diag("%s: job %lld mask has %d GPUs for %lld", what, (long long) job->id,
					 __builtin_popcountll(p->gpus), (long long) gpu);
			if (gpu > 0 && gpu < 1000 && (__builtin_popcountll(p->gpus) != 1 || p->gpu_milli != gpu) && bad++ < 3)
				diag("%s: job %lld fraction not on one GPU", what, (long long) job->id);
			if (n->ngpus > 0 && gpu == 0 && !s->allow_cpu_jobs_on_gpu_nodes && !n->allow_cpu_jobs)
			{
				bool		asks = false;

				for (int ri = 0; ri < job->nroles; ri++)
					asks |= job->roles[ri].request[TIDE_RES_GPU] > 0;
				if (!asks && bad++ < 3)
					diag("%s: CPU job %lld on GPU node %s", what, (long long) job->id, n->name);
			}
		}
	}
	free(used);
	free(whole);
	free(share);
	return bad;
}

/*
 * R-L1: nothing left out that fits.  Re-decide the pending jobs alone
 * against the final state: none may fit now (resources only shrank during
 * the walk).  Consumes the snapshot's jobs (call last).
 */
static int
check_no_skip(World *w, const TideResult *r, const char *what)
{
	TideSnapshot *s = w->s;
	int			bad = 0;
	int			n = 0;
	TideJob    *keep = malloc(sizeof(TideJob) * (s->njobs + 1));

	for (int j = 0; j < s->njobs; j++)
		if (r->outcomes[j].status == TIDE_PENDING)
			keep[n++] = s->jobs[j];
	for (int i = 0; i < n; i++)
	{
		TideResult *r2;

		/* one at a time: each alone in the final state */
		s->jobs = &keep[i];
		s->njobs = 1;
		rechecked++;
		r2 = tide_decide(s);
		if (r2->outcomes[0].status == TIDE_PLACED)
		{
			if (bad++ < 3)
				diag("%s: job %lld was left out but fits the final state", what, (long long) keep[i].id);
			/* undo, to keep checking the others against the same state */
			for (int k = 0; k < r2->nplacements; k++)
				tide_charge(s, r2->placements[k].node, keep[i].queue, keep[i].idle,
							r2->placements[k].res, r2->placements[k].gpus,
							r2->placements[k].gpu_milli, -1);
		}
	}
	s->njobs = 0;
	free(keep);
	return bad;
}

/* Placements as text, for the determinism check. */
static void
fingerprint(const TideResult *r, char *buf, size_t len)
{
	size_t		off = 0;

	buf[0] = '\0';
	for (int i = 0; i < r->nplacements && off + 64 < len; i++)
		off += snprintf(buf + off, len - off, "%d/%d/%d@%d:%llx;", r->placements[i].job,
						r->placements[i].role, r->placements[i].replica, r->placements[i].node,
						(unsigned long long) r->placements[i].gpus);
}

int
main(void)
{
	int			cases = 400;
	int			bad_inv = 0,
				bad_skip = 0,
				bad_det = 0,
				bad_res = 0;
	int64_t		placed = 0,
				pending = 0;
	static char fp1[65536],
				fp2[65536];

	for (int c = 0; c < cases; c++)
	{
		bool		with_reserve = c % 4 == 3;
		World		w;
		TideResult *r;
		char		what[64];

		world_new(&w, (uint64_t) c + 1, with_reserve);
		/* cycle 1 from empty, cycle 2 after departures and new arrivals */
		for (int cycle = 0; cycle < 3; cycle++)
		{
			snprintf(what, sizeof(what), "case %d cycle %d", c, cycle);
			world_jobs(&w, 1 + (int) rnd(cycle == 0 ? 60 : 30));
			r = tide_decide(w.s);
			world_record(&w, r);
			bad_inv += check(&w, r, what);
			placed += r->counters.jobs_placed;
			pending += r->counters.jobs_pending;
			for (int i = 0; i < r->nholds; i++)
				if (r->holds[i].node >= 0 && !w.s->jobs[r->holds[i].job].reserve)
					bad_res++;
			if (cycle == 2 && !with_reserve)
				bad_skip += check_no_skip(&w, r, what);
			else
				world_release(&w);
		}
		world_free(&w);

		/* determinism: the same world twice */
		if (c % 10 == 0)
		{
			World		a,
						b;

			world_new(&a, (uint64_t) c + 7, c % 20 == 0);
			world_jobs(&a, 50);
			fingerprint(tide_decide(a.s), fp1, sizeof(fp1));
			world_new(&b, (uint64_t) c + 7, c % 20 == 0);
			world_jobs(&b, 50);
			fingerprint(tide_decide(b.s), fp2, sizeof(fp2));
			if (strcmp(fp1, fp2) != 0 && bad_det++ < 2)
				diag("case %d differs:\n# %.200s\n# %.200s", c, fp1, fp2);
			world_free(&a);
			world_free(&b);
		}
	}
	diag("%d cases: %lld jobs placed, %lld left pending, %lld re-checked alone", cases,
		 (long long) placed, (long long) pending, (long long) rechecked);
	ok(placed > 1000 && pending > 100 && rechecked > 100,
	   "the random workloads both place and leave jobs pending");
	is_int(bad_inv, 0, "R-C4/R-L3/R-L4/R-L6/R-A1 invariants hold after every cycle of %d cases", cases);
	is_int(bad_skip, 0, "R-L1: no pending job fits the final state (no reservations)");
	is_int(bad_res, 0, "R-L2: only reserving jobs hold node resources");
	is_int(bad_det, 0, "same snapshot, same decisions (determinism)");
	return done_testing();
}
