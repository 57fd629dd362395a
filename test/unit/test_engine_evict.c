/*
 * test_engine_evict.c: evictions at engine level (R-E1 to R-E6): seed 002's
 * rules as tables (reclaimer type x victim type x reclaimable x
 * preemptable), seed 000's idle jobs, in-queue preemption, least harm
 * (GPU-time thrown away, the restart floor, across nodes) and fewest victims, the dry run on real GPUs, min_runtime, no ping-pong,
 * gang eviction, draining nodes, and holding freed resources for the
 * preemptor across cycles (claims).
 */
#include "tap.h"
#include "test_engine_fixture.h"

#define SEC 1000000LL
#define NOW (1000 * SEC)

/* What the fixture does not name: queue eviction settings. */
typedef struct EvQueue
{
	const char *name;
	int			reclaimable;
	int			within;			/* preemption_within lower_priority */
	int64_t		min_runtime;
} EvQueue;

/* A running job: one allocation per entry; entries with the same job form a gang. */
typedef struct EvRun
{
	int64_t		job;
	const char *node;
	const char *queue;
	const char *res;
	uint64_t	gpus;
	int			prio;
	int			svc;			/* TideService; 0: training, -1: unknown */
	int			preempt;
	int			idle;
	int64_t		placed;			/* microseconds; 0: long ago */
	int			releasing;
} EvRun;

typedef struct EvJob
{
	int64_t		id;
	int			svc;
	int			preempt;
} EvJob;

static Fx
ev_build(const FxNode *nodes, int nn, const FxQueue *queues, int nq,
		 const EvQueue *evq, int nevq, const FxJob *jobs, int nj,
		 const EvJob *evj, int nevj, const EvRun *runs, int nr)
{
	Fx			fx;
	FxRun		fr[64];

	for (int i = 0; i < nr; i++)
	{
		memset(&fr[i], 0, sizeof(fr[i]));
		fr[i].node = runs[i].node;
		fr[i].queue = runs[i].queue;
		fr[i].res = runs[i].res;
		fr[i].gpus = runs[i].gpus;
		fr[i].idle = runs[i].idle;
	}
	fx_build(&fx, nodes, nn, queues, nq, jobs, nj, fr, nr);
	fx.s->evict = true;
	fx.s->now = NOW;
	for (int i = 0; i < nevq; i++)
	{
		TideQueue  *q = &fx.s->queues[fx_queue_index(fx.s, evq[i].name)];

		q->reclaimable = evq[i].reclaimable;
		q->preemption_within = evq[i].within ? TIDE_PREEMPT_LOWER_PRIORITY : TIDE_PREEMPT_NEVER;
		q->min_runtime = evq[i].min_runtime;
	}
	for (int i = 0; i < nj; i++)
	{
		fx.s->jobs[i].service = TIDE_SVC_TRAINING;
		fx.s->jobs[i].preemptable = true;
	}
	for (int i = 0; i < nevj; i++)
	{
		int			j = fx_job(&fx, evj[i].id);

		fx.s->jobs[j].service = evj[i].svc;
		fx.s->jobs[j].preemptable = evj[i].preempt;
	}
	for (int i = 0; i < nr; i++)
	{
		TideRunning *a = &fx.s->running[i];

		a->job_id = runs[i].job;
		a->priority = runs[i].prio;
		a->service = runs[i].svc < 0 ? TIDE_SVC_UNKNOWN : runs[i].svc ? runs[i].svc : TIDE_SVC_TRAINING;
		a->preemptable = runs[i].preempt;
		a->placed_at = runs[i].placed ? runs[i].placed : SEC;
		a->started_at = a->placed_at;
		a->releasing = runs[i].releasing;
	}
	return fx;
}

/* Victim ids, sorted, "5,7" ("" when none). */
static const char *
ev_victims(const Fx *fx)
{
	static char buf[256];
	int64_t		ids[64];
	int			n = fx->r->nevictions;
	size_t		off = 0;

	for (int i = 0; i < n && i < 64; i++)
		ids[i] = fx->r->evictions[i].job_id;
	for (int i = 1; i < n; i++)
		for (int k = i; k > 0 && ids[k - 1] > ids[k]; k--)
		{
			int64_t		t = ids[k];

			ids[k] = ids[k - 1];
			ids[k - 1] = t;
		}
	buf[0] = '\0';
	for (int i = 0; i < n && off < sizeof(buf) - 24; i++)
		off += snprintf(buf + off, sizeof(buf) - off, "%s%lld", i ? "," : "", (long long) ids[i]);
	return buf;
}

static const char *
svc_name(int s)
{
	return s == TIDE_SVC_INFERENCE ? "inference" : s == TIDE_SVC_TRAINING ? "training" : "unknown";
}

/*
 * Seed 002 / R-E2: the reclaimer's queue has the higher priority, the
 * victim's queue is within its quota (so R-E1 does not apply).  Evicted
 * exactly when an inference job meets a preemptable training job of a
 * reclaimable queue.
 */
