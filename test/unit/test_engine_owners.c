/*
 * test_engine_owners.c: per-owner limits (R-A4) at engine level: a queue's
 * owner_cap bounds what one owner's jobs hold, for guaranteed, borrowing
 * and idle jobs; replicas beyond the gang minimum; card keys; a minimum
 * above the limit alone (R-A2); evictions never take an owner past it,
 * and R-E3 frees it with the owner's own lower-priority jobs only.
 */
#include "tap.h"
#include "test_engine_fixture.h"

#define SEC 1000000LL

static const char *const owner_names[] = {"alice", "bob"};

/*
 * Give queue qname the owner limit cap, jobs their owners (owners[i] for
 * the i-th job, -1 for none) and the running allocations theirs (charged
 * again, now to their owner).
 */
static void
own(Fx *fx, const char *qname, const char *cap, const int *owners, int nowners_jobs,
	const int *run_owners)
{
	TideSnapshot *s = fx->s;
	TideQueue  *q = &s->queues[fx_queue_index(s, qname)];
	int64_t    *v = tide_vec_new(s);

	for (int r = 0; r < s->nres; r++)
		v[r] = -1;
	fx_vec(s, cap, v);
	q->owner_cap = tide_vec_new(s);
	for (int r = 0; r < s->nres; r++)
		q->owner_cap[r] = v[r] < 0 ? TIDE_UNLIMITED : v[r];
	s->owner_names = owner_names;
	s->nowners = 2;
	for (int i = 0; i < nowners_jobs && i < s->njobs; i++)
		s->jobs[i].owner = owners[i];
	for (int i = 0; run_owners && i < s->nrunning; i++)
	{
		TideRunning *a = &s->running[i];

		tide_charge(s, a->node, a->queue, a->idle, a->res, a->gpus, a->gpu_milli, -1);
		a->owner = run_owners[i];
		tide_charge_owned(s, a->node, a->queue, a->owner, a->idle, a->res, a->gpus, a->gpu_milli, +1);
	}
}

static void
test_guaranteed_and_others(void)
{
	FxNode		nodes[] = {{"n1", "cpu=32, gpu=8"}};
	FxQueue		queues[] = {{"q", "gpu=8"}};
	FxJob		jobs[] = {{1, "q", 0, 1, "cpu=1, gpu=2"}, {2, "q", 0, 2, "cpu=1, gpu=2"},
	{3, "q", 0, 3, "cpu=1, gpu=2"}, {4, "q", 0, 4, "cpu=1, gpu=2"}};
	int			owners[] = {0, 0, 0, 1};
	Fx			fx;

	fx_build(&fx, nodes, 1, queues, 1, jobs, 4, NULL, 0);
	own(&fx, "q", "gpu=4", owners, 4, NULL);
	fx.r = tide_decide(fx.s);
	is_int(fx_status(&fx, 1) + fx_status(&fx, 2), 2 * TIDE_PLACED, "R-A4: alice's first two jobs fit her limit of 4");
	is_int(fx_status(&fx, 3), TIDE_PENDING, "R-A4: her third waits");
	is_str(fx_reason(&fx, 3), "owner limit of queue q is gpu=4; alice holds 4, the job needs 2",
		   "R-A4: the reason names the queue, the limit, the owner and the numbers");
	is_int(fx_status(&fx, 4), TIDE_PLACED, "R-A4: bob is not held back by alice's limit");
	is_int(tide_owner_usage(fx.s, 0, 0)[TIDE_RES_GPU], 4000, "R-A4: the snapshot keeps alice's usage after the placements");
	ok(tide_owner_usage(fx.s, 0, 5) == NULL, "R-A4: an owner without anything has no usage");
	fx_free(&fx);

	/* the same jobs without an owner limit: owners are not looked at */
	fx_build(&fx, nodes, 1, queues, 1, jobs, 4, NULL, 0);
	for (int i = 0; i < 4; i++)
		fx.s->jobs[i].owner = owners[i];
	fx.r = tide_decide(fx.s);
	is_int(fx_status(&fx, 3), TIDE_PLACED, "no owner_cap: owners are not counted");
	ok(tide_owner_usage(fx.s, 0, 0) == NULL, "no owner_cap: no usage is kept per owner");
	fx_free(&fx);
}

