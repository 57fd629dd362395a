/*
 * test_engine_frag.c: the fragmentation-aware node order (frag.c, R-L5):
 * hand-built clusters where the right node is plain, CPU and memory in the
 * score, the workload given or taken from the pending jobs, ties (fuller
 * node, then name), determinism, and the memo across decide calls.
 */
#include "tap.h"
#include "test_engine_fixture.h"

static const FxQueue Q1[] = {{"q"}};

/* Build, make every queue frag, set the workload (may be NULL), decide. */
static Fx
run_frag(const FxNode *nodes, int nn, const FxJob *jobs, int nj,
		 const FxRun *runs, int nr, const char *const *shapes, const double *weights, int ns)
{
	Fx			fx;

	fx_build(&fx, nodes, nn, Q1, 1, jobs, nj, runs, nr);
	for (int q = 0; q < fx.s->nqueues; q++)
		fx.s->queues[q].placement = TIDE_PLACE_FRAG;
	if (ns > 0)
	{
		TideWorkShape *ws = tide_alloc(fx.s, sizeof(TideWorkShape) * ns);

		for (int i = 0; i < ns; i++)
		{
			int64_t    *v = tide_vec_new(fx.s);

			fx_vec(fx.s, shapes[i], v);
			ws[i].request = v;
			ws[i].gpu_type = -1;
			ws[i].weight = weights ? weights[i] : 1.0;
		}
		fx.s->workload = ws;
		fx.s->nworkload = ns;
	}
	fx.r = tide_decide(fx.s);
	return fx;
}

/* A GPU job that would leave a node too little CPU for the workload goes elsewhere. */
static void
test_cpu(void)
{
	FxNode		nodes[] = {
		{"a", "cpu=32, memory=256Gi, gpu=8"},
		{"b", "cpu=64, memory=256Gi, gpu=8"},
	};
	FxJob		jobs[] = {{1, "q", 0, 1, "cpu=30, memory=1Gi, gpu=1"}};
	const char *shapes[] = {"cpu=4, memory=1Gi, gpu=1"};
	Fx			fx = run_frag(nodes, 2, jobs, 1, NULL, 0, shapes, NULL, 1);

	is_str(fx_nodes(&fx, 1), "b", "frag: 30 cores on a would strand its 7 other GPUs (4-core shape): b");
	fx_free(&fx);

	/* pack takes the first by name: the score is what moves it */
	fx_build(&fx, nodes, 2, Q1, 1, jobs, 1, NULL, 0);
	fx.r = tide_decide(fx.s);
	is_str(fx_nodes(&fx, 1), "a", "pack on the same cluster: a (name order)");
	fx_free(&fx);
}

/*
 * Room for how many: a job that leaves the shape runnable but for fewer
 * copies than the free GPUs could take grows the score (FGD sees no
 * change: one more pod still fits on either node).
 */
static void
test_room(void)
{
	FxNode		nodes[] = {
		{"a", "cpu=16, memory=256Gi, gpu=4"},
		{"b", "cpu=64, memory=256Gi, gpu=4"},
	};
	FxJob		jobs[] = {{1, "q", 0, 1, "cpu=12, memory=1Gi, gpu=1"}};
	const char *shapes[] = {"cpu=4, gpu=1"};
	FxJob		small[] = {{1, "q", 0, 1, "cpu=4, memory=1Gi, gpu=1"}};
	Fx			fx = run_frag(nodes, 2, jobs, 1, NULL, 0, shapes, NULL, 1);

	is_str(fx_nodes(&fx, 1), "b", "12 cores on a leave room for one 4-core pod beside 3 free GPUs: b");
	fx_free(&fx);

	/* 4 cores leave a room for 3 more, one per free GPU: equal growth, least free CPU */
	fx = run_frag(nodes, 2, small, 1, NULL, 0, shapes, NULL, 1);
	is_str(fx_nodes(&fx, 1), "a", "4 cores on a still leave room for its 3 free GPUs: a (less free CPU)");
	fx_free(&fx);
}

/* Memory counts like CPU (FGD looks at GPU and CPU only). */
static void
test_memory(void)
{
	FxNode		nodes[] = {
		{"a", "cpu=64, memory=64Gi, gpu=8"},
		{"b", "cpu=64, memory=512Gi, gpu=8"},
	};
	FxJob		jobs[] = {{1, "q", 0, 1, "cpu=1, memory=60Gi, gpu=1"}};
	const char *shapes[] = {"cpu=1, memory=16Gi, gpu=1"};
	Fx			fx = run_frag(nodes, 2, jobs, 1, NULL, 0, shapes, NULL, 1);

	is_str(fx_nodes(&fx, 1), "b", "frag: 60Gi on a would leave 4Gi, too little for the 16Gi shape: b");
	fx_free(&fx);
}

