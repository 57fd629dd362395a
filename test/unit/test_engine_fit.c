/*
 * test_engine_fit.c: the shared fit checks (src/engine/fit.c) on their own,
 * each on a small hand-built snapshot, without running a decide: node and
 * partition filters (R-L4), room on a node (vector, whole GPUs, one GPU's
 * share), whether an empty node could ever hold a replica, holds and EASY
 * backfill (R-L2), card keys against quota and capability (R-A1), replicas
 * beyond the gang minimum, and the limit tests.
 */
#include "tap.h"
#include "test_engine_fixture.h"
#include "fit.h"

/* The work state the checks read, as tide_decide() sets it up. */
typedef struct FitWork
{
	TideWork	w;
	TideResult	r;
	TideJobInfo info[16];
} FitWork;

static void
fit_work(FitWork *f, const Fx *fx)
{
	TideSnapshot *s = fx->s;

	memset(f, 0, sizeof(*f));
	f->w.s = s;
	f->w.ix = s->index;
	f->w.nres = s->nres;
	f->w.r = &f->r;
	f->w.info = f->info;
	for (int j = 0; j < s->njobs && j < 16; j++)
		f->info[j].group = s->index->queue_group[s->jobs[j].queue];
}

static const TidePart *
part_of(const Fx *fx, const char *node)
{
	return &fx->s->index->parts[fx->s->nodes[fx_node_index(fx->s, node)].part];
}

static const TideNode *
node(const Fx *fx, const char *name)
{
	return &fx->s->nodes[fx_node_index(fx->s, name)];
}

static const TideJob *
job(const Fx *fx, int64_t id)
{
	return &fx->s->jobs[fx_job(fx, id)];
}

static bool
fits(FitWork *f, const Fx *fx, int64_t id, const char *n, bool ignore_holds)
{
	const TideJob *jb = job(fx, id);

	return tide_node_fits(&f->w, jb, node(fx, n), jb->roles[0].request, ignore_holds);
}

/* R-L4: labels, avoided nodes, card type, CPU roles and GPU partitions. */
static void
test_filters(void)
{
	FxNode		nodes[] = {
		{"g1", "cpu=32, memory=64Gi, gpu=8", "K80", NULL, "zone=a,rack=r1"},
		{"g2", "cpu=32, memory=64Gi, gpu=8", "V100", NULL, "zone=b"},
		{"c1", "cpu=32, memory=64Gi", NULL, NULL, "zone=a"},
	};
	FxQueue		qs[] = {{"q"}};
	FxJob		jobs[] = {
		{1, "q", 0, 1, "gpu=1", .selector = "zone=a"},
		{2, "q", 0, 2, "gpu=1", .gpu_type = "V100"},
		{3, "q", 0, 3, "cpu=1"},
		{4, "q", 0, 4, "gpu=1", .avoid = "g1"},
		{5, "q", 0, 5, "gpu=1", .req2 = "cpu=1"},
		{6, "q", 0, 6, "cpu=1", .selector = "zone=a,rack=r1"},
	};
	Fx			fx;
	FitWork		f;
	int			j3,
				j5;

	fx_build(&fx, nodes, 3, qs, 1, jobs, 6, NULL, 0);
	fit_work(&f, &fx);
	j3 = fx_job(&fx, 3);
	j5 = fx_job(&fx, 5);

	ok(tide_node_matches(job(&fx, 1), node(&fx, "g1"), fx_node_index(fx.s, "g1"), true),
	   "selector zone=a matches g1 (zone=a, rack=r1)");
	ok(!tide_node_matches(job(&fx, 1), node(&fx, "g2"), fx_node_index(fx.s, "g2"), true),
	   "selector zone=a does not match g2 (zone=b)");
	ok(tide_node_matches(job(&fx, 6), node(&fx, "g1"), fx_node_index(fx.s, "g1"), true) &&
	   !tide_node_matches(job(&fx, 6), node(&fx, "c1"), fx_node_index(fx.s, "c1"), true),
	   "two selector labels: g1 has both, c1 only zone=a");
	ok(!tide_node_matches(job(&fx, 4), node(&fx, "g1"), fx_node_index(fx.s, "g1"), true) &&
	   tide_node_matches(job(&fx, 4), node(&fx, "g2"), fx_node_index(fx.s, "g2"), true),
	   "the node of a failed attempt is avoided, the others are not");

	ok(tide_part_allowed(&f.w, fx_job(&fx, 1), &job(&fx, 1)->roles[0], part_of(&fx, "g1")) &&
	   !tide_part_allowed(&f.w, fx_job(&fx, 1), &job(&fx, 1)->roles[0], part_of(&fx, "c1")),
	   "a GPU role goes to a GPU partition, never a CPU one");
	ok(!tide_part_allowed(&f.w, fx_job(&fx, 2), &job(&fx, 2)->roles[0], part_of(&fx, "g1")) &&
	   tide_part_allowed(&f.w, fx_job(&fx, 2), &job(&fx, 2)->roles[0], part_of(&fx, "g2")),
	   "gpu_type V100: the V100 partition only");
	ok(tide_part_allowed(&f.w, j3, &job(&fx, 3)->roles[0], part_of(&fx, "c1")) &&
	   !tide_part_allowed(&f.w, j3, &job(&fx, 3)->roles[0], part_of(&fx, "g1")),
	   "a CPU-only job: CPU partitions, not GPU ones");
	fx.s->allow_cpu_jobs_on_gpu_nodes = true;
	ok(tide_part_allowed(&f.w, j3, &job(&fx, 3)->roles[0], part_of(&fx, "g1")),
	   "the snapshot setting lets a CPU-only job use a GPU partition");
	fx.s->allow_cpu_jobs_on_gpu_nodes = false;
	ok(tide_part_allowed(&f.w, j5, &job(&fx, 5)->roles[1], part_of(&fx, "g1")),
	   "the CPU role of a job that asks GPUs may stay on GPU nodes");
	f.info[j3].group = -1;
	ok(!tide_part_allowed(&f.w, j3, &job(&fx, 3)->roles[0], part_of(&fx, "c1")),
	   "a job outside the partition's resource group is never allowed");
	fx_free(&fx);
}

