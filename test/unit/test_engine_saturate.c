/*
 * test_engine_saturate.c: the engine at the int64 limits (satmath.h).
 *
 * Quantities are int64 milli and tide.resvec accepts values up to INT64_MAX
 * milli, so sums over nodes and allocations, replicas x request and
 * now + time_limit can pass int64.  Built with UBSan by `make unit`, any
 * signed overflow left in the engine is reported here; the assertions check
 * that the decisions stay right: no node over capacity, no queue admitted
 * over its quota or capability after a wrap-around, huge gangs refused, a
 * huge time_limit never backfilling onto held resources.
 *
 * Snapshots are built through the engine API directly (the fixture's text
 * quantities go through a double and cannot say 9223372036854775807).
 */
#include "tap.h"
#include "test_engine_fixture.h"
#include "satmath.h"

#define MAXQ		INT64_MAX
#define SEC			1000000LL

typedef struct Sx
{
	FxArena    *arena;
	TideSnapshot *s;
	TideResult *r;
	char		names[64][16];
} Sx;

/* A snapshot with gpu, cpu (fixed), memory; nn nodes, nq queues, nrun running. */
static Sx *
sx_new(int nn, int nq, int nrun)
{
	Sx		   *x = calloc(1, sizeof(Sx));
	TideMem		mem = {fx_alloc, NULL, NULL};

	x->arena = calloc(1, sizeof(FxArena));
	mem.ctx = x->arena;
	x->s = tide_snapshot_create(&mem);
	tide_res_intern(x->s, "memory");
	tide_res_intern(x->s, "H100");
	tide_snapshot_alloc_cluster(x->s, nn, nq, nrun);
	for (int i = 0; i < nn; i++)
	{
		char	   *nm = tide_alloc(x->s, 16);

		snprintf(nm, 16, "n%d", i);
		x->s->nodes[i].name = nm;
	}
	for (int i = 0; i < nq; i++)
	{
		char	   *nm = tide_alloc(x->s, 16);

		snprintf(nm, 16, "q%d", i);
		x->s->queues[i].name = nm;
	}
	return x;
}

static void
sx_finish(Sx *x)
{
	char		err[256];

	if (!tide_snapshot_finish(x->s, err, sizeof(err)))
	{
		printf("# sx_finish: %s\n", err);
		abort();
	}
}

/* Charge a live allocation (and list it, for reservations' end times). */
static void
sx_run_idle(Sx *x, int i, int node, int queue, int64_t cpu, int64_t end_at, bool idle)
{
	TideRunning *a = &x->s->running[i];
	int64_t    *v = tide_vec_new(x->s);

	v[TIDE_RES_CPU] = cpu;
	a->alloc_id = 100 + i;
	a->job_id = 100 + i;
	a->queue = queue;
	a->node = node;
	a->res = v;
	a->end_at = end_at;
	a->idle = idle;
	tide_charge(x->s, node, queue, idle, v, 0, 0, +1);
}

static void
sx_run(Sx *x, int i, int node, int queue, int64_t cpu, int64_t end_at)
{
	sx_run_idle(x, i, node, queue, cpu, end_at, false);
}

/* nj jobs of one role each, cpu request, queue 0, ids 1.. in walk order. */
static void
sx_jobs(Sx *x, int nj)
{
	tide_snapshot_alloc_jobs(x->s, nj, nj);
	for (int i = 0; i < nj; i++)
	{
		TideJob    *j = &x->s->jobs[i];

		j->id = i + 1;
		j->created_at = i + 1;
		j->roles = &x->s->roles[i];
		j->nroles = 1;
		j->roles[0].name = "main";
		j->roles[0].replicas = 1;
	}
}

static void
sx_free(Sx *x)
{
	for (int i = 0; i < x->arena->n; i++)
		free(x->arena->p[i]);
	free(x->arena->p);
	free(x->arena);
	free(x);
}

static const char *
sx_reason(Sx *x, int j)
{
	static char buf[1024];

	tide_reason_text(x->s, x->r, j, buf, sizeof(buf));
	return buf;
}

/* Replicas of job j placed. */
static int
sx_placed(Sx *x, int j)
{
	return x->r->outcomes[j].status == TIDE_PLACED ? x->r->outcomes[j].nplacements : 0;
}

