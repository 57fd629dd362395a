/*
 * philly.c: replay of the Microsoft Philly trace (as processed for Pollux,
 * timestamp,duration,num_gpus,gpu_time,cluster) in simulated time through
 * the pg_tide engine.
 *
 * The cluster: M nodes of N whole GPUs, one resource group, one queue.  A
 * job of g GPUs is one replica of g GPUs when g <= N, else a gang (R-L3) of
 * r replicas of g/r GPUs, r the smallest divisor of g with g/r <= N.  A job
 * bigger than the cluster is unschedulable (reported on stderr, counted).
 *
 * Event-driven: at each instant where jobs arrive or end, the ended jobs
 * are released (tide_charge -1), the arrivals join the pending queue, and
 * the pending jobs are decided in arrival order (R-O1) by one of three
 * disciplines (--queue): backfill (default; a job that does not fit is
 * skipped, R-L1: one tide_decide() over the pending jobs), fifo (strict:
 * the oldest waiting job alone, again while it starts; nobody passes it)
 * and easy (the oldest waiting job reserves, R-L2, and the others
 * backfill only where they end before its expected start: every job
 * declares time_limit = duration x --limit-factor, and the running
 * allocations carry their expected ends).  Only a prefix of each job size's pending list is
 * passed: the k-th pending job of g GPUs can only be placed if the k-1
 * before it were (the engine's shape rule: nothing is released inside a
 * decide, so a size that failed fails again), so at most free/g of them
 * matter.  This keeps each decide small without changing any decision.
 *
 * --half-life keeps the queue's usage averaged over that half-life (R-O6,
 * the engine's tide_fair_decay) exactly: usage is constant between
 * events, so each event decays the average over the time since the last
 * one before it releases anything.  With one queue it orders nothing;
 * the summary prints the average at the end.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "philly.h"

static int
cmp_int(const void *a, const void *b)
{
	return *(const int *) a - *(const int *) b;
}

/* Queueing disciplines (--queue). */
#define Q_FIFO		0			/* strict: nothing passes the oldest waiting job */
#define Q_BACKFILL	1			/* a job that does not fit is skipped (R-L1) */
#define Q_EASY		2			/* backfill, the oldest waiting job reserves (R-L2) */
static const char *const queue_names[] = {"fifo", "backfill", "easy"};

