/*
 * test_engine_place.c: node filters and order (seed 001, R-L4/R-L5), GPU
 * masks and topology (R-L6), fractional GPUs (seed 003), gangs (R-L3),
 * admission with quota, capability and card keys (R-A1/R-A2), DRF (R-O4).
 */
#include "tap.h"
#include "test_engine_fixture.h"

static const FxQueue Q1[] = {{"q"}};

static Fx
run(const FxNode *nodes, int nn, const FxQueue *qs, int nq,
	const FxJob *jobs, int nj, const FxRun *runs, int nr)
{
	Fx			fx;

	fx_build(&fx, nodes, nn, qs, nq, jobs, nj, runs, nr);
	fx.r = tide_decide(fx.s);
	return fx;
}

/* Seed 001: filterNodesByNodeLabel, ByGpuType, ForNoneGpuJob, tried nodes, state. */
static void
test_filters(void)
{
	FxNode		nodes[] = {
		{"a-gpu", "cpu=32, memory=64Gi, gpu=8", "K80", NULL, "zone=a"},
		{"b-gpu", "cpu=32, memory=64Gi, gpu=8", "V100", NULL, "zone=b"},
		{"c-cpu", "cpu=32, memory=64Gi", NULL, NULL, "zone=a"},
		{"d-cpu", "cpu=32, memory=64Gi", NULL, NULL, "zone=b", TIDE_NODE_DRAINING},
		{"e-cpu", "cpu=32, memory=64Gi", NULL, NULL, "zone=b", TIDE_NODE_DOWN},
	};
	FxJob		jobs[] = {
		{1, "q", 0, 1, "cpu=1, gpu=1", .selector = "zone=b"},
		{2, "q", 0, 2, "cpu=1, gpu=1", .gpu_type = "K80"},
		{3, "q", 0, 3, "cpu=1"},
		{4, "q", 0, 4, "cpu=1", .selector = "zone=b"},
		{5, "q", 0, 5, "cpu=1, gpu=1", .gpu_type = "B200"},
		{6, "q", 0, 6, "cpu=1, gpu=1", .avoid = "a-gpu,b-gpu"},
		{7, "q", 0, 7, "cpu=1, gpu=1", .avoid = "a-gpu"},
		{8, "q", 0, 8, "cpu=1", .selector = "zone=c"},
	};
	Fx			fx = run(nodes, 5, Q1, 1, jobs, 8, NULL, 0);

	is_str(fx_nodes(&fx, 1), "b-gpu", "R-L4 labels: zone=b GPU job lands on b-gpu");
	is_str(fx_nodes(&fx, 2), "a-gpu", "R-L4 gpu_type: K80 job lands on the K80 node");
	is_str(fx_nodes(&fx, 3), "c-cpu", "R-L4: a CPU job avoids GPU nodes");
	is_int(fx_status(&fx, 4), TIDE_PENDING, "R-L4: zone=b CPU job: d-cpu draining, e-cpu down, GPU node off limits");
	is_str(fx_reason(&fx, 4), "no ready node for cpu=1 (2 draining or down)", "its reason says so");
	is_int(fx_status(&fx, 5), TIDE_UNSCHEDULABLE, "R-A2: no node with gpu_type B200 at all");
	is_str(fx_reason(&fx, 5), "no node with gpu_type B200 in the resource group", "reason names the card type");
	is_str(fx_nodes(&fx, 6), "a-gpu",
		   "R-L4: every GPU node was a failed attempt: no other could hold it, so it may use them again");
	is_str(fx_nodes(&fx, 7), "b-gpu", "R-L4: the node of the previous failed attempt is skipped");
	is_int(fx_status(&fx, 8), TIDE_UNSCHEDULABLE, "R-A2: no node has the label zone=c");
	is_str(fx_reason(&fx, 8), "no node has labels zone=c", "reason names the label");
	fx_free(&fx);

	/* the setting lets CPU jobs use GPU nodes */
	{
		FxNode		gpu_only[] = {{"g1", "cpu=8, gpu=8", "K80"}};
		FxJob		cpu[] = {{1, "q", 0, 1, "cpu=1"}};

		fx = run(gpu_only, 1, Q1, 1, cpu, 1, NULL, 0);
		is_int(fx_status(&fx, 1), TIDE_UNSCHEDULABLE, "R-L4: CPU job and only GPU nodes: unschedulable");
		fx_free(&fx);
		fx_build(&fx, gpu_only, 1, Q1, 1, cpu, 1, NULL, 0);
		fx.s->allow_cpu_jobs_on_gpu_nodes = true;
		fx.r = tide_decide(fx.s);
		is_str(fx_nodes(&fx, 1), "g1", "R-L4: allowed by the setting, it lands on g1");
		fx_free(&fx);
		fx_build(&fx, gpu_only, 1, Q1, 1, cpu, 1, NULL, 0);
		fx.s->nodes[0].allow_cpu_jobs = true;
		tide_snapshot_finish(fx.s, NULL, 0);
		fx.r = tide_decide(fx.s);
		is_str(fx_nodes(&fx, 1), "g1", "R-L4: allowed by the node (allow_cpu_jobs), it lands on g1");
		fx_free(&fx);
	}
}