static void
test_seed002_table(void)
{
	FxNode		nodes[] = {{"n1", "cpu=16, gpu=8", "RTX-4090"}};
	FxQueue		queues[] = {{"online", "gpu=8", NULL, 80000}, {"offline", "gpu=8", NULL, 20000}};
	FxJob		jobs[] = {{1, "online", 0, 1, "cpu=1, gpu=8"}};

	for (int rs = TIDE_SVC_TRAINING; rs <= TIDE_SVC_INFERENCE; rs++)
		for (int vs = TIDE_SVC_UNKNOWN; vs <= TIDE_SVC_INFERENCE; vs++)
			for (int recl = 0; recl <= 1; recl++)
				for (int pre = 0; pre <= 1; pre++)
				{
					EvQueue		evq[] = {{"online", 0}, {"offline", recl}};
					EvJob		evj[] = {{1, rs, 0}};
					EvRun		runs[] = {{100, "n1", "offline", "cpu=1, gpu=8", 0xff, 0, vs == TIDE_SVC_UNKNOWN ? -1 : vs, pre}};
					bool		want = rs == TIDE_SVC_INFERENCE && vs == TIDE_SVC_TRAINING && recl && pre;
					Fx			fx = ev_build(nodes, 1, queues, 2, evq, 2, jobs, 1, evj, 1, runs, 1);

					fx.r = tide_decide(fx.s);
					is_str(ev_victims(&fx), want ? "100" : "",
						   "R-E2: %s reclaimer, %s victim, reclaimable %d, preemptable %d: %s",
						   svc_name(rs), svc_name(vs), recl, pre, want ? "evicted" : "kept");
					if (want)
					{
						is_int(fx.r->evictions[0].rule, TIDE_RULE_INFERENCE, "  by rule R-E2");
						is_int(fx.r->outcomes[0].evict_state, TIDE_EV_EVICTED, "  the reclaimer waits for it");
						is_str(fx_reason(&fx, 1), "evicting 1 job to make room for it", "  its pending reason says so");
					}
					fx_free(&fx);
				}
}

/*
 * R-E1: a guaranteed job takes back from a borrowing queue (no quota):
 * whatever the service types, when the queue is reclaimable and the job
 * preemptable; a non-reclaimable queue keeps what it holds.
 */
static void
test_reclaim_table(void)
{
	FxNode		nodes[] = {{"n1", "cpu=16, gpu=8"}};
	FxQueue		queues[] = {{"owner", "gpu=8"}, {"borrower"}};
	FxJob		jobs[] = {{1, "owner", 0, 1, "cpu=1, gpu=8"}};

	for (int rs = TIDE_SVC_TRAINING; rs <= TIDE_SVC_INFERENCE; rs++)
		for (int vs = TIDE_SVC_TRAINING; vs <= TIDE_SVC_INFERENCE; vs++)
			for (int recl = 0; recl <= 1; recl++)
				for (int pre = 0; pre <= 1; pre++)
				{
					EvQueue		evq[] = {{"owner", 1}, {"borrower", recl}};
					EvJob		evj[] = {{1, rs, 1}};
					EvRun		runs[] = {{100, "n1", "borrower", "cpu=1, gpu=8", 0xff, 50, vs, pre}};
					bool		want = recl && pre;
					Fx			fx = ev_build(nodes, 1, queues, 2, evq, 2, jobs, 1, evj, 1, runs, 1);

					fx.r = tide_decide(fx.s);
					is_str(ev_victims(&fx), want ? "100" : "",
						   "R-E1: guaranteed %s job, borrowing %s victim, reclaimable %d, preemptable %d: %s",
						   svc_name(rs), svc_name(vs), recl, pre, want ? "evicted" : "kept");
					if (want)
						is_int(fx.r->evictions[0].rule, TIDE_RULE_RECLAIM, "  by rule R-E1 reclaim");
					fx_free(&fx);
				}

	/* a job of the owner that is itself borrowing (above quota) reclaims nothing */
	{
		FxJob		big[] = {{1, "owner", 0, 1, "cpu=1, gpu=8"}};
		FxQueue		q2[] = {{"owner", "gpu=4"}, {"borrower"}};
		EvQueue		evq[] = {{"owner", 1}, {"borrower", 1}};
		EvRun		runs[] = {{100, "n1", "borrower", "cpu=1, gpu=8", 0xff, 0, 0, 1}};
		Fx			fx = ev_build(nodes, 1, q2, 2, evq, 2, big, 1, NULL, 0, runs, 1);

		fx.r = tide_decide(fx.s);
		is_str(ev_victims(&fx), "", "R-E1: a borrowing job does not reclaim");
		fx_free(&fx);
	}
	/* the borrower within its own quota is not reclaimed (training, no R-E2) */
	{
		FxQueue		q2[] = {{"owner", "gpu=8"}, {"borrower", "gpu=8"}};
		EvQueue		evq[] = {{"owner", 1}, {"borrower", 1}};
		EvRun		runs[] = {{100, "n1", "borrower", "cpu=1, gpu=8", 0xff, 0, 0, 1}};
		Fx			fx = ev_build(nodes, 1, q2, 2, evq, 2, jobs, 1, NULL, 0, runs, 1);

		fx.r = tide_decide(fx.s);
		is_str(ev_victims(&fx), "", "R-E1: a queue within its quota keeps its jobs");
		fx_free(&fx);
	}
}

