/*
 * tidal.c: the tidal replay (seed 002's scenario): training jobs of the
 * Philly trace in a reclaimable queue, inference services arriving with a
 * daily rhythm in a queue of higher priority that reclaims from it (R-E2),
 * through the engine with evictions on.  It measures what evictions cost
 * training (GPU-time thrown away) against what they give inference (the
 * GPU-time of the services that evicted, and their waits), with R-E4's
 * least harm or, with --legacy-order, the order it replaced.
 *
 * The cluster: M nodes of N whole GPUs.  Queue "inference": priority
 * 80000, not reclaimable; its jobs are services (TIDE_SVC_INFERENCE), not
 * preemptable.  Queue "training": priority 20000, reclaimable; its jobs
 * are the trace's (a job of g GPUs is r replicas as in philly.c),
 * preemptable.  No quotas: R-E2 needs none, and nothing else evicts.
 *
 * Inference demand in GPUs at time of day h (hours since the first
 * arrival, modulo 24): D(h) = peak x (trough + (1 - trough) x (1 -
 * cos(2 pi h / 24)) / 2), lowest at 0 h, highest at 12 h.  Services ask
 * 1, 2, 4 or 8 GPUs (weights 4:3:2:1, mean 2.6) and run an exponential
 * time of mean --service-hours; they arrive as a Poisson process of rate
 * D(h) / (2.6 x mean run time) (Little's law: D GPUs busy on average),
 * drawn by thinning from the seeded generator (rng.c).
 *
 * Each instant: ended jobs give their GPUs back, arrivals join the
 * pending jobs, then rounds of one decide each on a snapshot built from
 * the replay's state (running allocations charged and listed, with their
 * placement times, for R-E4): placed jobs start; victims stop at once
 * (their GPU-time since they started is thrown away) and are requeued as
 * on_evict = 'requeue' does (pending again, keeping their arrival); what
 * the engine held for each preemptor (new claims) goes to the next round
 * as claims whose victims have stopped, so the preemptor starts there
 * (R-E6).  Rounds go on while a decide evicts or holds (at most 16).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "philly.h"

#define DAY_US		(86400LL * 1000000)
#define MAX_ROUNDS	16
/* the engine's clock is the replay's plus this: a placement at 0 reads as none */
#define EPOCH_US	(86400LL * 1000000)

typedef struct TJob
{
	int64_t		arrival;		/* microseconds since the trace's first arrival */
	int64_t		duration;
	int			gpus;
	int			replicas;
	int			per_replica;
	int			line;			/* trace line; 0 for a service */
	bool		inference;
	bool		reclaimed;		/* started on what evictions freed (R-E6) */
	int			state;			/* 0 pending, 1 running, 2 done */
	int			evicted;		/* times */
	int64_t		start;			/* of the current or last run */
	int			pl_first;		/* its placements in the pool */
	int			npl;
} TJob;

/* A claim kept for the next round: the preemptor's replica on a node. */
typedef struct THold
{
	int64_t		job_id;
	int			node;
	int			per_replica;
	uint64_t	gpus;
} THold;

typedef struct Tidal
{
	int			nnodes,
				per_node,
				policy;
	bool		legacy;
	int64_t		restart_cost;	/* us */
	int64_t		min_runtime;	/* us, of the training queue (R-E4) */
	TJob	   *jobs;
	int			njobs;
	PPlace	   *pool;
	int			npool,
				poolcap;
	int		   *pending;		/* job indexes, ascending (= arrival order) */
	int			npending;
	int		   *cand;
	int64_t    *seen;			/* [gpus] scratch of candidates() */
	int		   *running;		/* job indexes */
	int			nrunning;
	THold	   *holds;
	int			nholds,
				capholds;
	Heap		ends;
	int64_t		free_gpus;
	SimPool		mem;
	FILE	   *log;			/* --evictions: one row per eviction */
	/* results */
	int64_t		evictions,
				decides;
	double		thrown_gpu_s,	/* training GPU-time thrown away */
				evicted_gpus,	/* GPUs of the victims */
				freed_for_gpus; /* GPUs of the jobs held for (R-E6) */
} Tidal;

