/*
 * busy_engine_bench.c: the policy engine's busy cycle, evictions on, on
 * the synthetic cluster of cycle_engine_bench.c (the jobs of
 * cycle_cluster.psql, with the server's defaults: reclaimable queues,
 * preemptable training jobs).
 *
 *   cc -O2 -Isrc/engine bench/busy_engine_bench.c src/engine/[a-z]*.c -lm -o /tmp/beb
 *   /tmp/beb JOBS NODES [QUEUES [REPEAT [POLICY [ROUNDS]]]]
 *
 * Round 0 is the first cycle (nothing runs); each later round decides a
 * new snapshot in which the placements of the rounds before run (live
 * allocations, placed at random times in the last day) and their victims
 * are pending again, as a cycle that runs after the adapter applied the
 * decisions (claims are not carried: a preemptor simply finds the room its
 * victims left).  After ROUNDS rounds (default 3) the last snapshot is
 * decided REPEAT more times: minimum and median of the decide, wall and
 * CPU time (the machine is often shared).  Each
 * round prints its counters and a checksum of every decision (outcomes,
 * reasons, placements, evictions, claims), which a speed change must
 * leave as it was.  TIDE_BENCH_TREE=1: the queues are the leaves of a
 * 3-level tree, as in cycle_engine_bench.c.  TIDE_BENCH_MIX=1: more of
 * the eviction rules at work: one queue in four preempts within itself
 * (R-E3), one job in seven is an inference job (R-E2), not preemptable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "bench_util.h"

#define BUSY_NRES	5			/* gpu, cpu, memory, two card types */

typedef struct BusyJob
{
	int			queue;
	int			priority;
	int64_t		created_at;
	bool		idle;
	bool		inference;
	int			replicas;
	int64_t		gpu;			/* milli per replica */
	bool		running;
} BusyJob;

typedef struct BusyAlloc
{
	int			job;
	int			node;
	int64_t		res[BUSY_NRES];
	uint64_t	gpus;
	int32_t		gpu_milli;
	int64_t		placed_at;
	bool		gone;
} BusyAlloc;

static int	njobs,
			nnodes,
			nqueues;
static bool tree;
static bool mixed;
static const char *policy;
static BusyJob *jobs;
static BusyAlloc *allocs;
static int	nallocs;

static uint64_t
mix(uint64_t h, uint64_t x)
{
	h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdULL;
}

/* A checksum of every decision of r. */
static uint64_t
decisions_sum(const TideSnapshot *s, const TideResult *r)
{
	uint64_t	h = 1;

	for (int j = 0; j < r->njobs; j++)
	{
		const TideOutcome *o = &r->outcomes[j];
		const TideReason *rs = tide_outcome_reasons(r, o);

		h = mix(h, (uint64_t) s->jobs[j].id);
		h = mix(h, (uint64_t) o->status * 64 + o->klass * 8 + o->evict_state);
		h = mix(h, (uint64_t) o->walk_pos);
		for (int k = 0; k < o->nreasons; k++)
		{
			h = mix(h, (uint64_t) rs[k].code * 65536 + (uint16_t) rs[k].res);
			h = mix(h, (uint64_t) rs[k].role);
			h = mix(h, (uint64_t) rs[k].a);
			h = mix(h, (uint64_t) rs[k].b);
			h = mix(h, (uint64_t) rs[k].c);
			h = mix(h, (uint64_t) rs[k].ref);
		}
	}
	for (int i = 0; i < r->nplacements; i++)
	{
		const TidePlacement *p = &r->placements[i];

		h = mix(h, (uint64_t) p->job * 4096 + p->replica);
		h = mix(h, (uint64_t) p->node);
		h = mix(h, p->gpus);
		h = mix(h, (uint64_t) p->gpu_milli);
	}
	for (int i = 0; i < r->nevictions; i++)
	{
		h = mix(h, (uint64_t) r->evictions[i].job_id);
		h = mix(h, (uint64_t) r->evictions[i].rule * 65536 + r->evictions[i].preemptor);
	}
	for (int i = 0; i < r->nnew_claims; i++)
	{
		h = mix(h, (uint64_t) r->new_claims[i].job_id);
		h = mix(h, (uint64_t) r->new_claims[i].node);
		h = mix(h, r->new_claims[i].gpus);
	}
	return h;
}