/* R-L5: pack (fullest node after placement), ties by name; spread; gangs on few nodes. */
static void
test_node_order(void)
{
	FxNode		nodes[] = {
		{"n3", "cpu=64, gpu=8", "H100"},
		{"n1", "cpu=64, gpu=8", "H100"},
		{"n2", "cpu=64, gpu=8", "H100"},
	};
	FxRun		runs[] = {{"n2", "q", "cpu=4, gpu=4", 0x0F}};
	FxJob		one[] = {{1, "q", 0, 1, "cpu=1, gpu=2"}};
	FxJob		big[] = {{1, "q", 0, 1, "cpu=1, gpu=6"}};
	FxJob		gang[] = {{1, "q", 0, 1, "cpu=1, gpu=4", 2}};
	FxJob		gang3[] = {{1, "q", 0, 1, "cpu=1, gpu=4", 3}};
	FxQueue		spread[] = {{"q", .spread = 1}};
	Fx			fx;

	fx = run(nodes, 3, Q1, 1, one, 1, runs, 1);
	is_str(fx_nodes(&fx, 1), "n2", "R-L5 pack: 2 GPUs go to the half-full node n2");
	fx_free(&fx);
	fx = run(nodes, 3, Q1, 1, big, 1, runs, 1);
	is_str(fx_nodes(&fx, 1), "n1", "R-L5: 6 GPUs: empty nodes tie, the first name wins (not random)");
	fx_free(&fx);
	fx = run(nodes, 3, spread, 1, one, 1, runs, 1);
	is_str(fx_nodes(&fx, 1), "n1", "R-L5 spread: the emptiest node, first by name");
	fx_free(&fx);
	fx = run(nodes, 3, Q1, 1, gang, 1, runs, 1);
	is_str(fx_nodes(&fx, 1), "n1,n1", "R-L5: a gang of 2 x 4 GPUs goes on one node, not n2 + another");
	fx_free(&fx);
	fx = run(nodes, 3, Q1, 1, gang3, 1, runs, 1);
	is_str(fx_nodes(&fx, 1), "n1,n1,n2", "R-L5: 3 x 4 GPUs: one whole node, then the half-full one");
	fx_free(&fx);
	{
		/* CPU nodes: 7 and 5 cpus free (one bucket): pack takes the fuller, spread the emptier */
		FxNode		cpu[] = {{"c1", "cpu=8"}, {"c2", "cpu=8"}};
		FxRun		used[] = {{"c1", "q", "cpu=1"}, {"c2", "q", "cpu=3"}};
		FxJob		j4[] = {{1, "q", 0, 1, "cpu=4"}};

		fx = run(cpu, 2, Q1, 1, j4, 1, used, 2);
		is_str(fx_nodes(&fx, 1), "c2", "R-L5 pack on CPU nodes: the node with least CPU left after (c2)");
		fx_free(&fx);
		fx = run(cpu, 2, spread, 1, j4, 1, used, 2);
		is_str(fx_nodes(&fx, 1), "c1", "R-L5 spread on CPU nodes: the node with most CPU left (c1)");
		fx_free(&fx);
	}
}

