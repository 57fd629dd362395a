/*
 * test_reasons_table.c: the table of reasons (src/engine/reasons.def)
 * renders every reason as the engine always worded it (R-C2): each row's
 * text with its numbers, plurals, optional parts and names, and the
 * sentences the load gives jobs that ask for what no node offers.
 */
#include "tap.h"
#include "test_engine_fixture.h"
#include "reasons.h"

static const FxNode NODES[] = {{"n1", "cpu=8, gpu=8, memory=64Gi", "H100"}};
static const FxQueue QUEUES[] = {{"qa", "gpu=2"}};

/* Render reason x as the reason of the fixture's job 0. */
static const char *
text_of(Fx *fx, TideReason x)
{
	static char buf[1024];
	TideResult *r = fx->r;
	TideReason *saved = r->reasons;
	TideOutcome o = r->outcomes[0];

	r->reasons = &x;
	r->outcomes[0].reasons = 0;
	r->outcomes[0].nreasons = 1;
	tide_reason_text(fx->s, r, 0, buf, sizeof(buf));
	r->reasons = saved;
	r->outcomes[0] = o;
	return buf;
}

static TideReason
R(int code, int res, int role, int64_t a, int64_t b, int64_t c, int64_t ref)
{
	TideReason	x = {0};

	x.code = (int16_t) code;
	x.res = (int16_t) res;
	x.role = role;
	x.a = a;
	x.b = b;
	x.c = c;
	x.ref = ref;
	return x;
}