/* Room: vector, whole GPUs, one GPU's share (never two shares added). */
static void
test_room(void)
{
	FxNode		nodes[] = {
		{"n1", "cpu=8, memory=16Gi, gpu=4"},
		{"n2", "cpu=8, gpu=2"},
	};
	FxQueue		qs[] = {{"q"}};
	FxJob		jobs[] = {
		{1, "q", 0, 1, "cpu=2, gpu=1"},
		{2, "q", 0, 2, "cpu=3"},
		{3, "q", 0, 3, "gpu=2"},
		{4, "q", 0, 4, "gpu=0.5"},
		{5, "q", 0, 5, "gpu=0.75"},
		{6, "q", 0, 6, "memory=32Gi"},
		{7, "q", 0, 7, "gpu=8"},
	};
	FxRun		runs[] = {
		{"n1", "q", "cpu=6, gpu=2", 0x3},
		{"n1", "q", "gpu=0.5", 0x4, 500},
		{"n2", "q", "gpu=0.5", 0x1, 500},
		{"n2", "q", "gpu=0.5", 0x2, 500},
	};
	Fx			fx;
	FitWork		f;
	const TideJob *j6;
	const TideJob *j7;

	fx_build(&fx, nodes, 2, qs, 1, jobs, 7, runs, 4);
	fit_work(&f, &fx);
	ok(fits(&f, &fx, 1, "n1", false), "cpu=2, gpu=1 fits n1: 2 cpu and GPU 3 are free");
	ok(!fits(&f, &fx, 2, "n1", false), "cpu=3 does not: 2 cpu left");
	ok(!fits(&f, &fx, 3, "n1", false), "gpu=2 does not: one whole GPU free (1.5 GPUs in sum)");
	ok(fits(&f, &fx, 4, "n1", false), "gpu=0.5 fits: GPU 2 has half left");
	ok(fits(&f, &fx, 4, "n2", false), "gpu=0.5 fits n2: each GPU has half left");
	ok(!fits(&f, &fx, 5, "n2", false), "gpu=0.75 does not fit n2: two halves are never added");
	is_int(f.r.counters.node_checks, 6, "every room test counts as a node check");

	j6 = job(&fx, 6);
	j7 = job(&fx, 7);
	is_int(tide_node_too_small(&f.w, node(&fx, "n1"), job(&fx, 1)->roles[0].request), -1,
		   "n1, empty, could hold cpu=2, gpu=1");
	is_int(tide_node_too_small(&f.w, node(&fx, "n1"), j6->roles[0].request),
		   tide_res_lookup(fx.s, "memory"), "memory=32Gi: n1 is too small on memory");
	is_int(tide_node_too_small(&f.w, node(&fx, "n1"), j7->roles[0].request), TIDE_RES_GPU,
		   "gpu=8: n1 is too small on gpu");
	fx.s->nodes[fx_node_index(fx.s, "n1")].ngpus = 2;
	is_int(tide_node_too_small(&f.w, node(&fx, "n1"), job(&fx, 3)->roles[0].request), -1,
		   "gpu=2 on a node with 2 GPUs: big enough");
	fx.s->nodes[fx_node_index(fx.s, "n1")].ngpus = 1;
	is_int(tide_node_too_small(&f.w, node(&fx, "n1"), job(&fx, 3)->roles[0].request), TIDE_RES_GPU,
		   "gpu=2 on a node with gpu=4 in capacity but 1 GPU: too small on gpu");
	fx_free(&fx);
}