/* A share goes where the remainder stays usable, not onto the shared GPU. */
static void
test_fraction(void)
{
	FxNode		nodes[] = {
		{"a", "cpu=8, memory=64Gi, gpu=1"},
		{"b", "cpu=8, memory=64Gi, gpu=1"},
	};
	FxRun		runs[] = {{"a", "q", "cpu=1, gpu=0.3", 1, 300}};
	FxJob		jobs[] = {{1, "q", 0, 1, "cpu=1, gpu=0.5"}};
	const char *shapes[] = {"cpu=1, gpu=0.5"};
	Fx			fx = run_frag(nodes, 2, jobs, 1, runs, 1, shapes, NULL, 1);

	is_str(fx_nodes(&fx, 1), "b", "frag: 0.5 on a leaves 0.2, useless to the 0.5 shape; on b 0.5 stays usable");
	fx_free(&fx);

	/* with a 0.7 shape only, a is right: b's remainder 0.5 would be lost */
	{
		const char *s7[] = {"cpu=1, gpu=0.7"};

		fx = run_frag(nodes, 2, jobs, 1, runs, 1, s7, NULL, 1);
		is_str(fx_nodes(&fx, 1), "a", "frag: for a 0.7 workload the share fills the shared GPU: a");
		is_int(fx.r->placements[0].gpu_milli, 500, "it gets a 0.5 share");
		fx_free(&fx);
	}
}

/* The workload taken from the pending jobs when none is given. */
static void
test_derived(void)
{
	FxNode		nodes[] = {
		{"a", "cpu=8, memory=64Gi, gpu=1"},
		{"b", "cpu=8, memory=64Gi, gpu=1"},
	};
	FxRun		runs[] = {{"a", "q", "cpu=1, gpu=0.4", 1, 400}};
	FxJob		jobs[] = {
		{1, "q", 0, 1, "cpu=1, gpu=0.5"},
		{2, "q", 0, 2, "cpu=1, gpu=0.9", .replicas = 1},
		{3, "q", 0, 3, "cpu=1, gpu=0.9", .replicas = 1},
	};
	const char *shapes[] = {"cpu=1, gpu=0.5"};
	Fx			fx = run_frag(nodes, 2, jobs, 3, runs, 1, NULL, NULL, 0);

	/*
	 * pending shapes 0.5 (x1) and 0.9 (x2): 0.5 on b leaves 0.5, lost to
	 * the 0.9 shape; on a it fills the shared GPU to 0.1
	 */
	is_str(fx_nodes(&fx, 1), "a", "derived workload (0.5, 2 x 0.9): the 0.5 share fills the shared GPU on a");
	is_str(fx_nodes(&fx, 2), "b", "and a 0.9 job still finds a whole GPU on b");
	fx_free(&fx);

	fx = run_frag(nodes, 2, jobs, 1, runs, 1, shapes, NULL, 1);
	is_str(fx_nodes(&fx, 1), "b", "given workload (0.5 only): b, as in the fraction case");
	fx_free(&fx);
}

/* Equal growth: the fuller node, then the name; the same on every run. */
static void
test_ties(void)
{
	FxNode		nodes[] = {
		{"n3", "cpu=64, memory=256Gi, gpu=8"},
		{"n1", "cpu=64, memory=256Gi, gpu=8"},
		{"n2", "cpu=64, memory=256Gi, gpu=8"},
	};
	FxNode		rev[] = {
		{"n2", "cpu=64, memory=256Gi, gpu=8"},
		{"n1", "cpu=64, memory=256Gi, gpu=8"},
		{"n3", "cpu=64, memory=256Gi, gpu=8"},
	};
	FxJob		jobs[] = {{1, "q", 0, 1, "cpu=1, gpu=1"}};
	const char *shapes[] = {"cpu=1, gpu=1"};
	FxRun		runs[] = {{"n3", "q", "cpu=1, gpu=4", 0xf}};
	Fx			fx = run_frag(nodes, 3, jobs, 1, NULL, 0, shapes, NULL, 1);

	is_str(fx_nodes(&fx, 1), "n1", "three empty nodes, equal score: the first name");
	fx_free(&fx);
	fx = run_frag(rev, 3, jobs, 1, NULL, 0, shapes, NULL, 1);
	is_str(fx_nodes(&fx, 1), "n1", "the same whatever the input order");
	fx_free(&fx);
	for (int k = 0; k < 3; k++)
	{
		fx = run_frag(nodes, 3, jobs, 1, runs, 1, shapes, NULL, 1);
		is_str(fx_nodes(&fx, 1), "n3", "equal growth (0): the fuller node n3 (4 GPUs free), run %d", k + 1);
		is_int(fx.r->placements[0].gpus, 0x10, "on its lowest free GPU");
		fx_free(&fx);
	}
}

