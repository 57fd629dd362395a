/*
 * test_engine_claims.c: claim owners (R-E6) diagnosed without a node scan.
 *
 * A claim owner whose victims are still stopping says only that it waits
 * (its reasons are replaced after the walk), so the walk takes from its
 * diagnosis only what it uses: its status and the card key that blocked
 * it (tide_diagnose_quiet, place.c).  Hundreds of random clusters with
 * evictions on and claims, some waiting, some not, are decided twice: as
 * the engine does, and with every owner diagnosed node by node
 * (tide_claims_quiet_owners off); every job's status, class, eviction
 * state, place in the walk and reasons' text, the placements, holds,
 * evictions and new claims must be the same.  Card keys (R-A1), trees of
 * queues (R-A3), labels, avoided nodes, card types and gangs are in the
 * mix, so that the owner's card key and status are exercised.  And a
 * decide gives back the claims it charged: a snapshot kept for the next
 * call must not count them twice.
 */
#include "tap.h"
#include "test_engine_fixture.h"

/* the engine's switch (claims.h), for tests only */
extern bool tide_claims_quiet_owners;

static uint64_t rng;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return n ? (uint32_t) (rng % n) : 0;
}

/* What a world covered: waiting owners, and those sent to the borrowing pass. */
typedef struct Seen
{
	int			waiting;
	int			deferred;
	int			unschedulable;
} Seen;

/*
 * A random cluster, running jobs, pending jobs and claims, from seed;
 * without victims, no running job may be evicted.
 */
