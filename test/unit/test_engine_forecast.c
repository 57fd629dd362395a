/*
 * test_engine_forecast.c: tide_forecast() (src/engine/forecast.c), the
 * engine's decide stepped from one end time to the next.
 *
 * A job starts when the running job whose place it needs ends by its time
 * limit, the next one when that job's own limit has passed; a job past its
 * limit (end before now) ends now; behind a job without a limit the start
 * is unknown and that job is named, by group; stop_id stops early with the
 * same answer for that job; a job no node could hold is unschedulable.
 */
#include "tap.h"
#include "test_engine_fixture.h"
#include "forecast.h"

#define HOUR	(3600LL * 1000000LL)
#define NOW		(1000 * HOUR)

static const FxNode nodes[] = {{"n1", "cpu=64, gpu=8"}, {"n2", "cpu=64, gpu=8"}};
static const FxQueue queues[] = {{"q", "gpu=16"}};

static int
job_of(const TideForecast *f, int64_t id)
{
	for (int j = 0; j < f->njobs; j++)
		if (f->job_id[j] == id)
			return j;
	return -1;
}

static int64_t
start_of(const TideForecast *f, int64_t id)
{
	int			j = job_of(f, id);

	return j < 0 ? -1 : f->start[j];
}

/* n1 until now + 1h, n2 until now + 2h; three 8-GPU jobs with limits. */
static void
test_chain(int64_t stop)
{
	static const FxRun runs[] = {{"n1", "q", "gpu=8", 0xFF, 0, 0, NOW + HOUR},
	{"n2", "q", "gpu=8", 0xFF, 0, 0, NOW + 2 * HOUR}};
	static const FxJob jobs[] = {{1, "q", 0, 1, "gpu=8", .time_limit = 3 * HOUR},
	{2, "q", 0, 2, "gpu=8", .time_limit = HOUR},
	{3, "q", 0, 3, "gpu=8", .time_limit = HOUR}};
	Fx			fx;
	TideForecast *f;

	fx_build(&fx, nodes, 2, queues, 1, jobs, 3, runs, 2);
	fx.s->now = NOW;
	f = tide_forecast(fx.s, stop, false);
	if (stop == 0)
	{
		is_int(start_of(f, 1), NOW + HOUR, "the first job starts when n1's job ends");
		is_int(start_of(f, 2), NOW + 2 * HOUR, "the second when n2's does");
		is_int(start_of(f, 3), NOW + 3 * HOUR, "the third when the second's own limit ends");
		is_int(f->how[job_of(f, 3)], TIDE_FC_PLACED, "every job placed");
		ok(f->nsteps >= 4, "one decide per end time (%d)", f->nsteps);
	}
	else
	{
		is_int(start_of(f, 2), NOW + 2 * HOUR, "stopped at job 2: the same start");
		is_int(f->how[job_of(f, 3)], TIDE_FC_NOT_ASKED, "and the job after it is not answered");
	}
	fx_free(&fx);
}

/* A job past its limit ends now, not in the past and not never. */
static void
test_past_limit(void)
{
	static const FxRun runs[] = {{"n1", "q", "gpu=8", 0xFF, 0, 0, NOW - HOUR},
	{"n2", "q", "gpu=8", 0xFF, 0, 0, NOW + HOUR}};
	static const FxJob jobs[] = {{1, "q", 0, 1, "gpu=8", .time_limit = HOUR}};
	Fx			fx;
	TideForecast *f;

	fx_build(&fx, nodes, 2, queues, 1, jobs, 1, runs, 2);
	fx.s->now = NOW;
	f = tide_forecast(fx.s, 0, false);
	is_int(start_of(f, 1), NOW, "a blocker past its limit ends now: the job starts now");
	fx_free(&fx);
}

/* Behind jobs without a limit: unknown, naming them. */
static void
test_unknown(void)
{
	static const FxRun runs[] = {{"n1", "q", "gpu=8", 0xFF, 0, 0, 0},
	{"n2", "q", "gpu=8", 0xFF, 0, 0, NOW + HOUR}};
	static const FxJob jobs[] = {{1, "q", 0, 1, "gpu=8"}, {2, "q", 0, 2, "gpu=8", .time_limit = HOUR},
	{3, "q", 0, 3, "gpu=16"}};
	Fx			fx;
	TideForecast *f;
	const int64_t *ids;
	int			n;

	fx_build(&fx, nodes, 2, queues, 1, jobs, 3, runs, 2);
	fx.s->now = NOW;
	f = tide_forecast(fx.s, 0, false);
	is_int(start_of(f, 1), NOW + HOUR, "the first job (no limit) starts at n2's end");
	is_int(f->how[job_of(f, 2)], TIDE_FC_UNKNOWN, "the second waits on jobs without a limit");
	n = tide_forecast_blockers(f, job_of(f, 2), &ids);
	is_int(n, 2, "two of them");
	if (n == 2)
	{
		is_int(ids[0], 1, "the first job, started without a limit");
		is_int(ids[1], 1000, "and the running one on n1");
	}
	is_int(f->how[job_of(f, 3)], TIDE_FC_UNSCHEDULABLE, "16 GPUs on 8-GPU nodes: unschedulable");
	fx_free(&fx);
}

int
main(void)
{
	test_chain(0);
	test_chain(2);
	test_past_limit();
	test_unknown();
	return done_testing();
}