/* Every node within capacity on every resource (the engine applied the cycle). */
static bool
sx_within_capacity(Sx *x)
{
	for (int i = 0; i < x->s->nnodes; i++)
		for (int r = 0; r < x->s->nres; r++)
			if (x->s->nodes[i].used[r] < 0 || x->s->nodes[i].used[r] > x->s->nodes[i].capacity[r])
				return false;
	return true;
}

/* Nodes with capacity at the maximum: fits are exact right up to it. */
static void
test_node_at_max(void)
{
	Sx		   *x = sx_new(1, 1, 1);

	x->s->nodes[0].capacity[TIDE_RES_CPU] = MAXQ;
	sx_finish(x);
	sx_run(x, 0, 0, 0, MAXQ - 10, TIDE_TIME_UNKNOWN);
	sx_jobs(x, 3);
	x->s->jobs[0].roles[0].request[TIDE_RES_CPU] = 11;
	x->s->jobs[1].roles[0].request[TIDE_RES_CPU] = 10;
	x->s->jobs[2].roles[0].request[TIDE_RES_CPU] = 1;
	x->r = tide_decide(x->s);
	is_int(x->r->outcomes[0].status, TIDE_PENDING, "node at INT64_MAX cpu, 10 milli free: 11 milli does not fit");
	is_int(x->r->outcomes[1].status, TIDE_PENDING,
		   "10 milli would fill the node but push the queue's usage to INT64_MAX: refused");
	is_str(sx_reason(x, 1), "queue q0 cpu capability: 9223372036854775.797 used + 0.01 asked > unlimited",
		   "reason gives the numbers");
	is_int(x->r->outcomes[2].status, TIDE_PLACED, "1 milli fits");
	is_int(x->s->nodes[0].used[TIDE_RES_CPU], MAXQ - 9, "node used is exact");
	ok(sx_within_capacity(x), "no node over capacity");
	sx_free(x);

	/* live allocations summing past INT64_MAX on one node: it is full */
	x = sx_new(1, 1, 3);
	x->s->nodes[0].capacity[TIDE_RES_CPU] = MAXQ - 1;
	sx_finish(x);
	for (int i = 0; i < 3; i++)
		sx_run(x, i, 0, 0, MAXQ / 2, TIDE_TIME_UNKNOWN);
	is_int(x->s->nodes[0].used[TIDE_RES_CPU], MAXQ, "node used saturates at INT64_MAX, no wrap");
	is_int(x->s->queues[0].usage[TIDE_RES_CPU], MAXQ, "queue usage saturates too");
	sx_jobs(x, 1);
	x->s->jobs[0].roles[0].request[TIDE_RES_CPU] = 1;
	x->r = tide_decide(x->s);
	is_int(x->r->outcomes[0].status, TIDE_PENDING, "an over-full node takes nothing");
	/* releasing from a saturated sum keeps it saturated */
	tide_charge(x->s, 0, 0, false, x->s->running[0].res, 0, 0, -1);
	is_int(x->s->nodes[0].used[TIDE_RES_CPU], MAXQ, "release from a saturated node used stays saturated");
	is_int(x->s->queues[0].usage[TIDE_RES_CPU], MAXQ, "release from a saturated queue usage stays saturated");
	x->r = tide_decide(x->s);
	is_int(x->r->outcomes[0].status, TIDE_PENDING, "still nothing after a release: the true sum is unknown");
	sx_free(x);
}