/* Holds (R-L2): they block, unless ignored or the job ends before the holder starts. */
static void
test_holds(void)
{
	FxNode		nodes[] = {{"n1", "cpu=8, gpu=2"}};
	FxQueue		qs[] = {{"q"}};
	FxJob		jobs[] = {
		{1, "q", 0, 1, "cpu=2"},
		{2, "q", 0, 2, "cpu=2", .time_limit = 50},
		{3, "q", 0, 3, "cpu=2", .time_limit = 200},
		{4, "q", 0, 4, "gpu=1"},
		{5, "q", 0, 5, "cpu=2", .time_limit = INT64_MAX},
	};
	Fx			fx;
	FitWork		f;
	TideNode   *n;

	fx_build(&fx, nodes, 1, qs, 1, jobs, 5, NULL, 0);
	fit_work(&f, &fx);
	n = &fx.s->nodes[0];
	fx.s->now = 1000;

	ok(!tide_backfill_ok(fx.s, job(&fx, 1), 2000), "no time_limit: never backfills");
	ok(tide_backfill_ok(fx.s, job(&fx, 2), 1050) && !tide_backfill_ok(fx.s, job(&fx, 2), 1049),
	   "time_limit 50 at now 1000: backfills a shadow from 1050 on");
	ok(!tide_backfill_ok(fx.s, job(&fx, 2), TIDE_TIME_UNKNOWN), "an unknown shadow: never");
	ok(!tide_backfill_ok(fx.s, job(&fx, 5), INT64_MAX - 1), "a huge time_limit saturates: ends after any shadow");

	/* 7 of 8 cpu and GPU 0 held for a job that starts at 1100 */
	n->in_held_list = true;
	n->held[TIDE_RES_CPU] = 7000;
	n->gpu_held[0] = TIDE_MILLI;
	n->gpu_held[1] = 0;
	n->held_mask = 0x1;
	n->hold_shadow = 1100;
	ok(!fits(&f, &fx, 1, "n1", false), "cpu=2 with 7 of 8 cpu held: no room");
	ok(fits(&f, &fx, 1, "n1", true), "the same, holds ignored: room");
	ok(fits(&f, &fx, 2, "n1", false), "a job that ends at 1050, before the holder starts at 1100, backfills");
	ok(!fits(&f, &fx, 3, "n1", false), "a job that ends at 1200 does not");
	ok(tide_node_holds_apply(&f.w, job(&fx, 3), n) && !tide_node_holds_apply(&f.w, job(&fx, 2), n),
	   "tide_node_holds_apply says the same");
	ok(fits(&f, &fx, 4, "n1", false), "gpu=1: GPU 1 is free and not held");
	n->held_mask = 0x3;
	n->gpu_held[1] = TIDE_MILLI;
	ok(!fits(&f, &fx, 4, "n1", false), "gpu=1 with both GPUs held: no room");
	n->in_held_list = false;
	ok(fits(&f, &fx, 4, "n1", false), "a node outside the held list: its holds are not in force");
	fx_free(&fx);
}