int
main(void)
{
	Fx			fx;
	FxJob		jobs[] = {{1, "qa", 0, 1, "cpu=4, gpu=2", 2, .selector = "zone=a,rack=r1"}};
	int			gpu,
				cpu,
				mem,
				h100 = -1;
	char		buf[256];

	fx_build(&fx, NODES, 1, QUEUES, 1, jobs, 1, NULL, 0);
	fx.r = tide_decide(fx.s);
	gpu = TIDE_RES_GPU;
	cpu = mem = -1;
	for (int r = 0; r < fx.s->nres; r++)
	{
		if (strcmp(fx.s->res_names[r], "cpu") == 0)
			cpu = r;
		if (strcmp(fx.s->res_names[r], "memory") == 0)
			mem = r;
		if (strcmp(fx.s->res_names[r], "H100") == 0)
			h100 = r;
	}
	ok(cpu >= 0 && mem >= 0, "the fixture has cpu and memory");

	for (int code = R_NONE + 1; code < R_COUNT; code++)
		ok(strncmp(tide_reason_rule(code), "R-", 2) == 0, "reason code %d names its rule (%s)", code,
		   tide_reason_rule(code));
	is_str(tide_reason_rule(R_COUNT), "?", "a code past the table has no rule");

	is_str(text_of(&fx, R(R_CAPABILITY, gpu, -1, 6000, 2000, 4000, 0)),
		   "queue qa gpu capability: 6 used + 2 asked > 4", "capability");
	is_str(text_of(&fx, R(R_CAPABILITY, gpu, -1, INT64_MAX, 2000, 4000, 0)),
		   "queue qa gpu capability: 9223372036854775.807 or more used + 2 asked > 4",
		   "a saturated sum reads as a bound");
	is_str(text_of(&fx, R(R_QUOTA_IDLE, mem, -1, 16LL * 1024 * 1024 * 1024 * 1000, 500, TIDE_UNLIMITED, 0)),
		   "idle jobs: group memory 16Gi used by non-idle jobs + 0.5 asked > unlimited", "quota of idle jobs");
	is_str(text_of(&fx, R(R_CARD_QUOTA, gpu, 0, 2000, 2000, 2000, 0)),
		   "queue qa gpu quota: 2 used + 2 asked > 2", "card quota");
	is_str(text_of(&fx, R(R_HELD, -1, 0, 1, 0, 0, 42)), "held for job 42 (1 node)", "held, one node");
	is_str(text_of(&fx, R(R_HELD, -1, 0, 3, 0, 0, 42)), "held for job 42 (3 nodes)", "held, plural");
	is_str(text_of(&fx, R(R_HELD_QUEUE, gpu, 0, 4000, 2000, 4000, 7)),
		   "queue qa gpu held for job 7: 4 used and held + 2 asked > 4", "queue headroom held");
	is_str(text_of(&fx, R(R_GANG, -1, 0, 2, 1, 0, 0)), "gang 2 x cpu=4, gpu=2: best fit places 1", "gang");
	is_str(text_of(&fx, R(R_NO_ROOM, -1, 0, 1, 0, 0, -1)),
		   "no ready node has room for cpu=4, gpu=2 (1 node)", "no room");
	is_str(text_of(&fx, R(R_NO_ROOM, gpu, 0, 2, 2, 0, -1)),
		   "no ready node has room for cpu=4, gpu=2 (2 nodes: short of gpu on 2)", "no room, one resource short");
	is_str(text_of(&fx, R(R_NO_ROOM, gpu, 0, 2, 2, 1, cpu)),
		   "no ready node has room for cpu=4, gpu=2 (2 nodes: short of gpu on 2, cpu on 1)",
		   "no room, two resources short");
	is_str(text_of(&fx, R(R_NOT_READY, -1, 0, 3, 0, 0, h100)),
		   "no ready node with gpu_type H100 (3 draining or down)", "not ready, with a gpu_type");
	is_str(text_of(&fx, R(R_NOT_READY, -1, 0, 1, 0, 0, -1)),
		   "no ready node for cpu=4, gpu=2 (1 draining or down)", "not ready");
	is_str(text_of(&fx, R(R_AVOID, -1, 0, 1, 0, 0, 0)), "1 node avoided: a previous attempt failed there",
		   "avoided");
	is_str(text_of(&fx, R(R_NO_TYPE, -1, 0, 0, 0, 0, h100)), "no node with gpu_type H100 in the resource group",
		   "no such gpu_type");
	is_str(text_of(&fx, R(R_NO_TYPE, -1, 0, 0, 0, 0, -1)), "no GPU node in the resource group", "no GPU node");
	is_str(text_of(&fx, R(R_NO_LABEL, -1, 0, 0, 0, 0, 0)), "no node has labels zone=a, rack=r1", "labels (the selector in its order)");
	is_str(text_of(&fx, R(R_TOO_BIG, gpu, 0, 16000, 8000, 0, 0)),
		   "cpu=4, gpu=2 per replica: gpu 16 is more than any matching node has (largest 8)", "too big");
	is_str(text_of(&fx, R(R_CAP_NEVER, gpu, -1, 6000, 4000, 0, 0)),
		   "queue qa gpu capability is 4, the job needs 6", "capability never enough");
	is_str(text_of(&fx, R(R_FRACTION, gpu, 0, 1500, 0, 0, 0)),
		   "gpu=1.5: requests above one GPU must be whole numbers", "fraction");
	is_str(text_of(&fx, R(R_TOO_MANY_GPUS, gpu, 0, 65000, 0, 0, 0)), "gpu=65: more than 64 GPUs per replica",
		   "too many GPUs");
	is_str(text_of(&fx, R(R_NO_NODES, -1, -1, 0, 0, 0, 0)), "no node in queue qa's resource group", "no nodes");
	is_str(text_of(&fx, R(R_EVICTING, -1, -1, 1, 0, 0, 0)), "evicting 1 job to make room for it", "evicting one");
	is_str(text_of(&fx, R(R_UNCOUNTABLE, gpu, -1, 0, 0, 0, 0)),
		   "the job's gang minimum of gpu is more than the scheduler can count (at most 9223372036854775.806 in total)",
		   "uncountable");
	is_str(text_of(&fx, R(R_OWNER_LIMIT, gpu, 1, 8000, 2000, 8000, 0)),
		   "owner limit of queue qa is gpu=8; owner 1 holds 8, the job needs 2", "owner limit, no owner names");
	{
		static const char *const owners[] = {"alice", "bob"};

		fx.s->owner_names = owners;
		fx.s->nowners = 2;
		is_str(text_of(&fx, R(R_OWNER_LIMIT, gpu, 1, 8000, 2000, 8000, 0)),
			   "owner limit of queue qa is gpu=8; bob holds 8, the job needs 2", "owner limit (R-A4)");
		fx.s->owner_names = NULL;
		fx.s->nowners = 0;
	}
	is_str(text_of(&fx, R(R_OWNER_NEVER, gpu, -1, 10000, 8000, 0, 0)),
		   "owner limit of queue qa is gpu=8, the job needs 10", "owner limit never enough (R-A4, R-A2)");
	is_str(text_of(&fx, R(R_TREE_CAPABILITY, gpu, 0, 6000, 2000, 4000, 0)),
		   "queue qa (above qa) gpu capability: 6 used + 2 asked > 4", "capability of a queue above the leaf");
	is_str(text_of(&fx, R(R_INNER_QUEUE, -1, -1, 0, 0, 0, 0)),
		   "queue qa has child queues: jobs run only in leaf queues", "a job in an inner queue");
	snprintf(buf, sizeof(buf), "reason %d", (int) R_COUNT);
	is_str(text_of(&fx, R(R_COUNT, -1, -1, 0, 0, 0, 0)), buf, "a code past the table");

	tide_reason_unknown_text(true, "B200", buf, sizeof(buf));
	is_str(buf, "no node with gpu_type B200 in the resource group", "the load's sentence for a gpu_type");
	tide_reason_unknown_text(false, "rdma", buf, sizeof(buf));
	is_str(buf, "no node offers resource rdma", "the load's sentence for a resource");
	is_int((int64_t) tide_reason_unknown_text(false, "rdma", buf, 8), 7, "a short buffer is cut");
	is_str(buf, "no node", "and ends within it");

	fx_free(&fx);
	return done_testing();
}