/* Queue usage that would wrap: never admitted as within quota. */
static void
test_queue_usage_wrap(void)
{
	Sx		   *x = sx_new(4, 2, 3);

	for (int i = 0; i < 4; i++)
		x->s->nodes[i].capacity[TIDE_RES_CPU] = MAXQ;
	/* q0: quota near the maximum, no capability; q1: capability near the maximum */
	x->s->queues[0].has_quota = true;
	x->s->queues[0].quota[TIDE_RES_CPU] = MAXQ - 5;
	x->s->queues[1].capability[TIDE_RES_CPU] = MAXQ - 5;
	sx_finish(x);
	/* three allocations of half the maximum: 1.5 x INT64_MAX, wraps negative unsaturated */
	sx_run(x, 0, 0, 0, MAXQ / 2, TIDE_TIME_UNKNOWN);
	sx_run(x, 1, 1, 0, MAXQ / 2, TIDE_TIME_UNKNOWN);
	sx_run(x, 2, 2, 1, MAXQ / 2, TIDE_TIME_UNKNOWN);
	tide_charge(x->s, -1, 1, false, x->s->running[0].res, 0, 0, +1);
	tide_charge(x->s, -1, 1, false, x->s->running[1].res, 0, 0, +1);
	ok(x->s->queues[0].usage[TIDE_RES_CPU] > 0, "q0 usage stays positive");
	is_int(x->s->queues[1].usage[TIDE_RES_CPU], MAXQ, "q1 usage saturates");
	sx_jobs(x, 2);
	x->s->jobs[0].roles[0].request[TIDE_RES_CPU] = 1000;
	x->s->jobs[1].queue = 1;
	x->s->jobs[1].roles[0].request[TIDE_RES_CPU] = 1000;
	x->r = tide_decide(x->s);
	is_int(x->r->outcomes[0].klass, TIDE_CLASS_NONE,
		   "q0 at INT64_MAX - 1 used: one more cpu cannot be counted, not admitted");
	is_str(sx_reason(x, 0), "queue q0 cpu capability: 9223372036854775.806 used + 1 asked > unlimited",
		   "its reason");
	is_int(x->r->outcomes[1].status, TIDE_PENDING, "q1 past its capability after saturation: pending");
	is_int(x->r->outcomes[1].klass, TIDE_CLASS_NONE, "not admitted");
	is_str(sx_reason(x, 1),
		   "queue q1 cpu capability: 9223372036854775.807 or more used + 1 asked > 9223372036854775.802",
		   "the saturated usage reads as a bound");
	ok(sx_within_capacity(x), "no node over capacity");
	sx_free(x);
}

/* A group capacity summed over many nodes near the maximum. */
static void
test_group_capacity_sum(void)
{
	int			nn = 64;
	Sx		   *x = sx_new(nn, 1, 0);

	for (int i = 0; i < nn; i++)
		x->s->nodes[i].capacity[TIDE_RES_CPU] = MAXQ / 2;
	sx_finish(x);
	sx_jobs(x, 2);
	/* idle admission compares with the group's capacity: must not wrap negative */
	x->s->jobs[0].idle = true;
	x->s->jobs[0].roles[0].request[TIDE_RES_CPU] = MAXQ / 4;
	x->s->jobs[1].idle = true;
	x->s->jobs[1].roles[0].request[TIDE_RES_CPU] = MAXQ / 2 + 1;
	x->r = tide_decide(x->s);
	is_int(x->r->outcomes[0].status, TIDE_PLACED, "idle job admitted against a group capacity past INT64_MAX");
	is_int(x->r->outcomes[1].status, TIDE_UNSCHEDULABLE, "a replica larger than every node is unschedulable");
	ok(sx_within_capacity(x), "no node over capacity");
	sx_free(x);
}

