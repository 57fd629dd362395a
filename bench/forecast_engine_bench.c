/*
 * forecast_engine_bench.c: the engine's forecast alone (tide_forecast,
 * without the load and SQL of tide.forecast()), on the synthetic cluster
 * of the cycle benchmarks.
 *
 *   cc -O2 -Isrc/engine bench/forecast_engine_bench.c src/engine/[a-z]*.c -lm -o /tmp/feb
 *   /tmp/feb JOBS NODES [REPEAT [fast]]
 *
 * Nodes: 8 GPUs in 4 topology domains, two card types, 96 cpu, 1 TiB; ten
 * queues with GPU quotas, frag placement.  Jobs: the shapes of
 * cycle_cluster.psql (fractions, 1/2/4/8 GPUs, gangs of 2 and 4 x 8,
 * CPU-only), a time limit of 30 minutes to a day by id.  One decide fills
 * the cluster (its placements run until their limits), then the forecast
 * of the rest: plain (a full decide with reasons at every end time) and as
 * tide.forecast() runs it, REPEAT times each (default 3), the least CPU
 * time printed, with the decide steps and whether both answered alike; with
 * "fast", the second only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forecast.h"
#include "bench_util.h"

#define MIN_US	(60LL * 1000000LL)

typedef struct Shape
{
	int64_t		gpu;			/* milli */
	int			replicas;
	int			weight;			/* of 20 */
} Shape;

static const Shape shapes[] = {
	{250, 1, 1}, {500, 1, 2}, {1000, 1, 5}, {2000, 1, 4}, {4000, 1, 3},
	{8000, 1, 2}, {8000, 2, 1}, {8000, 4, 1}, {0, 1, 1}
};

/* CPU time of the process in milliseconds: a shared machine's wall time wanders. */
static double
cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Each decide's scratch given back at the next, as in the server. */
static void
bench_free(void *ctx, void *ptr)
{
	(void) ctx;
	free(ptr);
}

/* The cluster, the jobs, one decide, its placements running: ready to forecast. */
static TideSnapshot *
build(int njobs, int nnodes, size_t *mem_used)
{
	TideMem		mem = {bench_alloc, bench_free, mem_used};
	TideSnapshot *s = tide_snapshot_create(&mem);
	int			res_mem = tide_res_intern(s, "memory");
	int			types[2];
	static const int64_t limits[] = {30, 60, 120, 240, 480, 1440};
	TideResult *r;
	char		err[200];
	int			n = 0;

	types[0] = tide_res_intern(s, "NVIDIA-H100");
	types[1] = tide_res_intern(s, "NVIDIA-A100");
	rng = 88172645463325252ULL;
	tide_snapshot_alloc_cluster(s, nnodes, 10, 0);
	s->now = 1000000 * MIN_US;
	for (int i = 0; i < nnodes; i++)
	{
		TideNode   *nd = &s->nodes[i];
		char	   *name = tide_alloc(s, 16);

		snprintf(name, 16, "node-%06d", i);
		nd->name = name;
		nd->ngpus = 8;
		nd->gpu_type = types[i % 4 == 3];
		nd->capacity[TIDE_RES_GPU] = 8000;
		nd->capacity[TIDE_RES_CPU] = 96000;
		nd->capacity[res_mem] = 1024LL * 1024 * 1024 * 1024 * 1000;
		for (int g = 0; g < 8; g++)
			nd->gpu_domain[g] = (int16_t) (g / 2);
	}
	for (int q = 0; q < 10; q++)
	{
		char	   *name = tide_alloc(s, 16);

		snprintf(name, 16, "queue-%d", q);
		s->queues[q].name = name;
		s->queues[q].has_quota = true;
		s->queues[q].quota[TIDE_RES_GPU] = (int64_t) nnodes * 800;
		s->queues[q].priority = q % 3 == 0;
		s->queues[q].placement = TIDE_PLACE_FRAG;
	}
	if (!tide_snapshot_finish(s, err, sizeof(err)))
	{
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	tide_snapshot_alloc_jobs(s, njobs, njobs);
	for (int i = 0; i < njobs; i++)
	{
		TideJob    *j = &s->jobs[i];
		TideRole   *role = &s->roles[i];
		int			pick = (int) rnd(20),
					k = 0;

		while (pick >= shapes[k].weight)
			pick -= shapes[k++].weight;
		j->id = i + 1;
		j->queue = (int) rnd(10);
		j->priority = (int) rnd(10);
		j->created_at = rnd(1000000);
		j->idle = rnd(20) == 0;
		j->time_limit = limits[(i + 1) % 6] * MIN_US;
		j->roles = role;
		j->nroles = 1;
		role->name = "main";
		role->replicas = shapes[k].replicas;
		role->request[TIDE_RES_CPU] = 4000;
		role->request[res_mem] = 32LL * 1024 * 1024 * 1024 * 1000;
		role->request[TIDE_RES_GPU] = shapes[k].gpu;
	}

	/* the cycle: what it placed runs until its limit; the rest is pending */
	r = tide_decide(s);
	s->running = tide_alloc(s, sizeof(TideRunning) * (r->nplacements + 1));
	for (int i = 0; i < r->nplacements; i++)
	{
		const TidePlacement *p = &r->placements[i];
		const TideJob *j = &s->jobs[p->job];
		TideRunning *a = &s->running[s->nrunning++];

		a->alloc_id = i + 1;
		a->job_id = j->id;
		a->queue = j->queue;
		a->node = p->node;
		a->idle = j->idle;
		a->res = p->res;
		a->gpus = p->gpus;
		a->gpu_milli = p->gpu_milli;
		a->started_at = s->now;
		a->end_at = s->now + j->time_limit;
	}
	for (int j = 0; j < s->njobs; j++)
		if (r->outcomes[j].status == TIDE_PENDING)
			s->jobs[n++] = s->jobs[j];
	s->njobs = n;
	return s;
}

int
main(int argc, char **argv)
{
	int			njobs = argc > 1 ? atoi(argv[1]) : 10000;
	int			nnodes = argc > 2 ? atoi(argv[2]) : 1000;
	int			repeat = argc > 3 ? atoi(argv[3]) : 3;
	TideForecast *f[2] = {NULL, NULL};
	double		best[2] = {1e30, 1e30};
	int			pending = 0;
	bool		same = true;
	bool		fast_only = argc > 4 && strcmp(argv[4], "fast") == 0;

	for (int plain = fast_only ? 0 : 1; plain >= 0; plain--)
		for (int i = 0; i < repeat; i++)
		{
			size_t		used = 0;
			TideSnapshot *s = build(njobs, nnodes, &used);
			double		t0;

			pending = s->njobs;
			t0 = cpu_ms();
			f[plain] = tide_forecast(s, 0, plain);
			t0 = cpu_ms() - t0;
			if (t0 < best[plain])
				best[plain] = t0;
		}
	if (fast_only)
	{
		printf("jobs=%d nodes=%d pending=%d forecast_ms=%.1f steps=%d\n",
			   njobs, nnodes, pending, best[0], f[0]->nsteps);
		return 0;
	}
	for (int j = 0; j < f[0]->njobs; j++)
		same &= f[0]->how[j] == f[1]->how[j] && f[0]->start[j] == f[1]->start[j];
	printf("jobs=%d nodes=%d pending=%d plain_ms=%.1f plain_steps=%d forecast_ms=%.1f steps=%d same=%s\n",
		   njobs, nnodes, pending, best[1], f[1]->nsteps, best[0], f[0]->nsteps, same ? "yes" : "NO");
	return same ? 0 : 1;
}
