/*
 * test_engine_forecast_random.c: the forecast's shortcuts change no answer.
 *
 * Random clusters (groups, card types, labels, queue trees, quotas,
 * capabilities, card keys, owner limits), running jobs with and without
 * time limits (some past them, some stopping), and pending jobs of every
 * kind (gangs, reservations, selectors, card types, retries off failed
 * nodes, idle jobs, owners):
 *   - one decide with the pending reasons' node scan skipped (the
 *     forecast's no_reasons) gives the same outcomes, placements (node,
 *     GPUs) and reservations (holds) as the decide with it;
 *   - the forecast (no reasons, and the steps it skips) gives every job the
 *     same answer, start and blockers as the plain stepping, a full decide
 *     with reasons at every end time;
 *   - a forecast stopped at a job gives that job the same answer.
 */
#include "tap.h"
#include "test_engine_fixture.h"
#include "forecast.h"

#define HOUR	(3600LL * 1000000LL)
#define NOW		(1000 * HOUR)

static uint64_t rng;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return n ? (uint32_t) (rng % n) : 0;
}

typedef struct World
{
	Fx			fx;
	int			mem,
				t4,
				h100;
	int32_t		labels[3];
	int64_t		next_id;
	int		   *leaves;
	int			nleaves;
} World;

/* Random jobs for the snapshot's pending list (jobs get ids from next_id). */
static void
fill_jobs(World *w, int nj, bool limits_only)
{
	TideSnapshot *s = w->fx.s;
	int			nroles = 0;
	int			roles_of[64];
	static const int64_t limits[] = {0, HOUR, 2 * HOUR, 3 * HOUR, HOUR / 2};

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
		j->queue = w->leaves[rnd(w->nleaves)];
		j->priority = (int) rnd(3);
		j->created_at = rnd(100);
		j->idle = rnd(8) == 0;
		j->is_retry = rnd(10) == 0;
		j->reserve = rnd(4) == 0;
		j->time_limit = limits_only ? limits[1 + rnd(4)] : limits[rnd(5)];
		j->owner = (int) rnd(3);
		j->gpu_type = rnd(6) == 0 ? (rnd(2) ? w->t4 : w->h100) : -1;
		if (rnd(6) == 0)
		{
			int32_t    *sel = tide_alloc(s, sizeof(int32_t));

			sel[0] = w->labels[rnd(3)];
			j->selector = sel;
			j->nselector = 1;
		}
		if (rnd(10) == 0)
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
			r->replicas = rnd(3) == 0 ? 1 + (int) rnd(3) : 1;
			r->request[TIDE_RES_CPU] = (int64_t) (1 + rnd(8)) * 1000;
			r->request[w->mem] = (int64_t) (1 + rnd(4)) * 1024 * 1024 * 1024LL * 1000;
			if (shape == 1)
				r->request[TIDE_RES_GPU] = (int64_t) (1 + rnd(3)) * 250;
			else if (shape >= 2)
				r->request[TIDE_RES_GPU] = (int64_t) (1 << rnd(4)) * 1000;
		}
		if (rnd(4) == 0)
			j->min_available = 1 + (int) rnd(2);
	}
}

/*
 * The world of seed: a cluster, one decide of random jobs made running
 * (ends: unknown, past, stopping, or from now to four hours on), then the
 * pending jobs of the test.
 */