/* replicas x request past INT64_MAX. */
static void
test_replicas_times_request(void)
{
	Sx		   *x = sx_new(4, 1, 0);
	const int64_t per = MAXQ / 5000;	/* 10000 replicas: twice the maximum */

	for (int i = 0; i < 4; i++)
		x->s->nodes[i].capacity[TIDE_RES_CPU] = MAXQ - 1;
	sx_finish(x);
	sx_jobs(x, 3);
	/* job 1: a gang of 10000 whose minimum cannot be counted */
	x->s->jobs[0].roles[0].replicas = 10000;
	x->s->jobs[0].roles[0].request[TIDE_RES_CPU] = per;
	/* job 2: min_available 1, 4 replicas of a third of the maximum */
	x->s->jobs[1].min_available = 1;
	x->s->jobs[1].roles[0].replicas = 4;
	x->s->jobs[1].roles[0].request[TIDE_RES_CPU] = MAXQ / 3;
	/* job 3: a gang of 3 of a third: fits in sum, not on one node */
	x->s->jobs[2].roles[0].replicas = 3;
	x->s->jobs[2].roles[0].request[TIDE_RES_CPU] = MAXQ / 3;
	x->r = tide_decide(x->s);
	is_int(x->r->outcomes[0].status, TIDE_UNSCHEDULABLE, "10000 x INT64_MAX/5000: unschedulable, not wrapped");
	is_str(sx_reason(x, 0),
		   "the job's gang minimum of cpu is more than the scheduler can count (at most 9223372036854775.806 in total)",
		   "its reason says why");
	is_int(x->r->outcomes[1].status, TIDE_PLACED, "min_available 1 of 4 x INT64_MAX/3: placed");
	is_int(sx_placed(x, 1), 3, "three replicas: a fourth would take the queue's usage past INT64_MAX");
	is_int(x->r->outcomes[2].status, TIDE_PENDING, "gang of 3 x INT64_MAX/3 after that: the queue cannot count it");
	ok(x->s->queues[0].usage[TIDE_RES_CPU] > 0 && x->s->queues[0].usage[TIDE_RES_CPU] < MAXQ,
	   "queue usage exact and below the maximum");
	ok(sx_within_capacity(x), "no node over capacity");
	sx_free(x);

	/* a gang that fits once counted: 3 x (MAX/4) on nodes of MAX/2 */
	x = sx_new(2, 1, 0);
	for (int i = 0; i < 2; i++)
		x->s->nodes[i].capacity[TIDE_RES_CPU] = MAXQ / 2;
	sx_finish(x);
	sx_jobs(x, 1);
	x->s->jobs[0].roles[0].replicas = 3;
	x->s->jobs[0].roles[0].request[TIDE_RES_CPU] = MAXQ / 4;
	x->r = tide_decide(x->s);
	is_int(x->r->outcomes[0].status, TIDE_PLACED, "3 x INT64_MAX/4 on two nodes of INT64_MAX/2: placed");
	is_int(sx_placed(x, 0), 3, "all three replicas");
	ok(sx_within_capacity(x), "no node over capacity");
	sx_free(x);
}

/* Quota and capability near the maximum, summed with held resources. */
static void
test_quota_near_max_with_holds(void)
{
	Sx		   *x = sx_new(2, 1, 1);

	x->s->nodes[0].capacity[TIDE_RES_CPU] = MAXQ;
	x->s->nodes[1].capacity[TIDE_RES_CPU] = MAXQ;
	x->s->queues[0].has_quota = true;
	x->s->queues[0].quota[TIDE_RES_CPU] = MAXQ - 1;
	sx_finish(x);
	sx_run(x, 0, 0, 0, MAXQ / 2, TIDE_TIME_UNKNOWN);
	sx_jobs(x, 3);
	/* job 1 reserves MAX - 2 of queue headroom it cannot get: held + usage > MAX */
	x->s->jobs[0].reserve = true;
	x->s->jobs[0].roles[0].request[TIDE_RES_CPU] = MAXQ - 2;
	x->s->jobs[1].roles[0].request[TIDE_RES_CPU] = MAXQ / 2;
	x->s->jobs[2].roles[0].request[TIDE_RES_CPU] = 1000;
	x->r = tide_decide(x->s);
	is_int(x->r->outcomes[0].status, TIDE_PENDING, "a request of INT64_MAX - 2 beside MAX/2 used: pending");
	is_int(x->r->outcomes[1].status, TIDE_PENDING, "held headroom + usage past INT64_MAX: the next job waits");
	is_int(x->r->outcomes[2].status, TIDE_PENDING, "so does a small one: the hold is in force");
	ok(sx_within_capacity(x), "no node over capacity");
	sx_free(x);
}