/* Seed 000: idle jobs yield to any guaranteed job, whatever their priority. */
static void
test_idle_yield(void)
{
	FxNode		nodes[] = {{"n1", "cpu=8, memory=16Gi"}};
	FxQueue		queues[] = {{"a", "cpu=8"}, {"b", "cpu=8"}};
	EvQueue		evq[] = {{"a", 0}, {"b", 0}};	/* not reclaimable: idle jobs yield anyway */
	FxJob		jobs[] = {{1, "a", 1, 1, "cpu=4, memory=8Gi"}};
	EvRun		runs[] = {
		{100, "n1", "b", "cpu=4, memory=8Gi", 0, 9, 0, 0, 1},	/* idle, prio 9, not preemptable */
		{101, "n1", "a", "cpu=4, memory=8Gi", 0, 0, 0, 1, 0},	/* non-idle, within quota */
	};
	Fx			fx = ev_build(nodes, 1, queues, 2, evq, 2, jobs, 1, NULL, 0, runs, 2);

	fx.r = tide_decide(fx.s);
	is_str(ev_victims(&fx), "100", "seed 000: the idle job (priority 9) yields to a non-idle job (priority 1)");
	is_int(fx.r->evictions[0].rule, TIDE_RULE_IDLE, "by rule R-E1 idle");
	is_int(fx.r->nnew_claims, 1, "one replica held for the preemptor");
	is_int(fx.r->new_claims[0].job_id, 1, "held for job 1");
	fx_free(&fx);

	/* a borrowing job does not evict idle jobs */
	{
		FxQueue		q2[] = {{"a"}, {"b", "cpu=8"}};

		fx = ev_build(nodes, 1, q2, 2, evq, 2, jobs, 1, NULL, 0, runs, 2);
		fx.r = tide_decide(fx.s);
		is_str(ev_victims(&fx), "", "R-E1: only a guaranteed job takes back from idle jobs");
		fx_free(&fx);
	}
	/* idle jobs never evict */
	{
		FxJob		idle[] = {{1, "a", 100, 1, "cpu=4, memory=8Gi", .idle = 1}};

		fx = ev_build(nodes, 1, queues, 2, evq, 2, idle, 1, NULL, 0, runs, 2);
		fx.r = tide_decide(fx.s);
		is_str(ev_victims(&fx), "", "an idle job never evicts");
		fx_free(&fx);
	}
}

/* R-E3: only where the queue asks for it, only lower priority, only preemptable. */
static void
test_in_queue(void)
{
	FxNode		nodes[] = {{"n1", "cpu=8"}};
	FxQueue		queues[] = {{"q"}};
	FxJob		jobs[] = {{1, "q", 10, 1, "cpu=8"}};
	struct
	{
		int			within,
					vprio,
					pre;
		bool		want;
		const char *what;
	}			t[] = {
		{1, 5, 1, true, "lower_priority queue: priority 10 evicts priority 5"},
		{0, 5, 1, false, "never (default): no in-queue preemption"},
		{1, 10, 1, false, "equal priority is not evicted"},
		{1, 5, 0, false, "a job that is not preemptable is kept"},
	};

	for (int i = 0; i < 4; i++)
	{
		EvQueue		evq[] = {{"q", 1, t[i].within}};
		EvRun		runs[] = {{100, "n1", "q", "cpu=8", 0, t[i].vprio, 0, t[i].pre}};
		Fx			fx = ev_build(nodes, 1, queues, 1, evq, 1, jobs, 1, NULL, 0, runs, 1);

		fx.r = tide_decide(fx.s);
		is_str(ev_victims(&fx), t[i].want ? "100" : "", "R-E3: %s", t[i].what);
		fx_free(&fx);
	}
	/* a queue at its capability: preemption frees capability too */
	{
		FxQueue		capq[] = {{"q", NULL, "cpu=4"}};
		FxNode		big[] = {{"n1", "cpu=16"}};
		FxJob		j4[] = {{1, "q", 10, 1, "cpu=4"}};
		EvQueue		evq[] = {{"q", 1, 1}};
		EvRun		runs[] = {{100, "n1", "q", "cpu=4", 0, 5, 0, 1}};
		Fx			fx = ev_build(big, 1, capq, 1, evq, 1, j4, 1, NULL, 0, runs, 1);

		fx.r = tide_decide(fx.s);
		is_str(ev_victims(&fx), "100", "R-E3: a queue at capability preempts its lower-priority job");
		fx_free(&fx);
	}
}