static TideSnapshot *
world(uint64_t seed, FxArena *arena, bool victims)
{
	TideMem		mem = {fx_alloc, NULL, arena};
	TideSnapshot *s = tide_snapshot_create(&mem);
	int			nn,
				nq;
	bool		tree;
	int			res_mem,
				t4,
				h100;
	int32_t		labels[3];
	int			nrun = 0,
				nj,
				nroles = 0;
	char		err[200];
	int			run_node[96];
	int64_t		run_gpus[96];
	int			run_n[96];

	rng = seed * 2654435761ULL + 88172645463325252ULL;
	nn = 2 + (int) rnd(10);
	nq = 2 + (int) rnd(3);
	tree = rnd(3) == 0;
	res_mem = tide_res_intern(s, "memory");
	t4 = tide_res_intern(s, "T4");
	h100 = tide_res_intern(s, "H100");
	labels[0] = tide_label_intern(s, "zone", "a");
	labels[1] = tide_label_intern(s, "zone", "b");
	labels[2] = tide_label_intern(s, "ib", "yes");
	tide_snapshot_alloc_cluster(s, nn, nq + tree, 96);
	for (int i = 0; i < nn; i++)
	{
		TideNode   *n = &s->nodes[i];
		char	   *name = tide_alloc(s, 16);
		int			kind = (int) rnd(5);
		int32_t    *lab = tide_alloc(s, sizeof(int32_t));

		snprintf(name, 16, "n%02d", i);
		n->name = name;
		n->group = rnd(6) == 0;
		n->state = rnd(8) == 0 ? TIDE_NODE_DRAINING : TIDE_NODE_READY;
		n->capacity[TIDE_RES_CPU] = (int64_t) (8 << rnd(3)) * 1000;
		n->capacity[res_mem] = (int64_t) (16 << rnd(3)) * 1000 * 1024 * 1024 * 1024LL;
		n->ngpus = kind == 0 ? 0 : (kind <= 2 ? 8 : 4);
		n->capacity[TIDE_RES_GPU] = (int64_t) n->ngpus * 1000;
		n->gpu_type = n->ngpus == 0 ? -1 : (kind == 1 || kind == 3 ? t4 : h100);
		n->allow_cpu_jobs = n->ngpus > 0 && rnd(4) == 0;
		lab[0] = labels[rnd(3)];
		n->labels = lab;
		n->nlabels = 1;
	}
	for (int i = 0; i < nq + tree; i++)
	{
		TideQueue  *q = &s->queues[i];
		char	   *name = tide_alloc(s, 16);

		snprintf(name, 16, "q%d", i);
		q->name = name;
		q->priority = (int) rnd(3) * 10;
		q->reclaimable = rnd(3) != 0;
		q->preemption_within = rnd(3) == 0 ? TIDE_PREEMPT_LOWER_PRIORITY : TIDE_PREEMPT_NEVER;
		q->service = rnd(3) == 0 ? TIDE_SVC_INFERENCE : TIDE_SVC_TRAINING;
		q->parent = tree && i < nq ? nq : -1;
		if (rnd(3) != 0)
		{
			q->has_quota = true;
			q->quota[TIDE_RES_GPU] = (int64_t) (2 + rnd(16)) * 1000;
			if (rnd(2))
				q->quota[h100] = (int64_t) rnd(12) * 1000;
		}
		if (rnd(3) == 0)
			q->capability[h100] = (int64_t) rnd(12) * 1000;
		if (rnd(4) == 0)
			q->capability[t4] = (int64_t) rnd(12) * 1000;
	}
	if (!tide_snapshot_finish(s, err, sizeof(err)))
	{
		printf("# %s\n", err);
		abort();
	}

	/* running jobs, whole GPUs from the first free one, preemptable mostly */
	for (int i = 0; i < nn && nrun < 90; i++)
	{
		TideNode   *n = &s->nodes[i];
		int			g0 = 0;

		while (g0 < n->ngpus && rnd(4) != 0 && nrun < 90)
		{
			int			g = 1 << rnd(3);

			if (g0 + g > n->ngpus)
				break;
			run_node[nrun] = i;
			run_gpus[nrun] = (((int64_t) 1 << g) - 1) << g0;
			run_n[nrun] = g;
			g0 += g;
			nrun++;
		}
	}
	s->nrunning = nrun;
	for (int k = 0; k < nrun; k++)
	{
		TideRunning *a = &s->running[k];
		int64_t    *v = tide_vec_new(s);
		int			ni = run_node[k];

		v[TIDE_RES_GPU] = run_n[k] * 1000;
		v[TIDE_RES_CPU] = 1000;
		if (s->nodes[ni].gpu_type >= 0)
			v[s->nodes[ni].gpu_type] = run_n[k] * 1000;
		a->alloc_id = a->job_id = 1000 + k;
		a->queue = (int) rnd(nq);
		a->node = ni;
		a->idle = rnd(6) == 0 && victims;
		a->preemptable = rnd(5) != 0 && victims;
		a->releasing = rnd(8) == 0;
		a->service = rnd(2) ? TIDE_SVC_TRAINING : TIDE_SVC_INFERENCE;
		a->priority = (int) rnd(10);
		a->placed_at = a->started_at = 1 + rnd(1000);
		a->end_at = TIDE_TIME_UNKNOWN;
		a->res = v;
		a->gpus = (uint64_t) run_gpus[k];
		tide_charge(s, ni, a->queue, a->idle, v, a->gpus, 0, +1);
	}

	/* pending jobs */
	nj = 4 + (int) rnd(30);
	tide_snapshot_alloc_jobs(s, nj, nj * 2);
	for (int i = 0; i < nj; i++)
	{
		TideJob    *j = &s->jobs[i];

		j->id = i + 1;
		j->queue = (int) rnd(nq);
		j->priority = (int) rnd(4);
		j->created_at = rnd(100);
		j->idle = rnd(8) == 0;
		j->reserve = rnd(8) == 0;
		j->preemptable = rnd(2);
		j->service = rnd(2) ? TIDE_SVC_INFERENCE : TIDE_SVC_TRAINING;
		j->gpu_type = rnd(4) == 0 ? (rnd(2) ? t4 : h100) : -1;
		if (rnd(5) == 0)
		{
			int32_t    *sel = tide_alloc(s, sizeof(int32_t));

			sel[0] = labels[rnd(3)];
			j->selector = sel;
			j->nselector = 1;
		}
		if (rnd(6) == 0)
		{
			int32_t    *av = tide_alloc(s, sizeof(int32_t));

			av[0] = (int) rnd(nn);
			j->avoid = av;
			j->navoid = 1;
		}
		j->roles = &s->roles[nroles];
		j->nroles = rnd(6) == 0 ? 2 : 1;
		for (int ri = 0; ri < j->nroles; ri++)
		{
			TideRole   *r = &s->roles[nroles++];
			int			shape = (int) rnd(8);

			r->name = ri ? "worker" : "main";
			r->replicas = rnd(4) == 0 ? 1 + (int) rnd(3) : 1;
			r->request[TIDE_RES_CPU] = (int64_t) (1 + rnd(8)) * 500;
			r->request[res_mem] = (int64_t) (1 + rnd(4)) * 1000 * 1024 * 1024 * 1024LL;
			if (shape == 1)
				r->request[TIDE_RES_GPU] = (int64_t) (1 + rnd(7)) * 125;
			else if (shape >= 2)
				r->request[TIDE_RES_GPU] = (int64_t) (1 << rnd(5)) * 1000;
		}
		if (rnd(5) == 0)
			j->min_available = 1 + (int) rnd(2);
	}

	/* claims of earlier cycles: a third of the jobs, mostly still waiting */
	{
		TideClaim  *cl = tide_alloc(s, sizeof(TideClaim) * (nj * 2 + 1));
		int			nc = 0;

		for (int i = 0; i < nj; i++)
		{
			const TideJob *j = &s->jobs[i];

			if (rnd(3) != 0)
				continue;
			for (int k = 1 + (int) rnd(2); k > 0; k--)
			{
				int64_t    *v = tide_vec_new(s);
				int64_t		g = j->roles[0].request[TIDE_RES_GPU];

				memcpy(v, j->roles[0].request, sizeof(int64_t) * s->nres);
				cl[nc].job_id = j->id;
				cl[nc].node = (int) rnd(nn);
				cl[nc].res = v;
				cl[nc].gpu_milli = g > 0 && g < 1000 ? (int32_t) g : 0;
				cl[nc].gpus = g <= 0 ? 0 : g < 1000 ? 1 : ((uint64_t) 1 << (g / 1000 > 8 ? 8 : g / 1000)) - 1;
				cl[nc].waiting = rnd(4) != 0;
				nc++;
			}
		}
		s->claims = cl;
		s->nclaims = nc;
	}
	s->evict = true;
	s->now = 2000;
	return s;
}

