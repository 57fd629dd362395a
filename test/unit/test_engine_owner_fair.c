/*
 * test_engine_owner_fair.c: owners within a queue (R-O7) at engine level.
 * A queue with owner_fair takes the head, among its owners' heads, with
 * (retry lane, higher priority, lower owner share, earlier created_at,
 * smaller id); the owner share is its decayed usage in the queue (the
 * usage now with half-life 0) plus what the walk placed, over the quota.
 * Hand-built cases, then random queues against a brute-force choice, and
 * off by default: the walk is R-O3, R-O1 exactly.
 */
#include "tap.h"
#include "test_engine_fixture.h"

#define SEC 1000000LL

static const char *const owner_names[] = {"alice", "bob", "carol", "dave", "erin"};

/* Owners of the jobs (owners[i] for the i-th), the queue's owner_fair set. */
static void
fair(Fx *fx, const int *owners, int n)
{
	fx->s->owner_names = owner_names;
	fx->s->nowners = 5;
	fx->s->queues[0].owner_fair = true;
	for (int i = 0; i < n && i < fx->s->njobs; i++)
		fx->s->jobs[i].owner = owners[i];
}

static void
test_alternate(void)
{
	FxNode		nodes[] = {{"n1", "cpu=32, gpu=8"}};
	FxQueue		queues[] = {{"q", "gpu=8"}};
	FxJob		jobs[12];
	int			owners[12];
	Fx			fx;

	/* alice submitted nine jobs before bob's three */
	for (int i = 0; i < 12; i++)
	{
		jobs[i] = (FxJob) {i < 9 ? 1 + i : 101 + (i - 9), "q", 0, i, "cpu=1, gpu=1"};
		owners[i] = i < 9 ? 0 : 1;
	}
	fx_build(&fx, nodes, 1, queues, 1, jobs, 12, NULL, 0);
	fx.r = tide_decide(fx.s);
	is_str(fx_placed(&fx), "1,2,3,4,5,6,7,8", "off by default: R-O1, alice's backlog first");
	fx_free(&fx);

	fx_build(&fx, nodes, 1, queues, 1, jobs, 12, NULL, 0);
	fair(&fx, owners, 12);
	fx.r = tide_decide(fx.s);
	is_str(fx_placed(&fx), "1,101,2,102,3,103,4,5",
		   "R-O7: the owners take turns (equal shares: the earlier job), then alice alone");
	is_str(fx_walk(&fx), "1,101,2,102,3,103,4,5,6,7,8,9",
		   "R-O7: the walk considers bob's jobs between alice's");
	fx_free(&fx);

	/* owner ids far apart (grouped by a sort, not counted): the same turns */
	for (int i = 9; i < 12; i++)
		owners[i] = 1000000;
	fx_build(&fx, nodes, 1, queues, 1, jobs, 12, NULL, 0);
	fair(&fx, owners, 12);
	fx.r = tide_decide(fx.s);
	is_str(fx_placed(&fx), "1,101,2,102,3,103,4,5", "R-O7: the same with owner ids far apart");
	fx_free(&fx);
	for (int i = 9; i < 12; i++)
		owners[i] = 1;

	/* job priority wins over the owner share; the retry lane over both */
	jobs[8].priority = 5;		/* alice's job 9 */
	jobs[2].retry = 1;			/* alice's job 3 */
	fx_build(&fx, nodes, 1, queues, 1, jobs, 12, NULL, 0);
	fair(&fx, owners, 12);
	fx.r = tide_decide(fx.s);
	is_str(fx_placed(&fx), "3,9,101,102,1,103,2,4",
		   "R-O7: alice's retry, then her priority-5 job, then the lower share, then the earlier job");
	fx_free(&fx);
}