/* R-L6 / seed 001: GPU masks inside one topology domain, largest free domains kept whole. */
static void
test_gpu_topology(void)
{
	FxNode		nodes[] = {{"n1", "cpu=64, gpu=8", "H100", "0,0,0,0,1,1,1,1"}};
	Fx			fx;

	{
		FxJob		j[] = {{1, "q", 0, 1, "gpu=4"}};

		fx = run(nodes, 1, Q1, 1, j, 1, NULL, 0);
		is_int(fx_gpus(&fx, 1, 0), 0x0F, "R-L6: 4 GPUs on an empty node: domain 0 whole (mask 0-3)");
		fx_free(&fx);
	}
	{
		FxRun		r[] = {{"n1", "q", "gpu=1", 0x01}};
		FxJob		j[] = {{1, "q", 0, 1, "gpu=2"}};

		fx = run(nodes, 1, Q1, 1, j, 1, r, 1);
		is_int(fx_gpus(&fx, 1, 0), 0x06, "R-L6: 2 GPUs from the partly used domain (1,2), domain 1 stays whole");
		fx_free(&fx);
	}
	{
		FxRun		r[] = {{"n1", "q", "gpu=1", 0x01}};
		FxJob		j[] = {{1, "q", 0, 1, "gpu=4"}};

		fx = run(nodes, 1, Q1, 1, j, 1, r, 1);
		is_int(fx_gpus(&fx, 1, 0), 0xF0, "R-L6: 4 GPUs: only domain 1 holds them inside one domain");
		fx_free(&fx);
	}
	{
		FxRun		r[] = {{"n1", "q", "gpu=2", 0x30}};
		FxJob		j[] = {{1, "q", 0, 1, "gpu=5"}};

		fx = run(nodes, 1, Q1, 1, j, 1, r, 1);
		is_int(fx_gpus(&fx, 1, 0), 0x4F, "R-L6: 5 GPUs span two domains: the whole domain 0 plus GPU 6");
		fx_free(&fx);
	}
	{
		/* more domains than the engine tracks: topology ignored, not an error */
		FxNode		many[] = {{"n1", "gpu=20", "H100",
		"0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19"}};
		FxJob		j[] = {{1, "q", 0, 1, "gpu=2"}};

		fx = run(many, 1, Q1, 1, j, 1, NULL, 0);
		is_int(fx_gpus(&fx, 1, 0), 0x03, "20 domains (over 16): one domain assumed, GPUs 0,1");
		fx_free(&fx);
	}
	{
		FxNode		four[] = {{"n1", "gpu=8", "H100", "0,0,1,1,2,2,3,3"}};
		FxRun		r[] = {{"n1", "q", "gpu=1", 0x04}};
		FxJob		j[] = {{1, "q", 0, 1, "gpu=1"}, {2, "q", 0, 2, "gpu=2"}};

		fx = run(four, 1, Q1, 1, j, 2, r, 1);
		is_int(fx_gpus(&fx, 1, 0), 0x08, "R-L6: 1 GPU completes the broken domain (GPU 3)");
		is_int(fx_gpus(&fx, 2, 0), 0x03, "R-L6: 2 GPUs take a whole free domain (0,1), first by id");
		fx_free(&fx);
	}
}