/*
 * A snapshot kept across calls: the growth memoised for a node must not
 * survive the node's change.
 */
static void
test_memo(void)
{
	FxNode		nodes[] = {
		{"a", "cpu=8, memory=64Gi, gpu=1"},
		{"b", "cpu=8, memory=64Gi, gpu=1"},
	};
	FxJob		jobs[] = {{1, "q", 0, 1, "cpu=1, gpu=0.3"}};
	const char *shapes[] = {"cpu=1, gpu=0.5"};
	Fx			fx = run_frag(nodes, 2, jobs, 1, NULL, 0, shapes, NULL, 1);

	is_str(fx_nodes(&fx, 1), "a", "first 0.3 share: equal growth, name order: a");
	fx.s->jobs[0].id = 2;
	fx.r = tide_decide(fx.s);
	is_str(fx_nodes(&fx, 2), "b", "second 0.3 share: a would drop below 0.5 (0.4 left), b keeps 0.7: b");
	fx.s->jobs[0].id = 3;
	fx.r = tide_decide(fx.s);
	is_int(fx_status(&fx, 3), TIDE_PLACED, "third share placed");
	fx_free(&fx);
}

/* Gangs keep their rule (as few nodes as possible), topology keeps R-L6. */
static void
test_gang_topology(void)
{
	FxNode		nodes[] = {
		{"a", "cpu=64, memory=256Gi, gpu=8", NULL, "0,0,0,0,1,1,1,1"},
		{"b", "cpu=64, memory=256Gi, gpu=8", NULL, "0,0,0,0,1,1,1,1"},
	};
	FxRun		runs[] = {{"a", "q", "cpu=1, gpu=1", 0x1}};
	FxJob		jobs[] = {
		{1, "q", 0, 1, "cpu=1, gpu=4", .replicas = 2},
		{2, "q", 0, 2, "cpu=1, gpu=2"},
	};
	const char *shapes[] = {"cpu=1, gpu=4", "cpu=1, gpu=2"};
	Fx			fx = run_frag(nodes, 2, jobs, 2, runs, 1, shapes, NULL, 2);

	is_str(fx_nodes(&fx, 1), "b,b", "gang 2 x 4 GPUs: one node that holds both (b)");
	is_str(fx_nodes(&fx, 2), "a", "2 GPUs: a, where they do not break a free 4-GPU domain");
	{
		int			j = fx_job(&fx, 2);
		const TidePlacement *pl = &fx.r->placements[fx.r->outcomes[j].first_placement];

		ok(pl->gpus == 0x6, "inside the partly used domain 0 (mask 0x%llx)", (unsigned long long) pl->gpus);
	}
	fx_free(&fx);
}

/* CPU nodes have no GPU to fragment: frag orders them as pack does. */
static void
test_cpu_nodes(void)
{
	FxNode		nodes[] = {
		{"c1", "cpu=64, memory=64Gi"},
		{"c2", "cpu=8, memory=64Gi"},
		{"c3", "cpu=2, memory=64Gi"},
	};
	FxJob		jobs[] = {{1, "q", 0, 1, "cpu=4, memory=1Gi"}};
	const char *shapes[] = {"cpu=1, gpu=1"};
	Fx			fx = run_frag(nodes, 3, jobs, 1, NULL, 0, shapes, NULL, 1);

	is_str(fx_nodes(&fx, 1), "c2", "a CPU job on CPU nodes: the one with least CPU that fits (c2), as pack");
	fx_free(&fx);
}

int
main(void)
{
	test_cpu();
	test_room();
	test_memory();
	test_fraction();
	test_derived();
	test_ties();
	test_memo();
	test_gang_topology();
	test_cpu_nodes();
	return done_testing();
}