static void
test_borrowing_and_idle(void)
{
	FxNode		nodes[] = {{"n1", "cpu=32, gpu=8"}};
	FxQueue		queues[] = {{"q", "gpu=2"}};
	FxJob		jobs[] = {{1, "q", 0, 1, "cpu=1, gpu=2"}, {2, "q", 0, 2, "cpu=1, gpu=2"},
	{3, "q", 0, 3, "cpu=1, gpu=2"}};
	FxJob		idle[] = {{1, "q", 0, 1, "cpu=1, gpu=2", .idle = 1}, {2, "q", 0, 2, "cpu=1, gpu=2", .idle = 1},
	{3, "q", 0, 3, "cpu=1, gpu=2"}};
	FxRun		runs[] = {{"n1", "q", "cpu=1, gpu=2", 0x3, 0, 1}};
	int			owners[] = {0, 0, 0};
	int			run_owner[] = {0};
	Fx			fx;

	fx_build(&fx, nodes, 1, queues, 1, jobs, 3, NULL, 0);
	own(&fx, "q", "gpu=4", owners, 3, NULL);
	fx.r = tide_decide(fx.s);
	is_int(fx.r->outcomes[fx_job(&fx, 2)].klass, TIDE_CLASS_BORROWING, "R-A4 borrowing: the second job borrows");
	is_int(fx_status(&fx, 2), TIDE_PLACED, "R-A4 borrowing: and fits the owner limit");
	is_int(fx_status(&fx, 3), TIDE_PENDING, "R-A4 borrowing: the third is over it");
	is_str(fx_reason(&fx, 3), "owner limit of queue q is gpu=4; alice holds 4, the job needs 2",
		   "R-A4 borrowing: the reason names the owner limit");
	fx_free(&fx);

	/* an idle job of alice's runs: one more idle job fits, then nothing */
	fx_build(&fx, nodes, 1, queues, 1, idle, 3, runs, 1);
	own(&fx, "q", "gpu=4", owners, 3, run_owner);
	fx.r = tide_decide(fx.s);
	is_int(fx_status(&fx, 3), TIDE_PLACED, "R-A4 idle: her guaranteed job takes the room first");
	is_int(fx_status(&fx, 1), TIDE_PENDING, "R-A4 idle: a running idle job counts towards the limit");
	is_str(fx_reason(&fx, 1), "owner limit of queue q is gpu=4; alice holds 4, the job needs 2",
		   "R-A4 idle: the idle job's reason names the owner limit");
	fx_free(&fx);
}

static void
test_minimum_replicas_cards(void)
{
	FxNode		nodes[] = {{"n1", "cpu=32, gpu=8", "H100"}};
	FxQueue		queues[] = {{"q", "gpu=8"}};
	FxJob		jobs[] = {{1, "q", 0, 1, "cpu=1, gpu=2", 3}, {2, "q", 0, 2, "cpu=1, gpu=1", 4, .min_available = 1}};
	FxJob		cards[] = {{1, "q", 0, 1, "cpu=1, gpu=1"}, {2, "q", 0, 2, "cpu=1, gpu=1"},
	{3, "q", 0, 3, "cpu=1, gpu=1"}};
	int			owners[] = {0, 1, 0};
	Fx			fx;

	fx_build(&fx, nodes, 1, queues, 1, jobs, 2, NULL, 0);
	own(&fx, "q", "gpu=2", owners, 2, NULL);
	fx.r = tide_decide(fx.s);
	is_int(fx_status(&fx, 1), TIDE_UNSCHEDULABLE, "R-A4, R-A2: a gang minimum above the owner limit never runs");
	is_str(fx_reason(&fx, 1), "owner limit of queue q is gpu=2, the job needs 6",
		   "R-A4, R-A2: the reason names the limit and the minimum");
	is_int(fx_status(&fx, 2), TIDE_PLACED, "R-A4: an elastic job is placed");
	is_int(fx.r->outcomes[fx_job(&fx, 2)].nplacements, 2, "R-A4: its replicas beyond the minimum stop at the owner limit");
	fx_free(&fx);

	/* a limit on the card type binds jobs that do not name it */
	fx_build(&fx, nodes, 1, queues, 1, cards, 3, NULL, 0);
	own(&fx, "q", "H100=2", (int[]) {0, 0, 0}, 3, NULL);
	fx.r = tide_decide(fx.s);
	is_int(fx_status(&fx, 2), TIDE_PLACED, "R-A4 card key: two H100 GPUs fit");
	is_int(fx_status(&fx, 3), TIDE_PENDING, "R-A4 card key: the third waits");
	is_str(fx_reason(&fx, 3), "owner limit of queue q is H100=2; alice holds 2, the job needs 1",
		   "R-A4 card key: the reason names the card type");
	fx_free(&fx);
}