/* Seed 003: fractions from one GPU's remaining share, shared GPUs first; >1 must be whole. */
static void
test_fractions(void)
{
	FxNode		nodes[] = {{"n1", "cpu=8, gpu=2", "T4"}};
	Fx			fx;

	{
		FxRun		r[] = {{"n1", "q", "gpu=0.5", 0x01, 500}, {"n1", "q", "gpu=0.5", 0x02, 500}};
		FxJob		j[] = {{1, "q", 0, 1, "gpu=0.75"}};

		fx = run(nodes, 1, Q1, 1, j, 1, r, 2);
		is_int(fx_status(&fx, 1), TIDE_PENDING, "seed 003: 0.75 never from two 0.5 halves added together");
		fx_free(&fx);
	}
	{
		FxRun		r[] = {{"n1", "q", "gpu=0.5", 0x02, 500}};
		FxJob		j[] = {{1, "q", 0, 1, "gpu=0.5"}, {2, "q", 0, 2, "gpu=0.5"}};

		fx = run(nodes, 1, Q1, 1, j, 2, r, 1);
		is_int(fx_gpus(&fx, 1, 0), 0x02, "R-L6: 0.5 goes to the shared GPU 1, GPU 0 stays whole");
		is_int(fx.r->placements[fx.r->outcomes[fx_job(&fx, 1)].first_placement].gpu_milli, 500,
			   "placement records the 500 milli share");
		is_int(fx_gpus(&fx, 2, 0), 0x01, "the next 0.5 opens GPU 0");
		is_int(fx.s->nodes[0].gpu_free[1], 0, "GPU 1 is now full (0 left)");
		fx_free(&fx);
	}
	{
		FxRun		r[] = {{"n1", "q", "gpu=0.5", 0x01, 500}, {"n1", "q", "gpu=0.7", 0x02, 700}};
		FxJob		j[] = {{1, "q", 0, 1, "gpu=250m"}};

		fx = run(nodes, 1, Q1, 1, j, 1, r, 2);
		is_int(fx_gpus(&fx, 1, 0), 0x02, "R-L6: 250m goes to the shared GPU with least left that fits (0.3)");
		fx_free(&fx);
	}
	{
		FxJob		j[] = {{1, "q", 0, 1, "gpu=1.5"}};

		fx = run(nodes, 1, Q1, 1, j, 1, NULL, 0);
		is_int(fx_status(&fx, 1), TIDE_UNSCHEDULABLE, "seed 003: 1.5 GPUs is neither whole nor a fraction");
		is_str(fx_reason(&fx, 1), "gpu=1.5: requests above one GPU must be whole numbers", "reason says why");
		fx_free(&fx);
	}
	{
		FxNode		big[] = {{"n1", "cpu=8, gpu=4", "T4"}};
		FxRun		r[] = {{"n1", "q", "gpu=0.5", 0x01, 500}};
		FxJob		j[] = {{1, "q", 0, 1, "gpu=2"}};

		fx = run(big, 1, Q1, 1, j, 1, r, 1);
		is_int(fx_gpus(&fx, 1, 0), 0x06, "R-L6: whole GPUs never include a shared GPU");
		fx_free(&fx);
	}
}

/* R-L3: gangs all or nothing; min_available; reason with the best fit. */
static void
test_gangs(void)
{
	FxNode		nodes[] = {{"n1", "cpu=64, gpu=8", "H100"}, {"n2", "cpu=64, gpu=8", "H100"}};
	FxRun		r[] = {{"n2", "q", "gpu=4", 0x0F}};
	Fx			fx;

	{
		FxJob		j[] = {{1, "q", 0, 1, "gpu=4", 4}, {2, "q", 0, 2, "gpu=2"}};

		fx = run(nodes, 2, Q1, 1, j, 2, r, 1);
		is_int(fx_status(&fx, 1), TIDE_PENDING, "R-L3: gang 4 x gpu=4 with room for 3: nothing placed");
		is_str(fx_reason(&fx, 1), "gang 4 x gpu=4: best fit places 3",
			   "R-C2: gang reason with the best fit");
		is_int(fx.r->outcomes[fx_job(&fx, 1)].nplacements, 0, "no replica of it stays placed");
		is_str(fx_nodes(&fx, 2), "n2", "rollback left every GPU: the next job packs on n2");
		is_int(fx.s->nodes[0].used[TIDE_RES_GPU], 0, "n1 is untouched after the rollback");
		fx_free(&fx);
	}
	{
		FxJob		j[] = {{1, "q", 0, 1, "gpu=4", 4, .min_available = 3}};

		fx = run(nodes, 2, Q1, 1, j, 1, r, 1);
		is_int(fx_status(&fx, 1), TIDE_PLACED, "R-L3: min_available 3 of 4: placed with 3");
		is_int(fx.r->outcomes[fx_job(&fx, 1)].nplacements, 3, "3 replicas placed");
		fx_free(&fx);
	}
	{
		/* two roles: 1 ps (cpu) + 2 workers (gpu=8) need 2 whole nodes */
		FxNode		three[] = {{"n1", "cpu=64, gpu=8", "H100"}, {"n2", "cpu=64, gpu=8", "H100"},
		{"n3", "cpu=64, gpu=8", "H100"}};
		FxJob		j[] = {{1, "q", 0, 1, "cpu=4", 1, "cpu=8, gpu=8", 2}};

		fx = run(three, 3, Q1, 1, j, 1, r, 0);
		is_str(fx_nodes(&fx, 1), "n1,n1,n2", "R-L3/R-L4: ps role stays with the gang on GPU nodes; workers take n1, n2");
		fx_free(&fx);
	}
}

