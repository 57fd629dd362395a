/*
 * fuzz_engine.c: libFuzzer target over the policy engine.
 *
 * The fuzz bytes describe a cluster (nodes with capacities, card types,
 * topology domains, labels and states; queues with quotas, capabilities,
 * priorities and placement policies) and three cycles of pending jobs
 * (shapes, gangs, fractions, selectors, avoided nodes, reservations, time
 * limits).  Each cycle is decided and its placements are charged, a part of
 * them released before the next.  After every decide:
 *   - no node over capacity on any resource, and used equals the sum of
 *     the live allocations (R-C4);
 *   - no GPU in two whole allocations or whole and shared at once, no
 *     share above 1000, no GPU index beyond the node's (R-L6);
 *   - a placed job has between min_available and all of its replicas, a
 *     job not placed has none and at least one reason (R-L3, R-C2);
 *   - placements only on ready nodes of the queue's group (R-L4);
 *   - the same bytes decide the same way twice (determinism).
 * Build and run (test/evidence/fuzz.sh does both):
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc/engine -Isrc/core \
 *       test/fuzz/fuzz_engine.c src/engine/[a-z]*.c -lm -o fuzz_engine
 *   ./fuzz_engine -max_total_time=60
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "violated: %s (line %d)\n", #cond, __LINE__); abort(); } } while (0)
#define MAXN 16

typedef struct Bytes
{
	const uint8_t *p;
	size_t		n;
	size_t		at;
} Bytes;

/* The next byte, or 0 once the input is used up: a value in [0, n). */
static uint32_t
pick(Bytes *b, uint32_t n)
{
	uint32_t	v = b->at < b->n ? b->p[b->at++] : 0;

	return n ? v % n : 0;
}

typedef struct Arena
{
	void	  **p;
	int			n,
				cap;
} Arena;

static void *
arena_alloc(void *ctx, size_t size)
{
	Arena	   *a = ctx;
	void	   *p = calloc(1, size ? size : 1);

	CHECK(p != NULL);
	if (a->n == a->cap)
	{
		a->cap = a->cap ? a->cap * 2 : 256;
		a->p = realloc(a->p, sizeof(void *) * a->cap);
		CHECK(a->p != NULL);
	}
	a->p[a->n++] = p;
	return p;
}

static void
arena_free(Arena *a)
{
	for (int i = 0; i < a->n; i++)
		free(a->p[i]);
	free(a->p);
}

typedef struct Live
{
	int			node,
				queue;
	bool		idle;
	int64_t    *res;
	uint64_t	gpus;
	int			milli;
} Live;

typedef struct World
{
	Arena		arena;
	TideSnapshot *s;
	Live		live[4096];
	int			nlive;
	int			res_mem,
				types[2];
	int32_t		labels[3];
	int64_t		next_id;
	char		fp[8192];		/* fingerprint of every decision */
	size_t		fplen;
} World;

static bool
world_new(World *w, Bytes *b)
{
	TideMem		mem = {arena_alloc, NULL, NULL};
	TideSnapshot *s;
	int			nn = 1 + (int) pick(b, MAXN),
				nq = 1 + (int) pick(b, 4),
				ng = 1 + (int) pick(b, 2);
	char		err[256];

	mem.ctx = &w->arena;
	s = w->s = tide_snapshot_create(&mem);
	w->res_mem = tide_res_intern(s, "memory");
	w->types[0] = tide_res_intern(s, "T4");
	w->types[1] = tide_res_intern(s, "H100");
	w->labels[0] = tide_label_intern(s, "zone", "a");
	w->labels[1] = tide_label_intern(s, "zone", "b");
	w->labels[2] = tide_label_intern(s, "ib", "yes");
	tide_snapshot_alloc_cluster(s, nn, nq, 0);
	s->allow_cpu_jobs_on_gpu_nodes = pick(b, 4) == 0;
	s->now = 1000;
	for (int i = 0; i < nn; i++)
	{
		TideNode   *n = &s->nodes[i];
		char	   *name = tide_alloc(s, 8);
		int32_t    *lab = tide_alloc(s, sizeof(int32_t) * 2);
		int			nd = 1 + (int) pick(b, 4);

		snprintf(name, 8, "n%02d", i);
		n->name = name;
		n->group = (int) pick(b, ng);
		n->state = (int) pick(b, 8) < 6 ? TIDE_NODE_READY : (int) pick(b, 2) + 1;
		n->ngpus = (int) pick(b, 10);	/* 0..9, odd sizes included */
		n->capacity[TIDE_RES_GPU] = (int64_t) n->ngpus * 1000;
		n->capacity[TIDE_RES_CPU] = (int64_t) (1 + pick(b, 64)) * 1000;
		n->capacity[w->res_mem] = (int64_t) (1 + pick(b, 16)) << 30;
		n->gpu_type = n->ngpus ? w->types[pick(b, 2)] : -1;
		if (n->gpu_type >= 0)
			n->capacity[n->gpu_type] = n->capacity[TIDE_RES_GPU];
		n->allow_cpu_jobs = pick(b, 4) == 0;
		for (int g = 0; g < n->ngpus; g++)
			n->gpu_domain[g] = (int16_t) (g * nd / n->ngpus);
		lab[0] = w->labels[pick(b, 2)];
		n->nlabels = 1;
		if (pick(b, 2))
		{
			lab[1] = w->labels[2];
			if (lab[1] < lab[0])
			{
				lab[1] = lab[0];
				lab[0] = w->labels[2];
			}
			n->nlabels = 2;
		}
		n->labels = lab;
	}
	for (int i = 0; i < nq; i++)
	{
		TideQueue  *q = &s->queues[i];
		char	   *name = tide_alloc(s, 8);

		snprintf(name, 8, "q%d", i);
		q->name = name;
		q->group = (int) pick(b, ng);
		q->priority = (int) pick(b, 3);
		q->placement = pick(b, 4) == 0 ? TIDE_PLACE_SPREAD : TIDE_PLACE_PACK;
		q->service = (int) pick(b, 3);
		if (pick(b, 2))
		{
			q->has_quota = true;
			q->quota[TIDE_RES_GPU] = (int64_t) pick(b, 24) * 1000;
		}
		if (pick(b, 2))
			q->capability[TIDE_RES_GPU] = (int64_t) pick(b, 40) * 1000;
		if (pick(b, 4) == 0)
			q->capability[w->types[1]] = (int64_t) pick(b, 16) * 1000;
		if (i > 0 && pick(b, 3) == 0)
		{
			/* R-O5: under an earlier queue (so no loop), in its group */
			q->parent = (int) pick(b, i);
			q->group = s->queues[q->parent].group;
		}
	}
	return tide_snapshot_finish(s, err, sizeof(err));
}