static int
cmp_tjob(const void *a, const void *b)
{
	const TJob *x = a;
	const TJob *y = b;

	if (x->arrival != y->arrival)
		return x->arrival < y->arrival ? -1 : 1;
	if (x->inference != y->inference)
		return x->inference ? 1 : -1;
	return x->line - y->line;
}

/* Uniform in [0, 1) with 53 bits. */
static double
rng_unit(SimRng *r)
{
	return (rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* The services arriving in [from, until), appended to t->jobs. */
static void
make_services(Tidal *t, int64_t from, int64_t until, double peak_gpus, double trough,
			  double hours, uint64_t seed, int cap)
{
	static const int sizes[] = {1, 1, 1, 1, 2, 2, 2, 4, 4, 8};
	double		mean_us = hours * 3600e6;
	double		rate = peak_gpus / (2.6 * mean_us);	/* per microsecond at the peak */
	double		at = (double) from;
	SimRng		rng;

	rng_seed(&rng, seed);
	if (rate <= 0)
		return;
	for (;;)
	{
		double		h;
		TJob	   *j;

		at += -log(1.0 - rng_unit(&rng)) / rate;
		if (at >= (double) until)
			break;
		h = fmod(at / 3600e6, 24.0);
		if (rng_unit(&rng) >= trough + (1 - trough) * (1 - cos(2 * M_PI * h / 24)) / 2)
			continue;
		if (t->njobs == cap)
			sim_die(SIM_EXIT_DATA, "internal error: too many services");
		j = &t->jobs[t->njobs++];
		memset(j, 0, sizeof(*j));
		j->inference = true;
		j->arrival = (int64_t) at;
		j->gpus = sizes[rng_below(&rng, 10)];
		j->duration = (int64_t) (-log(1.0 - rng_unit(&rng)) * mean_us) + 1;
		j->line = t->njobs;		/* a tie-break only */
	}
}

/*
 * The services of a file instead (CSV arrival_s,duration,num_gpus:
 * seconds after the trace's first arrival, seconds, 1 to 8 GPUs), appended.
 */
static void
read_services(Tidal *t, const char *path, int cap)
{
	CsvFile		f;
	int			carr,
				cdur,
				cgpu;

	csv_open(&f, path);
	carr = csv_column(&f, "arrival_s", true);
	cdur = csv_column(&f, "duration", true);
	cgpu = csv_column(&f, "num_gpus", true);
	while (csv_next(&f))
	{
		TJob	   *j;

		if (t->njobs == cap)
			csv_fail(&f, carr, "too many services");
		j = &t->jobs[t->njobs++];
		memset(j, 0, sizeof(*j));
		j->inference = true;
		j->arrival = llround(csv_double(&f, carr, 0, 1e9) * 1e6);
		j->duration = llround(csv_double(&f, cdur, 0, 1e9) * 1e6);
		if (j->duration <= 0)
			j->duration = 1;
		j->gpus = (int) csv_int(&f, cgpu, 1, t->per_node);
		j->line = f.lineno;
	}
	csv_close(&f);
}

/* Job jn pending again (or for the first time), in arrival order. */
static void
pend(Tidal *t, int jn)
{
	int			lo = 0,
				hi = t->npending;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (t->pending[mid] < jn)
			lo = mid + 1;
		else
			hi = mid;
	}
	memmove(&t->pending[lo + 1], &t->pending[lo], sizeof(int) * (t->npending - lo));
	t->pending[lo] = jn;
	t->npending++;
	t->jobs[jn].state = 0;
}

/*
 * The pending jobs that could matter: every service (they may evict), and
 * per size g the first free/g training jobs (one decide releases nothing
 * for training, so the k-th of a size starts only if the k-1 before it
 * did; claims only take room away).
 */
static int
candidates(Tidal *t)
{
	int			n = 0;

	for (int k = 0; k < t->npending; k++)
		t->seen[t->jobs[t->pending[k]].gpus] = 0;

	for (int k = 0; k < t->npending; k++)
	{
		int			jn = t->pending[k];
		const TJob *j = &t->jobs[jn];
		if (!j->inference)
		{
			if (t->seen[j->gpus] * j->gpus >= t->free_gpus)
				continue;
			t->seen[j->gpus]++;
		}
		t->cand[n++] = jn;
	}
	return n;
}

/* A snapshot of the replay now, with the candidates pending and the holds as claims. */
static TideSnapshot *
build(Tidal *t, int ncand, int64_t now)
{
	TideMem		mem = sim_pool_mem(&t->mem);
	TideSnapshot *s = tide_snapshot_create(&mem);
	int64_t    *vec[TIDE_MAX_GPUS + 1];
	char		err[256];
	int			nalloc = 0;

	tide_snapshot_alloc_cluster(s, t->nnodes, 2, 0);
	ph_fill_nodes(s, t->per_node);
	s->queues[0].name = "inference";
	s->queues[0].priority = 80000;
	s->queues[1].name = "training";
	s->queues[1].priority = 20000;
	s->queues[1].reclaimable = true;
	s->queues[1].min_runtime = t->min_runtime;
	for (int q = 0; q < 2; q++)
	{
		s->queues[q].placement = t->policy;
		s->queues[q].has_quota = true;
	}
	s->evict = true;
	s->evict_legacy_order = t->legacy;
	s->restart_cost = t->restart_cost;
	s->now = now + EPOCH_US;
	if (!tide_snapshot_finish(s, err, sizeof(err)))
		sim_die(SIM_EXIT_DATA, "internal error: tidal snapshot: %s", err);
	for (int g = 1; g <= t->per_node; g++)
	{
		vec[g] = tide_vec_new(s);
		vec[g][TIDE_RES_GPU] = (int64_t) g * TIDE_MILLI;
	}
	for (int k = 0; k < t->nrunning; k++)
		nalloc += t->jobs[t->running[k]].npl;
	s->running = tide_alloc(s, sizeof(TideRunning) * (nalloc + 1));
	for (int k = 0; k < t->nrunning; k++)
	{
		const TJob *j = &t->jobs[t->running[k]];

		for (int p = 0; p < j->npl; p++)
		{
			TideRunning *a = &s->running[s->nrunning++];

			a->alloc_id = s->nrunning;
			a->job_id = t->running[k] + 1;
			a->queue = j->inference ? 0 : 1;
			a->node = t->pool[j->pl_first + p].node;
			a->service = j->inference ? TIDE_SVC_INFERENCE : TIDE_SVC_TRAINING;
			a->preemptable = !j->inference;
			a->started_at = a->placed_at = j->start + EPOCH_US;
			a->end_at = TIDE_TIME_UNKNOWN;
			a->res = vec[j->per_replica];
			a->gpus = t->pool[j->pl_first + p].gpus;
			tide_charge(s, a->node, a->queue, false, a->res, a->gpus, 0, +1);
		}
	}
	tide_snapshot_alloc_jobs(s, ncand, ncand);
	for (int k = 0; k < ncand; k++)
	{
		const TJob *j = &t->jobs[t->cand[k]];
		TideJob    *job = &s->jobs[k];
		TideRole   *role = &s->roles[k];

		job->id = t->cand[k] + 1;
		job->queue = j->inference ? 0 : 1;
		job->created_at = j->arrival + EPOCH_US;
		job->gpu_type = -1;
		job->service = j->inference ? TIDE_SVC_INFERENCE : TIDE_SVC_TRAINING;
		job->preemptable = !j->inference;
		job->roles = role;
		job->nroles = 1;
		role->name = "worker";
		role->replicas = j->replicas;
		role->request[TIDE_RES_GPU] = (int64_t) j->per_replica * TIDE_MILLI;
	}
	s->claims = tide_alloc(s, sizeof(TideClaim) * (t->nholds + 1));
	for (int h = 0; h < t->nholds; h++)
	{
		TideClaim  *c = &s->claims[s->nclaims++];

		c->job_id = t->holds[h].job_id;
		c->node = t->holds[h].node;
		c->res = vec[t->holds[h].per_replica];
		c->gpus = t->holds[h].gpus;
		c->waiting = false;		/* the victims stopped at once */
	}
	return s;
}

/* Job jn starts at now on the placements of outcome o. */
static void
start_job(Tidal *t, const TideResult *r, const TideOutcome *o, int jn, int64_t now)
{
	TJob	   *j = &t->jobs[jn];

	if (t->npool + o->nplacements > t->poolcap)
	{
		t->poolcap = (t->poolcap + o->nplacements) * 2;
		t->pool = sim_realloc(t->pool, sizeof(PPlace) * t->poolcap);
	}
	j->pl_first = t->npool;
	j->npl = o->nplacements;
	for (int p = 0; p < o->nplacements; p++)
	{
		t->pool[t->npool].node = r->placements[o->first_placement + p].node;
		t->pool[t->npool].gpus = r->placements[o->first_placement + p].gpus;
		t->npool++;
	}
	j->state = 1;
	j->start = now;
	t->running[t->nrunning++] = jn;
	t->free_gpus -= j->gpus;
	ph_heap_push(&t->ends, now + j->duration, jn);
}

/* Job jn leaves the running list. */
static void
stop_job(Tidal *t, int jn)
{
	for (int k = 0; k < t->nrunning; k++)
		if (t->running[k] == jn)
		{
			t->running[k] = t->running[--t->nrunning];
			break;
		}
	t->free_gpus += t->jobs[jn].gpus;
}

/* One decide at now; true when it evicted or held something. */
static bool
round_at(Tidal *t, int64_t now)
{
	int			ncand = candidates(t);
	TideSnapshot *s = build(t, ncand, now);
	TideResult *r = tide_decide(s);
	bool		more = r->nevictions > 0 || r->nnew_claims > 0;

	t->decides++;
	for (int k = 0; k < ncand; k++)
	{
		const TideOutcome *o = &r->outcomes[k];
		TJob	   *j = &t->jobs[t->cand[k]];

		/* held for it (R-E6), with victims or on what earlier ones freed */
		if (o->evict_state == TIDE_EV_EVICTED && !j->reclaimed)
		{
			j->reclaimed = true;
			t->freed_for_gpus += j->gpus;
		}

		if (o->status == TIDE_PLACED)
			start_job(t, r, o, t->cand[k], now);
		else if (o->status == TIDE_UNSCHEDULABLE)
			sim_die(SIM_EXIT_DATA, "internal error: job %d is unschedulable", t->cand[k] + 1);
	}
	for (int e = 0; e < r->nevictions; e++)
	{
		int			vn = (int) r->evictions[e].job_id - 1;
		TJob	   *v = &t->jobs[vn];

		if (v->state != 1 || v->inference)
			sim_die(SIM_EXIT_DATA, "internal error: job %d evicted while not running training", vn + 1);
		if (t->log)
			fprintf(t->log, "%.0f,%d,%d,%.0f,%lld,%d\n", now / 1e6, vn + 1, v->gpus,
					(now - v->start) / 1e6, (long long) s->jobs[r->evictions[e].preemptor].id,
					t->jobs[s->jobs[r->evictions[e].preemptor].id - 1].gpus);
		t->evictions++;
		t->thrown_gpu_s += v->gpus * ((now - v->start) / 1e6);
		t->evicted_gpus += v->gpus;
		v->evicted++;
		stop_job(t, vn);
		pend(t, vn);			/* on_evict = 'requeue' */
	}
	/* the started jobs leave the pending list */
	{
		int			w = 0;

		for (int k = 0; k < t->npending; k++)
			if (t->jobs[t->pending[k]].state == 0)
				t->pending[w++] = t->pending[k];
		t->npending = w;
	}
	if (t->capholds < r->nnew_claims)
	{
		t->capholds = r->nnew_claims * 2;
		t->holds = sim_realloc(t->holds, sizeof(THold) * t->capholds);
	}
	t->nholds = r->nnew_claims;
	for (int c = 0; c < r->nnew_claims; c++)
	{
		t->holds[c].job_id = r->new_claims[c].job_id;
		t->holds[c].node = r->new_claims[c].node;
		t->holds[c].per_replica = (int) (r->new_claims[c].res[TIDE_RES_GPU] / TIDE_MILLI);
		t->holds[c].gpus = r->new_claims[c].gpus;
	}
	sim_pool_reset(&t->mem);
	return more;
}

static void
report(const Tidal *t, int64_t from, int64_t last_end)
{
	double	   *iw = sim_alloc(sizeof(double) * (t->njobs + 1));
	double		tw = 0,
				igpu = 0,
				twait = 0,
				span = (last_end - from) / 1e6,
				reclaimed = 0,
				used = 0,
				sum_iw = 0;
	int			ni = 0,
				nt = 0,
				victims = 0;

	for (int k = 0; k < t->njobs; k++)
	{
		const TJob *j = &t->jobs[k];
		double		wait = (j->start - j->arrival) / 1e6;

		used += j->gpus * (j->duration / 1e6);
		if (j->inference)
		{
			iw[ni++] = wait;
			sum_iw += wait;
			igpu += j->gpus * (j->duration / 1e6);
			if (j->reclaimed)
				reclaimed += j->gpus * (j->duration / 1e6);
			continue;
		}
		nt++;
		tw += (j->start + j->duration - j->arrival) / 1e6;
		twait += wait;
		victims += j->evicted > 0;
	}
	qsort(iw, ni, sizeof(double), sim_cmp_double);
	printf("order: %s\n", t->legacy ? "legacy" : "least-harm");
	printf("nodes: %d\n", t->nnodes);
	printf("gpus_per_node: %d\n", t->per_node);
	printf("training_jobs: %d\n", nt);
	printf("inference_jobs: %d\n", ni);
	printf("evictions: %lld\n", (long long) t->evictions);
	printf("training_jobs_evicted: %d\n", victims);
	printf("evicted_gpus: %.0f\n", t->evicted_gpus);
	printf("held_for_gpus: %.0f\n", t->freed_for_gpus);
	printf("thrown_away_gpu_h: %.1f\n", t->thrown_gpu_s / 3600);
	printf("reclaimed_gpu_h: %.1f\n", reclaimed / 3600);
	printf("thrown_per_reclaimed: %.4f\n", reclaimed > 0 ? t->thrown_gpu_s / reclaimed : 0.0);
	printf("inference_gpu_h: %.1f\n", igpu / 3600);
	printf("thrown_per_inference_gpu_h: %.4f\n", igpu > 0 ? t->thrown_gpu_s / igpu : 0.0);
	printf("thrown_gpu_h_per_held_gpu: %.3f\n",
		   t->freed_for_gpus > 0 ? t->thrown_gpu_s / 3600 / t->freed_for_gpus : 0.0);
	printf("inference_mean_wait_s: %.1f\n", ni ? sum_iw / ni : 0.0);
	printf("inference_median_wait_s: %.1f\n", sim_percentile(iw, ni, 0.5));
	printf("inference_p90_wait_s: %.1f\n", sim_percentile(iw, ni, 0.9));
	printf("inference_p99_wait_s: %.1f\n", sim_percentile(iw, ni, 0.99));
	printf("training_mean_wait_s: %.1f\n", nt ? twait / nt : 0.0);
	printf("training_mean_completion_s: %.1f\n", nt ? tw / nt : 0.0);
	printf("span_s: %.1f\n", span);
	printf("gpu_utilisation_pct: %.2f\n",
		   span > 0 ? 100.0 * used / ((double) t->nnodes * t->per_node * span) : 0.0);
	free(iw);
}

int
tidal_main(int argc, char **argv)
{
	const char *jobs_path = NULL;
	const char *services_path = NULL;
	Tidal		t;
	double		from_day = 20,
				days = 14,
				peak = 0.5,
				trough = 0.2,
				hours = 2;
	uint64_t	seed = 1;
	bool		verbose = false;
	PJob	   *trace;
	int			ntrace,
				ai = 0;
	int64_t		from,
				until,
				last_end = 0,
				now = 0;
	double		t_start = sim_now();

	memset(&t, 0, sizeof(t));
	t.policy = TIDE_PLACE_PACK;
	t.restart_cost = 300 * 1000000LL;
	for (int i = 1; i < argc; i++)
	{
		const char *v;

		if (sim_opt(argc, argv, &i, "--jobs", &v))
			jobs_path = v;
		else if (sim_opt(argc, argv, &i, "--gpus-per-node", &v))
			t.per_node = (int) sim_parse_int("--gpus-per-node", v, 8, TIDE_MAX_GPUS);
		else if (sim_opt(argc, argv, &i, "--nodes", &v))
			t.nnodes = (int) sim_parse_int("--nodes", v, 1, 1000000);
		else if (sim_opt(argc, argv, &i, "--policy", &v))
			t.policy = sim_parse_policy(v, false);
		else if (sim_opt(argc, argv, &i, "--from-day", &v))
			from_day = sim_parse_double("--from-day", v, 0, 1e5);
		else if (sim_opt(argc, argv, &i, "--days", &v))
			days = sim_parse_double("--days", v, 0.001, 1e5);
		else if (sim_opt(argc, argv, &i, "--inference-peak", &v))
			peak = sim_parse_double("--inference-peak", v, 0, 1);
		else if (sim_opt(argc, argv, &i, "--inference-trough", &v))
			trough = sim_parse_double("--inference-trough", v, 0, 1);
		else if (sim_opt(argc, argv, &i, "--service-hours", &v))
			hours = sim_parse_double("--service-hours", v, 0.001, 1e4);
		else if (sim_opt(argc, argv, &i, "--services", &v))
			services_path = v;
		else if (sim_opt(argc, argv, &i, "--seed", &v))
			seed = (uint64_t) sim_parse_int("--seed", v, 0, INT64_MAX);
		else if (sim_opt(argc, argv, &i, "--restart-cost", &v))
			t.restart_cost = sim_parse_int("--restart-cost", v, 0, 86400LL * 365) * 1000000;
		else if (sim_opt(argc, argv, &i, "--evictions", &v))
		{
			if (!(t.log = fopen(v, "w")))
				sim_die(SIM_EXIT_DATA, "cannot write %s: %s", v, strerror(errno));
			fprintf(t.log, "time_s,victim,victim_gpus,victim_age_s,preemptor,preemptor_gpus\n");
		}
		else if (sim_opt(argc, argv, &i, "--min-runtime", &v))
			t.min_runtime = sim_parse_int("--min-runtime", v, 0, 86400LL * 365) * 1000000;
		else if (strcmp(argv[i], "--legacy-order") == 0)
			t.legacy = true;
		else if (strcmp(argv[i], "--verbose") == 0)
			verbose = true;
		else
			sim_die(SIM_EXIT_USAGE, "tidal: unknown option \"%s\" (see --help)", argv[i]);
	}
	if (!jobs_path)
		sim_die(SIM_EXIT_USAGE, "tidal: --jobs FILE is required");
	if (!t.per_node)
		sim_die(SIM_EXIT_USAGE, "tidal: --gpus-per-node N is required (8 or more: services ask up to 8)");
	if (!t.nnodes)
		sim_die(SIM_EXIT_USAGE, "tidal: --nodes M is required");

	/* the trace's jobs in the window, then the services, in arrival order */
	trace = ph_read_jobs(jobs_path, NULL, 0, NULL, &ntrace);
	from = (int64_t) (from_day * DAY_US);
	until = (int64_t) ((from_day + days) * DAY_US);
	{
		int			cap = ntrace + (int) (peak * t.nnodes * t.per_node / (2.6 * hours) * 24 * days * 2) + 100000;

		t.jobs = sim_alloc(sizeof(TJob) * cap);
		for (int k = 0; k < ntrace; k++)
		{
			const PJob *pj = &trace[k];
			TJob	   *j;

			if (pj->arrival < from || pj->arrival >= until ||
				pj->gpus > t.nnodes * t.per_node)
				continue;
			j = &t.jobs[t.njobs++];
			j->arrival = pj->arrival;
			j->duration = pj->duration > 0 ? pj->duration : 1;
			j->gpus = pj->gpus;
			j->line = pj->line;
		}
		if (t.njobs == 0)
			sim_die(SIM_EXIT_DATA, "%s: no jobs in days %g to %g", jobs_path, from_day, from_day + days);
		if (services_path)
			read_services(&t, services_path, cap);
		else
			make_services(&t, from, until, peak * t.nnodes * t.per_node, trough, hours, seed, cap);
	}
	qsort(t.jobs, t.njobs, sizeof(TJob), cmp_tjob);
	for (int k = 0; k < t.njobs; k++)
	{
		TJob	   *j = &t.jobs[k];

		j->replicas = 1;
		while (j->gpus / j->replicas > t.per_node || j->gpus % j->replicas != 0)
			j->replicas++;
		j->per_replica = j->gpus / j->replicas;
	}
	t.pending = sim_alloc(sizeof(int) * (t.njobs + 1));
	t.cand = sim_alloc(sizeof(int) * (t.njobs + 1));
	t.running = sim_alloc(sizeof(int) * (t.njobs + 1));
	t.seen = sim_alloc(sizeof(int64_t) * ((int64_t) t.nnodes * t.per_node + 1));
	t.free_gpus = (int64_t) t.nnodes * t.per_node;

	while (ai < t.njobs || t.ends.n > 0)
	{
		int64_t		at = INT64_MAX;
		int			rounds = 0;

		if (ai < t.njobs)
			at = t.jobs[ai].arrival;
		if (t.ends.n > 0 && t.ends.a[0].end < at)
			at = t.ends.a[0].end;
		now = at;
		while (t.ends.n > 0 && t.ends.a[0].end == now)
		{
			HeapItem	it = ph_heap_pop(&t.ends);
			TJob	   *j = &t.jobs[it.job];

			if (j->state != 1 || j->start + j->duration != it.end)
				continue;		/* an end of a run that was evicted */
			stop_job(&t, it.job);
			j->state = 2;
			last_end = now;
		}
		while (ai < t.njobs && t.jobs[ai].arrival == now)
			pend(&t, ai++);
		while (t.npending + t.nholds > 0 && round_at(&t, now) && ++rounds < MAX_ROUNDS)
			;
	}
	for (int k = 0; k < t.njobs; k++)
		if (t.jobs[k].state != 2)
			sim_die(SIM_EXIT_DATA, "internal error: job %d never ran to its end", k + 1);
	report(&t, from, last_end);
	if (t.log && fclose(t.log) != 0)
		sim_die(SIM_EXIT_DATA, "cannot write the evictions file");
	if (verbose)
		fprintf(stderr, "%s: tidal: %d jobs, %lld decide calls, simulated %.1f days, %.3f s\n",
				sim_progname, t.njobs, (long long) t.decides, now / 86400e6, sim_now() - t_start);
	if (fflush(stdout) != 0 || ferror(stdout))
		sim_die(SIM_EXIT_DATA, "cannot write the output");
	return 0;
}