/* A reservation on a node near the maximum: its "how much is lacking" ratio. */
static void
test_reserve_on_huge_node(void)
{
	Sx		   *x = sx_new(2, 3, 1);

	x->s->nodes[0].capacity[TIDE_RES_CPU] = MAXQ;
	x->s->nodes[1].capacity[TIDE_RES_CPU] = MAXQ;
	sx_finish(x);
	/* q1 uses half of each node; node 1's share ends sooner */
	sx_run(x, 0, 0, 1, MAXQ / 2, 100 * SEC);
	sx_jobs(x, 2);
	x->s->jobs[0].reserve = true;
	x->s->jobs[0].roles[0].request[TIDE_RES_CPU] = MAXQ - 1;
	x->s->jobs[1].queue = 1;
	x->s->jobs[1].roles[0].request[TIDE_RES_CPU] = MAXQ / 2 + 2;
	x->r = tide_decide(x->s);
	is_int(x->r->outcomes[0].status, TIDE_PLACED, "INT64_MAX - 1 fits the empty node");
	tide_snapshot_alloc_jobs(x->s, 2, 2);
	for (int i = 0; i < 2; i++)
	{
		x->s->jobs[i].id = i + 10;
		x->s->jobs[i].created_at = i + 10;
		x->s->jobs[i].roles = &x->s->roles[i];
		x->s->jobs[i].nroles = 1;
		x->s->roles[i].replicas = 1;
	}
	/* q2: fits nowhere (node 1 full, node 0 half used): it reserves */
	x->s->jobs[0].reserve = true;
	x->s->jobs[0].queue = 2;
	x->s->jobs[0].roles[0].request[TIDE_RES_CPU] = MAXQ / 4 * 3;
	x->s->jobs[1].queue = 2;
	x->s->jobs[1].roles[0].request[TIDE_RES_CPU] = 1000;
	x->r = tide_decide(x->s);
	is_int(x->r->outcomes[0].status, TIDE_PENDING, "3/4 of the maximum fits nowhere now: it reserves");
	is_int(x->r->nholds, 2, "it holds queue headroom and one node");
	is_int(x->r->holds[1].node, 0, "the node whose allocation ends first");
	is_int(x->r->holds[1].res[TIDE_RES_CPU], MAXQ - MAXQ / 2, "what is free there");
	is_int(x->r->holds[1].shadow, 100 * SEC, "from when the running allocation ends");
	is_int(x->r->outcomes[1].status, TIDE_PENDING, "a small job of the same queue waits behind the hold");
	ok(sx_within_capacity(x), "no node over capacity");
	sx_free(x);
}

/* now + time_limit past INT64_MAX: never ends before a reservation starts. */
static void
test_backfill_time(void)
{
	Sx		   *x = sx_new(1, 1, 1);
	int64_t		now = INT64_C(800000000) * SEC;	/* 2025 in PostgreSQL microseconds */

	x->s->now = now;
	x->s->nodes[0].capacity[TIDE_RES_CPU] = 8000;
	sx_finish(x);
	sx_run(x, 0, 0, 0, 4000, now + 100 * SEC);
	sx_jobs(x, 3);
	x->s->jobs[0].reserve = true;
	x->s->jobs[0].roles[0].request[TIDE_RES_CPU] = 8000;
	x->s->jobs[1].time_limit = MAXQ - 10;	/* wraps negative when added to now */
	x->s->jobs[1].roles[0].request[TIDE_RES_CPU] = 4000;
	x->s->jobs[2].time_limit = 50 * SEC;
	x->s->jobs[2].roles[0].request[TIDE_RES_CPU] = 4000;
	x->r = tide_decide(x->s);
	is_int(x->r->outcomes[0].status, TIDE_PENDING, "the reserving job waits for the running one");
	is_int(x->r->outcomes[1].status, TIDE_PENDING, "a time_limit of INT64_MAX does not backfill onto the hold");
	is_int(x->r->outcomes[2].status, TIDE_PLACED, "a job ending before the reservation starts backfills");
	ok(sx_within_capacity(x), "no node over capacity");
	sx_free(x);
}

/* A fractional share recorded as >= 1000 milli does not wrap the int16 GPU share. */
static void
test_gpu_share_clamp(void)
{
	Sx		   *x = sx_new(1, 1, 0);
	int64_t    *v;

	x->s->nodes[0].capacity[TIDE_RES_GPU] = 1000;
	x->s->nodes[0].capacity[TIDE_RES_CPU] = 8000;
	x->s->nodes[0].ngpus = 1;
	sx_finish(x);
	v = tide_vec_new(x->s);
	v[TIDE_RES_GPU] = 500;
	tide_charge(x->s, 0, 0, false, v, 1, 40000, +1);
	is_int(x->s->nodes[0].gpu_free[0], 0, "a share of 40000 milli leaves the GPU with nothing, not 26536");
	sx_jobs(x, 1);
	x->s->jobs[0].roles[0].request[TIDE_RES_GPU] = 500;
	x->r = tide_decide(x->s);
	is_int(x->r->outcomes[0].status, TIDE_PENDING, "so half a GPU does not fit there");
	tide_charge(x->s, 0, 0, false, v, 1, 40000, -1);
	is_int(x->s->nodes[0].gpu_free[0], 1000, "releasing it frees the GPU, no more");
	sx_free(x);
}

