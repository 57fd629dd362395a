/*
 * test_engine_seeds.c: seed 000's scenarios at engine level, with the
 * seed's own names and numbers (R-O1..R-O3, R-L1, R-L2).
 * Jobs are named by id: A=1, B=2, C=3, D=4, E=5, F=6; times in hours.
 */
#include "tap.h"
#include "test_engine_fixture.h"

enum
{
	A = 1, B, C, D, E, F, A1 = 11
};

static const FxQueue Q1[] = {{"q"}};

/* Seed 000's ordering table: A9/10h, B9/11h, C2/10h non-idle, D4/10h, E4/11h, F2/10h idle (R-O1, R-O2). */
static void
test_ordering_table(void)
{
	FxNode		nodes[] = {{"n1", "cpu=64, memory=128Gi"}};
	FxJob		jobs[] = {
		{F, "q", 2, 10, "cpu=1", .idle = 1},
		{E, "q", 4, 11, "cpu=1", .idle = 1},
		{C, "q", 2, 10, "cpu=1"},
		{D, "q", 4, 10, "cpu=1", .idle = 1},
		{B, "q", 9, 11, "cpu=1"},
		{A, "q", 9, 10, "cpu=1"},
	};
	Fx			fx;

	fx_build(&fx, nodes, 1, Q1, 1, jobs, 6, NULL, 0);
	fx.r = tide_decide(fx.s);
	is_str(fx_walk(&fx), "1,2,3,4,5,6", "R-O1/R-O2 seed 000 table: A B C D E F");
	is_int(fx.r->counters.jobs_placed, 6, "all six fit and are placed");
	fx_free(&fx);

	/* room for one: non-idle C (priority 2) beats idle D (priority 4) */
	{
		FxNode		small[] = {{"n1", "cpu=1, memory=2Gi"}};
		FxJob		cd[] = {
			{D, "q", 4, 10, "cpu=1", .idle = 1},
			{C, "q", 2, 10, "cpu=1"},
		};

		fx_build(&fx, small, 1, Q1, 1, cd, 2, NULL, 0);
		fx.r = tide_decide(fx.s);
		is_int(fx_status(&fx, C), TIDE_PLACED, "R-O2: non-idle C (prio 2) gets the only slot");
		is_int(fx_status(&fx, D), TIDE_PENDING, "R-O2: idle D (prio 4) waits");
		fx_free(&fx);
	}
}

/* Small job first: A 8c16g earlier, B 4c8g later, 4c8g free: B runs (R-L1). */
static void
test_small_job_first(void)
{
	FxNode		nodes[] = {{"n1", "cpu=8, memory=16Gi"}};
	FxRun		runs[] = {{"n1", "q", "cpu=4, memory=8Gi"}};
	FxJob		jobs[] = {
		{A, "q", 0, 10, "cpu=8, memory=16Gi"},
		{B, "q", 0, 11, "cpu=4, memory=8Gi"},
	};
	Fx			fx;

	/* 10:00: 1c2g free, both wait */
	{
		FxRun		busy[] = {{"n1", "q", "cpu=7, memory=14Gi"}};

		fx_build(&fx, nodes, 1, Q1, 1, jobs, 2, busy, 1);
		fx.r = tide_decide(fx.s);
		is_str(fx_placed(&fx), "", "10:00 1c2g free: A and B wait");
		fx_free(&fx);
	}
	fx_build(&fx, nodes, 1, Q1, 1, jobs, 2, runs, 1);
	fx.r = tide_decide(fx.s);
	is_int(fx_status(&fx, A), TIDE_PENDING, "11:00 4c8g free: A (8c16g) waits");
	is_int(fx_status(&fx, B), TIDE_PLACED, "11:00 4c8g free: B (4c8g) runs before A (R-L1)");
	is_str(fx_reason(&fx, A), "no ready node has room for cpu=8, memory=16Gi (1 node: short of cpu on 1, memory on 1)",
		   "A's reason names the shortage with numbers (R-C2)");
	fx_free(&fx);
}

/*
 * Seed 000's reservation timeline (R-L2).  The queue's free resources are
 * modelled as the free part of node n1 (8c16g): a filler allocation takes
 * the rest.  A 4c8g prio 6, B 1c2g prio 4, C 2c4g prio 4, D 1c2g prio 2.
 */
typedef struct Step
{
	const char *filler;
	int			b_running;
	int			a_running;
	int			a_reserve;
} Step;

