/*
 * test_engine_tree.c: queue trees at engine level (R-O5, R-A3, R-E7):
 * inner queues' usage and entitled usage after random charges against a
 * brute-force recomputation; the walk's order down the tree against a
 * brute-force descent; a job within its own guarantee stays guaranteed
 * whatever a sibling borrows; where two paths part.
 */
#include "tap.h"
#include "test_engine_fixture.h"

#include "../../src/engine/tree.h"

/* A 3-level tree: org A (a1, a2 with x under a2), org B (b1, b2). */
static const FxQueue TREE[] = {
	{"A", "gpu=10, cpu=40", NULL},
	{"B", "gpu=10", "gpu=14"},
	{"a1", "gpu=4", .parent = "A"},
	{"a2", "gpu=6, cpu=20", .parent = "A"},
	{"x", "gpu=3", .parent = "a2"},
	{"y", NULL, .parent = "a2"},
	{"b1", "gpu=5", .parent = "B"},
	{"b2", "gpu=5", .parent = "B"},
};
#define NTREE ((int) (sizeof(TREE) / sizeof(TREE[0])))

/* The same shape with quotas no leaf passes in test_walk_order: all guaranteed. */
static const FxQueue WIDE[] = {
	{"A", "gpu=48", NULL},
	{"B", "gpu=32", NULL},
	{"a1", "gpu=16", .parent = "A"},
	{"a2", "gpu=32", .parent = "A"},
	{"x", "gpu=16", .parent = "a2"},
	{"y", "gpu=16", .parent = "a2"},
	{"b1", "gpu=16", .parent = "B"},
	{"b2", "gpu=16", .parent = "B"},
};

static uint64_t rng = 88172645463325252ULL;

static uint64_t
next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Brute force: entitled usage of q on r (R-A3), recursively. */
static int64_t
entitled(const TideSnapshot *s, int q, int r)
{
	int64_t		e = 0;
	bool		leaf = true;

	for (int c = 0; c < s->nqueues; c++)
		if (s->queues[c].parent == q)
		{
			const TideQueue *k = &s->queues[c];
			int64_t		ke = entitled(s, c, r);

			leaf = false;
			if (!k->has_quota)
				continue;
			e += k->quota[r] == TIDE_UNLIMITED ? ke : (ke < k->quota[r] ? ke : k->quota[r]);
		}
	return leaf ? s->queues[q].usage[r] : e;
}

/* Brute force: the usage of q's subtree, from its leaves. */
static int64_t
subtree_usage(const TideSnapshot *s, int q, int r, bool idle)
{
	int64_t		u = 0;
	bool		leaf = true;

	for (int c = 0; c < s->nqueues; c++)
		if (s->queues[c].parent == q)
		{
			leaf = false;
			u += subtree_usage(s, c, r, idle);
		}
	return leaf ? (idle ? s->queues[q].idle_usage[r] : s->queues[q].usage[r]) : u;
}