/* Card keys (R-A1): a node of card type T charges the GPUs as T too. */
static void
test_card_keys(void)
{
	FxNode		nodes[] = {
		{"a1", "cpu=32, gpu=8", "NVIDIA-A100"},
		{"c1", "cpu=32"},
	};
	FxQueue		qs[] = {{"q", "NVIDIA-A100=2", "NVIDIA-A100=4, cpu=10"}};
	FxJob		jobs[] = {
		{1, "q", 0, 1, "gpu=1"},
		{2, "q", 0, 2, "gpu=3"},
		{3, "q", 0, 3, "gpu=1, NVIDIA-A100=1"},
		{4, "q", 0, 4, "cpu=1"},
		{5, "q", 0, 5, "gpu=2"},
		{6, "q", 0, 6, "cpu=4"},
		{7, "q", 0, 7, "gpu=1", .time_limit = 10},
	};
	FxRun		runs[] = {{"a1", "q", "cpu=8, gpu=2", 0x3}};
	Fx			fx;
	FitWork		f;
	TideCardBlock cb = {-1, 0};
	const TidePart *pa;
	int			t;
	TideQueue  *q;

	fx_build(&fx, nodes, 2, qs, 1, jobs, 7, runs, 1);
	fit_work(&f, &fx);
	pa = part_of(&fx, "a1");
	t = tide_res_lookup(fx.s, "NVIDIA-A100");
	q = &fx.s->queues[0];
	is_int(q->usage[t], 2000, "the running gpu=2 on the A100 node is charged as NVIDIA-A100=2 too");

	ok(!tide_part_card_ok(&f.w, job(&fx, 1), pa, &job(&fx, 1)->roles[0], MODE_GUARANTEED, &cb),
	   "guaranteed: 2 used + 1 asked is over the card quota of 2");
	is_int(cb.res, t, "the blocking card key is recorded");
	is_int(cb.mode, MODE_GUARANTEED, "as a quota block");
	cb.res = -1;
	ok(tide_part_card_ok(&f.w, job(&fx, 1), pa, &job(&fx, 1)->roles[0], MODE_BORROW, &cb),
	   "borrowing: 2 used + 1 asked is within the card capability of 4");
	ok(!tide_part_card_ok(&f.w, job(&fx, 2), pa, &job(&fx, 2)->roles[0], MODE_BORROW, &cb),
	   "borrowing: 2 used + 3 asked is over the card capability of 4");
	is_int(cb.mode, MODE_BORROW, "recorded as a capability block");
	cb.res = -1;
	ok(!tide_part_card_ok(&f.w, job(&fx, 2), pa, &job(&fx, 2)->roles[0], MODE_BORROW, NULL) &&
	   cb.res == -1, "no block asked: nothing recorded");
	ok(tide_part_card_ok(&f.w, job(&fx, 3), pa, &job(&fx, 3)->roles[0], MODE_GUARANTEED, &cb),
	   "a request that names the card itself is left to admission");
	ok(tide_part_card_ok(&f.w, job(&fx, 4), part_of(&fx, "c1"), &job(&fx, 4)->roles[0], MODE_GUARANTEED, &cb),
	   "no GPU asked, or a partition without a card type: no card key");

	/* a queue hold counts against the card capability unless the job backfills */
	fx.s->now = 100;
	q->held[t] = 1500;
	q->hold_shadow = 200;
	ok(!tide_part_card_ok(&f.w, job(&fx, 1), pa, &job(&fx, 1)->roles[0], MODE_BORROW, NULL),
	   "2 used + 1.5 held + 1 asked is over the capability of 4");
	ok(tide_part_card_ok(&f.w, job(&fx, 7), pa, &job(&fx, 7)->roles[0], MODE_BORROW, NULL),
	   "a job that ends (110) before the holder starts (200) ignores the hold");
	q->held[t] = 0;

	ok(tide_extra_replica_ok(&f.w, job(&fx, 5), node(&fx, "a1"), job(&fx, 5)->roles[0].request),
	   "an extra gpu=2 replica on the A100 node: 4 of 4, within capability");
	ok(!tide_extra_replica_ok(&f.w, job(&fx, 2), node(&fx, "a1"), job(&fx, 2)->roles[0].request),
	   "an extra gpu=3 replica: 5 of 4, over");
	ok(!tide_extra_replica_ok(&f.w, job(&fx, 6), node(&fx, "c1"), job(&fx, 6)->roles[0].request),
	   "an extra cpu=4 replica: 12 of 10 cpu, over");
	ok(tide_extra_replica_ok(&f.w, job(&fx, 5), node(&fx, "c1"), job(&fx, 5)->roles[0].request),
	   "on a node without a card type the card key is not charged");
	fx_free(&fx);
}

