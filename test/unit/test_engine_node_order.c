/*
 * test_engine_node_order.c: the node index's order (snapshot.c,
 * order_nodes) against a plain qsort with the order's comparator: resource
 * group, CPU nodes before GPU nodes, card type name, allow_cpu_jobs (GPU
 * nodes), name, then the index.
 *
 * order_nodes finds each node's partition once, spreads the nodes over the
 * partitions and leaves a partition whose names are in order as it is:
 * every shortcut must give the one total order.  Random clusters of 0 to
 * 3,000 nodes in few partitions or more than the spread takes, names in
 * order (the load's) or shuffled, some names repeated (the index decides).
 */
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "test_engine_fixture.h"
#include "engine_int.h"

static const TideSnapshot *ref_s;	/* qsort has no context argument */

static int
cmp_ref(const void *a, const void *b)
{
	int32_t		ia = *(const int32_t *) a,
				ib = *(const int32_t *) b;
	const TideNode *x = &ref_s->nodes[ia];
	const TideNode *y = &ref_s->nodes[ib];
	const char *xn = x->gpu_type >= 0 ? ref_s->res_names[x->gpu_type] : "";
	const char *yn = y->gpu_type >= 0 ? ref_s->res_names[y->gpu_type] : "";
	int			c;

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	if ((x->ngpus > 0) != (y->ngpus > 0))
		return x->ngpus > 0 ? 1 : -1;
	if ((c = strcmp(xn, yn)) != 0)
		return c;
	if (x->ngpus > 0 && x->allow_cpu_jobs != y->allow_cpu_jobs)
		return x->allow_cpu_jobs ? 1 : -1;
	if ((c = strcmp(x->name, y->name)) != 0)
		return c;
	return ia < ib ? -1 : ia > ib;
}

static int
rnd(int n)
{
	return (int) (random() % n);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* One cluster; returns 1 if its order differs from the reference. */
static int
one_case(int nn, int ngroups, int ntypes, bool shuffled)
{
	FxArena		arena = {NULL, 0, 0};
	TideMem		mem = {fx_alloc, NULL, &arena};
	TideSnapshot *s = tide_snapshot_create(&mem);
	int32_t    *ref = calloc(nn + 1, sizeof(int32_t));
	char	  **names = calloc(nn + 1, sizeof(char *));
	int			types[8];
	char		err[200];
	int			bad;
	const int32_t *order;

	for (int t = 0; t < ntypes; t++)
	{
		char		tn[16];

		/* interned out of name order: the order compares names, not ids */
		snprintf(tn, sizeof(tn), "card-%c", 'z' - t);
		types[t] = tide_res_intern(s, tn);
	}
	for (int i = 0; i < nn; i++)
	{
		names[i] = malloc(16);
		/* few enough names that some repeat */
		snprintf(names[i], 16, "n%05d", rnd(nn * 2 + 1));
	}
	if (!shuffled)
		qsort(names, nn, sizeof(char *), cmp_str);
	tide_snapshot_alloc_cluster(s, nn, 1, 0);
	for (int i = 0; i < nn; i++)
	{
		TideNode   *n = &s->nodes[i];
		bool		gpu = rnd(5) != 0;

		n->name = names[i];
		n->group = rnd(ngroups);
		n->ngpus = gpu ? 8 : 0;
		n->capacity[TIDE_RES_CPU] = 96000;
		n->capacity[TIDE_RES_GPU] = gpu ? 8000 : 0;
		n->gpu_type = gpu && ntypes > 0 ? types[rnd(ntypes)] : -1;
		n->allow_cpu_jobs = rnd(2) == 0;
	}
	s->queues[0].name = "q";
	if (!tide_snapshot_finish(s, err, sizeof(err)))
		return 1;
	order = ((const TideIndex *) s->index)->order;
	for (int i = 0; i < nn; i++)
		ref[i] = i;
	ref_s = s;
	qsort(ref, nn, sizeof(int32_t), cmp_ref);
	bad = memcmp(ref, order, sizeof(int32_t) * nn) != 0;

	for (int i = 0; i < arena.n; i++)
		free(arena.p[i]);
	free(arena.p);
	for (int i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	free(ref);
	return bad;
}

int
main(void)
{
	static const int sizes[] = {0, 1, 2, 3, 17, 200, 3000};
	int			bad = 0,
				cases = 0;

	srandom(20261127);
	for (int si = 0; si < (int) (sizeof(sizes) / sizeof(sizes[0])); si++)
		for (int shuffled = 0; shuffled <= 1; shuffled++)
		{
			/* one partition, a few, and more than order_nodes spreads (64) */
			bad += one_case(sizes[si], 1, 1, shuffled);
			bad += one_case(sizes[si], 3, 3, shuffled);
			bad += one_case(sizes[si], 30, 4, shuffled);
			bad += one_case(sizes[si], 1, 0, shuffled);
			cases += 4;
		}
	is_int(bad, 0, "node order is the comparator's on %d random clusters", cases);
	return done_testing();
}
