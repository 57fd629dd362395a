/*
 * cycle_engine_bench.c: the policy engine alone on synthetic clusters
 * (the "decide" part of tide.run_cycle(), without SQL).
 *
 *   cc -O2 -Isrc/engine bench/cycle_engine_bench.c src/engine/[a-z]*.c -lm -o /tmp/ceb
 *   /tmp/ceb JOBS NODES [QUEUES [REPEAT [POLICY]]]
 *
 * Nodes: 8 GPUs in 4 topology domains, two card types, 96 cpu, 1 TiB.
 * Jobs: mixed shapes (fractions, 1/2/4/8 GPUs, gangs of 2 and 4 x 8 GPUs,
 * CPU-only), priorities 0..9, in QUEUES queues with GPU quotas.  Prints the
 * snapshot build time, the decide time, and the counters.  REPEAT > 0
 * re-runs the steady-state decide that many times more and prints its
 * minimum and median with microsecond resolution, wall and CPU time:
 * single runs on a shared machine are too noisy to compare two builds of
 * the engine.  decide_faults
 * and decide_mb: the first decide's minor page faults (first touches of
 * fresh memory) and the bytes it asked the allocator for.  POLICY:
 * every queue's placement, pack (default), spread or frag.  With
 * TIDE_BENCH_TREE=1 in the environment the QUEUES queues are the leaves of
 * a 3-level tree (R-O5): 4 organisations of 5 departments each, quotas
 * carved (a quarter and a twentieth of the cluster).  With
 * TIDE_BENCH_OWNERS=N (N > 0) the jobs belong to N owners (job id modulo
 * N, as cycle_scale.sql's owner_fair_share feature) and every queue has
 * owner_fair (R-O7), to show what the owner order costs the decide.
 * With TIDE_BENCH_RUNNING=K (K > 0) every node runs K allocations of one
 * GPU before the first decide (queue and owner by allocation number, as
 * the jobs'), charged as the load charges them: what the owners' usage
 * (R-O7) and the other passes over the live allocations cost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "engine.h"
#include "bench_util.h"

/* Minor page faults so far: what first touches of fresh memory cost. */
static long
minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* CPU time of the process so far, ms: on a shared machine, less noisy than wall time. */
static double
cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * A digest of r's decisions: the walk order, each job's status and class,
 * and every placement's job, node and GPUs.  Equal digests before and
 * after a speed change say it decided the same, in the same order.
 */
static unsigned long long
decisions_digest(const TideResult *r)
{
	unsigned long long h = 1469598103934665603ULL;

#define MIX(v) (h = (h ^ (unsigned long long) (v)) * 1099511628211ULL)
	for (int i = 0; i < r->nwalk; i++)
		MIX(r->walk[i]);
	for (int j = 0; j < r->njobs; j++)
	{
		MIX(r->outcomes[j].status);
		MIX(r->outcomes[j].klass);
	}
	for (int k = 0; k < r->nplacements; k++)
	{
		MIX(r->placements[k].job);
		MIX(r->placements[k].node);
		MIX(r->placements[k].gpus);
	}
#undef MIX
	return h;
}

