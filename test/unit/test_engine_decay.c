/*
 * test_engine_decay.c: fair share over time (R-O6, src/engine/share.c).
 *
 * The decay factor (half at one half-life, none with no half-life, none
 * lost when the clock does not move), the average kept by
 * tide_fair_decay() (D := f D + (1 - f) U: the average of a constant
 * usage converges to it; two steps equal one over their sum, so cycles
 * may come at any pace), and the walk's order (R-O4): with no half-life
 * exactly the usage now; with one, the average plus what the walk placed,
 * so a queue that used much lately goes after one that did not, and the
 * walk still moves on between queues as they fill.
 */
#include <math.h>

#include "tap.h"
#include "test_engine_fixture.h"
#include "share.h"

#define HOUR	(3600LL * 1000000LL)
#define DAY		(24 * HOUR)

static int
near(double got, double want, double eps, const char *what)
{
	if (fabs(got - want) <= eps)
		return ok(1, "%s", what);
	diag("got %.9g, want %.9g", got, want);
	return ok(0, "%s", what);
}

static void
test_factor(void)
{
	near(tide_decay_factor(DAY, DAY), 0.5, 1e-12, "R-O6: one half-life keeps half");
	near(tide_decay_factor(2 * DAY, DAY), 0.25, 1e-12, "two half-lives keep a quarter");
	near(tide_decay_factor(HOUR, 7 * DAY), pow(2.0, -1.0 / 168.0), 1e-12, "an hour of a week's half-life");
	is_int((int64_t) tide_decay_factor(DAY, 0), 0, "no half-life keeps nothing (the usage now)");
	near(tide_decay_factor(0, DAY), 1.0, 0, "no time passed: nothing decays");
	near(tide_decay_factor(-HOUR, DAY), 1.0, 0, "the clock went back: nothing decays");
	ok(tide_decay_factor(INT64_MAX / 2, 1) == 0.0, "a gap of many half-lives keeps nothing, no overflow");
}

/* One queue "q" (quota gpu=8) holding gpu=4 on n1. */
static void
one_queue(Fx *fx)
{
	static const FxNode nodes[] = {{"n1", "cpu=64, gpu=8"}};
	static const FxQueue queues[] = {{"q", "gpu=8"}};
	static const FxRun runs[] = {{"n1", "q", "gpu=4", 0xF}};

	fx_build(fx, nodes, 1, queues, 1, NULL, 0, runs, 1);
}

static void
test_average(void)
{
	Fx			fx;
	TideQueue  *q;

	one_queue(&fx);
	q = &fx.s->queues[0];
	fx.s->half_life = DAY;
	fx.s->now = 100 * DAY;
	tide_fair_decay(fx.s);
	is_int(q->decayed_at, 100 * DAY, "a queue without history starts now");
	near(q->decayed[TIDE_RES_GPU], 0, 0, "from zero (a new queue)");
	fx.s->now += DAY;
	tide_fair_decay(fx.s);
	near(q->decayed[TIDE_RES_GPU], 2000, 1e-9, "after one half-life at gpu=4: gpu=2 (half of it)");
	tide_fair_decay(fx.s);
	near(q->decayed[TIDE_RES_GPU], 2000, 0, "called again at the same time: unchanged");
	fx.s->now += 60 * DAY;
	tide_fair_decay(fx.s);
	near(q->decayed[TIDE_RES_GPU], 4000, 1e-6, "after many half-lives: the usage itself");
	fx_free(&fx);

	/* two steps equal one over their sum (the pace of cycles does not matter) */
	{
		Fx			a,
					b;

		one_queue(&a);
		one_queue(&b);
		a.s->half_life = b.s->half_life = 7 * DAY;
		a.s->queues[0].decayed[TIDE_RES_GPU] = b.s->queues[0].decayed[TIDE_RES_GPU] = 7000;
		a.s->queues[0].decayed_at = b.s->queues[0].decayed_at = 0;
		a.s->now = 3 * HOUR;
		tide_fair_decay(a.s);
		a.s->now = 3 * HOUR + 41 * HOUR;
		tide_fair_decay(a.s);
		b.s->now = 44 * HOUR;
		tide_fair_decay(b.s);
		near(a.s->queues[0].decayed[TIDE_RES_GPU], b.s->queues[0].decayed[TIDE_RES_GPU], 1e-9,
			 "3 h then 41 h decay as 44 h at once");
		near(b.s->queues[0].decayed[TIDE_RES_GPU],
			 4000 + 3000 * pow(2.0, -44.0 / 168.0), 1e-9, "D = U + (D0 - U) 2^(-dt/h)");
		fx_free(&a);
		fx_free(&b);
	}

	/* no half-life: the average is the usage now, whatever it was */
	one_queue(&fx);
	fx.s->queues[0].decayed[TIDE_RES_GPU] = 123456;
	fx.s->now = DAY;
	tide_fair_decay(fx.s);
	near(fx.s->queues[0].decayed[TIDE_RES_GPU], 4000, 0, "half-life 0: D = U");
	fx_free(&fx);
}

/*
 * Queues a and b, equal priority and quota gpu=4, nothing running; one
 * node of gpu=1: the walk's first job is the one placed.
 */
static const FxNode one_gpu[] = {{"n1", "cpu=64, gpu=1"}};
static const FxQueue ab[] = {{"a", "gpu=4"}, {"b", "gpu=4"}};
static const FxJob ab_jobs[] = {
	{1, "a", 0, 10, "gpu=1"},
	{2, "b", 0, 20, "gpu=1"},
};