/* R-E4: least harm first and the fewest victims. */
static void
test_least_harm(void)
{
	FxNode		nodes[] = {{"n1", "cpu=8, gpu=8"}};
	FxQueue		queues[] = {{"q"}};
	EvQueue		evq[] = {{"q", 1, 1}};
	FxJob		jobs[] = {{1, "q", 10, 1, "cpu=1, gpu=4"}};
	EvRun		runs[] = {
		{100, "n1", "q", "cpu=1, gpu=2", 0x03, 5, 0, 1, 0, 10 * SEC},
		{101, "n1", "q", "cpu=1, gpu=2", 0x0c, 3, 0, 1, 0, 10 * SEC},
		{102, "n1", "q", "cpu=1, gpu=2", 0x30, 3, 0, 1, 0, 20 * SEC},
		{103, "n1", "q", "cpu=1, gpu=2", 0xc0, 7, 0, 1, 0, 30 * SEC},
	};
	Fx			fx = ev_build(nodes, 1, queues, 1, evq, 1, jobs, 1, NULL, 0, runs, 4);

	fx.r = tide_decide(fx.s);
	is_str(ev_victims(&fx), "101,102", "R-E4: the two priority-3 jobs go, not 5 or 7");
	is_int(fx.r->nnew_claims, 1, "the preemptor's replica is held");
	is_int((int64_t) fx.r->new_claims[0].gpus, 0x3c, "on GPUs 2-5, the ones freed");
	fx_free(&fx);

	/* an idle job goes first, then the most recently placed of equal priority */
	{
		EvRun		r2[] = {
			{100, "n1", "q", "cpu=1, gpu=2", 0x03, 5, 0, 1, 0, 10 * SEC},
			{101, "n1", "q", "cpu=1, gpu=2", 0x0c, 3, 0, 1, 0, 10 * SEC},
			{102, "n1", "q", "cpu=1, gpu=2", 0x30, 3, 0, 1, 0, 20 * SEC},
			{103, "n1", "q", "cpu=1, gpu=2", 0xc0, 9, 0, 0, 1, 30 * SEC},
		};

		fx = ev_build(nodes, 1, queues, 1, evq, 1, jobs, 1, NULL, 0, r2, 4);
		fx.r = tide_decide(fx.s);
		is_str(ev_victims(&fx), "102,103", "R-E4: idle first, then the most recently placed priority-3 job");
		fx_free(&fx);
	}
	/* fewest victims: a cheap victim that does not help is reprieved */
	{
		FxNode		two[] = {{"n1", "cpu=8, gpu=4"}, {"n2", "cpu=8, gpu=4"}};
		EvRun		r3[] = {
			{100, "n1", "q", "cpu=1, gpu=1", 0x1, 1, 0, 1},
			{101, "n1", "q", "cpu=1, gpu=3", 0xe, 9, 0, 0},
			{102, "n2", "q", "cpu=1, gpu=4", 0xf, 2, 0, 1},
		};

		fx = ev_build(two, 2, queues, 1, evq, 1, jobs, 1, NULL, 0, r3, 3);
		fx.r = tide_decide(fx.s);
		is_str(ev_victims(&fx), "102", "R-E4: only the job whose node then fits; the cheaper one is reprieved");
		is_str(fx.s->nodes[fx.r->new_claims[0].node].name, "n2", "held on n2");
		fx_free(&fx);
	}
}

/* R-E4 dry run: enough GPUs in sum but never on one node: evict nothing. */
static void
test_dry_run(void)
{
	FxNode		nodes[] = {{"n1", "cpu=8, gpu=8"}, {"n2", "cpu=8, gpu=8"}};
	FxQueue		queues[] = {{"q"}};
	EvQueue		evq[] = {{"q", 1, 1}};
	FxJob		jobs[] = {{1, "q", 10, 1, "cpu=1, gpu=8"}};
	EvRun		runs[] = {
		{100, "n1", "q", "cpu=1, gpu=4", 0x0f, 1, 0, 0},
		{101, "n1", "q", "cpu=1, gpu=4", 0xf0, 1, 0, 1},
		{102, "n2", "q", "cpu=1, gpu=4", 0x0f, 1, 0, 0},
		{103, "n2", "q", "cpu=1, gpu=4", 0xf0, 1, 0, 1},
	};
	Fx			fx = ev_build(nodes, 2, queues, 1, evq, 1, jobs, 1, NULL, 0, runs, 4);

	fx.r = tide_decide(fx.s);
	is_str(ev_victims(&fx), "", "R-E4: 8 GPUs free in sum after evicting, never 8 on one node: nothing evicted");
	is_int(fx.r->counters.jobs_evicted, 0, "counters: nobody evicted");
	is_int(fx.r->outcomes[0].evict_state, TIDE_EV_NONE, "the job just waits");
	fx_free(&fx);

	/* topology: a 4-GPU request wants one domain; evicting across domains is not needed */
	{
		FxNode		topo[] = {{"n1", "cpu=8, gpu=8", NULL, "0,0,0,0,1,1,1,1"}};
		FxJob		j4[] = {{1, "q", 10, 1, "cpu=1, gpu=4"}};
		EvRun		r2[] = {
			{100, "n1", "q", "cpu=1, gpu=2", 0x03, 1, 0, 1},
			{101, "n1", "q", "cpu=1, gpu=2", 0x0c, 2, 0, 1},
			{102, "n1", "q", "cpu=1, gpu=4", 0xf0, 3, 0, 1},
		};

		fx = ev_build(topo, 1, queues, 1, evq, 1, j4, 1, NULL, 0, r2, 3);
		fx.r = tide_decide(fx.s);
		is_str(ev_victims(&fx), "100,101", "R-E4: the two lowest free domain 0, the job gets GPUs 0-3");
		is_int((int64_t) fx.r->new_claims[0].gpus, 0x0f, "GPUs 0-3 held for it");
		fx_free(&fx);
	}
}