static void
test_charges(void)
{
	FxNode		nodes[] = {{"n1", "cpu=1000, gpu=64"}};
	const char *leaves[] = {"a1", "x", "y", "b1", "b2"};
	Fx			fx;
	int64_t		held[5][2] = {{0}};
	bool		all_ok = true;

	fx_build(&fx, nodes, 1, TREE, NTREE, NULL, 0, NULL, 0);
	for (int step = 0; step < 2000; step++)
	{
		int			l = (int) (next_rand() % 5);
		int			q = fx_queue_index(fx.s, leaves[l]);
		int64_t		v[TIDE_MAX_RES] = {0};
		int			sign = (next_rand() % 3 == 0 && held[l][0] > 0) ? -1 : +1;

		v[TIDE_RES_GPU] = sign > 0 ? (int64_t) (next_rand() % 4) * 1000 : held[l][0];
		v[TIDE_RES_CPU] = sign > 0 ? (int64_t) (next_rand() % 9) * 1000 : held[l][1];
		tide_charge(fx.s, -1, q, false, v, 0, 0, sign);
		held[l][0] += sign * v[TIDE_RES_GPU];
		held[l][1] += sign * v[TIDE_RES_CPU];
		if (step % 7 == 0)
		{
			int64_t		iv[TIDE_MAX_RES] = {0};

			iv[TIDE_RES_GPU] = 1000;
			tide_charge(fx.s, -1, q, true, iv, 0, 0, +1);
		}
		for (int k = 0; k < fx.s->nqueues && all_ok; k++)
			for (int r = 0; r < 2; r++)
			{
				if (fx.s->queues[k].inner &&
					(fx.s->queues[k].entitled[r] != entitled(fx.s, k, r) ||
					 fx.s->queues[k].usage[r] != subtree_usage(fx.s, k, r, false) ||
					 fx.s->queues[k].idle_usage[r] != subtree_usage(fx.s, k, r, true)))
				{
					diag("step %d queue %s r %d: entitled %lld want %lld, usage %lld want %lld", step,
						 fx.s->queues[k].name, r, (long long) fx.s->queues[k].entitled[r],
						 (long long) entitled(fx.s, k, r), (long long) fx.s->queues[k].usage[r],
						 (long long) subtree_usage(fx.s, k, r, false));
					all_ok = false;
				}
			}
	}
	ok(all_ok, "R-A3: after 2000 random charges and releases, every inner queue's usage, idle usage and entitled usage equal a recomputation from its leaves");
	is_int(fx.s->queues[fx_queue_index(fx.s, "a2")].depth, 2, "a2 is at depth 2");
	is_int(fx.s->queues[fx_queue_index(fx.s, "x")].depth, 3, "x is at depth 3");
	ok(fx.s->queues[fx_queue_index(fx.s, "a2")].inner && !fx.s->queues[fx_queue_index(fx.s, "x")].inner,
	   "a2 is inner, x a leaf");
	fx_free(&fx);
}

/* R-A3: what a sibling borrows never makes a job within its guarantee borrow. */
static void
test_entitled_class(void)
{
	FxNode		nodes[] = {{"n1", "cpu=100, gpu=16"}};
	FxQueue		queues[] = {
		{"A", "gpu=10, cpu=20", NULL},
		{"a1", "gpu=5", .parent = "A"},
		{"a2", "gpu=5, cpu=10", .parent = "A"},
	};
	FxJob		jobs[] = {{1, "a1", 0, 1, "cpu=8, gpu=1"}, {2, "a1", 0, 2, "cpu=3, gpu=1"}};
	FxRun		runs[] = {{"n1", "a2", "cpu=18"}};
	Fx			fx;

	fx_build(&fx, nodes, 1, queues, 3, jobs, 1, runs, 1);
	fx.r = tide_decide(fx.s);
	is_int(fx.r->outcomes[fx_job(&fx, 1)].klass, TIDE_CLASS_GUARANTEED,
		   "R-A3: a2 holds cpu=18 (8 above its quota); a1's cpu=8 is guaranteed: A's entitled cpu is 10 + 8 <= 20");
	fx_free(&fx);

	/* a1 already holds cpu=8 of its own: 8 + 10 + 3 > 20, it borrows */
	{
		FxRun		runs2[] = {{"n1", "a2", "cpu=18"}, {"n1", "a1", "cpu=8, gpu=1"}};

		fx_build(&fx, nodes, 1, queues, 3, jobs + 1, 1, runs2, 2);
		fx.r = tide_decide(fx.s);
		is_int(fx.r->outcomes[0].klass, TIDE_CLASS_BORROWING,
			   "R-A3: past the entitled quota of a queue above the leaf, the job borrows");
		fx_free(&fx);
	}
}

/*
 * R-O5: the walk order of 30 one-GPU jobs spread over the leaves, all
 * within quota, equals a brute-force descent (priority desc, usage / quota
 * asc, name at every level, each leaf's jobs in order).
 */