int
main(int argc, char **argv)
{
	int			njobs = argc > 1 ? atoi(argv[1]) : 10000;
	int			nnodes = argc > 2 ? atoi(argv[2]) : 1000;
	int			nqueues = argc > 3 ? atoi(argv[3]) : 10;
	int			repeat = argc > 4 ? atoi(argv[4]) : 0;
	const char *policy = argc > 5 ? argv[5] : "pack";
	size_t		mem_used = 0;
	size_t		mem_decide;
	long		f0;
	TideMem		mem = {bench_alloc, NULL, &mem_used};
	TideSnapshot *s;
	TideResult *r;
	double		t0,
				t1,
				t2;
	int			t_a,
				t_b,
				res_mem;
	int			nroles = 0;
	char		err[200];
	char	  **names;
	bool		tree;
	int			nowners;
	int			nrun;
	unsigned long long first_digest;

	t0 = now_ms();
	s = tide_snapshot_create(&mem);
	res_mem = tide_res_intern(s, "memory");
	t_a = tide_res_intern(s, "NVIDIA-H100");
	t_b = tide_res_intern(s, "NVIDIA-A100");
	tree = getenv("TIDE_BENCH_TREE") && strcmp(getenv("TIDE_BENCH_TREE"), "1") == 0;
	nowners = getenv("TIDE_BENCH_OWNERS") ? atoi(getenv("TIDE_BENCH_OWNERS")) : 0;
	nrun = getenv("TIDE_BENCH_RUNNING") ? atoi(getenv("TIDE_BENCH_RUNNING")) : 0;
	if (nrun < 0 || nrun > 8)
		nrun = 0;
	tide_snapshot_alloc_cluster(s, nnodes, nqueues + (tree ? 24 : 0), nrun * nnodes);
	names = malloc(sizeof(char *) * nnodes);
	for (int i = 0; i < nnodes; i++)
	{
		TideNode   *n = &s->nodes[i];

		names[i] = malloc(16);
		snprintf(names[i], 16, "node-%05d", i);
		bench_gpu_node(n, i, names[i], t_a, t_b, res_mem);
	}
	for (int q = 0; q < nqueues; q++)
	{
		TideQueue  *qq = &s->queues[q];
		char	   *nm = malloc(16);

		snprintf(nm, 16, "queue-%02d", q % 100);
		qq->name = nm;
		qq->has_quota = true;
		qq->quota[TIDE_RES_GPU] = (int64_t) nnodes * 8000 / nqueues;
		qq->priority = q % 3 == 0 ? 1 : 0;
		qq->placement = strcmp(policy, "frag") == 0 ? TIDE_PLACE_FRAG :
			strcmp(policy, "spread") == 0 ? TIDE_PLACE_SPREAD : TIDE_PLACE_PACK;
		qq->owner_fair = nowners > 0;
	}
	for (int k = 0; tree && k < 24; k++)
	{
		TideQueue  *qq = &s->queues[nqueues + k];
		char	   *nm = malloc(16);

		/* k < 4: an organisation; else department k - 4 of organisation (k - 4) / 5 */
		snprintf(nm, 16, k < 4 ? "org-%d" : "dept-%02d", k < 4 ? k : k - 4);
		qq->name = nm;
		qq->has_quota = true;
		qq->quota[TIDE_RES_GPU] = (int64_t) nnodes * 8000 / (k < 4 ? 4 : 20);
		qq->parent = k < 4 ? -1 : nqueues + (k - 4) / 5;
	}
	for (int q = 0; tree && q < nqueues; q++)
		s->queues[q].parent = nqueues + 4 + (int) ((int64_t) q * 20 / nqueues);
	if (!tide_snapshot_finish(s, err, sizeof(err)))
	{
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	for (int i = 0; i < nrun * nnodes; i++)
	{
		TideRunning *a = &s->running[i];
		int64_t    *res = tide_vec_new(s);

		res[TIDE_RES_GPU] = 1000;
		res[TIDE_RES_CPU] = 4000;
		res[res_mem] = 32LL * 1024 * 1024 * 1024 * 1000;
		a->alloc_id = i + 1;
		a->job_id = njobs + i + 1;
		a->node = i % nnodes;
		a->queue = i % nqueues;
		a->owner = nowners > 0 ? i % nowners : -1;
		a->priority = 0;
		a->started_at = 1;
		a->end_at = TIDE_TIME_UNKNOWN;
		a->placed_at = 1;
		a->res = res;
		a->gpus = 1ULL << (i / nnodes);
		tide_charge_owned(s, a->node, a->queue, a->owner, false, res, a->gpus, 0, +1);
	}
	nroles = njobs;
	tide_snapshot_alloc_jobs(s, njobs, nroles);
	for (int i = 0; i < njobs; i++)
	{
		TideJob    *j = &s->jobs[i];
		TideRole   *r0 = &s->roles[i];
		int			shape = (int) rnd(20);

		j->id = i + 1;
		j->queue = (int) rnd(nqueues);
		j->priority = (int) rnd(10);
		j->created_at = rnd(1000000);
		j->idle = rnd(20) == 0;
		if (nowners > 0)
			j->owner = (int32_t) (j->id % nowners);
		j->roles = r0;
		j->nroles = 1;
		r0->name = "main";
		r0->replicas = 1;
		r0->request[TIDE_RES_CPU] = 4000;
		r0->request[res_mem] = 32LL * 1024 * 1024 * 1024 * 1000;
		if (shape < 3)
			r0->request[TIDE_RES_GPU] = shape == 0 ? 250 : 500;
		else if (shape < 8)
			r0->request[TIDE_RES_GPU] = 1000;
		else if (shape < 12)
			r0->request[TIDE_RES_GPU] = 2000;
		else if (shape < 15)
			r0->request[TIDE_RES_GPU] = 4000;
		else if (shape < 17)
			r0->request[TIDE_RES_GPU] = 8000;
		else if (shape < 19)
		{
			r0->request[TIDE_RES_GPU] = 8000;
			r0->replicas = shape == 17 ? 2 : 4;
		}
		else
			r0->request[TIDE_RES_GPU] = 0;
	}
	mem_decide = mem_used;
	f0 = minor_faults();
	t1 = now_ms();
	r = tide_decide(s);
	t2 = now_ms();
	printf("jobs=%d nodes=%d queues=%d build_ms=%.1f decide_ms=%.1f decide_faults=%ld decide_mb=%.1f "
		   "placed=%lld pending=%lld unschedulable=%lld "
		   "placements=%lld shape_cache_hits=%lld node_checks=%lld mem_mb=%.1f\n",
		   njobs, nnodes, nqueues, t1 - t0, t2 - t1, minor_faults() - f0,
		   (mem_used - mem_decide) / 1048576.0,
		   (long long) r->counters.jobs_placed, (long long) r->counters.jobs_pending,
		   (long long) r->counters.jobs_unschedulable, (long long) r->counters.placements,
		   (long long) r->counters.shape_cache_hits, (long long) r->counters.node_checks,
		   mem_used / 1048576.0);
	first_digest = decisions_digest(r);
	/* steady state: the same pending jobs again, nothing fits any more */
	t1 = now_ms();
	r = tide_decide(s);
	t2 = now_ms();
	printf("steady: decide_ms=%.1f placed=%lld node_checks=%lld\n", t2 - t1,
		   (long long) r->counters.jobs_placed, (long long) r->counters.node_checks);
	printf("digest: first=%016llx steady=%016llx\n", first_digest, decisions_digest(r));
	if (repeat > 0)
	{
		double	   *ms = malloc(sizeof(double) * repeat);
		double	   *cpu = malloc(sizeof(double) * repeat);

		for (int i = 0; i < repeat; i++)
		{
			double		c1 = cpu_ms();

			t1 = now_ms();
			r = tide_decide(s);
			t2 = now_ms();
			cpu[i] = cpu_ms() - c1;
			ms[i] = t2 - t1;
		}
		qsort(ms, repeat, sizeof(double), cmp_double);
		qsort(cpu, repeat, sizeof(double), cmp_double);
		printf("steady_repeat: n=%d min_ms=%.3f median_ms=%.3f min_cpu_ms=%.3f median_cpu_ms=%.3f\n",
			   repeat, ms[0], ms[repeat / 2], cpu[0], cpu[repeat / 2]);
	}
	return 0;
}