/* R-E4: min_runtime protects a job that just started; no ping-pong. */
static void
test_protection(void)
{
	FxNode		nodes[] = {{"n1", "cpu=8"}};
	FxQueue		queues[] = {{"q"}};
	FxJob		jobs[] = {{1, "q", 10, 1, "cpu=8"}};

	for (int i = 0; i < 2; i++)
	{
		EvQueue		evq[] = {{"q", 1, 1, 60 * SEC}};
		EvRun		runs[] = {{100, "n1", "q", "cpu=8", 0, 5, 0, 1, 0, i == 0 ? NOW - 10 * SEC : NOW - 120 * SEC}};
		Fx			fx = ev_build(nodes, 1, queues, 1, evq, 1, jobs, 1, NULL, 0, runs, 1);

		fx.r = tide_decide(fx.s);
		is_str(ev_victims(&fx), i == 0 ? "" : "100",
			   i == 0 ? "min_runtime 60s: started 10s ago, kept" : "min_runtime 60s: started 120s ago, evicted");
		fx_free(&fx);
	}

	/*
	 * Ping-pong: a guaranteed training job of a low-priority reclaimable
	 * queue would reclaim a borrowing inference job of a high-priority
	 * queue, which could then evict it back by R-E2.  Not done; done when
	 * the training job is not preemptable.
	 */
	for (int pre = 1; pre >= 0; pre--)
	{
		FxNode		gn[] = {{"n1", "cpu=8, gpu=8"}};
		FxQueue		q2[] = {{"train", "gpu=8", NULL, 10}, {"infer", NULL, NULL, 100}};
		EvQueue		evq[] = {{"train", 1}, {"infer", 1}};
		FxJob		tj[] = {{1, "train", 0, 1, "cpu=1, gpu=8"}};
		EvJob		evj[] = {{1, TIDE_SVC_TRAINING, pre}};
		EvRun		runs[] = {{100, "n1", "infer", "cpu=1, gpu=8", 0xff, 0, TIDE_SVC_INFERENCE, 1}};
		Fx			fx = ev_build(gn, 1, q2, 2, evq, 2, tj, 1, evj, 1, runs, 1);

		fx.r = tide_decide(fx.s);
		is_str(ev_victims(&fx), pre ? "" : "100",
			   pre ? "no ping-pong: the inference job could evict the preemptable training job back"
			   : "the training job cannot be evicted back: it reclaims");
		fx_free(&fx);
	}
}

/* R-E5: a gang is one victim; a draining node loses nothing; releasing jobs are not victims twice. */
static void
test_gang_and_draining(void)
{
	FxNode		nodes[] = {{"n1", "cpu=8, gpu=4"}, {"n2", "cpu=8, gpu=4"}};
	FxQueue		queues[] = {{"q"}};
	EvQueue		evq[] = {{"q", 1, 1}};
	FxJob		jobs[] = {{1, "q", 10, 1, "cpu=1, gpu=4"}};
	EvRun		gang[] = {
		{100, "n1", "q", "cpu=1, gpu=4", 0xf, 1, 0, 1},
		{100, "n2", "q", "cpu=1, gpu=4", 0xf, 1, 0, 1},
	};
	Fx			fx = ev_build(nodes, 2, queues, 1, evq, 1, jobs, 1, NULL, 0, gang, 2);

	fx.r = tide_decide(fx.s);
	is_str(ev_victims(&fx), "100", "R-E5: the gang (2 replicas on 2 nodes) is one victim, evicted whole");
	is_int(fx.r->nnew_claims, 1, "the preemptor's one replica is held");
	fx_free(&fx);

	{
		FxNode		dr[] = {{"n1", "cpu=8, gpu=4", .state = TIDE_NODE_DRAINING}, {"n2", "cpu=8, gpu=4"}};
		EvRun		r2[] = {
			{100, "n1", "q", "cpu=1, gpu=4", 0xf, 1, 0, 1},
			{101, "n2", "q", "cpu=1, gpu=4", 0xf, 5, 0, 1},
		};

		fx = ev_build(dr, 2, queues, 1, evq, 1, jobs, 1, NULL, 0, r2, 2);
		fx.r = tide_decide(fx.s);
		is_str(ev_victims(&fx), "101", "draining n1 loses nothing: the priority-5 job on n2 goes instead");
		fx_free(&fx);
	}
	{
		EvRun		r3[] = {
			{100, "n1", "q", "cpu=1, gpu=4", 0xf, 1, 0, 1, 0, 0, 1},
			{101, "n2", "q", "cpu=1, gpu=4", 0xf, 1, 0, 0},
		};

		fx = ev_build(nodes, 2, queues, 1, evq, 1, jobs, 1, NULL, 0, r3, 2);
		fx.r = tide_decide(fx.s);
		is_str(ev_victims(&fx), "", "a job already releasing is not evicted again");
		fx_free(&fx);
	}
}

/*
 * R-E6 across cycles: cycle 1 evicts for job 1; cycle 2 (victim still
 * releasing) the free part stays held for job 1, job 2 may not take it;
 * cycle 3 (victim gone) job 1 is placed there even though job 2 comes
 * first; cycle 4 a claim whose victims are gone and whose owner still
 * does not fit lapses.
 */