/* R-A1 / R-A2: quota, capability, named resources only, card keys, borrowing after guaranteed. */
static void
test_admission(void)
{
	Fx			fx;
	FxNode		nodes[] = {{"h1", "cpu=64, gpu=8", "NVIDIA-H200"}, {"a1", "cpu=64, gpu=8", "A100"}};

	{
		FxQueue		q[] = {{"q", NULL, "NVIDIA-H200=8"}};
		FxRun		r[] = {{"h1", "q", "gpu=8", 0xFF}};
		FxJob		j[] = {{1, "q", 0, 1, "gpu=4"}};

		fx = run(nodes, 2, q, 1, j, 1, r, 1);
		is_str(fx_nodes(&fx, 1), "a1", "R-A1 card key: H200 capability full, the job lands on A100");
		fx_free(&fx);
	}
	{
		FxNode		h[] = {{"h1", "cpu=64, gpu=8", "NVIDIA-H200"}, {"h2", "cpu=64, gpu=8", "NVIDIA-H200"}};
		FxQueue		q[] = {{"q", NULL, "NVIDIA-H200=8"}};
		FxRun		r[] = {{"h1", "q", "gpu=8", 0xFF}};
		FxJob		j[] = {{1, "q", 0, 1, "gpu=4"}};

		fx = run(h, 2, q, 1, j, 1, r, 1);
		is_int(fx_status(&fx, 1), TIDE_PENDING, "R-A1 card key: H200 capability 8 reached, h2 is free but off limits");
		is_str(fx_reason(&fx, 1), "queue q NVIDIA-H200 capability: 8 used + 4 asked > 8", "reason with numbers");
		fx_free(&fx);
	}
	{
		FxQueue		q[] = {{"q", "gpu=16", NULL}};
		FxJob		j[] = {{1, "q", 0, 1, "cpu=60, gpu=1"}};

		fx = run(nodes, 2, q, 1, j, 1, NULL, 0);
		is_int(fx.r->outcomes[0].klass, TIDE_CLASS_GUARANTEED, "R-A1: quota gpu=16 says nothing of CPU: guaranteed");
		fx_free(&fx);
	}
	{
		FxQueue		q[] = {{"q", NULL, "gpu=8"}};
		FxJob		j[] = {{1, "q", 0, 1, "gpu=4", 4}};

		fx = run(nodes, 2, q, 1, j, 1, NULL, 0);
		is_int(fx_status(&fx, 1), TIDE_UNSCHEDULABLE, "R-A2: a gang of 16 GPUs in a queue capped at 8");
		is_str(fx_reason(&fx, 1), "queue q gpu capability is 8, the job needs 16", "R-A2 reason");
		fx_free(&fx);
	}
	{
		FxQueue		q[] = {{"q", NULL, "gpu=8"}};
		FxRun		r[] = {{"h1", "q", "gpu=6", 0x3F}};
		FxJob		j[] = {{1, "q", 0, 1, "gpu=4"}};

		fx = run(nodes, 2, q, 1, j, 1, r, 1);
		is_int(fx_status(&fx, 1), TIDE_PENDING, "R-A1: capability 8, 6 used, 4 asked: waits");
		is_str(fx_reason(&fx, 1), "queue q gpu capability: 6 used + 4 asked > 8", "reason: 6 used + 4 asked > 8");
		fx_free(&fx);
	}
	{
		/* card quota: guaranteed on gpu, not on the H200 card key: placed as borrowing */
		FxNode		h[] = {{"h1", "cpu=64, gpu=8", "NVIDIA-H200"}};
		FxQueue		q[] = {{"q", "gpu=16, NVIDIA-H200=4", NULL}};
		FxJob		j[] = {{1, "q", 0, 1, "gpu=8"}};

		fx = run(h, 1, q, 1, j, 1, NULL, 0);
		is_int(fx_status(&fx, 1), TIDE_PLACED, "R-A1: H200 quota 4 < 8 asked: not guaranteed there, placed borrowing");
		is_int(fx.r->outcomes[0].klass, TIDE_CLASS_BORROWING, "its class is borrowing");
		is_int(fx.s->queues[0].usage[tide_res_lookup(fx.s, "NVIDIA-H200")], 8000,
			   "the queue is charged 8 H200 (card key)");
		fx_free(&fx);
	}
	{
		/* the same job reserving on a full node: one queue hold, one node hold */
		FxNode		h[] = {{"h1", "cpu=64, gpu=8", "NVIDIA-H200"}};
		FxQueue		q[] = {{"q", "gpu=16, NVIDIA-H200=4", NULL}};
		FxRun		r[] = {{"h1", "q", "gpu=4", 0x0F}};
		FxJob		j[] = {{1, "q", 0, 1, "gpu=8", .reserve = 1}};

		fx = run(h, 1, q, 1, j, 1, r, 1);
		is_int(fx_status(&fx, 1), TIDE_PENDING, "R-L2: 8 GPUs do not fit beside 4");
		is_int(fx.r->nholds, 2, "R-L2: it reserves once (queue headroom and h1), not once per pass");
		fx_free(&fx);
	}
	{
		/* borrowing never takes what a guaranteed job of this cycle uses */
		FxNode		one[] = {{"n1", "cpu=64, gpu=8", "H100"}};
		FxQueue		q[] = {{"hi", NULL, NULL, 100}, {"lo", "gpu=8", NULL, 0}};
		FxJob		j[] = {{1, "hi", 0, 1, "gpu=8"}, {2, "lo", 0, 2, "gpu=8"}};

		fx = run(one, 1, q, 2, j, 2, NULL, 0);
		is_int(fx_status(&fx, 2), TIDE_PLACED, "R-A1: lo's guaranteed job is placed first");
		is_int(fx_status(&fx, 1), TIDE_PENDING, "R-A1: hi (queue priority 100, no quota) is borrowing: waits");
		is_int(fx.r->outcomes[0].klass, TIDE_CLASS_BORROWING, "hi's job is classed borrowing");
		fx_free(&fx);
	}
}