static int64_t
tide_sat_add_sim(int64_t a, int64_t b)
{
	return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* Start the placed jobs of a decide; count the unschedulable ones. */
static void
take_outcomes(const TideResult *r, TideSnapshot *s, const int *cand, int ncand, PJob *jobs,
			  PPlace **pool, int *npool, int *poolcap, Heap *heap, int64_t *free_gpus,
			  int64_t *unschedulable, const char *jobs_path, int64_t t, PhQueues *fq)
{
	for (int k = 0; k < ncand; k++)
	{
		const TideOutcome *o = &r->outcomes[k];
		PJob	   *jb = &jobs[cand[k]];

		if (o->status == TIDE_PLACED)
		{
			if (*npool + o->nplacements > *poolcap)
			{
				*poolcap = (*poolcap + o->nplacements) * 2;
				*pool = sim_realloc(*pool, sizeof(PPlace) * *poolcap);
			}
			jb->pl_first = *npool;
			jb->npl = o->nplacements;
			for (int p = 0; p < o->nplacements; p++)
			{
				(*pool)[*npool].node = r->placements[o->first_placement + p].node;
				(*pool)[*npool].gpus = r->placements[o->first_placement + p].gpus;
				(*npool)++;
			}
			jb->state = 1;
			jb->start = t;
			if (fq)
				phq_add(fq, jb->queue, jb->gpus, -jb->gpus);
			*free_gpus -= jb->gpus;
			ph_heap_push(heap, t + jb->duration, cand[k]);
		}
		else if (o->status == TIDE_UNSCHEDULABLE)
		{
			char		why[512];

			tide_reason_text(s, r, k, why, sizeof(why));
			jb->state = 3;
			(*unschedulable)++;
			if (fq)
				phq_add(fq, jb->queue, 0, -jb->gpus);
			fprintf(stderr, "%s: %s:%d: job of %d GPUs is unschedulable: %s\n",
					sim_progname, jobs_path, jb->line, jb->gpus, why);
		}
	}
}

/* Drop started and unschedulable jobs from the scanned part of each queue, keeping order. */
static void
drop_taken(PQueue *queues, int nqueues, const PJob *jobs)
{
	for (int q = 0; q < nqueues; q++)
	{
		PQueue	   *pq = &queues[q];
		int			w = pq->head + pq->taken;

		for (int k = pq->head + pq->taken - 1; k >= pq->head; k--)
			if (jobs[pq->job[k]].state == 0)
				pq->job[--w] = pq->job[k];
		pq->head = w;
		pq->taken = 0;
	}
}

int
philly_main(int argc, char **argv)
{
	const char *jobs_path = NULL;
	const char *cluster = NULL;
	int			per_node = 0,
				nnodes = 0;
	int64_t		limit = 0;
	int			policy = TIDE_PLACE_FRAG;
	int			queueing = Q_BACKFILL;
	double		limit_factor = 1.0;
	int64_t		half_life = -1;	/* seconds; -1: not asked */
	const char *waits_path = NULL;
	const char *queues_path = NULL;
	const char *fair_path = NULL;
	bool		forecast = false;
	double		forecast_days = 0,
				forecast_from = 0;
	const char *forecasts_path = NULL;
	PhForecast *pf = NULL;
	PhQueues   *fq = NULL;
	bool		verbose = false;
	PJob	   *jobs;
	int			njobs;
	TideSnapshot *s;
	TideMem		mem = sim_mem();
	char		err[256];
	PQueue	   *queues = NULL;
	int			nqueues = 0;
	int		   *qof;			/* queue of each job */
	PPlace	   *pool = NULL;
	int			npool = 0,
				poolcap = 0;
	Heap		heap = {0};
	int			cand_cap = 1;
	int		   *cand;
	int64_t		total_gpus,
				free_gpus;
	int			ai = 0;
	int64_t		unschedulable = 0,
				done = 0,
				decides = 0;
	int64_t		now = 0,
				last_end = 0;
	int64_t	   *relvec;
	TideRunning *runv;
	int			nrun = 0;
	int64_t   **replica_vec;
	double		t_start = sim_now();

	for (int i = 1; i < argc; i++)
	{
		const char *v;

		if (sim_opt(argc, argv, &i, "--jobs", &v))
			jobs_path = v;
		else if (sim_opt(argc, argv, &i, "--gpus-per-node", &v))
			per_node = (int) sim_parse_int("--gpus-per-node", v, 1, TIDE_MAX_GPUS);
		else if (sim_opt(argc, argv, &i, "--nodes", &v))
			nnodes = (int) sim_parse_int("--nodes", v, 1, 1000000);
		else if (sim_opt(argc, argv, &i, "--policy", &v))
			policy = sim_parse_policy(v, false);
		else if (sim_opt(argc, argv, &i, "--queue", &v))
		{
			for (queueing = 0; queueing < 3; queueing++)
				if (strcmp(v, queue_names[queueing]) == 0)
					break;
			if (queueing == 3)
				sim_die(SIM_EXIT_USAGE, "option --queue: unknown queueing \"%s\" "
						"(known: fifo, backfill, easy)", v);
		}
		else if (sim_opt(argc, argv, &i, "--waits", &v))
			waits_path = v;
		else if (sim_opt(argc, argv, &i, "--limit-factor", &v))
			limit_factor = sim_parse_double("--limit-factor", v, 1.0, 1000.0);
		else if (sim_opt(argc, argv, &i, "--cluster", &v))
			cluster = v;
		else if (sim_opt(argc, argv, &i, "--limit", &v))
			limit = sim_parse_int("--limit", v, 1, INT32_MAX);
		else if (sim_opt(argc, argv, &i, "--half-life", &v))
			half_life = sim_parse_int("--half-life", v, 0, 86400LL * 365);
		else if (sim_opt(argc, argv, &i, "--queues", &v))
			queues_path = v;
		else if (sim_opt(argc, argv, &i, "--fair", &v))
			fair_path = v;
		else if (strcmp(argv[i], "--forecast") == 0)
			forecast = true;
		else if (sim_opt(argc, argv, &i, "--forecast-from", &v))
			forecast_from = sim_parse_double("--forecast-from", v, 0, 1e6);
		else if (sim_opt(argc, argv, &i, "--forecast-days", &v))
			forecast_days = sim_parse_double("--forecast-days", v, 0, 1e6);
		else if (sim_opt(argc, argv, &i, "--forecasts", &v))
			forecasts_path = v;
		else if (strcmp(argv[i], "--verbose") == 0)
			verbose = true;
		else
			sim_die(SIM_EXIT_USAGE, "philly: unknown option \"%s\" (see --help)", argv[i]);
	}
	if (!jobs_path)
		sim_die(SIM_EXIT_USAGE, "philly: --jobs FILE is required");
	if (!per_node)
		sim_die(SIM_EXIT_USAGE, "philly: --gpus-per-node N is required");
	if (!nnodes)
		sim_die(SIM_EXIT_USAGE, "philly: --nodes M is required");
	if (fair_path && !queues_path)
		sim_die(SIM_EXIT_USAGE, "philly: --fair FILE needs --queues FILE");
	if ((forecast_days > 0 || forecast_from > 0 || forecasts_path) && !forecast)
		sim_die(SIM_EXIT_USAGE, "philly: --forecast-from, --forecast-days and --forecasts need --forecast");
	if (forecast && queueing != Q_BACKFILL)
		sim_die(SIM_EXIT_USAGE, "philly: --forecast needs --queue backfill");

	if (queues_path)
		fq = phq_read(queues_path);
	jobs = ph_read_jobs(jobs_path, cluster, limit, fq, &njobs);
	if (njobs == 0)
		sim_die(SIM_EXIT_DATA, "%s: no jobs%s%s", jobs_path,
				cluster ? " in cluster " : "", cluster ? cluster : "");
	total_gpus = (int64_t) per_node * nnodes;
	free_gpus = total_gpus;
	if (forecast)
		pf = phf_new(njobs, limit_factor, (int64_t) (forecast_from * 86400e6),
					 forecast_days > 0 ? (int64_t) ((forecast_from + forecast_days) * 86400e6) : INT64_MAX);

	/* the cluster */
	s = tide_snapshot_create(&mem);
	ph_fill_cluster(s, nnodes, per_node, fq, policy);
	s->half_life = half_life > 0 ? half_life * 1000000 : 0;	/* R-O6 */
	if (!tide_snapshot_finish(s, err, sizeof(err)))
		sim_die(SIM_EXIT_DATA, "%s", err);
	relvec = tide_vec_new(s);

	/* job shapes, per (queue, size) waiting lines */
	qof = sim_alloc(sizeof(int) * njobs);
	for (int j = 0; j < njobs; j++)
	{
		PJob	   *jb = &jobs[j];
		int			q;

		if (jb->gpus > total_gpus)
		{
			jb->state = 3;
			unschedulable++;
			fprintf(stderr, "%s: %s:%d: job of %d GPUs is unschedulable: the cluster has "
					"%lld GPUs\n", sim_progname, jobs_path, jb->line, jb->gpus,
					(long long) total_gpus);
			qof[j] = -1;
			continue;
		}
		jb->replicas = 1;
		while (jb->gpus / jb->replicas > per_node || jb->gpus % jb->replicas != 0)
			jb->replicas++;
		jb->per_replica = jb->gpus / jb->replicas;
		for (q = 0; q < nqueues; q++)
			if (queues[q].gpus == jb->gpus && queues[q].leaf == jb->queue)
				break;
		if (q == nqueues)
		{
			queues = sim_realloc(queues, sizeof(PQueue) * (nqueues + 1));
			memset(&queues[q], 0, sizeof(PQueue));
			queues[q].leaf = jb->queue;
			queues[q].gpus = jb->gpus;
			nqueues++;
			cand_cap += (int) (total_gpus / jb->gpus) + 1;
		}
		qof[j] = q;
	}
	cand_cap = 2 * cand_cap + 1;	/* easy: two prefixes per size and the head */
	cand = sim_alloc(sizeof(int) * cand_cap);
	/* pending job arrays sized once; s->njobs is set per decide */
	tide_snapshot_alloc_jobs(s, cand_cap, cand_cap);
	runv = sim_alloc(sizeof(TideRunning) * (total_gpus + 1));
	replica_vec = sim_alloc(sizeof(int64_t *) * (per_node + 1));
	for (int g = 1; g <= per_node; g++)
	{
		replica_vec[g] = tide_vec_new(s);
		replica_vec[g][TIDE_RES_GPU] = (int64_t) g * TIDE_MILLI;
	}

	while (ai < njobs || heap.n > 0)
	{
		int64_t		t = INT64_MAX;
		int			ncand = 0;
		TideResult *r;

		while (ai < njobs && jobs[ai].state == 3)
			ai++;
		if (ai < njobs)
			t = jobs[ai].arrival;
		if (heap.n > 0 && heap.a[0].end < t)
			t = heap.a[0].end;
		if (t == INT64_MAX)
			break;
		now = t;
		if (fq)
			phq_advance(fq, t);	/* the interval up to t, before anything changes */
		/* R-O6: the interval up to t is weighed with the usage it had */
		s->now = t;
		tide_fair_decay(s);
		while (heap.n > 0 && heap.a[0].end == t)
		{
			HeapItem	it = ph_heap_pop(&heap);
			PJob	   *jb = &jobs[it.job];

			relvec[TIDE_RES_GPU] = (int64_t) jb->per_replica * TIDE_MILLI;
			for (int k = 0; k < jb->npl; k++)
				tide_charge(s, pool[jb->pl_first + k].node, jb->queue, false, relvec,
							pool[jb->pl_first + k].gpus, 0, -1);
			free_gpus += jb->gpus;
			if (fq)
				phq_add(fq, jb->queue, -jb->gpus, 0);
			jb->state = 2;
			done++;
			if (t > last_end)
				last_end = t;
		}
		while (ai < njobs && jobs[ai].arrival == t)
		{
			if (jobs[ai].state != 3)
			{
				PQueue	   *q = &queues[qof[ai]];

				if (q->tail == q->cap)
				{
					/* compact, then grow */
					memmove(q->job, q->job + q->head, sizeof(int) * (q->tail - q->head));
					q->tail -= q->head;
					q->head = 0;
					if (q->tail == q->cap)
					{
						q->cap = q->cap ? q->cap * 2 : 64;
						q->job = sim_realloc(q->job, sizeof(int) * q->cap);
					}
				}
				q->job[q->tail++] = ai;
				if (fq)
					phq_add(fq, jobs[ai].queue, 0, jobs[ai].gpus);
			}
			ai++;
		}

		s->now = t;
		if (pf)
			phf_step(pf, s, nnodes, per_node, fq, policy, jobs, &heap, pool, queues, nqueues, t);
		if (queueing == Q_EASY)
		{
			/* running allocations with their expected ends, for the shadow time */
			nrun = 0;
			for (int h = 0; h < heap.n; h++)
			{
				const PJob *jb = &jobs[heap.a[h].job];

				for (int k = 0; k < jb->npl; k++)
				{
					TideRunning *ra = &runv[nrun++];

					memset(ra, 0, sizeof(*ra));
					ra->alloc_id = jb->pl_first + k + 1;
					ra->job_id = heap.a[h].job + 1;
					ra->queue = jb->queue;
					ra->node = pool[jb->pl_first + k].node;
					ra->service = TIDE_SVC_TRAINING;
					ra->started_at = jb->start;
					ra->end_at = tide_sat_add_sim(jb->start, ph_limit_of(jb, limit_factor));
					ra->placed_at = jb->start;
					ra->res = replica_vec[jb->per_replica];
					ra->gpus = pool[jb->pl_first + k].gpus;
				}
			}
			s->running = runv;
			s->nrunning = nrun;
		}
		for (;;)
		{
			int			head = -1,
						headq = -1;
			int64_t		shadow = TIDE_TIME_UNKNOWN;

			for (int q = 0; q < nqueues; q++)
				if (queues[q].head < queues[q].tail &&
					(head < 0 || queues[q].job[queues[q].head] < head))
				{
					head = queues[q].job[queues[q].head];
					headq = q;
				}
			if (head < 0)
				break;
			ncand = 0;
			for (int q = 0; q < nqueues; q++)
				queues[q].taken = 0;
			if (queueing != Q_BACKFILL)
			{
				/* the oldest waiting job alone (reserving under easy) */
				ph_fill_job(s, 0, &jobs[head], head,
						 queueing == Q_EASY ? ph_limit_of(&jobs[head], limit_factor) : 0,
						 queueing == Q_EASY);
				s->njobs = s->nroles = 1;
				r = tide_decide(s);
				decides++;
				if (r->outcomes[0].status != TIDE_PENDING || queueing == Q_FIFO)
				{
					cand[ncand++] = head;
					queues[headq].taken = 1;
					take_outcomes(r, s, cand, ncand, jobs, &pool, &npool, &poolcap, &heap,
								  &free_gpus, &unschedulable, jobs_path, t, fq);
					drop_taken(queues, nqueues, jobs);
					if (r->outcomes[0].status == TIDE_PENDING)
						break;	/* strict FIFO: everyone waits behind it */
					continue;
				}
				/* easy: the latest of its holds' shadows bounds who may backfill */
				for (int h = 0; h < r->nholds; h++)
					if (r->holds[h].node >= 0 &&
						(shadow == TIDE_TIME_UNKNOWN || r->holds[h].shadow > shadow))
						shadow = r->holds[h].shadow;
				for (int h = 0; h < r->nholds; h++)
					if (r->holds[h].node >= 0 && r->holds[h].shadow == TIDE_TIME_UNKNOWN)
						shadow = TIDE_TIME_UNKNOWN;
			}

			/*
			 * The pending jobs that could matter, per size g: the first free/g
			 * waiting (one decide releases nothing, so the k-th of a size can
			 * only start if the k-1 before it did); under easy also the first
			 * free/g of those short enough to end before the shadow time (only
			 * they may use the held resources).
			 */
			if (queueing == Q_EASY)
			{
				cand[ncand++] = head;
			}
			for (int q = 0; q < nqueues; q++)
			{
				PQueue	   *pq = &queues[q];
				int64_t		room = free_gpus / pq->gpus;
				int			any = 0,
							shortn = 0;

				for (int k = pq->head; k < pq->tail && (any < room || shortn < room); k++)
				{
					int			jn = pq->job[k];
					bool		isshort = queueing == Q_EASY && shadow != TIDE_TIME_UNKNOWN &&
						t + ph_limit_of(&jobs[jn], limit_factor) <= shadow;

					pq->taken = k - pq->head + 1;
					if (jn == head && queueing == Q_EASY)
						continue;	/* already first */
					if (any < room || (isshort && shortn < room))
						cand[ncand++] = jn;
					any++;
					if (isshort)
						shortn++;
					if (queueing != Q_EASY && any >= room)
						break;
				}
			}
			if (ncand == 0)
				break;
			qsort(cand, ncand, sizeof(int), cmp_int);
			s->njobs = ncand;
			s->nroles = ncand;
			for (int k = 0; k < ncand; k++)
				ph_fill_job(s, k, &jobs[cand[k]], cand[k],
						 queueing == Q_EASY ? ph_limit_of(&jobs[cand[k]], limit_factor) : 0,
						 queueing == Q_EASY && cand[k] == head);
			r = tide_decide(s);
			decides++;
			take_outcomes(r, s, cand, ncand, jobs, &pool, &npool, &poolcap, &heap,
						  &free_gpus, &unschedulable, jobs_path, t, fq);
			drop_taken(queues, nqueues, jobs);
			break;
		}
	}

	/* jobs left waiting on an empty cluster: the engine could not place them */
	for (int q = 0; q < nqueues; q++)
		for (int k = queues[q].head; k < queues[q].tail; k++)
		{
			PJob	   *jb = &jobs[queues[q].job[k]];

			jb->state = 3;
			unschedulable++;
			fprintf(stderr, "%s: %s:%d: job of %d GPUs never fit an empty cluster\n",
					sim_progname, jobs_path, jb->line, jb->gpus);
		}

	/* everything ended: the engine must have given every GPU back (R-C4) */
	for (int i = 0; i < nnodes; i++)
	{
		const TideNode *n = &s->nodes[i];

		for (int g = 0; g < n->ngpus; g++)
			if (n->gpu_free[g] != TIDE_MILLI || n->used[TIDE_RES_GPU] != 0)
				sim_die(SIM_EXIT_DATA, "internal error: node %s still holds GPUs at the end",
						n->name);
	}
	{
		double	   *waits = sim_alloc(sizeof(double) * (done + 1));
		int		   *wq = sim_alloc(sizeof(int) * (done + 1));
		double	   *qwaits = NULL;
		double		sum_wait = 0,
					sum_jct = 0,
					gpu_time = 0;
		int64_t		nw = 0;
		double		p99 = 0,
					span;

		for (int j = 0; j < njobs; j++)
		{
			const PJob *jb = &jobs[j];

			if (jb->state != 2)
				continue;
			waits[nw] = (jb->start - jb->arrival) / 1e6;
			wq[nw] = jb->queue;
			sum_wait += waits[nw];
			sum_jct += (jb->start + jb->duration - jb->arrival) / 1e6;
			gpu_time += (double) jb->gpus * (jb->duration / 1e6);
			nw++;
		}
		if (fq)
		{
			/* in job order, for the per-queue figures */
			qwaits = sim_alloc(sizeof(double) * (nw + 1));
			memcpy(qwaits, waits, sizeof(double) * nw);
		}
		if (nw > 0)
		{
			int64_t		rank = (int64_t) ceil(0.99 * nw);

			qsort(waits, nw, sizeof(double), sim_cmp_double);
			p99 = waits[(rank > 0 ? rank : 1) - 1];
		}
		if (waits_path)
		{
			FILE	   *wf = fopen(waits_path, "w");

			if (!wf)
				sim_die(SIM_EXIT_DATA, "cannot write %s: %s", waits_path, strerror(errno));
			for (int64_t k = 0; k < nw; k++)
				fprintf(wf, "%.0f\n", waits[k]);
			if (fclose(wf) != 0)
				sim_die(SIM_EXIT_DATA, "cannot write %s: %s", waits_path, strerror(errno));
		}
		span = last_end / 1e6;
		printf("policy: %s\n", policy == TIDE_PLACE_SPREAD ? "spread" :
			   policy == TIDE_PLACE_FRAG ? "frag" : "pack");
		printf("queue: %s\n", queue_names[queueing]);
		if (queueing == Q_EASY)
			printf("limit_factor: %g\n", limit_factor);
		printf("nodes: %d\n", nnodes);
		printf("gpus_per_node: %d\n", per_node);
		printf("jobs: %d\n", njobs);
		printf("completed: %lld\n", (long long) done);
		printf("unschedulable: %lld\n", (long long) unschedulable);
		printf("mean_wait_s: %.1f\n", nw ? sum_wait / nw : 0.0);
		printf("p99_wait_s: %.1f\n", p99);
		printf("mean_completion_s: %.1f\n", nw ? sum_jct / nw : 0.0);
		printf("makespan_s: %.1f\n", span);
		printf("gpu_utilisation_pct: %.2f\n",
			   span > 0 ? 100.0 * gpu_time / ((double) total_gpus * span) : 0.0);
		if (half_life >= 0)
		{
			/* the GPU usage averaged over the half-life, at the last event */
			double		decayed = 0;

			for (int q = 0; q < s->nqueues; q++)
				if (!fq || fq->q[q].leaf)
					decayed += s->queues[q].decayed[TIDE_RES_GPU];
			printf("fair_share_half_life_s: %lld\n", (long long) half_life);
			printf("decayed_gpus: %.3f\n", decayed / TIDE_MILLI);
		}
		if (fq)
			phq_report(fq, fair_path, total_gpus, last_end, wq, qwaits, nw);
		if (pf)
			phf_report(pf, jobs, njobs, forecasts_path);
		free(waits);
		free(wq);
		free(qwaits);
	}
	if (verbose)
		fprintf(stderr, "%s: philly: %d jobs, %lld decide calls, simulated %.1f days, %.3f s\n",
				sim_progname, njobs, (long long) decides, now / 86400e6, sim_now() - t_start);
	if (verbose && pf)
		fprintf(stderr, "%s: philly: %lld forecasts, %lld decides in them, %.3f s\n",
				sim_progname, (long long) pf->calls, (long long) pf->steps, pf->seconds);
	if (fflush(stdout) != 0 || ferror(stdout))
		sim_die(SIM_EXIT_DATA, "cannot write the output");
	return 0;
}