/* Evictions: free and capacity sums over nodes at the maximum. */
static void
test_evict_sums(void)
{
	Sx		   *x = sx_new(3, 2, 3);

	for (int i = 0; i < 3; i++)
		x->s->nodes[i].capacity[TIDE_RES_CPU] = MAXQ;
	x->s->queues[0].has_quota = true;
	x->s->queues[0].quota[TIDE_RES_CPU] = MAXQ - 1;
	x->s->evict = true;
	x->s->now = 1000 * SEC;
	sx_finish(x);
	/* q1 runs idle, preemptable jobs filling every node */
	for (int i = 0; i < 3; i++)
	{
		sx_run_idle(x, i, i, 1, MAXQ - 1, TIDE_TIME_UNKNOWN, true);
		x->s->running[i].preemptable = true;
		x->s->running[i].placed_at = 1;
	}
	is_int(x->s->queues[1].idle_usage[TIDE_RES_CPU], MAXQ, "q1 idle usage saturates");
	sx_jobs(x, 1);
	x->s->jobs[0].roles[0].request[TIDE_RES_CPU] = MAXQ / 2;
	x->s->jobs[0].preemptable = true;
	x->r = tide_decide(x->s);
	is_int(x->r->outcomes[0].status, TIDE_PENDING, "no room: every node full");
	is_int(x->r->outcomes[0].evict_state, TIDE_EV_EVICTED, "a guaranteed job evicts an idle one (R-E1)");
	is_int(x->r->nevictions, 1, "exactly one victim");
	sx_free(x);
}

/* The helpers themselves, at and around the limits. */
static void
test_helpers(void)
{
	is_int(tide_sat_add(MAXQ - 1, 1), MAXQ, "add reaches INT64_MAX exactly");
	is_int(tide_sat_add(MAXQ, 1), MAXQ, "add saturates up");
	is_int(tide_sat_add(INT64_MIN, -1), INT64_MIN, "add saturates down");
	is_int(tide_sat_add(MAXQ, INT64_MIN), -1, "opposite signs never overflow");
	is_int(tide_sat_sub(0, INT64_MIN), MAXQ, "0 - INT64_MIN saturates up");
	is_int(tide_sat_sub(INT64_MIN, 1), INT64_MIN, "sub saturates down");
	is_int(tide_sat_sub(MAXQ - 5, MAXQ), -5, "capacity - used, exact");
	is_int(tide_sat_mul(MAXQ / 5000, 10000), MAXQ, "10000 replicas x MAX/5000 saturate");
	is_int(tide_sat_mul(MAXQ / 10000, 10000), MAXQ / 10000 * 10000, "10000 x MAX/10000 exact");
	is_int(tide_sat_mul(-3, MAXQ), INT64_MIN, "negative product saturates down");
	is_int(tide_sat_release(MAXQ, 5), MAXQ, "a saturated sum stays saturated on release");
	is_int(tide_sat_release(10, 5), 5, "an exact one goes down");
	is_int(tide_sat_charge(10, 5, 0), 10, "sign 0 changes nothing");
	is_int(tide_sat_muldiv(3, 1000, 4), 750, "per mille, exact");
	is_int(tide_sat_muldiv(MAXQ, 1000, MAXQ), 1000, "per mille of huge values, no overflow");
	is_int(tide_sat_muldiv(MAXQ, 1000, 2), MAXQ, "per mille past int64 saturates");
	ok(tide_sat_muldiv(MAXQ / 2, 1000, MAXQ) >= 499 && tide_sat_muldiv(MAXQ / 2, 1000, MAXQ) <= 500,
	   "half of huge is about 500 per mille");
	is_int(tide_sat_add32(INT32_MAX, 1), INT32_MAX, "replica counts saturate");
}

int
main(void)
{
	test_helpers();
	test_node_at_max();
	test_queue_usage_wrap();
	test_group_capacity_sum();
	test_replicas_times_request();
	test_quota_near_max_with_holds();
	test_reserve_on_huge_node();
	test_backfill_time();
	test_gpu_share_clamp();
	test_evict_sums();
	return done_testing();
}