static void
test_usage_and_decay(void)
{
	FxNode		nodes[] = {{"n1", "cpu=32, gpu=8"}};
	FxQueue		queues[] = {{"q", "gpu=8"}};
	FxJob		jobs[] = {{1, "q", 0, 1, "cpu=1, gpu=1"}, {2, "q", 0, 2, "cpu=1, gpu=1"},
	{101, "q", 0, 3, "cpu=1, gpu=1"}, {102, "q", 0, 4, "cpu=1, gpu=1"}};
	FxRun		runs[] = {{"n1", "q", "cpu=1, gpu=2", 0x3}, {"n1", "q", "cpu=1, gpu=2", 0xc, 0, 1}};
	int			owners[] = {0, 0, 1, 1};
	const TideOwnerFair *row;
	Fx			fx;

	/* half-life 0: alice holds 2 GPUs now (her idle job's do not count) */
	fx_build(&fx, nodes, 1, queues, 1, jobs, 4, runs, 2);
	fair(&fx, owners, 4);
	fx.s->running[0].owner = 0;
	fx.s->running[1].owner = 1;
	fx.r = tide_decide(fx.s);
	is_str(fx_walk(&fx), "101,102,1,2", "R-O7 half-life 0: bob (nothing held) goes until his share passes alice's");
	is_int(tide_owner_fair_count(fx.s), 1, "R-O7: one pair kept (bob's idle allocation counts nowhere)");
	row = tide_owner_fair_row(fx.s, 0);
	ok(row->owner == 0 && row->usage[TIDE_RES_GPU] == 2000 && row->decayed[TIDE_RES_GPU] == 2000,
	   "R-O7 half-life 0: the average is the usage now");
	fx_free(&fx);

	/* half-life 1 h: alice's average of 4 GPUs an hour ago is 2 now, bob's 1 is 0.5 */
	fx_build(&fx, nodes, 1, queues, 1, jobs, 4, NULL, 0);
	fair(&fx, owners, 4);
	fx.s->now = 10000 * SEC;
	fx.s->half_life = 3600 * SEC;
	tide_owner_fair_keep(fx.s, 0, 0, TIDE_RES_GPU, 4000, fx.s->now - 3600 * SEC);
	tide_owner_fair_keep(fx.s, 0, 1, TIDE_RES_GPU, 1000, fx.s->now - 3600 * SEC);
	tide_owner_fair_keep(fx.s, 0, 1, TIDE_RES_CPU, 0.5, fx.s->now - 3600 * SEC);
	fx.r = tide_decide(fx.s);
	is_str(fx_walk(&fx), "101,102,1,2", "R-O7 half-life: the heavy past user goes after");
	is_int(tide_owner_fair_count(fx.s), 2, "R-O7: two pairs kept");
	row = tide_owner_fair_row(fx.s, 0);
	ok(row->decayed[TIDE_RES_GPU] == 2000 && row->decayed_at == fx.s->now, "R-O6 decay: half after one half-life");
	row = tide_owner_fair_row(fx.s, 1);
	ok(row->decayed[TIDE_RES_GPU] == 500, "R-O6 decay: bob's half too");
	ok(tide_owner_fair_negligible(fx.s, row, 1.0) == false, "bob's average is not negligible");
	ok(row->decayed[TIDE_RES_CPU] == 0.25 && tide_owner_fair_negligible(fx.s, row, 600.0),
	   "below the threshold everywhere, nothing held: negligible");
	fx_free(&fx);

	/* a new owner starts from nothing; an owner with a row but no job is kept */
	fx_build(&fx, nodes, 1, queues, 1, jobs, 4, NULL, 0);
	fair(&fx, owners, 4);
	fx.s->now = 10000 * SEC;
	fx.s->half_life = 3600 * SEC;
	tide_owner_fair_keep(fx.s, 0, 4, TIDE_RES_GPU, 8000, fx.s->now);
	fx.r = tide_decide(fx.s);
	is_str(fx_walk(&fx), "1,101,2,102", "R-O7: two owners without history alternate");
	is_int(tide_owner_fair_count(fx.s), 1, "R-O7: erin's row is kept though she has no job");
	fx_free(&fx);
}

static void
test_no_quota(void)
{
	FxNode		nodes[] = {{"n1", "cpu=8, gpu=8"}};
	FxQueue		queues[] = {{"q"}};
	FxJob		jobs[] = {{1, "q", 0, 1, "cpu=4, gpu=1"}, {2, "q", 0, 2, "gpu=1"}, {3, "q", 0, 3, "gpu=1"},
	{101, "q", 0, 4, "gpu=1"}};
	int			owners[] = {0, 0, 0, 1};
	Fx			fx;

	/* no quota: shares of the group's capacity, the dominant one (cpu 4/8 > gpu) */
	fx_build(&fx, nodes, 1, queues, 1, jobs, 4, NULL, 0);
	fair(&fx, owners, 4);
	fx.r = tide_decide(fx.s);
	is_str(fx_walk(&fx), "1,101,2,3", "R-O7 without quota: alice's half of the cpu puts bob first");
	fx_free(&fx);
}

static uint64_t rng = 88172645463325252ULL;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t) (rng % n);
}

/* The walk's order of queue 0's jobs, as ids "1,2,...". */
static const char *
walk_of_queue(const Fx *fx, int q, char *buf, size_t len)
{
	size_t		off = 0;

	buf[0] = '\0';
	for (int i = 0; i < fx->r->nwalk && off < len - 32; i++)
		if (fx->s->jobs[fx->r->walk[i]].queue == q)
			off += snprintf(buf + off, len - off, "%s%lld", off ? "," : "",
							(long long) fx->s->jobs[fx->r->walk[i]].id);
	return buf;
}