/* R-A1 idle jobs: the group's capacity minus its non-idle usage. */
static void
test_idle_admission(void)
{
	FxNode		nodes[] = {{"n1", "cpu=8"}, {"n2", "cpu=8"}};
	FxQueue		q[] = {{"q"}, {"other"}};
	FxRun		r[] = {{"n1", "other", "cpu=6"}, {"n2", "other", "cpu=2", .idle = 1}};
	FxJob		j[] = {{1, "q", 0, 1, "cpu=6", 2, .idle = 1}, {2, "q", 0, 2, "cpu=4", .idle = 1}};
	Fx			fx = run(nodes, 2, q, 2, j, 2, r, 2);

	is_int(fx_status(&fx, 1), TIDE_PENDING, "R-A1: an idle job above the group's capacity minus non-idle usage waits");
	is_str(fx_reason(&fx, 1), "idle jobs: group cpu 6 used by non-idle jobs + 12 asked > 16",
		   "its reason gives the group numbers");
	is_str(fx_nodes(&fx, 2), "n2", "R-A1: an idle job uses any free resources of the group (another queue's idle usage aside)");
	is_int(fx.s->queues[0].idle_usage[TIDE_RES_CPU], 4000, "idle usage is charged apart from non-idle usage");
	fx_free(&fx);
}

