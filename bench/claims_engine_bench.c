/*
 * claims_engine_bench.c: the policy engine alone with many claim owners
 * (R-E6): jobs whose evictions of an earlier cycle are not confirmed yet,
 * so that resources stay held for them while their victims stop.  Every
 * node is full of preemptable training jobs of reclaimable queues; the
 * backlog waits in those queues (above their quota, so it evicts no one);
 * OWNERS jobs of an inference queue each hold one claim on a node whose
 * victims still run.  The same snapshot is decided without the claims,
 * then with them; the difference is what the claim owners cost.
 *
 *   cc -O2 -Isrc/engine bench/claims_engine_bench.c src/engine/[a-z]*.c -lm -o /tmp/clb
 *   /tmp/clb BACKLOG NODES OWNERS [QUEUES [REPEAT [LAPSED [BASE]]]]
 *
 * LAPSED: the share (0..100, percent) of the claims whose victims have
 * stopped (not waiting): their owners lapse when they still do not fit.
 * BASE = 1: decide first without the claims (the owners evict again:
 * slow with thousands of owners, the eviction pass's cost, not theirs).
 * REPEAT > 0 decides the snapshot with claims that many times more and
 * prints the minimum and median.  The counters line must not change when
 * only the speed of the engine does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "bench_util.h"

/* One line of the outcome counters, and a checksum of the reasons' texts. */
static void
print_counters(const char *what, const TideSnapshot *s, const TideResult *r, double ms)
{
	uint64_t	sum = 14695981039346656037ULL;
	int			waiting = 0,
				lapsed = 0;
	char		buf[2048];

	for (int j = 0; j < r->njobs; j++)
	{
		size_t		n = tide_reason_text(s, r, j, buf, sizeof(buf));

		for (size_t i = 0; i < n; i++)
			sum = (sum ^ (unsigned char) buf[i]) * 1099511628211ULL;
		sum = (sum ^ (uint64_t) r->outcomes[j].status) * 1099511628211ULL;
		waiting += r->outcomes[j].evict_state == TIDE_EV_WAITING;
		lapsed += r->outcomes[j].evict_state == TIDE_EV_LAPSED;
	}
	printf("%s: decide_ms=%.1f placed=%lld pending=%lld unschedulable=%lld placements=%lld "
		   "shape_cache_hits=%lld node_checks=%lld evicted=%lld new_claims=%d waiting=%d lapsed=%d "
		   "reasons=%016llx\n",
		   what, ms, (long long) r->counters.jobs_placed, (long long) r->counters.jobs_pending,
		   (long long) r->counters.jobs_unschedulable, (long long) r->counters.placements,
		   (long long) r->counters.shape_cache_hits, (long long) r->counters.node_checks,
		   (long long) r->counters.jobs_evicted, r->nnew_claims, waiting, lapsed,
		   (unsigned long long) sum);
}

/*
 * What runs: every node full of training jobs of 1, 2, 4 or 8 GPUs, in
 * the training queues 1..nqueues, preemptable.  Returns their number.
 */