static void
test_claims(void)
{
	FxNode		nodes[] = {{"n1", "cpu=8, gpu=8"}};
	FxQueue		queues[] = {{"hi", "gpu=8", NULL, 100}, {"lo", "gpu=8"}};
	EvQueue		evq[] = {{"hi", 1}, {"lo", 1}};
	FxJob		p[] = {{1, "lo", 0, 1, "cpu=1, gpu=8"}};
	FxJob		both[] = {{1, "lo", 0, 1, "cpu=1, gpu=8"}, {2, "hi", 0, 2, "cpu=1, gpu=4"}};
	EvRun		idle[] = {{100, "n1", "hi", "cpu=1, gpu=4", 0xf0, 9, 0, 0, 1}};
	EvRun		releasing[] = {{100, "n1", "hi", "cpu=1, gpu=4", 0xf0, 9, 0, 0, 1, 0, 1}};
	int64_t		claim_res[8];
	TideClaim	claim;
	Fx			fx;

	/* cycle 1 */
	fx = ev_build(nodes, 1, queues, 2, evq, 2, p, 1, NULL, 0, idle, 1);
	fx.r = tide_decide(fx.s);
	is_str(ev_victims(&fx), "100", "cycle 1: the idle job is evicted for job 1");
	is_int(fx.r->nnew_claims, 1, "cycle 1: one claim");
	is_int((int64_t) fx.r->new_claims[0].gpus, 0xff, "cycle 1: all 8 GPUs held for job 1 (4 free, 4 freed)");
	memset(claim_res, 0, sizeof(claim_res));
	memcpy(claim_res, fx.r->new_claims[0].res, sizeof(int64_t) * fx.s->nres);
	claim = fx.r->new_claims[0];
	claim.res = claim_res;
	fx_free(&fx);

	/* cycle 2: the idle job is still stopping */
	fx = ev_build(nodes, 1, queues, 2, evq, 2, both, 2, NULL, 0, releasing, 1);
	claim.waiting = true;
	fx.s->claims = &claim;
	fx.s->nclaims = 1;
	fx.r = tide_decide(fx.s);
	is_int(fx_status(&fx, 2), TIDE_PENDING, "cycle 2: job 2 (first in the walk) may not take the 4 free GPUs");
	ok(strstr(fx_reason(&fx, 2), "held for job 1 (1 node)") != NULL, "cycle 2: job 2's reason: held for job 1 (%s)",
	   fx_reason(&fx, 2));
	is_int(fx.r->outcomes[fx_job(&fx, 1)].evict_state, TIDE_EV_WAITING, "cycle 2: job 1 waits");
	is_str(fx_reason(&fx, 1), "waiting for the jobs evicted for it to stop; their resources are held for it",
		   "cycle 2: its reason says why");
	is_str(ev_victims(&fx), "", "cycle 2: nothing more is evicted");
	fx_free(&fx);

	/* cycle 3: stopped */
	fx = ev_build(nodes, 1, queues, 2, evq, 2, both, 2, NULL, 0, NULL, 0);
	claim.waiting = false;
	fx.s->claims = &claim;
	fx.s->nclaims = 1;
	fx.r = tide_decide(fx.s);
	is_int(fx_status(&fx, 1), TIDE_PLACED, "cycle 3: job 1 is placed on what was held for it");
	is_int((int64_t) fx_gpus(&fx, 1, 0), 0xff, "cycle 3: on GPUs 0-7");
	is_int(fx_status(&fx, 2), TIDE_PENDING, "cycle 3: job 2, first in the walk, did not take them");
	fx_free(&fx);

	/* cycle 4: the owner does not fit (the node is draining): the claim lapses */
	{
		FxNode		dr[] = {{"n1", "cpu=8, gpu=8", .state = TIDE_NODE_DRAINING}};

		fx = ev_build(dr, 1, queues, 2, evq, 2, p, 1, NULL, 0, NULL, 0);
		fx.s->claims = &claim;
		fx.s->nclaims = 1;
		fx.r = tide_decide(fx.s);
		is_int(fx.r->outcomes[0].evict_state, TIDE_EV_LAPSED, "cycle 4: a claim that did not help lapses");
		fx_free(&fx);
	}
}

/* With evictions off (tide-sim's default), nothing is evicted. */
static void
test_off(void)
{
	FxNode		nodes[] = {{"n1", "cpu=8"}};
	FxQueue		queues[] = {{"q"}};
	EvQueue		evq[] = {{"q", 1, 1}};
	FxJob		jobs[] = {{1, "q", 10, 1, "cpu=8"}};
	EvRun		runs[] = {{100, "n1", "q", "cpu=8", 0, 5, 0, 1}};
	Fx			fx = ev_build(nodes, 1, queues, 1, evq, 1, jobs, 1, NULL, 0, runs, 1);

	fx.s->evict = false;
	fx.r = tide_decide(fx.s);
	is_int(fx.r->nevictions, 0, "snapshot evict off: no eviction");
	fx_free(&fx);
}

/* A 2 x 8-GPU gang placed last and four older 2-GPU jobs, on n1 to n3. */
static const EvRun gang_runs[] = {
	{100, "n1", "offline", "cpu=1, gpu=8", 0xff, 0, 0, 1, 0, NOW - 18 * SEC},
	{100, "n2", "offline", "cpu=1, gpu=8", 0xff, 0, 0, 1, 0, NOW - 18 * SEC},
	{101, "n3", "offline", "cpu=1, gpu=2", 0x03, 0, 0, 1, 0, NOW - 60 * SEC},
	{102, "n3", "offline", "cpu=1, gpu=2", 0x0c, 0, 0, 1, 0, NOW - 60 * SEC},
	{103, "n3", "offline", "cpu=1, gpu=2", 0x30, 0, 0, 1, 0, NOW - 70 * SEC},
	{104, "n3", "offline", "cpu=1, gpu=2", 0xc0, 0, 0, 1, 0, NOW - 70 * SEC},
};