/* Everything the decide gave, as text. */
static void
fingerprint(const TideSnapshot *s, const TideResult *r, char *buf, size_t len, Seen *seen)
{
	size_t		off = 0;
	char		why[1024];

	buf[0] = '\0';
	for (int j = 0; j < r->njobs && off + 1200 < len; j++)
	{
		const TideOutcome *o = &r->outcomes[j];

		tide_reason_text(s, r, j, why, sizeof(why));
		off += snprintf(buf + off, len - off, "job %lld: %d/%d/%d/%d %s\n", (long long) s->jobs[j].id,
						o->status, o->klass, o->evict_state, o->walk_pos, why);
		if (seen && o->evict_state == TIDE_EV_WAITING)
			seen->waiting++;
		if (seen && o->evict_state == TIDE_EV_WAITING && o->klass == TIDE_CLASS_BORROWING)
			seen->deferred++;
		if (seen && o->status == TIDE_UNSCHEDULABLE)
			seen->unschedulable++;
	}
	for (int i = 0; i < r->nplacements && off + 100 < len; i++)
		off += snprintf(buf + off, len - off, "placed %d/%d/%d@%d:%llx\n", r->placements[i].job,
						r->placements[i].role, r->placements[i].replica, r->placements[i].node,
						(unsigned long long) r->placements[i].gpus);
	for (int i = 0; i < r->nholds && off + 100 < len; i++)
		off += snprintf(buf + off, len - off, "hold %d@%d:%llx\n", r->holds[i].job, r->holds[i].node,
						(unsigned long long) r->holds[i].gpus);
	for (int i = 0; i < r->nevictions && off + 100 < len; i++)
		off += snprintf(buf + off, len - off, "evict %lld\n", (long long) r->evictions[i].job_id);
	for (int i = 0; i < r->nnew_claims && off + 100 < len; i++)
		off += snprintf(buf + off, len - off, "claim %lld@%d:%llx\n", (long long) r->new_claims[i].job_id,
						r->new_claims[i].node, (unsigned long long) r->new_claims[i].gpus);
}