/* Brute force: at each step the best of every job left by the R-O7 key. */
static const char *
brute(const TideSnapshot *s, const double *base, int q, double quota, char *buf, size_t len)
{
	bool		taken[64] = {0};
	double		used[5];
	size_t		off = 0;

	memcpy(used, base, sizeof(used));
	buf[0] = '\0';
	for (;;)
	{
		int			best = -1;

		for (int j = 0; j < s->njobs; j++)
		{
			const TideJob *x = &s->jobs[j],
					   *y;

			if (taken[j] || x->queue != q)
				continue;
			if (best < 0)
			{
				best = j;
				continue;
			}
			y = &s->jobs[best];
			if (x->is_retry != y->is_retry ? x->is_retry :
				x->priority != y->priority ? x->priority > y->priority :
				used[x->owner] / quota != used[y->owner] / quota ? used[x->owner] / quota < used[y->owner] / quota :
				x->created_at != y->created_at ? x->created_at < y->created_at : x->id < y->id)
				best = j;
		}
		if (best < 0)
			return buf;
		taken[best] = true;
		used[s->jobs[best].owner] += (double) s->jobs[best].roles[0].request[TIDE_RES_CPU];
		off += snprintf(buf + off, len - off, "%s%lld", off ? "," : "", (long long) s->jobs[best].id);
	}
}

static void
test_random(void)
{
	FxNode		nodes[] = {{"n1", "cpu=1000000"}};
	FxQueue		queues[] = {{"q", "cpu=100000"}, {"other", "cpu=100000"}};
	static const char *const reqs[] = {"cpu=1", "cpu=2", "cpu=3", "cpu=4"};
	int			same = 0,
				fifo = 0,
				placed = 0,
				rounds = 300;

	for (int round = 0; round < rounds; round++)
	{
		FxJob		jobs[64];
		FxRun		runs[8];
		int			nj = 8 + (int) rnd(56),
					nr = (int) rnd(8),
					nowners = 1 + (int) rnd(5);
		int			run_owner[8];
		double		kept[5] = {0},
					base[5] = {0};
		bool		has_kept[5] = {0};
		bool		decay = rnd(2);
		char		got[4096],
					want[4096];
		Fx			fx;

		for (int i = 0; i < nj; i++)
			jobs[i] = (FxJob) {1 + i, rnd(4) ? "q" : "other", (int) rnd(3), rnd(12), reqs[rnd(4)],
			.retry = rnd(10) == 0};
		for (int i = 0; i < nr; i++)
		{
			runs[i] = (FxRun) {"n1", "q", reqs[rnd(4)], 0, 0, rnd(5) == 0};
			run_owner[i] = (int) rnd(nowners);
		}
		fx_build(&fx, nodes, 1, queues, 2, jobs, nj, runs, nr);
		fx.s->owner_names = owner_names;
		fx.s->nowners = 5;
		fx.s->now = 100000 * SEC;
		fx.s->half_life = decay ? 60 * SEC : 0;
		for (int i = 0; i < nj; i++)
			fx.s->jobs[i].owner = (int) rnd(nowners);
		for (int i = 0; i < nr; i++)
		{
			fx.s->running[i].owner = run_owner[i];
			if (!runs[i].idle)
				base[run_owner[i]] += (double) fx.s->running[i].res[TIDE_RES_CPU];
		}
		if (decay)
			for (int o = 0; o < nowners; o++)
				if (rnd(2))
				{
					kept[o] = 1000.0 * rnd(9);
					has_kept[o] = true;
					tide_owner_fair_keep(fx.s, 0, o, TIDE_RES_CPU, kept[o], fx.s->now - 60 * SEC);
				}
		for (int o = 0; o < 5; o++)
			if (decay)
				base[o] = has_kept[o] ? 0.5 * kept[o] + 0.5 * base[o] : 0;
		fx.s->queues[0].owner_fair = round % 4 != 0;
		fx.r = tide_decide(fx.s);
		walk_of_queue(&fx, 0, got, sizeof(got));
		if (fx.s->queues[0].owner_fair)
		{
			brute(fx.s, base, 0, 1e8, want, sizeof(want));
			same += strcmp(got, want) == 0;
			if (strcmp(got, want) != 0)
				diag("round %d: walk %s, brute force %s", round, got, want);
		}
		else
		{
			/* off: the queue's jobs in R-O3, R-O1 order, whatever their owners */
			for (int i = 0; i < fx.s->njobs; i++)
				fx.s->jobs[i].owner = 0;
			brute(fx.s, base, 0, 1e8, want, sizeof(want));
			fifo += strcmp(got, want) == 0;
			same += strcmp(got, want) == 0;
		}
		placed += (int) fx.r->counters.jobs_placed == nj;
		fx_free(&fx);
	}
	is_int(placed, rounds, "random: every job fits (so each walk step places its job)");
	is_int(same, rounds, "R-O7 random: the walk's order in the queue equals the brute-force choice");
	is_int(fifo, rounds / 4, "R-O7 off: the order is R-O3, R-O1");
}

int
main(void)
{
	test_alternate();
	test_usage_and_decay();
	test_no_quota();
	test_random();
	return done_testing();
}