/*
 * R-E4 least harm: the GPU-time thrown away, at least the restart cost per
 * GPU, then GPUs, then jobs, chosen across nodes.  Times in seconds (NOW
 * is 1000 s).
 */
static void
test_gpu_time(void)
{
	FxNode		nodes[] = {{"n1", "cpu=16, gpu=8"}, {"n2", "cpu=16, gpu=8"}, {"n3", "cpu=16, gpu=8"}};
	FxQueue		queues[] = {{"online", NULL, NULL, 100}, {"offline", NULL, NULL, 10}};
	EvQueue		evq[] = {{"online", 0}, {"offline", 1}};
	FxJob		j4[] = {{1, "online", 0, 1, "cpu=1, gpu=4"}};
	FxJob		j2[] = {{1, "online", 0, 1, "cpu=1, gpu=2"}};
	EvJob		evj[] = {{1, TIDE_SVC_INFERENCE, 0}};
	Fx			fx;

	/*
	 * A 2 x 8-GPU gang placed last (the old order's first victim: one job
	 * is enough) against older 2-GPU jobs: 16 x 18 = 288 GPU-seconds
	 * against 2 x 2 x 60 = 240: two small jobs go.  With a restart cost
	 * of 300 s per GPU, 4800 against 1200: the same.
	 */
	{
		for (int floor = 0; floor <= 300; floor += 300)
		{
			fx = ev_build(nodes, 3, queues, 2, evq, 2, j4, 1, evj, 1, gang_runs, 6);
			fx.s->restart_cost = floor * SEC;
			fx.r = tide_decide(fx.s);
			is_str(ev_victims(&fx), "101,102",
				   "least harm, restart cost %ds: two 2-GPU jobs go, not the 16-GPU gang that started last", floor);
			fx_free(&fx);
		}
	}

	/*
	 * Across nodes: each 1-GPU job of 70 s on n1 costs less than the
	 * 4-GPU job of 25 s on n2 (70 against 100 GPU-seconds), so greedy by
	 * harm frees n1 with four of them (280); the one on n2 is cheaper.
	 * With 120 s per GPU: 480 either way, one job rather than four.
	 */
	{
		EvRun		runs[] = {
			{100, "n1", "offline", "cpu=1, gpu=4", 0xf0, 0, 0, 0},
			{101, "n1", "offline", "cpu=1, gpu=1", 0x01, 0, 0, 1, 0, NOW - 70 * SEC},
			{102, "n1", "offline", "cpu=1, gpu=1", 0x02, 0, 0, 1, 0, NOW - 70 * SEC},
			{103, "n1", "offline", "cpu=1, gpu=1", 0x04, 0, 0, 1, 0, NOW - 70 * SEC},
			{104, "n1", "offline", "cpu=1, gpu=1", 0x08, 0, 0, 1, 0, NOW - 70 * SEC},
			{105, "n2", "offline", "cpu=1, gpu=4", 0x0f, 0, 0, 1, 0, NOW - 25 * SEC},
			{106, "n2", "offline", "cpu=1, gpu=4", 0xf0, 0, 0, 0},
			{107, "n3", "offline", "cpu=1, gpu=8", 0xff, 0, 0, 0},
		};

		for (int floor = 0; floor <= 120; floor += 120)
		{
			fx = ev_build(nodes, 3, queues, 2, evq, 2, j4, 1, evj, 1, runs, 8);
			fx.s->restart_cost = floor * SEC;
			fx.r = tide_decide(fx.s);
			is_str(ev_victims(&fx), "105", "across nodes, restart cost %ds: one 4-GPU job rather than four on n1",
				   floor);
			is_str(fx.s->nodes[fx.r->new_claims[0].node].name, "n2", "  held on n2");
			fx_free(&fx);
		}
	}

	/*
	 * The restart floor: two 1-GPU jobs of 2 s on n1 against one 1-GPU
	 * job of 20 s on n2 (one GPU free there).  No floor: 4 against 20;
	 * 5 s: 10 against 20; 15 s: 30 against 20, the older job goes.
	 */
	{
		EvRun		runs[] = {
			{100, "n1", "offline", "cpu=1, gpu=6", 0xfc, 0, 0, 0},
			{101, "n1", "offline", "cpu=1, gpu=1", 0x01, 0, 0, 1, 0, NOW - 2 * SEC},
			{102, "n1", "offline", "cpu=1, gpu=1", 0x02, 0, 0, 1, 0, NOW - 2 * SEC},
			{103, "n2", "offline", "cpu=1, gpu=6", 0x3f, 0, 0, 0},
			{104, "n2", "offline", "cpu=1, gpu=1", 0x80, 0, 0, 1, 0, NOW - 20 * SEC},
			{105, "n3", "offline", "cpu=1, gpu=8", 0xff, 0, 0, 0},
		};
		int			floors[] = {0, 5, 15};
		const char *want[] = {"101,102", "101,102", "104"};

		for (int i = 0; i < 3; i++)
		{
			fx = ev_build(nodes, 3, queues, 2, evq, 2, j2, 1, evj, 1, runs, 6);
			fx.s->restart_cost = floors[i] * SEC;
			fx.r = tide_decide(fx.s);
			is_str(ev_victims(&fx), want[i], "restart floor %ds: %s go", floors[i], want[i]);
			fx_free(&fx);
		}
	}

	/* ties: the same GPU-time (the floor) and GPUs: one job rather than two */
	{
		EvRun		runs[] = {
			{100, "n1", "offline", "cpu=1, gpu=6", 0xfc, 0, 0, 0},
			{101, "n1", "offline", "cpu=1, gpu=1", 0x01, 0, 0, 1, 0, NOW - 60 * SEC},
			{102, "n1", "offline", "cpu=1, gpu=1", 0x02, 0, 0, 1, 0, NOW - 60 * SEC},
			{103, "n2", "offline", "cpu=1, gpu=6", 0x3f, 0, 0, 0},
			{104, "n2", "offline", "cpu=1, gpu=2", 0xc0, 0, 0, 1, 0, NOW - 60 * SEC},
			{105, "n3", "offline", "cpu=1, gpu=8", 0xff, 0, 0, 0},
		};

		fx = ev_build(nodes, 3, queues, 2, evq, 2, j2, 1, evj, 1, runs, 6);
		fx.s->restart_cost = 300 * SEC;
		fx.r = tide_decide(fx.s);
		is_str(ev_victims(&fx), "104", "ties: 600 GPU-seconds and 2 GPUs either way: one job rather than two");
		fx_free(&fx);
	}
	/* ties: the same GPU-time, fewer GPUs: one GPU of 20 s rather than two of 10 s */
	{
		EvRun		runs[] = {
			{100, "n1", "offline", "cpu=1, gpu=6", 0xfc, 0, 0, 0},
			{101, "n1", "offline", "cpu=1, gpu=1", 0x01, 0, 0, 1, 0, NOW - 20 * SEC},
			{103, "n2", "offline", "cpu=1, gpu=6", 0x3f, 0, 0, 0},
			{104, "n2", "offline", "cpu=1, gpu=2", 0xc0, 0, 0, 1, 0, NOW - 10 * SEC},
			{105, "n3", "offline", "cpu=1, gpu=8", 0xff, 0, 0, 0},
		};

		fx = ev_build(nodes, 3, queues, 2, evq, 2, j2, 1, evj, 1, runs, 5);
		fx.r = tide_decide(fx.s);
		is_str(ev_victims(&fx), "101", "ties: 20 GPU-seconds either way: 1 GPU rather than 2");
		fx_free(&fx);
	}
}