static void
world_new(World *w, uint64_t seed)
{
	TideMem		mem = {fx_alloc, NULL, NULL};
	TideSnapshot *s;
	int			nn,
				nq,
				ngroups;
	bool		inner[8] = {false};
	char		err[200];
	TideResult *r;
	TideRunning *run;

	memset(w, 0, sizeof(*w));
	rng = seed * 2654435761ULL + 88172645463325252ULL;
	nn = 2 + (int) rnd(14);
	nq = 1 + (int) rnd(5);
	ngroups = 1 + (int) rnd(2);
	w->fx.arena = calloc(1, sizeof(FxArena));
	mem.ctx = w->fx.arena;
	s = tide_snapshot_create(&mem);
	w->fx.s = s;
	w->mem = tide_res_intern(s, "memory");
	w->t4 = tide_res_intern(s, "T4");
	w->h100 = tide_res_intern(s, "H100");
	w->labels[0] = tide_label_intern(s, "zone", "a");
	w->labels[1] = tide_label_intern(s, "zone", "b");
	w->labels[2] = tide_label_intern(s, "ib", "yes");
	tide_snapshot_alloc_cluster(s, nn, nq, 0);
	s->now = NOW;
	s->allow_cpu_jobs_on_gpu_nodes = rnd(4) == 0;
	for (int i = 0; i < nn; i++)
	{
		/* CPU only, 8 or 4 GPUs of either card type */
		static const int kind_gpus[] = {0, 8, 8, 4, 4};
		TideNode   *n = &s->nodes[i];
		char	   *name = tide_alloc(s, 16);
		int			kind = (int) rnd(5);
		int32_t    *lab = tide_alloc(s, sizeof(int32_t) * 2);
		int32_t		zone = w->labels[rnd(2)];

		snprintf(name, 16, "n%02d", i);
		n->name = name;
		n->group = (int) rnd(ngroups);
		n->state = rnd(12) == 0 ? TIDE_NODE_DRAINING : TIDE_NODE_READY;
		n->ngpus = kind_gpus[kind];
		n->capacity[TIDE_RES_GPU] = (int64_t) n->ngpus * 1000;
		n->capacity[TIDE_RES_CPU] = (int64_t) (16 << rnd(2)) * 1000;
		n->capacity[w->mem] = (int64_t) (32 << rnd(2)) * 1024 * 1024 * 1024LL * 1000;
		n->gpu_type = kind == 0 ? -1 : kind % 2 ? w->t4 : w->h100;
		n->allow_cpu_jobs = kind > 0 && rnd(5) == 0;
		for (int g = 0; g < n->ngpus; g++)
			n->gpu_domain[g] = (int16_t) (g / 2);
		/* a zone, and ib=yes on half of them: sorted ids */
		n->nlabels = 1 + (int) rnd(2);
		lab[0] = n->nlabels == 2 && w->labels[2] < zone ? w->labels[2] : zone;
		lab[1] = lab[0] == zone ? w->labels[2] : zone;
		n->labels = lab;
	}
	for (int i = 0; i < nq; i++)
	{
		TideQueue  *q = &s->queues[i];
		char	   *name = tide_alloc(s, 16);

		snprintf(name, 16, "q%d", i);
		q->name = name;
		q->group = (int) rnd(ngroups);
		/* R-O5: a parent among the queues before it, in its group */
		if (i > 0 && rnd(3) == 0)
		{
			int			p = (int) rnd(i);

			q->parent = p;
			q->group = s->queues[p].group;
			inner[p] = true;
		}
		q->priority = (int) rnd(3);
		q->placement = (int) rnd(3);
		q->owner_fair = rnd(4) == 0;
		if (rnd(2))
		{
			q->has_quota = true;
			q->quota[TIDE_RES_GPU] = (int64_t) (4 + rnd(16)) * 1000;
			if (rnd(4) == 0)
				q->quota[w->h100] = (int64_t) (rnd(12)) * 1000;
		}
		if (rnd(2))
			q->capability[TIDE_RES_GPU] = (int64_t) (8 + rnd(32)) * 1000;
		if (rnd(4) == 0)
			q->capability[w->h100] = (int64_t) (rnd(16)) * 1000;
		if (rnd(5) == 0)
			q->capability[TIDE_RES_CPU] = (int64_t) (16 + rnd(64)) * 1000;
		if (rnd(4) == 0)
		{
			q->owner_cap = tide_vec_new(s);
			for (int r = 0; r < s->nres; r++)
				q->owner_cap[r] = TIDE_UNLIMITED;
			q->owner_cap[rnd(2) ? TIDE_RES_GPU : w->h100] = (int64_t) (2 + rnd(8)) * 1000;
		}
	}
	w->leaves = tide_alloc(s, sizeof(int) * nq);
	for (int i = 0; i < nq; i++)
		if (!inner[i])
			w->leaves[w->nleaves++] = i;
	if (!tide_snapshot_finish(s, err, sizeof(err)))
	{
		printf("# %s\n", err);
		abort();
	}

	/* what runs: one decide of random jobs, made running allocations */
	fill_jobs(w, 4 + (int) rnd(12), false);
	r = tide_decide(s);
	run = tide_alloc(s, sizeof(TideRunning) * (r->nplacements + 1));
	for (int i = 0; i < r->nplacements; i++)
	{
		const TidePlacement *p = &r->placements[i];
		const TideJob *jb = &s->jobs[p->job];
		TideRunning *a = &run[s->nrunning++];
		int			end = (int) rnd(6);

		a->alloc_id = i + 1;
		a->job_id = jb->id;
		a->queue = jb->queue;
		a->node = p->node;
		a->idle = jb->idle;
		a->res = p->res;
		a->gpus = p->gpus;
		a->gpu_milli = p->gpu_milli;
		a->owner = jb->owner;
		a->started_at = NOW - HOUR;
		a->placed_at = a->started_at;
		/* per job, not per replica: the seed of its end is its id */
		end = (int) ((jb->id * 7 + seed) % 7);
		a->end_at = end == 0 ? TIDE_TIME_UNKNOWN : end == 1 ? NOW - HOUR : NOW + (end - 1) * HOUR / 2;
		a->releasing = end == 6 && jb->id % 2 == 0;
	}
	s->running = run;
	fill_jobs(w, 6 + (int) rnd(30), rnd(3) == 0);
}

static int
failures(int bad, const char *what, uint64_t seed)
{
	if (bad)
		printf("# seed %llu: %s\n", (unsigned long long) seed, what);
	return bad ? 1 : 0;
}

