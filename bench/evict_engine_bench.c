/*
 * evict_engine_bench.c: the eviction pass of the policy engine alone: a
 * full cluster (every GPU held by preemptable training jobs of a
 * reclaimable queue), a backlog of pending training jobs, and a burst of
 * high-priority inference arrivals that must evict to run (R-E2).  The same
 * snapshot is decided with evictions off, then on; the difference is the
 * eviction pass.  With TIDE_BENCH_TREE=1 each of the two queues is the
 * top of a tree of 8 leaves (R-O5, R-E7): the running jobs and the
 * arrivals are spread over the leaves, so that the preemptors' leaves
 * alternate.  The last line is a checksum of the evictions and claims.
 *
 *   cc -O2 -Isrc/engine bench/evict_engine_bench.c src/engine/[a-z]*.c -lm -o /tmp/eeb
 *   /tmp/eeb NODES BACKLOG ARRIVALS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "bench_util.h"

int
main(int argc, char **argv)
{
	int			nnodes = argc > 1 ? atoi(argv[1]) : 1000;
	int			backlog = argc > 2 ? atoi(argv[2]) : 10000;
	int			arrivals = argc > 3 ? atoi(argv[3]) : 20;
	TideMem		mem = {bench_alloc, NULL, NULL};
	TideSnapshot *s = tide_snapshot_create(&mem);
	TideResult *r;
	int			nrun = 0;
	int			njobs = backlog + arrivals;
	int			sizes[4] = {1, 2, 4, 8};
	char		err[200];
	double		t0,
				off_ms,
				on_ms;
	int			(*fill)[8];
	int		   *nfill;
	int			leaves = getenv("TIDE_BENCH_TREE") && strcmp(getenv("TIDE_BENCH_TREE"), "1") == 0 ? 8 : 0;
	uint64_t	sum = 1;

	/* what runs: per node, training jobs of 1/2/4/8 GPUs until it is full */
	fill = malloc(sizeof(*fill) * nnodes);
	nfill = calloc(nnodes, sizeof(int));
	for (int i = 0; i < nnodes; i++)
	{
		int			left = 8;

		while (left > 0)
		{
			int			g = sizes[rnd(4)];

			if (g > left)
				continue;
			fill[i][nfill[i]++] = g;
			left -= g;
			nrun++;
		}
	}
	tide_snapshot_alloc_cluster(s, nnodes, 2 + 2 * leaves, nrun);
	for (int i = 0; i < nnodes; i++)
	{
		TideNode   *n = &s->nodes[i];
		char	   *nm = malloc(16);

		snprintf(nm, 16, "node-%05d", i);
		n->name = nm;
		n->ngpus = 8;
		n->capacity[TIDE_RES_GPU] = 8000;
		n->capacity[TIDE_RES_CPU] = 96000;
		for (int g = 0; g < 8; g++)
			n->gpu_domain[g] = (int16_t) (g / 2);
	}
	s->queues[0].name = "online";
	s->queues[0].priority = 80000;
	s->queues[0].reclaimable = false;
	s->queues[0].service = TIDE_SVC_INFERENCE;
	s->queues[0].has_quota = true;
	s->queues[0].quota[TIDE_RES_GPU] = (int64_t) nnodes * 2000;
	s->queues[1].name = "train";
	s->queues[1].priority = 20000;
	s->queues[1].reclaimable = true;
	s->queues[1].has_quota = true;
	s->queues[1].quota[TIDE_RES_GPU] = (int64_t) nnodes * 8000;
	for (int k = 0; k < 2 * leaves; k++)
	{
		TideQueue  *q = &s->queues[2 + k];
		const TideQueue *top = &s->queues[k / leaves];
		char	   *nm = malloc(16);

		snprintf(nm, 16, "%s-%d", top->name, k % leaves);
		q->name = nm;
		q->parent = k / leaves;
		q->priority = top->priority;
		q->reclaimable = top->reclaimable;
		q->service = top->service;
		q->has_quota = true;
		q->quota[TIDE_RES_GPU] = top->quota[TIDE_RES_GPU] / leaves;
	}
	if (!tide_snapshot_finish(s, err, sizeof(err)))
	{
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	nrun = 0;
	for (int i = 0; i < nnodes; i++)
	{
		int			g0 = 0;

		for (int k = 0; k < nfill[i]; k++)
		{
			TideRunning *a = &s->running[nrun];
			int64_t    *v = tide_vec_new(s);
			int			g = fill[i][k];

			v[TIDE_RES_GPU] = g * 1000;
			v[TIDE_RES_CPU] = 4000;
			a->alloc_id = a->job_id = 1000000 + nrun;
			a->queue = leaves ? 2 + leaves + nrun % leaves : 1;
			a->node = i;
			a->preemptable = true;
			a->service = TIDE_SVC_TRAINING;
			a->priority = (int) rnd(10);
			a->placed_at = a->started_at = rnd(1000000);
			a->end_at = TIDE_TIME_UNKNOWN;
			a->res = v;
			a->gpus = (((uint64_t) 1 << g) - 1) << g0;
			g0 += g;
			tide_charge(s, i, a->queue, false, v, a->gpus, 0, +1);
			nrun++;
		}
	}
	tide_snapshot_alloc_jobs(s, njobs, njobs);
	for (int i = 0; i < njobs; i++)
	{
		TideJob    *j = &s->jobs[i];
		TideRole   *r0 = &s->roles[i];
		bool		inf = i >= backlog;

		j->id = i + 1;
		j->queue = leaves ? 2 + (inf ? 0 : leaves) + i % leaves : inf ? 0 : 1;
		j->service = inf ? TIDE_SVC_INFERENCE : TIDE_SVC_TRAINING;
		j->preemptable = !inf;
		j->priority = (int) rnd(10);
		j->created_at = rnd(1000000);
		j->roles = r0;
		j->nroles = 1;
		r0->name = "main";
		r0->replicas = 1;
		r0->request[TIDE_RES_CPU] = 2000;
		r0->request[TIDE_RES_GPU] = sizes[rnd(4)] * 1000;
	}
	s->now = 2000000;
	s->evict = false;
	t0 = now_ms();
	r = tide_decide(s);
	off_ms = now_ms() - t0;
	printf("nodes=%d running=%d backlog=%d arrivals=%d\n", nnodes, nrun, backlog, arrivals);
	printf("evictions off: decide_ms=%.1f placed=%lld\n", off_ms, (long long) r->counters.jobs_placed);
	s->evict = true;
	t0 = now_ms();
	r = tide_decide(s);
	on_ms = now_ms() - t0;
	printf("evictions on:  decide_ms=%.1f placed=%lld preemptors=%lld evicted=%lld dry_runs=%lld (eviction pass %.1f ms)\n",
		   on_ms, (long long) r->counters.jobs_placed, (long long) r->counters.preemptors,
		   (long long) r->counters.jobs_evicted, (long long) r->counters.dry_runs, on_ms - off_ms);
	for (int i = 0; i < r->nevictions; i++)
	{
		sum = sum * 1000003 + (uint64_t) r->evictions[i].job_id;
		sum = sum * 1000003 + (uint64_t) r->evictions[i].rule * 65536 + (uint64_t) r->evictions[i].preemptor;
	}
	for (int i = 0; i < r->nnew_claims; i++)
		sum = sum * 1000003 + (uint64_t) r->new_claims[i].job_id * 65536 + (uint64_t) r->new_claims[i].node +
			r->new_claims[i].gpus;
	printf("decisions=%016llx\n", (unsigned long long) sum);
	return 0;
}