/*
 * tide-sim's "before" (evict_legacy_order): R-E4 as it was, most recently
 * placed first and no per-node try.  One service (a job of "gpu=G") on
 * three 8-GPU nodes; victims without and with the flag.
 */
static void
legacy_case(const char *req, const EvRun *runs, int nr, const char *want[2], const char *what[2])
{
	FxNode		nodes[] = {{"n1", "cpu=16, gpu=8"}, {"n2", "cpu=16, gpu=8"}, {"n3", "cpu=16, gpu=8"}};
	FxQueue		queues[] = {{"online", NULL, NULL, 100}, {"offline", NULL, NULL, 10}};
	EvQueue		evq[] = {{"online", 0}, {"offline", 1}};
	FxJob		job[] = {{1, "online", 0, 1, req}};
	EvJob		evj[] = {{1, TIDE_SVC_INFERENCE, 0}};

	for (int legacy = 0; legacy <= 1; legacy++)
	{
		Fx			fx = ev_build(nodes, 3, queues, 2, evq, 2, job, 1, evj, 1, runs, nr);

		fx.s->evict_legacy_order = legacy;
		fx.r = tide_decide(fx.s);
		is_str(ev_victims(&fx), want[legacy], "%s: %s", legacy ? "legacy order" : "least harm",
			   what[legacy]);
		fx_free(&fx);
	}
}

static void
test_legacy_order(void)
{
	/*
	 * One node with preemptable jobs: a 2-GPU job of 60 s (120
	 * GPU-seconds) and a 4-GPU job of 50 s (200), for a 2-GPU service.
	 */
	EvRun		one[] = {
		{90, "n1", "offline", "cpu=1, gpu=8", 0xff, 0, 0, 0},
		{91, "n2", "offline", "cpu=1, gpu=8", 0xff, 0, 0, 0},
		{92, "n3", "offline", "cpu=1, gpu=2", 0x03, 0, 0, 0},
		{101, "n3", "offline", "cpu=1, gpu=2", 0x0c, 0, 0, 1, 0, NOW - 60 * SEC},
		{103, "n3", "offline", "cpu=1, gpu=4", 0xf0, 0, 0, 1, 0, NOW - 50 * SEC},
	};

	legacy_case("cpu=1, gpu=4", gang_runs, 6, (const char *[]) {"101,102", "100"},
				(const char *[]) {"two 2-GPU jobs go", "the gang placed last goes (one job is enough)"});
	legacy_case("cpu=1, gpu=2", one, 5, (const char *[]) {"101", "103"},
				(const char *[]) {"the 2-GPU job of 120 GPU-seconds goes",
				"the job placed last goes, 4 GPUs for a 2-GPU service"});
}

int
main(void)
{
	test_seed002_table();
	test_reclaim_table();
	test_idle_yield();
	test_in_queue();
	test_least_harm();
	test_dry_run();
	test_protection();
	test_gang_and_draining();
	test_claims();
	test_gpu_time();
	test_legacy_order();
	test_off();
	return done_testing();
}