static void
world_jobs(World *w, Bytes *b)
{
	TideSnapshot *s = w->s;
	int			nj = 1 + (int) pick(b, 40);
	int			nroles = 0,
				per[40];

	for (int i = 0; i < nj; i++)
		nroles += per[i] = 1 + (pick(b, 6) == 0);
	tide_snapshot_alloc_jobs(s, nj, nroles);
	nroles = 0;
	for (int i = 0; i < nj; i++)
	{
		TideJob    *j = &s->jobs[i];

		j->id = ++w->next_id;
		j->queue = (int) pick(b, s->nqueues);
		j->priority = (int) pick(b, 4);
		j->created_at = pick(b, 100);
		j->idle = pick(b, 5) == 0;
		j->is_retry = pick(b, 8) == 0;
		j->reserve = pick(b, 6) == 0;
		j->time_limit = pick(b, 3) == 0 ? 1 + pick(b, 100) : 0;
		j->service = (int) pick(b, 3);
		j->preemptable = pick(b, 2);
		j->gpu_type = pick(b, 5) == 0 ? w->types[pick(b, 2)] : -1;
		if (pick(b, 5) == 0)
		{
			int32_t    *sel = tide_alloc(s, sizeof(int32_t));

			sel[0] = w->labels[pick(b, 3)];
			j->selector = sel;
			j->nselector = 1;
		}
		if (pick(b, 6) == 0)
		{
			int32_t    *av = tide_alloc(s, sizeof(int32_t));

			av[0] = (int) pick(b, s->nnodes);
			j->avoid = av;
			j->navoid = 1;
		}
		j->roles = &s->roles[nroles];
		j->nroles = per[i];
		for (int ri = 0; ri < j->nroles; ri++)
		{
			TideRole   *r = &s->roles[nroles++];
			int			shape = (int) pick(b, 6);

			r->name = ri ? "worker" : "main";
			r->replicas = 1 + (int) (pick(b, 3) == 0 ? pick(b, 5) : 0);
			/* every role asks for some CPU: see docs/reliability.md (fuzzing) */
			r->request[TIDE_RES_CPU] = (int64_t) (1 + pick(b, 9)) * 500;
			r->request[w->res_mem] = (int64_t) pick(b, 9) << 29;
			if (shape == 1)
				r->request[TIDE_RES_GPU] = (int64_t) (1 + pick(b, 999));	/* any fraction */
			else if (shape >= 2)
				r->request[TIDE_RES_GPU] = (int64_t) (1 + pick(b, 9)) * 1000;
		}
		if (pick(b, 4) == 0)
			j->min_available = (int) pick(b, 4);
	}
}