static Fx
timeline(const Step *st, int64_t filler_end, int64_t d_limit)
{
	FxNode		nodes[] = {{"n1", "cpu=8, memory=16Gi"}};
	FxJob		all[] = {
		{A, "q", 6, 10, "cpu=4, memory=8Gi", .reserve = st->a_reserve},
		{B, "q", 4, 10, "cpu=1, memory=2Gi"},
		{C, "q", 4, 10, "cpu=2, memory=4Gi"},
		{D, "q", 2, 10, "cpu=1, memory=2Gi", .time_limit = d_limit},
	};
	FxJob		jobs[4];
	FxRun		runs[3];
	int			nj = 0,
				nr = 0;
	Fx			fx;

	for (int i = 0; i < 4; i++)
	{
		if ((all[i].id == A && st->a_running) || (all[i].id == B && st->b_running))
			continue;
		jobs[nj++] = all[i];
	}
	runs[nr++] = (FxRun) {"n1", "q", st->filler, .end_at = filler_end};
	if (st->b_running)
		runs[nr++] = (FxRun) {"n1", "q", "cpu=1, memory=2Gi"};
	if (st->a_running)
		runs[nr++] = (FxRun) {"n1", "q", "cpu=4, memory=8Gi"};
	fx_build(&fx, nodes, 1, Q1, 1, jobs, nj, runs, nr);
	fx.s->now = 1000;
	fx.r = tide_decide(fx.s);
	return fx;
}

static void
test_reservation_timeline(void)
{
	Fx			fx;
	Step		s1000 = {"cpu=8, memory=16Gi", 0, 0, 0};
	Step		s1100 = {"cpu=7, memory=14Gi", 0, 0, 0};
	Step		s1105 = {"cpu=7, memory=14Gi", 1, 0, 1};
	Step		s1110 = {"cpu=5, memory=10Gi", 1, 0, 1};
	Step		s1115 = {"cpu=3, memory=6Gi", 1, 0, 1};
	Step		s1120 = {"cpu=2, memory=4Gi", 1, 1, 1};

	fx = timeline(&s1000, 0, 0);
	is_str(fx_placed(&fx), "", "10:00 queue free 0: A, B, C, D all wait");
	fx_free(&fx);

	fx = timeline(&s1100, 0, 0);
	is_str(fx_placed(&fx), "2", "11:00 free 1c2g: A cannot fit, lower-priority B is placed");
	is_int(fx_status(&fx, C), TIDE_PENDING, "11:00: C waits");
	is_int(fx_status(&fx, D), TIDE_PENDING, "11:00: D waits (B took the 1c2g)");
	fx_free(&fx);

	fx = timeline(&s1105, 0, 0);
	is_str(fx_placed(&fx), "", "11:05 A reserves, free 0: A, C, D wait");
	fx_free(&fx);

	fx = timeline(&s1110, 0, 0);
	is_str(fx_placed(&fx), "", "11:10 free 2c4g: held for A, C is not placed");
	ok(strstr(fx_reason(&fx, C), "held for job 1") != NULL, "C's reason says held for job 1: %s", fx_reason(&fx, C));
	ok(strstr(fx_reason(&fx, D), "held for job 1") != NULL, "D's reason says held for job 1");
	ok(fx.r->nholds >= 1, "a hold is reported");
	{
		int			found = 0;

		for (int i = 0; i < fx.r->nholds; i++)
			if (fx.r->holds[i].node == 0 &&
				fx.r->holds[i].res[TIDE_RES_CPU] == 2000)
				found = 1;
		ok(found, "the hold on n1 is the 2 free cpus");
	}
	fx_free(&fx);

	fx = timeline(&s1115, 0, 0);
	is_str(fx_placed(&fx), "1", "11:15 free 4c8g: A is placed at last; C and D wait");
	fx_free(&fx);

	fx = timeline(&s1120, 0, 0);
	is_str(fx_placed(&fx), "4", "11:20 free 1c2g: C (prio 4) waits, D (prio 2) is placed");
	is_int(fx_status(&fx, C), TIDE_PENDING, "11:20: C still waits");
	fx_free(&fx);

	/* EASY backfill: the filler ends at t=1000+3600; A's shadow is then */
	fx = timeline(&s1110, 1000 + 3600, 1800);
	is_int(fx_status(&fx, D), TIDE_PLACED, "R-L2 EASY: D with time_limit 30 min ends before A's start, uses held resources");
	is_int(fx_status(&fx, C), TIDE_PENDING, "R-L2 EASY: C without time_limit still waits");
	fx_free(&fx);
	fx = timeline(&s1110, 1000 + 3600, 7200);
	is_int(fx_status(&fx, D), TIDE_PENDING, "R-L2 EASY: D with time_limit 2 h would delay A: waits");
	fx_free(&fx);
	fx = timeline(&s1110, 0, 1800);
	is_int(fx_status(&fx, D), TIDE_PENDING, "R-L2 EASY: unknown end of the running job: no backfill");
	fx_free(&fx);
}

/*
 * The same timeline with the queue's free resources as its capability
 * (8c16g) on a big node: at 11:10 A holds the queue's headroom (R-L2).
 */