static void
test_walk_order(void)
{
	FxNode		nodes[] = {{"n1", "cpu=1000, gpu=64"}};
	FxQueue		queues[NTREE];
	FxJob		jobs[40];
	const char *leaves[] = {"a1", "x", "y", "b1", "b2"};
	int			prio[NTREE];
	Fx			fx;
	char		want[1024];
	size_t		off = 0;
	int64_t		used[NTREE] = {0};
	int			taken[5] = {0};
	int			njobs[5] = {0};
	int64_t		ids[5][40];

	for (int round = 0; round < 3; round++)
	{
		memcpy(queues, WIDE, sizeof(WIDE));
		for (int i = 0; i < NTREE; i++)
			queues[i].priority = prio[i] = round == 0 ? 0 : (int) (next_rand() % 2);
		memset(njobs, 0, sizeof(njobs));
		memset(taken, 0, sizeof(taken));
		memset(used, 0, sizeof(used));
		for (int i = 0; i < 30; i++)
		{
			int			l = (int) (next_rand() % 5);

			memset(&jobs[i], 0, sizeof(jobs[i]));
			jobs[i].id = i + 1;
			jobs[i].queue = leaves[l];
			jobs[i].created = i;
			jobs[i].req = "cpu=1, gpu=1";
			ids[l][njobs[l]++] = i + 1;
		}
		fx_build(&fx, nodes, 1, queues, NTREE, jobs, 30, NULL, 0);
		fx.r = tide_decide(fx.s);

		/* brute force */
		off = 0;
		want[0] = '\0';
		for (int step = 0; step < 30; step++)
		{
			int			parent = -1;
			int			leaf = -1;

			for (;;)
			{
				int			best = -1;
				double		bshare = 0;

				for (int c = 0; c < NTREE; c++)
				{
					const TideQueue *k = &fx.s->queues[c];
					bool		pending = false;
					double		share;

					if (k->parent != parent)
						continue;
					for (int l = 0; l < 5; l++)
					{
						int			lq = fx_queue_index(fx.s, leaves[l]);

						for (int a = lq; a >= 0; a = fx.s->queues[a].parent)
							if (a == c && taken[l] < njobs[l])
								pending = true;
					}
					if (!pending)
						continue;
					share = k->has_quota ? (double) used[c] / (double) k->quota[TIDE_RES_GPU] : 1e300;
					if (best < 0 || prio[c] > prio[best] ||
						(prio[c] == prio[best] && (share < bshare ||
												   (share == bshare && strcmp(k->name, fx.s->queues[best].name) < 0))))
					{
						best = c;
						bshare = share;
					}
				}
				if (!fx.s->queues[best].inner)
				{
					leaf = best;
					break;
				}
				parent = best;
			}
			for (int l = 0; l < 5; l++)
				if (fx_queue_index(fx.s, leaves[l]) == leaf)
				{
					off += snprintf(want + off, sizeof(want) - off, "%s%lld", step ? "," : "",
									(long long) ids[l][taken[l]++]);
					break;
				}
			for (int a = leaf; a >= 0; a = fx.s->queues[a].parent)
				used[a] += 1000;
		}
		is_str(fx_walk(&fx), want, "R-O5 round %d: the walk descends the tree as a brute-force descent does", round);
		fx_free(&fx);
	}
}

static void
test_parting(void)
{
	FxNode		nodes[] = {{"n1", "cpu=10, gpu=8"}};
	Fx			fx;
	int			pa,
				pb;
	TideSnapshot *s;

	fx_build(&fx, nodes, 1, TREE, NTREE, NULL, 0, NULL, 0);
	s = fx.s;
#define Q(n) fx_queue_index(s, n)
	is_int(tide_tree_parting(s, Q("x"), Q("a1"), &pa, &pb), 1, "x and a1 part under A (depth 1)");
	ok(pa == Q("a2") && pb == Q("a1"), "... below it: a2 on x's side, a1 on the other");
	is_int(tide_tree_parting(s, Q("x"), Q("y"), &pa, &pb), 2, "x and y part under a2");
	ok(pa == Q("x") && pb == Q("y"), "... below it: the leaves themselves");
	is_int(tide_tree_parting(s, Q("x"), Q("b2"), &pa, &pb), 0, "x and b2 part at the group");
	ok(pa == Q("A") && pb == Q("B"), "... below it: A and B");
	is_int(tide_tree_parting(s, Q("b1"), Q("b1"), &pa, &pb), 2, "a leaf and itself: its own depth");
	is_int(s->index->max_depth, 3, "the tree is 3 levels deep");
#undef Q
	fx_free(&fx);
}

int
main(void)
{
	test_charges();
	test_entitled_class();
	test_walk_order();
	test_parting();
	return done_testing();
}