/* A snapshot of the state now: live allocations, pending jobs. */
static TideSnapshot *
build(int *pending_of)
{
	TideMem		mem = {bench_alloc, NULL, NULL};
	TideSnapshot *s = tide_snapshot_create(&mem);
	int			res_mem = tide_res_intern(s, "memory");
	int			t_a = tide_res_intern(s, "NVIDIA-H100");
	int			t_b = tide_res_intern(s, "NVIDIA-A100");
	int			nlive = 0,
				npend = 0;
	char		err[200];
	TideRole   *roles;

	for (int i = 0; i < nallocs; i++)
		nlive += !allocs[i].gone;
	tide_snapshot_alloc_cluster(s, nnodes, nqueues + (tree ? 24 : 0), nlive);
	s->evict = true;
	s->now = 2000000000000LL;
	for (int i = 0; i < nnodes; i++)
	{
		TideNode   *n = &s->nodes[i];
		char	   *nm = tide_alloc(s, 16);

		snprintf(nm, 16, "node-%05d", i);
		bench_gpu_node(n, i, nm, t_a, t_b, res_mem);
	}
	for (int q = 0; q < nqueues + (tree ? 24 : 0); q++)
	{
		TideQueue  *qq = &s->queues[q];
		char	   *nm = tide_alloc(s, 16);
		int			k = q - nqueues;

		qq->has_quota = true;
		qq->reclaimable = true;
		qq->service = TIDE_SVC_TRAINING;
		if (k < 0)
		{
			snprintf(nm, 16, "queue-%02d", q % 100);
			qq->quota[TIDE_RES_GPU] = (int64_t) nnodes * 8000 / nqueues;
			qq->priority = q % 3 == 0 ? 1 : 0;
			qq->placement = strcmp(policy, "frag") == 0 ? TIDE_PLACE_FRAG :
				strcmp(policy, "spread") == 0 ? TIDE_PLACE_SPREAD : TIDE_PLACE_PACK;
			if (mixed && q % 4 == 1)
				qq->preemption_within = TIDE_PREEMPT_LOWER_PRIORITY;
			if (tree)
				qq->parent = nqueues + 4 + (int) ((int64_t) q * 20 / nqueues);
		}
		else
		{
			/* k < 4: an organisation; else department k - 4 of organisation (k - 4) / 5 */
			snprintf(nm, 16, k < 4 ? "org-%d" : "dept-%02d", k < 4 ? k : k - 4);
			qq->quota[TIDE_RES_GPU] = (int64_t) nnodes * 8000 / (k < 4 ? 4 : 20);
			qq->parent = k < 4 ? -1 : nqueues + (k - 4) / 5;
		}
		qq->name = nm;
	}
	if (!tide_snapshot_finish(s, err, sizeof(err)))
	{
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	nlive = 0;
	for (int i = 0; i < nallocs; i++)
	{
		const BusyAlloc *b = &allocs[i];
		const BusyJob *bj = &jobs[b->job];
		TideRunning *a;
		int64_t    *v;

		if (b->gone)
			continue;
		a = &s->running[nlive++];
		v = tide_vec_new(s);
		memcpy(v, b->res, sizeof(int64_t) * BUSY_NRES);
		a->alloc_id = i + 1;
		a->job_id = b->job + 1;
		a->queue = bj->queue;
		a->node = b->node;
		a->idle = bj->idle;
		a->preemptable = !bj->inference;
		a->service = bj->inference ? TIDE_SVC_INFERENCE : TIDE_SVC_TRAINING;
		a->priority = bj->priority;
		a->placed_at = a->started_at = b->placed_at;
		a->end_at = TIDE_TIME_UNKNOWN;
		a->res = v;
		a->gpus = b->gpus;
		a->gpu_milli = b->gpu_milli;
		a->owner = -1;
		tide_charge_owned(s, a->node, a->queue, a->owner, a->idle, v, a->gpus, a->gpu_milli, +1);
	}
	for (int i = 0; i < njobs; i++)
		npend += !jobs[i].running;
	tide_snapshot_alloc_jobs(s, npend, npend);
	roles = s->roles;
	npend = 0;
	for (int i = 0; i < njobs; i++)
	{
		TideJob    *j;
		TideRole   *r0;
		int64_t    *req;

		if (jobs[i].running)
			continue;
		pending_of[npend] = i;
		j = &s->jobs[npend];
		r0 = &roles[npend++];
		req = tide_vec_new(s);
		j->id = i + 1;
		j->queue = jobs[i].queue;
		j->priority = jobs[i].priority;
		j->created_at = jobs[i].created_at;
		j->idle = jobs[i].idle;
		j->preemptable = !jobs[i].inference;
		j->service = jobs[i].inference ? TIDE_SVC_INFERENCE : TIDE_SVC_TRAINING;
		j->gpu_type = -1;
		j->owner = -1;
		j->roles = r0;
		j->nroles = 1;
		r0->name = "main";
		r0->replicas = jobs[i].replicas;
		req[TIDE_RES_CPU] = 4000;
		req[res_mem] = 32LL * 1024 * 1024 * 1024 * 1000;
		req[TIDE_RES_GPU] = jobs[i].gpu;
		r0->request = req;
	}
	return s;
}

/* The adapter's part: placements run, victims are pending again. */
static void
apply(const TideSnapshot *s, const TideResult *r, const int *pending_of)
{
	for (int i = 0; i < r->nevictions; i++)
	{
		int			job = (int) r->evictions[i].job_id - 1;

		for (int k = 0; k < nallocs; k++)
			if (allocs[k].job == job)
				allocs[k].gone = true;
		jobs[job].running = false;
	}
	for (int i = 0; i < r->nplacements; i++)
	{
		const TidePlacement *p = &r->placements[i];
		BusyAlloc  *b = &allocs[nallocs++];

		memset(b, 0, sizeof(*b));
		b->job = pending_of[p->job];
		b->node = p->node;
		for (int k = 0; k < BUSY_NRES && k < s->nres; k++)
			b->res[k] = p->res[k];
		b->gpus = p->gpus;
		b->gpu_milli = p->gpu_milli;
		b->placed_at = s->now - (int64_t) rnd(86400) * 1000000;
		jobs[b->job].running = true;
	}
}

/* This thread's CPU time, ms. */
static double
cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int
main(int argc, char **argv)
{
	int			repeat;
	int			rounds;
	int		   *pending_of;
	TideSnapshot *s = NULL;
	TideResult *r = NULL;
	int			cap = 0;

	njobs = argc > 1 ? atoi(argv[1]) : 10000;
	nnodes = argc > 2 ? atoi(argv[2]) : 1000;
	nqueues = argc > 3 ? atoi(argv[3]) : 10;
	repeat = argc > 4 ? atoi(argv[4]) : 0;
	policy = argc > 5 ? argv[5] : "pack";
	rounds = argc > 6 ? atoi(argv[6]) : 3;
	tree = getenv("TIDE_BENCH_TREE") && strcmp(getenv("TIDE_BENCH_TREE"), "1") == 0;
	mixed = getenv("TIDE_BENCH_MIX") && strcmp(getenv("TIDE_BENCH_MIX"), "1") == 0;
	jobs = calloc(njobs, sizeof(BusyJob));
	pending_of = calloc(njobs + 1, sizeof(int));
	for (int i = 0; i < njobs; i++)
	{
		BusyJob    *j = &jobs[i];
		int			shape = (int) rnd(20);

		j->queue = (int) rnd(nqueues);
		j->priority = (int) rnd(10);
		j->created_at = rnd(1000000);
		j->idle = rnd(20) == 0;
		j->inference = mixed && i % 7 == 0 && !j->idle;
		j->replicas = shape == 17 ? 2 : shape == 18 ? 4 : 1;
		j->gpu = shape == 0 ? 250 : shape < 3 ? 500 : shape < 8 ? 1000 : shape < 12 ? 2000 :
			shape < 15 ? 4000 : shape < 19 ? 8000 : 0;
	}
	for (int round = 0; round <= rounds; round++)
	{
		double		t0;

		if (r)
		{
			/* every placement of the rounds so far may be live */
			cap += r->nplacements;
			allocs = realloc(allocs, sizeof(BusyAlloc) * (cap + 1));
			apply(s, r, pending_of);
		}
		s = build(pending_of);
		t0 = now_ms();
		r = tide_decide(s);
		printf("round %d: running=%d pending=%d decide_ms=%.1f placed=%lld evicted=%lld preemptors=%lld "
			   "dry_runs=%lld node_checks=%lld decisions=%016llx\n",
			   round, s->nrunning, s->njobs, now_ms() - t0,
			   (long long) r->counters.jobs_placed, (long long) r->counters.jobs_evicted,
			   (long long) r->counters.preemptors, (long long) r->counters.dry_runs,
			   (long long) r->counters.node_checks, (unsigned long long) decisions_sum(s, r));
	}
	if (repeat > 0)
	{
		double	   *ms = malloc(sizeof(double) * repeat);
		double	   *cpu = malloc(sizeof(double) * repeat);

		/* a decide charges what it places: each run gets a fresh snapshot */
		for (int i = 0; i < repeat; i++)
		{
			double		t0,
						c0;

			s = build(pending_of);
			t0 = now_ms();
			c0 = cpu_ms();
			r = tide_decide(s);
			cpu[i] = cpu_ms() - c0;
			ms[i] = now_ms() - t0;
		}
		qsort(ms, repeat, sizeof(double), cmp_double);
		qsort(cpu, repeat, sizeof(double), cmp_double);
		printf("busy_repeat: n=%d min_ms=%.3f median_ms=%.3f cpu_min_ms=%.3f cpu_median_ms=%.3f decisions=%016llx\n",
			   repeat, ms[0], ms[repeat / 2], cpu[0], cpu[repeat / 2], (unsigned long long) decisions_sum(s, r));
	}
	return 0;
}