static void
test_reservation_queue_headroom(void)
{
	FxNode		nodes[] = {{"big", "cpu=64, memory=128Gi"}};
	FxQueue		q[] = {{"q", NULL, "cpu=8, memory=16Gi"}};
	FxRun		runs[] = {{"big", "q", "cpu=6, memory=12Gi"}};	/* B 1c2g and the rest */
	FxJob		jobs[] = {
		{A, "q", 6, 10, "cpu=4, memory=8Gi", .reserve = 1},
		{C, "q", 4, 10, "cpu=2, memory=4Gi"},
		{D, "q", 2, 10, "cpu=1, memory=2Gi"},
	};
	Fx			fx;

	fx_build(&fx, nodes, 1, q, 1, jobs, 3, runs, 1);
	fx.r = tide_decide(fx.s);
	is_str(fx_placed(&fx), "", "11:10 queue headroom 2c4g: held for A, neither C nor D is placed");
	is_str(fx_reason(&fx, C), "queue q cpu held for job 1: 10 used and held + 2 asked > 8; "
		   "queue q memory held for job 1: 20Gi used and held + 4Gi asked > 16Gi",
		   "C's reason: the queue's headroom is held for A, with numbers");
	is_str(fx_reason(&fx, A), "queue q cpu capability: 6 used + 4 asked > 8; queue q memory capability: 12Gi used + 8Gi asked > 16Gi",
		   "A's own reason: the capability");
	fx_free(&fx);
}

/* Retry lane (R-O3): A interrupted, its retry A1 runs ahead of B. */
static void
test_retry_lane(void)
{
	FxNode		nodes[] = {{"n1", "cpu=4, memory=8Gi"}};
	FxRun		runs[] = {{"n1", "q", "cpu=2, memory=4Gi"}};	/* the rest of the queue */
	FxJob		jobs[] = {
		{B, "q", 0, 10, "cpu=2, memory=4Gi"},
		{A1, "q", 0, 11, "cpu=2, memory=4Gi", .retry = 1},
	};
	Fx			fx;

	fx_build(&fx, nodes, 1, Q1, 1, jobs, 2, runs, 1);
	fx.r = tide_decide(fx.s);
	is_int(fx_status(&fx, A1), TIDE_PLACED, "11:00 retry job A1 gets the freed 2c4g");
	is_int(fx_status(&fx, B), TIDE_PENDING, "11:00 B (created earlier, same priority) keeps waiting");
	fx_free(&fx);

	/* even against a much higher priority normal job */
	{
		FxJob		hi[] = {
			{B, "q", 100, 10, "cpu=2, memory=4Gi"},
			{A1, "q", 0, 11, "cpu=2, memory=4Gi", .retry = 1},
		};

		fx_build(&fx, nodes, 1, Q1, 1, hi, 2, runs, 1);
		fx.r = tide_decide(fx.s);
		is_int(fx_status(&fx, A1), TIDE_PLACED, "R-O3: the retry job wins whatever the normal job's priority");
		fx_free(&fx);
	}

	/* idle retry: ahead of idle jobs of the whole group */
	{
		FxQueue		qs[] = {{"q1"}, {"q2", .priority = 10}};
		FxJob		idle[] = {
			{B, "q2", 9, 10, "cpu=2", .idle = 1},
			{A1, "q1", 0, 11, "cpu=2", .idle = 1, .retry = 1},
		};

		fx_build(&fx, nodes, 1, qs, 2, idle, 2, runs, 1);
		fx.r = tide_decide(fx.s);
		is_int(fx_status(&fx, A1), TIDE_PLACED, "R-O3: idle retry job goes ahead of the group's idle jobs");
		is_int(fx_status(&fx, B), TIDE_PENDING, "R-O3: the other queue's idle job waits");
		fx_free(&fx);
	}

	/* non-idle retry: only ahead of its own queue */
	{
		FxQueue		qs[] = {{"q1"}, {"q2", .priority = 10}};
		FxJob		ni[] = {
			{B, "q2", 0, 10, "cpu=2"},
			{A1, "q1", 0, 11, "cpu=2", .retry = 1},
		};

		fx_build(&fx, nodes, 1, qs, 2, ni, 2, runs, 1);
		fx.r = tide_decide(fx.s);
		is_int(fx_status(&fx, B), TIDE_PLACED, "R-O3/R-O4: a non-idle retry job does not jump other queues");
		is_int(fx_status(&fx, A1), TIDE_PENDING, "R-O3: q1's retry job waits for q2's higher queue priority");
		fx_free(&fx);
	}
}

int
main(void)
{
	test_ordering_table();
	test_small_job_first();
	test_reservation_timeline();
	test_reservation_queue_headroom();
	test_retry_lane();
	return done_testing();
}