/*
 * R-L4's exception: a retry keeps off its failed node only while another
 * node of its group could ever hold it (not down, matching, big enough).
 */
static void
test_avoid_exception(void)
{
	FxNode		nodes[] = {
		{"big", "cpu=32, memory=64Gi, gpu=8", "H100", NULL, "zone=a"},
		{"small", "cpu=32, memory=64Gi, gpu=2", "H100", NULL, "zone=a"},
		{"other", "cpu=32, memory=64Gi, gpu=8", "H100", NULL, "zone=b"},
	};
	FxQueue		qs[] = {{"q"}};
	FxJob		jobs[] = {
		{1, "q", 0, 1, "gpu=1", .avoid = "big"},
		{2, "q", 0, 2, "gpu=4", .avoid = "big", .selector = "zone=a"},
		{3, "q", 0, 3, "gpu=4", .avoid = "big"},
		{4, "q", 0, 4, "gpu=4", .avoid = "big,other"},
	};
	Fx			fx;
	FitWork		f;

	fx_build(&fx, nodes, 3, qs, 1, jobs, 4, NULL, 0);
	fit_work(&f, &fx);
	ok(tide_other_node_could_hold(&f.w, fx_job(&fx, 1)),
	   "gpu=1 avoiding big: small or other could hold it");
	ok(!tide_other_node_could_hold(&f.w, fx_job(&fx, 2)),
	   "gpu=4 in zone=a avoiding big: small is too small, other is in zone=b");
	ok(tide_other_node_could_hold(&f.w, fx_job(&fx, 3)),
	   "gpu=4 anywhere avoiding big: other could hold it");
	ok(!tide_other_node_could_hold(&f.w, fx_job(&fx, 4)),
	   "gpu=4 avoiding big and other: nothing else could");
	fx.s->nodes[fx_node_index(fx.s, "other")].state = TIDE_NODE_DOWN;
	ok(!tide_other_node_could_hold(&f.w, fx_job(&fx, 3)),
	   "a down node counts for nothing");
	ok(tide_node_matches(job(&fx, 2), node(&fx, "big"), fx_node_index(fx.s, "big"), false) &&
	   !tide_node_matches(job(&fx, 2), node(&fx, "big"), fx_node_index(fx.s, "big"), true),
	   "the failed node matches only when avoiding is off");
	fx_free(&fx);

	/* decided: a one-node cluster places the retry on the node it failed on */
	{
		FxNode		one[] = {{"only", "cpu=8, memory=16Gi, gpu=1", "H100"}};
		FxJob		retry[] = {{1, "q", 0, 1, "gpu=1", .avoid = "only"}};

		fx_build(&fx, one, 1, qs, 1, retry, 1, NULL, 0);
		fx.r = tide_decide(fx.s);
		is_str(fx_nodes(&fx, 1), "only", "one node: the retry runs on it again");
		fx_free(&fx);
	}
	{
		FxNode		two[] = {{"a", "cpu=8, memory=16Gi, gpu=1", "H100"},
							 {"b", "cpu=8, memory=16Gi, gpu=1", "H100"}};
		FxJob		retry[] = {{1, "q", 0, 1, "gpu=1", .avoid = "a"}};
		FxRun		busy[] = {{"b", "q", "gpu=1", .gpus = 1}};

		fx_build(&fx, two, 2, qs, 1, retry, 1, busy, 1);
		fx.r = tide_decide(fx.s);
		is_str(fx_nodes(&fx, 1), "", "two nodes, the other one busy: the retry waits for it");
		ok(strstr(fx_reason(&fx, 1), "1 node avoided") != NULL, "its reason counts the avoided node: %s",
		   fx_reason(&fx, 1));
		fx_free(&fx);
	}
}

/*
 * A job that avoids nodes and does not fit: its reasons come from its
 * shape's counts with its avoided nodes moved aside, the same as node by
 * node (as a job with a time limit is still diagnosed: no shape).
 */