/* One decide with and without the reasons' node scan: the same decisions. */
static int
compare_decide(uint64_t seed)
{
	World		a,
				b;
	TideResult *ra,
			   *rb;
	int			bad = 0;

	world_new(&a, seed);
	world_new(&b, seed);
	b.fx.s->no_reasons = true;
	ra = tide_decide(a.fx.s);
	rb = tide_decide(b.fx.s);
	bad += failures(ra->nplacements != rb->nplacements || ra->nholds != rb->nholds ||
					ra->nwalk != rb->nwalk, "counts differ", seed);
	for (int j = 0; j < ra->njobs && !bad; j++)
		bad += failures(ra->outcomes[j].status != rb->outcomes[j].status ||
						ra->outcomes[j].klass != rb->outcomes[j].klass ||
						ra->outcomes[j].nplacements != rb->outcomes[j].nplacements,
						"an outcome differs", seed);
	for (int i = 0; i < ra->nwalk && !bad; i++)
		bad += failures(ra->walk[i] != rb->walk[i], "the walk differs", seed);
	for (int i = 0; i < ra->nplacements && !bad; i++)
	{
		const TidePlacement *x = &ra->placements[i];
		const TidePlacement *y = &rb->placements[i];

		bad += failures(x->job != y->job || x->role != y->role || x->replica != y->replica ||
						x->node != y->node || x->gpus != y->gpus || x->gpu_milli != y->gpu_milli,
						"a placement differs", seed);
	}
	for (int i = 0; i < ra->nholds && !bad; i++)
	{
		const TideHold *x = &ra->holds[i];
		const TideHold *y = &rb->holds[i];

		bad += failures(x->job != y->job || x->node != y->node || x->gpus != y->gpus ||
						x->shadow != y->shadow ||
						memcmp(x->res, y->res, sizeof(int64_t) * a.fx.s->nres) != 0,
						"a hold differs", seed);
	}
	fx_free(&a.fx);
	fx_free(&b.fx);
	return bad;
}

/* The forecast against the plain stepping, job by job; and stopped at one. */
static int
compare_forecast(uint64_t seed, int *steps_plain, int *steps_fast)
{
	World		a,
				b,
				c;
	TideForecast *fa,
			   *fb,
			   *fc;
	int			bad = 0;
	int			pick;

	world_new(&a, seed);
	world_new(&b, seed);
	world_new(&c, seed);
	fa = tide_forecast(a.fx.s, 0, true);
	fb = tide_forecast(b.fx.s, 0, false);
	*steps_plain += fa->nsteps;
	*steps_fast += fb->nsteps;
	bad += failures(fa->njobs != fb->njobs || fa->nblockers != fb->nblockers, "counts differ", seed);
	for (int j = 0; j < fa->njobs && !bad; j++)
	{
		bad += failures(fa->job_id[j] != fb->job_id[j] || fa->how[j] != fb->how[j] ||
						fa->start[j] != fb->start[j], "a job's answer differs", seed);
		if (bad)
			printf("# job %lld: plain %d at %lld, fast %d at %lld\n", (long long) fa->job_id[j],
				   fa->how[j], (long long) fa->start[j], fb->how[j], (long long) fb->start[j]);
	}
	for (int i = 0; i < fa->nblockers && !bad; i++)
		bad += failures(fa->blocker_id[i] != fb->blocker_id[i] ||
						fa->blocker_group[i] != fb->blocker_group[i], "a blocker differs", seed);
	pick = fa->njobs > 0 ? (int) (seed % fa->njobs) : -1;
	if (pick >= 0 && !bad)
	{
		fc = tide_forecast(c.fx.s, fa->job_id[pick], false);
		for (int j = 0; j < fc->njobs; j++)
			if (fc->job_id[j] == fa->job_id[pick])
				bad += failures(fc->how[j] != fa->how[pick] ||
								(fa->how[pick] == TIDE_FC_PLACED && fc->start[j] != fa->start[pick]),
								"stopped at a job, its answer differs", seed);
	}
	fx_free(&a.fx);
	fx_free(&b.fx);
	fx_free(&c.fx);
	return bad;
}

int
main(int argc, char **argv)
{
	int			n = argc > 1 ? atoi(argv[1]) : 400;
	int			bad = 0,
				steps_plain = 0,
				steps_fast = 0;

	for (int seed = 1; seed <= n; seed++)
		bad += compare_decide((uint64_t) seed);
	is_int(bad, 0, "%d random snapshots: a decide without the reasons' scan decides the same", n);
	bad = 0;
	for (int seed = 1; seed <= n; seed++)
		bad += compare_forecast((uint64_t) seed, &steps_plain, &steps_fast);
	is_int(bad, 0, "%d random snapshots: the forecast answers every job as the plain stepping does", n);
	ok(steps_fast <= steps_plain, "in no more decide calls (%d, plain %d)", steps_fast, steps_plain);
	return done_testing();
}