/* R-A4 and R-L2: a reserving job over its owner's limit holds nothing against other owners */
static void
test_reserve(void)
{
	FxNode		nodes[] = {{"n1", "cpu=32, gpu=8"}};
	FxQueue		queues[] = {{"q", "gpu=2", "gpu=6"}};
	FxJob		jobs[] = {{1, "q", 5, 1, "cpu=1, gpu=2", .reserve = 1}, {2, "q", 0, 2, "cpu=1, gpu=2"}};
	FxRun		runs[] = {{"n1", "q", "cpu=1, gpu=2", 0x3}, {"n1", "q", "cpu=1, gpu=2", 0xc}};
	Fx			fx;

	fx_build(&fx, nodes, 1, queues, 1, jobs, 2, runs, 2);
	own(&fx, "q", "gpu=4", (int[]) {0, 1}, 2, (int[]) {0, 0});
	fx.r = tide_decide(fx.s);
	is_int(fx_status(&fx, 1), TIDE_PENDING, "R-A4: alice's reserving job waits for her limit");
	is_int(fx.r->nholds, 0, "R-A4, R-L2: it holds nothing");
	is_int(fx_status(&fx, 2), TIDE_PLACED, "R-A4, R-L2: bob's job takes the queue's last room");
	fx_free(&fx);
}

static void
test_evictions(void)
{
	FxNode		nodes[] = {{"n1", "cpu=32, gpu=8"}};
	FxQueue		queues[] = {{"hi", "gpu=8"}, {"lo", NULL}};
	FxJob		jobs[] = {{1, "hi", 0, 1, "cpu=1, gpu=2"}, {2, "hi", 0, 2, "cpu=1, gpu=2"},
	{3, "hi", 0, 3, "cpu=1, gpu=2"}};
	FxRun		runs[] = {{"n1", "lo", "cpu=1, gpu=2", 0x3}, {"n1", "lo", "cpu=1, gpu=2", 0xc},
	{"n1", "lo", "cpu=1, gpu=2", 0x30}, {"n1", "lo", "cpu=1, gpu=2", 0xc0}};
	FxQueue		one[] = {{"q", "gpu=8"}};
	FxJob		pre[] = {{1, "q", 10, 1, "cpu=1, gpu=2"}};
	FxRun		mine[] = {{"n1", "q", "cpu=1, gpu=4", 0xf}, {"n1", "q", "cpu=1, gpu=4", 0xf0}};
	Fx			fx;

	fx_build(&fx, nodes, 1, queues, 2, jobs, 3, runs, 4);
	fx.s->evict = true;
	fx.s->now = 1000 * SEC;
	for (int i = 0; i < 4; i++)
	{
		fx.s->running[i].preemptable = true;
		fx.s->running[i].placed_at = fx.s->running[i].started_at = SEC;
		fx.s->running[i].service = TIDE_SVC_TRAINING;
	}
	for (int i = 0; i < 3; i++)
		fx.s->jobs[i].preemptable = true;
	own(&fx, "hi", "gpu=4", (int[]) {0, 0, 0}, 3, NULL);
	fx.r = tide_decide(fx.s);
	is_int(fx.r->nevictions, 2, "R-A4, R-E1: alice's jobs reclaim for two jobs, her limit's worth");
	is_int(fx.r->outcomes[fx_job(&fx, 3)].evict_state, TIDE_EV_NONE, "R-A4: the job over her limit evicts nobody");
	fx_free(&fx);

	/* R-E3: alice's urgent job frees her limit with her own lower-priority job, never bob's */
	fx_build(&fx, nodes, 1, one, 1, pre, 1, mine, 2);
	fx.s->evict = true;
	fx.s->now = 1000 * SEC;
	fx.s->queues[0].preemption_within = TIDE_PREEMPT_LOWER_PRIORITY;
	for (int i = 0; i < 2; i++)
	{
		fx.s->running[i].preemptable = true;
		fx.s->running[i].placed_at = fx.s->running[i].started_at = SEC;
		fx.s->running[i].job_id = 101 - i;	/* bob's has the larger id: least harm */
	}
	fx.s->jobs[0].preemptable = true;
	own(&fx, "q", "gpu=4", (int[]) {0}, 1, (int[]) {1, 0});
	fx.r = tide_decide(fx.s);
	is_int(fx.r->nevictions, 1, "R-A4, R-E3: one job is evicted");
	is_int(fx.r->nevictions > 0 ? fx.r->evictions[0].job_id : 0, 100, "R-A4, R-E3: alice's own job, not bob's (whose eviction would not free her limit)");

	fx_free(&fx);
}

int
main(void)
{
	test_guaranteed_and_others();
	test_borrowing_and_idle();
	test_minimum_replicas_cards();
	test_reserve();
	test_evictions();
	return done_testing();
}