/* The nodes' state: what is used, GPU by GPU too. */
static uint64_t
node_state(const TideSnapshot *s)
{
	uint64_t	h = 0;

	for (int i = 0; i < s->nnodes; i++)
	{
		for (int r = 0; r < s->nres; r++)
			h = h * 31 + (uint64_t) s->nodes[i].used[r];
		for (int g = 0; g < s->nodes[i].ngpus; g++)
			h = h * 31 + (uint64_t) s->nodes[i].gpu_free[g];
	}
	return h;
}

static void
arena_free(FxArena *a)
{
	for (int i = 0; i < a->n; i++)
		free(a->p[i]);
	free(a->p);
	memset(a, 0, sizeof(*a));
}

int
main(void)
{
	int			cases = 600;
	int			differ = 0;
	int			kept = 0;
	int			placed = 0;
	Seen		seen = {0};
	static char quiet[131072],
				full[131072];

	for (int c = 0; c < cases; c++)
	{
		FxArena		arena = {0};
		TideSnapshot *s;

		tide_claims_quiet_owners = true;
		s = world((uint64_t) c + 1, &arena, true);
		fingerprint(s, tide_decide(s), quiet, sizeof(quiet), &seen);
		arena_free(&arena);

		/*
		 * Nothing evicted, nothing placed: the decide leaves the nodes
		 * as it found them (the claims it charged given back)
		 */
		s = world((uint64_t) c + 1, &arena, false);
		{
			uint64_t	before = node_state(s);
			TideResult *r = tide_decide(s);

			if (r->nplacements > 0)
				placed++;
			else if (node_state(s) != before && kept++ < 2)
				diag("case %d: the nodes changed in a decide that placed nothing", c);
		}
		arena_free(&arena);

		tide_claims_quiet_owners = false;
		s = world((uint64_t) c + 1, &arena, true);
		fingerprint(s, tide_decide(s), full, sizeof(full), NULL);
		arena_free(&arena);

		if (strcmp(quiet, full) != 0 && differ++ < 2)
		{
			const char *a = quiet,
					   *b = full;

			while (*a && *a == *b)
				a++, b++;
			diag("case %d: first difference:\n# quiet: %.160s\n# full:  %.160s", c, a, b);
		}
	}
	tide_claims_quiet_owners = true;
	diag("%d cases: %d waiting owners, %d of them sent to the borrowing pass, %d jobs unschedulable",
		 cases, seen.waiting, seen.deferred, seen.unschedulable);
	ok(seen.waiting > 200 && seen.deferred > 10 && seen.unschedulable > 10,
	   "the random cases have waiting owners, some blocked by card quota");
	is_int(differ, 0, "waiting claim owners: the same outcomes, reasons and decisions as a full diagnosis");
	ok(placed < cases - 50, "%d of %d cases without victims placed nothing", cases - placed, cases);
	is_int(kept, 0, "a decide that places nothing gives back every claim it charged");
	return done_testing();
}