static void
test_avoid_shape_counts(void)
{
	static char names[12][4];
	FxNode		nodes[12];
	FxRun		busy[12];
	FxQueue		qs[] = {{"q"}};
	char		first[4][1024];
	int64_t		checks[2];

	/* twelve nodes of 2 GPUs, one used on each; d: both; e: no cpu left */
	for (int i = 0; i < 12; i++)
	{
		snprintf(names[i], sizeof(names[i]), "%c", 'a' + i);
		nodes[i] = (FxNode) {names[i], "cpu=32, memory=64Gi, gpu=2", "H100"};
		busy[i] = (FxRun) {names[i], "q", i == 3 ? "gpu=2" : i == 4 ? "cpu=32, gpu=1" : "gpu=1", .gpus = i == 3 ? 3 : 1};
	}
	for (int pass = 0; pass < 2; pass++)
	{
		/* pass 0: from the shape's counts; pass 1: node by node */
		int64_t		limit = pass == 0 ? 0 : 3600;
		FxJob		jobs[] = {
			{1, "q", 9, 1, "gpu=2"},
			{2, "q", 0, 2, "gpu=2", .avoid = "a", .time_limit = limit},
			{3, "q", 0, 3, "gpu=2", .avoid = "a,d,a", .time_limit = limit},
			{4, "q", 0, 4, "gpu=2", .avoid = "e,b", .time_limit = limit},
			{5, "q", 0, 5, "gpu=2", 2, .avoid = "c", .time_limit = limit},
		};
		Fx			fx;

		fx_build(&fx, nodes, 12, qs, 1, jobs, 5, busy, 12);
		fx.r = tide_decide(fx.s);
		checks[pass] = fx.r->counters.node_checks;
		is_str(fx_nodes(&fx, 5), "", "the gang of 2 x gpu=2 is not placed, pass %d", pass);
		for (int k = 0; k < 4; k++)
		{
			if (pass == 0)
				snprintf(first[k], sizeof(first[k]), "%s", fx_reason(&fx, k + 2));
			else
				is_str(first[k], fx_reason(&fx, k + 2),
					   "job %d: the same reasons from the shape's counts as node by node", k + 2);
		}
		fx_free(&fx);
	}
	ok(strstr(first[0], "1 node avoided") != NULL, "the reasons count the avoided node: %s", first[0]);
	ok(strstr(first[1], "2 nodes avoided") != NULL, "a node avoided twice counts once: %s", first[1]);
	ok(strstr(first[3], "gang") != NULL && strstr(first[3], "1 node avoided") != NULL,
	   "a gang's reasons too: %s", first[3]);
	ok(checks[0] < checks[1], "the counts from the shape check fewer nodes (%lld < %lld)",
	   (long long) checks[0], (long long) checks[1]);
}

/* The limit tests: INT64_MAX means "this much or more" and is never reached. */
static void
test_limits(void)
{
	ok(!tide_over(10, 5, 5) && tide_over(10, 5, 6), "used + ask up to the limit is within it");
	ok(!tide_over(TIDE_UNLIMITED, INT64_MAX - 2, 1), "unlimited admits up to INT64_MAX - 1");
	ok(tide_over(TIDE_UNLIMITED, INT64_MAX - 1, 1), "but not INT64_MAX itself");
	ok(tide_over(TIDE_UNLIMITED, INT64_MAX, 1), "an overflowing sum is over");
	ok(!tide_over4(10, 2, 3, 4, 1) && tide_over4(10, 2, 3, 4, 2), "four terms: 10 is within 10, 11 is over");
	ok(!tide_over4(TIDE_UNLIMITED, 1, 2, 3, 4), "small terms under no limit: within");
	ok(tide_over4(TIDE_UNLIMITED, INT64_MAX / 2, INT64_MAX / 2, 1, 1), "terms that reach INT64_MAX: over");
	ok(tide_over4(INT64_MAX - 1, (int64_t) 1 << 62, (int64_t) 1 << 62, 0, 0) &&
	   !tide_over4(INT64_MAX - 1, (int64_t) 1 << 61, (int64_t) 1 << 61, 0, 0),
	   "the slow path past 2^61 adds exactly");
}

int
main(void)
{
	test_filters();
	test_room();
	test_holds();
	test_card_keys();
	test_limits();
	test_avoid_exception();
	test_avoid_shape_counts();
	return done_testing();
}