/* R-O4: queue priority first, then the lower dominant share of quota. */
static void
test_drf(void)
{
	FxNode		one[] = {{"n1", "cpu=64, gpu=8", "H100"}};
	FxQueue		q[] = {{"qa", "gpu=8", NULL}, {"qb", "gpu=8", NULL}};
	FxRun		r[] = {{"n1", "qa", "gpu=4", 0x0F}};
	FxJob		j[] = {{1, "qa", 9, 1, "gpu=4"}, {2, "qb", 0, 2, "gpu=4"}};
	Fx			fx = run(one, 1, q, 2, j, 2, r, 1);

	is_int(fx_status(&fx, 2), TIDE_PLACED, "R-O4: qb (share 0) goes before qa (share 0.5)");
	is_int(fx_status(&fx, 1), TIDE_PENDING, "R-O4: qa's job waits despite job priority 9");
	fx_free(&fx);
	{
		FxQueue		qp[] = {{"qa", "gpu=8", NULL, 5}, {"qb", "gpu=8", NULL, 0}};

		fx = run(one, 1, qp, 2, j, 2, r, 1);
		is_int(fx_status(&fx, 1), TIDE_PLACED, "R-O4: higher queue priority beats lower share");
		fx_free(&fx);
	}
	{
		/* shares change as the walk places jobs: the queues alternate */
		FxNode		big[] = {{"n1", "cpu=64, gpu=64", "H100"}};
		FxQueue		q2[] = {{"qa", "gpu=8", NULL}, {"qb", "gpu=8", NULL}};
		FxJob		jj[] = {{1, "qa", 0, 1, "gpu=2"}, {2, "qa", 0, 2, "gpu=2"}, {3, "qa", 0, 3, "gpu=2"},
		{4, "qb", 0, 4, "gpu=2"}, {5, "qb", 0, 5, "gpu=2"}, {6, "qb", 0, 6, "gpu=2"}};

		fx = run(big, 1, q2, 2, jj, 6, NULL, 0);
		is_str(fx_walk(&fx), "1,4,2,5,3,6", "R-O4: DRF interleaves two equal queues");
		fx_free(&fx);
	}
}

/* tide_charge keeps a snapshot across calls (the simulator's use). */
static void
test_kept_snapshot(void)
{
	FxNode		nodes[] = {{"n1", "cpu=8, gpu=8", "H100"}};
	FxJob		j[] = {{1, "q", 0, 1, "gpu=8"}};
	Fx			fx;
	TidePlacement p;

	fx = run(nodes, 1, Q1, 1, j, 1, NULL, 0);
	is_int(fx_status(&fx, 1), TIDE_PLACED, "first call places 8 GPUs");
	p = fx.r->placements[0];
	fx.r = tide_decide(fx.s);
	is_int(fx_status(&fx, 1), TIDE_PENDING, "same job again: the snapshot remembers the GPUs are taken");
	tide_charge(fx.s, p.node, 0, false, p.res, p.gpus, p.gpu_milli, -1);
	fx.r = tide_decide(fx.s);
	is_int(fx_status(&fx, 1), TIDE_PLACED, "after release (tide_charge -1) it fits again");
	fx_free(&fx);
}

/* Malformed input never crashes: a job without replicas is unschedulable. */
static void
test_malformed(void)
{
	FxNode		nodes[] = {{"n1", "cpu=8"}};
	FxJob		j[] = {{1, "q", 0, 1, "cpu=1"}, {2, "q", 0, 2, "cpu=1"}};
	Fx			fx;

	fx_build(&fx, nodes, 1, Q1, 1, j, 2, NULL, 0);
	fx.s->roles[0].replicas = 0;
	fx.s->jobs[1].nroles = 0;
	fx.r = tide_decide(fx.s);
	is_int(fx_status(&fx, 1), TIDE_UNSCHEDULABLE, "a job whose only role has 0 replicas is unschedulable");
	is_str(fx_reason(&fx, 2), "the job has no task with replicas", "a job without roles says so");
	fx_free(&fx);
}

int
main(void)
{
	test_malformed();
	test_filters();
	test_node_order();
	test_gpu_topology();
	test_fractions();
	test_gangs();
	test_admission();
	test_drf();
	test_idle_admission();
	test_kept_snapshot();
	return done_testing();
}