static const char *
first_placed(int64_t half_life, double decayed_a, double decayed_b, int64_t since)
{
	static char buf[64];
	Fx			fx;

	fx_build(&fx, one_gpu, 1, ab, 2, ab_jobs, 2, NULL, 0);
	fx.s->half_life = half_life;
	fx.s->now = 10 * DAY;
	fx.s->queues[0].decayed[TIDE_RES_GPU] = decayed_a;
	fx.s->queues[1].decayed[TIDE_RES_GPU] = decayed_b;
	fx.s->queues[0].decayed_at = fx.s->queues[1].decayed_at = 10 * DAY - since;
	fx.r = tide_decide(fx.s);
	snprintf(buf, sizeof(buf), "%s", fx_placed(&fx));
	fx_free(&fx);
	return buf;
}

static void
test_order(void)
{
	is_str(first_placed(0, 4000, 0, 0), "1", "R-O4, half-life 0: equal usage now, a by name (history ignored)");
	is_str(first_placed(DAY, 4000, 0, 0), "2", "R-O6: a used its whole quota lately, b goes first");
	is_str(first_placed(DAY, 4000, 3000, 0), "2", "the lower average goes first");
	is_str(first_placed(DAY, 3000, 4000, 0), "1", "and the other way round");

	/*
	 * The order flips as usage decays: a used its whole quota lately but
	 * holds nothing now, b used a quarter lately and holds gpu=3 now (on
	 * n2).  Averages 4 and 1: b first; two half-lives later a's is 1, b's
	 * 2.5: a first.
	 */
	{
		static const FxNode nodes[] = {{"n1", "cpu=64, gpu=1"}, {"n2", "cpu=64, gpu=3"}};
		static const FxRun runs[] = {{"n2", "b", "gpu=3", 0x7}};
		const int64_t since[] = {0, HOUR, 2 * DAY};
		const char *want[] = {"2", "2", "1"};
		const char *what[] = {"averages 4 and 1: b first", "an hour later: still b",
		"two half-lives later (1 and 2.5): a first"};

		for (int k = 0; k < 3; k++)
		{
			Fx			fx;

			fx_build(&fx, nodes, 2, ab, 2, ab_jobs, 2, runs, 1);
			fx.s->half_life = DAY;
			fx.s->now = 10 * DAY;
			fx.s->queues[0].decayed[TIDE_RES_GPU] = 4000;
			fx.s->queues[1].decayed[TIDE_RES_GPU] = 1000;
			fx.s->queues[0].decayed_at = fx.s->queues[1].decayed_at = 10 * DAY - since[k];
			fx.r = tide_decide(fx.s);
			is_str(fx_placed(&fx), want[k], "R-O6 flip: %s", what[k]);
			fx_free(&fx);
		}
	}

	/* what the walk placed counts on top of the average */
	{
		static const FxNode two_gpu[] = {{"n1", "cpu=64, gpu=2"}};
		static const FxJob jobs[] = {
			{1, "a", 0, 10, "gpu=1"},
			{2, "a", 0, 11, "gpu=1"},
			{3, "b", 0, 20, "gpu=1"},
		};
		Fx			fx;

		fx_build(&fx, two_gpu, 1, ab, 2, jobs, 3, NULL, 0);
		fx.s->half_life = DAY;
		fx.s->now = DAY;
		fx.s->queues[0].decayed_at = fx.s->queues[1].decayed_at = DAY;
		fx.s->queues[1].decayed[TIDE_RES_GPU] = 750;	/* b: share 0.1875 */
		fx.r = tide_decide(fx.s);
		is_str(fx_placed(&fx), "1,3", "a (0) places one job (0.25), then b (0.1875) goes before a's second");
		is_str(fx_walk(&fx), "1,3,2", "the walk: a, b, a");
		near(fx.s->queues[1].decayed[TIDE_RES_GPU], 750, 0, "the walk does not change the average");
		fx_free(&fx);
	}
}

/* With half-life 0 the history in the snapshot changes nothing (random). */
static void
test_zero_same(void)
{
	static const FxNode nodes[] = {{"n1", "cpu=64, gpu=8"}, {"n2", "cpu=64, gpu=8"}};
	static const FxQueue queues[] = {{"a", "gpu=4"}, {"b", "gpu=6"}, {"c", "gpu=2"}, {"d", NULL}};
	FxJob		jobs[40];
	char		walk0[512];
	unsigned	seed = 7;
	const char *qn[] = {"a", "b", "c", "d"};
	const char *rq[] = {"gpu=1", "gpu=2", "gpu=0.5", "gpu=4"};
	Fx			fx;

	for (int i = 0; i < 40; i++)
	{
		seed = seed * 1103515245 + 12345;
		jobs[i] = (FxJob) {i + 1, qn[(seed >> 16) % 4], (int) ((seed >> 8) % 3), i, rq[(seed >> 20) % 4]};
	}
	fx_build(&fx, nodes, 2, queues, 4, jobs, 40, NULL, 0);
	fx.r = tide_decide(fx.s);
	snprintf(walk0, sizeof(walk0), "%s", fx_walk(&fx));
	fx_free(&fx);

	fx_build(&fx, nodes, 2, queues, 4, jobs, 40, NULL, 0);
	for (int q = 0; q < 4; q++)
	{
		fx.s->queues[q].decayed[TIDE_RES_GPU] = 1000.0 * (q * 3 + 1);
		fx.s->queues[q].decayed_at = 0;
	}
	fx.s->now = HOUR;
	fx.r = tide_decide(fx.s);
	is_str(fx_walk(&fx), walk0, "half-life 0 with any history: the same walk as without");
	fx_free(&fx);
}

int
main(void)
{
	test_factor();
	test_average();
	test_order();
	test_zero_same();
	return done_testing();
}