/* Every invariant of the header comment. */
static void
check(World *w, const TideResult *r)
{
	TideSnapshot *s = w->s;
	int			nres = s->nres;
	static int64_t used[MAXN][TIDE_MAX_RES];
	static int	whole[MAXN][64],
				share[MAXN][64];

	memset(used, 0, sizeof(used));
	memset(whole, 0, sizeof(whole));
	memset(share, 0, sizeof(share));
	for (int i = 0; i < w->nlive; i++)
	{
		Live	   *l = &w->live[i];

		for (int k = 0; k < nres; k++)
			used[l->node][k] += l->res[k];
		for (int g = 0; g < 64; g++)
			if ((l->gpus >> g) & 1)
			{
				if (l->milli)
					share[l->node][g] += l->milli;
				else
					whole[l->node][g]++;
			}
	}
	for (int ni = 0; ni < s->nnodes; ni++)
	{
		TideNode   *n = &s->nodes[ni];

		for (int k = 0; k < nres; k++)
		{
			CHECK(n->used[k] == used[ni][k]);
			CHECK(n->used[k] <= n->capacity[k]);
		}
		for (int g = 0; g < 64; g++)
		{
			CHECK(whole[ni][g] <= 1 && share[ni][g] <= 1000);
			CHECK(!(whole[ni][g] && share[ni][g]));
			CHECK(g < n->ngpus || (!whole[ni][g] && !share[ni][g]));
		}
	}
	for (int j = 0; j < s->njobs; j++)
	{
		const TideOutcome *o = &r->outcomes[j];
		const TideJob *job = &s->jobs[j];
		int			total = 0,
					min;

		for (int ri = 0; ri < job->nroles; ri++)
			total += job->roles[ri].replicas;
		min = job->min_available > 0 && job->min_available < total ? job->min_available : total;
		if (o->status == TIDE_PLACED)
			CHECK(o->nplacements >= min && o->nplacements <= total && !s->queues[job->queue].inner);
		else
			CHECK(o->nplacements == 0 && o->nreasons > 0);
		for (int i = 0; i < o->nplacements; i++)
		{
			const TidePlacement *p = &r->placements[o->first_placement + i];
			const TideNode *n = &s->nodes[p->node];
			int64_t		gpu = p->res[TIDE_RES_GPU];

			CHECK(p->job == j && n->state == TIDE_NODE_READY);
			CHECK(n->group == s->queues[job->queue].group);
			if (gpu >= 1000)
				CHECK(__builtin_popcountll(p->gpus) == gpu / 1000 && p->gpu_milli == 0);
			else if (gpu > 0)
				CHECK(__builtin_popcountll(p->gpus) == 1 && p->gpu_milli == gpu);
		}
	}
}

/* Charge the placements as live allocations; note them in the fingerprint. */
static void
record(World *w, const TideResult *r)
{
	for (int i = 0; i < r->nplacements && w->nlive < 4096; i++)
	{
		const TidePlacement *p = &r->placements[i];
		const TideJob *job = &w->s->jobs[p->job];
		Live	   *l = &w->live[w->nlive++];

		l->node = p->node;
		l->queue = job->queue;
		l->idle = job->idle;
		l->res = tide_vec_new(w->s);
		memcpy(l->res, p->res, sizeof(int64_t) * w->s->nres);
		l->gpus = p->gpus;
		l->milli = p->gpu_milli;
		if (w->fplen + 48 < sizeof(w->fp))
			w->fplen += snprintf(w->fp + w->fplen, sizeof(w->fp) - w->fplen, "%lld@%d:%llx;",
								 (long long) job->id, p->node, (unsigned long long) p->gpus);
	}
}

/* Release the allocations the next bytes choose (departures). */
static void
release(World *w, Bytes *b)
{
	int			k = 0;

	for (int i = 0; i < w->nlive; i++)
	{
		Live	   *l = &w->live[i];

		if (pick(b, 2))
			tide_charge(w->s, l->node, l->queue, l->idle, l->res, l->gpus, l->milli, -1);
		else
			w->live[k++] = *l;
	}
	w->nlive = k;
}

/* Run the whole scenario the bytes describe; false if the cluster was refused. */
static bool
run(World *w, const uint8_t *data, size_t size)
{
	Bytes		b = {data, size, 0};

	memset(w, 0, sizeof(*w));
	if (!world_new(w, &b))
		return false;
	for (int cycle = 0; cycle < 3; cycle++)
	{
		TideResult *r;

		world_jobs(w, &b);
		r = tide_decide(w->s);
		CHECK(r->njobs == w->s->njobs);
		record(w, r);
		check(w, r);
		if (cycle < 2)
			release(w, &b);
	}
	return true;
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static World a,
				b;
	bool		ok_a,
				ok_b;

	ok_a = run(&a, data, size);
	ok_b = run(&b, data, size);
	CHECK(ok_a == ok_b);
	CHECK(a.fplen == b.fplen && memcmp(a.fp, b.fp, a.fplen) == 0);
	arena_free(&a.arena);
	arena_free(&b.arena);
	return 0;
}