static int
run_training(TideSnapshot *s, int nqueues)
{
	int			sizes[4] = {1, 2, 4, 8};
	int			nrun = 0;

	for (int i = 0; i < s->nnodes; i++)
		for (int g0 = 0, g = sizes[rnd(4)]; g0 < 8; g = sizes[rnd(4)])
		{
			TideRunning *a = &s->running[nrun];
			int64_t    *v;

			if (g0 + g > 8)
				continue;
			v = tide_vec_new(s);
			v[TIDE_RES_GPU] = g * 1000;
			v[TIDE_RES_CPU] = 4000;
			a->alloc_id = a->job_id = 10000000 + nrun;
			a->queue = 1 + (int) rnd(nqueues);
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
	s->nrunning = nrun;
	return nrun;
}

int
main(int argc, char **argv)
{
	int			backlog = argc > 1 ? atoi(argv[1]) : 100000;
	int			nnodes = argc > 2 ? atoi(argv[2]) : 10000;
	int			owners = argc > 3 ? atoi(argv[3]) : 1000;
	int			nqueues = argc > 4 ? atoi(argv[4]) : 10;
	int			repeat = argc > 5 ? atoi(argv[5]) : 0;
	int			lapsed = argc > 6 ? atoi(argv[6]) : 0;
	bool		base = argc > 7 && atoi(argv[7]) == 1;
	TideMem		mem = {bench_alloc, NULL, NULL};
	TideSnapshot *s = tide_snapshot_create(&mem);
	TideResult *r;
	int			njobs = backlog + owners;
	int			sizes[4] = {1, 2, 4, 8};
	int			nrun = 0;
	int			res_mem;
	char		err[200];
	double		t0;
	TideClaim  *claims;
	int			nclaims;

	res_mem = tide_res_intern(s, "memory");
	/* room for 8 allocations a node, the most it can run */
	tide_snapshot_alloc_cluster(s, nnodes, nqueues + 1, nnodes * 8);
	for (int i = 0; i < nnodes; i++)
	{
		TideNode   *n = &s->nodes[i];
		char	   *nm = malloc(16);

		snprintf(nm, 16, "node-%05d", i);
		n->name = nm;
		n->ngpus = 8;
		n->capacity[TIDE_RES_GPU] = 8000;
		n->capacity[TIDE_RES_CPU] = 96000;
		n->capacity[res_mem] = 1024LL * 1024 * 1024 * 1024 * 1000;
		for (int g = 0; g < 8; g++)
			n->gpu_domain[g] = (int16_t) (g / 2);
	}
	/* queue 0: inference, under its quota; the others: training, above it */
	s->queues[0].name = "online";
	s->queues[0].priority = 80000;
	s->queues[0].service = TIDE_SVC_INFERENCE;
	s->queues[0].has_quota = true;
	s->queues[0].quota[TIDE_RES_GPU] = (int64_t) nnodes * 4000;
	for (int q = 1; q <= nqueues; q++)
	{
		char	   *nm = malloc(16);

		snprintf(nm, 16, "train-%02d", q % 100);
		s->queues[q].name = nm;
		s->queues[q].priority = 20000;
		s->queues[q].reclaimable = true;
		s->queues[q].has_quota = true;
		s->queues[q].quota[TIDE_RES_GPU] = (int64_t) nnodes * 2000 / nqueues;
	}
	if (!tide_snapshot_finish(s, err, sizeof(err)))
	{
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	nrun = run_training(s, nqueues);
	tide_snapshot_alloc_jobs(s, njobs, njobs);
	for (int i = 0; i < njobs; i++)
	{
		TideJob    *j = &s->jobs[i];
		TideRole   *r0 = &s->roles[i];
		bool		own = i >= backlog;
		int			shape = (int) rnd(20);

		j->id = i + 1;
		j->queue = own ? 0 : 1 + (int) rnd(nqueues);
		j->service = own ? TIDE_SVC_INFERENCE : TIDE_SVC_TRAINING;
		j->preemptable = !own;
		j->priority = (int) rnd(10);
		j->created_at = rnd(1000000);
		j->roles = r0;
		j->nroles = 1;
		r0->name = "main";
		r0->replicas = 1;
		r0->request[TIDE_RES_CPU] = 4000;
		r0->request[res_mem] = 32LL * 1024 * 1024 * 1024 * 1000;
		r0->request[TIDE_RES_GPU] = shape < 3 ? 500 : sizes[shape % 4] * 1000;
		if (!own && shape == 19)
			r0->request[TIDE_RES_GPU] = 0;
	}

	/*
	 * One claim per owner on the GPUs of the jobs evicted for it: its
	 * node's first GPUs, still used by victims that are stopping.  The
	 * claims hold GPUs only: a decide charges the free part of a claim to
	 * its node and a kept snapshot keeps that charge, so a claim of free
	 * CPU would shrink the nodes from one repeat to the next.
	 */
	claims = calloc(owners + 1, sizeof(TideClaim));
	nclaims = 0;
	for (int k = 0; k < owners; k++)
	{
		TideClaim  *cl = &claims[nclaims++];
		const TideJob *j = &s->jobs[backlog + k];
		int64_t		g = j->roles[0].request[TIDE_RES_GPU];
		int64_t    *v;

		cl->job_id = j->id;
		cl->node = (int) (((int64_t) k * 7919) % nnodes);
		v = tide_vec_new(s);
		v[TIDE_RES_GPU] = g;
		cl->res = v;
		cl->gpus = g >= 1000 ? ((uint64_t) 1 << (g / 1000)) - 1 : 1;
		cl->gpu_milli = g < 1000 ? (int32_t) g : 0;
		cl->waiting = (int) rnd(100) >= lapsed;
	}

	s->now = 2000000;
	s->evict = true;
	printf("backlog=%d nodes=%d owners=%d queues=%d running=%d lapsed_pct=%d\n",
		   backlog, nnodes, owners, nqueues, nrun, lapsed);
	if (base)
	{
		s->nclaims = 0;
		s->claims = NULL;
		t0 = now_ms();
		r = tide_decide(s);
		print_counters("no claims", s, r, now_ms() - t0);
	}
	s->nclaims = nclaims;
	s->claims = claims;
	t0 = now_ms();
	r = tide_decide(s);
	print_counters("claims", s, r, now_ms() - t0);
	if (repeat > 0)
	{
		double	   *ms = malloc(sizeof(double) * repeat);

		for (int i = 0; i < repeat; i++)
		{
			t0 = now_ms();
			r = tide_decide(s);
			ms[i] = now_ms() - t0;
		}
		qsort(ms, repeat, sizeof(double), cmp_double);
		printf("claims_repeat: n=%d min_ms=%.1f median_ms=%.1f\n", repeat, ms[0], ms[repeat / 2]);
	}
	return 0;
}
