/*
 * claims.c: resources held for a preemptor (R-E6).
 *
 * An eviction's dry run (evict.c) places its preemptor; that placement
 * becomes claims, written by the adapter and given back in the next
 * cycles' snapshots.  The engine charges the part of a claim that is free
 * now to its node as if used, so no other job takes it; when the walk
 * reaches the claim's owner, its claims are released for it alone.  The
 * victims' part is still used (releasing) until the launchers confirm, so
 * nothing else can take it either.  A claim lasts while some victim is
 * stopping (waiting) and for one more cycle; if its owner still does not
 * fit then, it lapses and the owner may evict again.  A pending job that
 * would fit on claimed resources says whom they are held for (R-C2).
 */
#include "claims.h"
#include "fit.h"
#include "hash.h"
#include "reasons.h"
#include "snapshot_int.h"
#include "work.h"

typedef struct TideClaimWork
{
	int32_t    *claim_job;		/* [nclaims] job index, -1 unknown */
	int64_t    *claim_res;		/* [nclaims * nres] the part charged */
	uint64_t   *claim_gpus;
	int32_t    *claim_milli;
	bool	   *claim_on;		/* charged to its node now */
	bool	   *job_claims;		/* [njobs] has claims */
	bool	   *job_waiting;	/* [njobs] some victim still stopping */
	int32_t    *job_first;		/* [njobs + 1] CSR of each job's claims in
								 * job_list, in claim order: a walk with
								 * thousands of owners must not scan every
								 * claim for each */
	int32_t    *job_list;		/* [nclaims] */
} TideClaimWork;

/* Charge (+1) or release (-1) claim c's effective part on its node only. */
static void
claim_apply(TideWork *w, int c, int sign)
{
	TideSnapshot *s = w->s;
	TideClaimWork *ev = w->claims;

	tide_node_apply(s, &s->nodes[s->claims[c].node], ev->claim_res + (size_t) c * w->nres,
					ev->claim_gpus[c], ev->claim_milli[c], sign);
	ev->claim_on[c] = sign > 0;
}

/*
 * Claims of earlier cycles: charge the part of each that is free now (the
 * rest is still used by a victim that is stopping), so that no job but
 * its owner can use it.  Called after prepare_jobs: owners are not
 * cacheable (their fit depends on their claims).
 */
void
tide_claims_begin(TideWork *w)
{
	TideSnapshot *s = w->s;
	TideClaimWork *ev;
	int			nc = s->nclaims;

	w->claims = NULL;
	if (!s->evict)
		return;
	ev = tide_work_alloc(w, sizeof(TideClaimWork));
	w->claims = ev;
	ev->claim_job = tide_work_alloc(w, sizeof(int32_t) * (nc + 1));
	ev->claim_res = tide_work_alloc(w, sizeof(int64_t) * w->nres * (nc + 1));
	ev->claim_gpus = tide_work_alloc(w, sizeof(uint64_t) * (nc + 1));
	ev->claim_milli = tide_work_alloc(w, sizeof(int32_t) * (nc + 1));
	ev->claim_on = tide_work_alloc(w, sizeof(bool) * (nc + 1));
	ev->job_claims = tide_work_alloc(w, sizeof(bool) * (s->njobs + 1));
	ev->job_waiting = tide_work_alloc(w, sizeof(bool) * (s->njobs + 1));

	for (int c = 0; c < nc; c++)
	{
		const TideClaim *cl = &s->claims[c];
		int			j = tide_job_index(s, cl->job_id);
		TideNode   *n;
		int64_t    *eff = ev->claim_res + (size_t) c * w->nres;

		ev->claim_job[c] = j;
		if (j < 0 || cl->node < 0 || cl->node >= s->nnodes || !cl->res)
		{
			ev->claim_job[c] = -1;
			continue;
		}
		ev->job_claims[j] = true;
		if (cl->waiting)
			ev->job_waiting[j] = true;
		w->info[j].cacheable = false;
		w->info[j].avoid_shape = false;
		n = &s->nodes[cl->node];
		for (int r = 0; r < w->nres; r++)
		{
			int64_t		avail = tide_sat_sub(n->capacity[r], n->used[r]);

			eff[r] = cl->res[r] < avail ? cl->res[r] : avail;
			if (eff[r] < 0)
				eff[r] = 0;
		}
		if (cl->gpu_milli > 0)
		{
			int			g = cl->gpus ? __builtin_ctzll(cl->gpus) : -1;
			int			m = 0;

			if (g >= 0 && g < n->ngpus)
				m = n->gpu_free[g] < cl->gpu_milli ? n->gpu_free[g] : cl->gpu_milli;
			ev->claim_milli[c] = m;
			ev->claim_gpus[c] = m > 0 ? (uint64_t) 1 << g : 0;
			eff[TIDE_RES_GPU] = m;
		}
		else
		{
			ev->claim_gpus[c] = cl->gpus & n->free_whole;
			ev->claim_milli[c] = 0;
			if (cl->gpus)
				eff[TIDE_RES_GPU] = (int64_t) __builtin_popcountll(ev->claim_gpus[c]) * TIDE_MILLI;
		}
		claim_apply(w, c, +1);
	}

	/* each job's claims, for take and give */
	ev->job_first = tide_work_alloc(w, sizeof(int32_t) * (s->njobs + 2));
	ev->job_list = tide_work_alloc(w, sizeof(int32_t) * (nc + 1));
	for (int c = 0; c < nc; c++)
		if (ev->claim_job[c] >= 0)
			ev->job_first[ev->claim_job[c] + 2]++;
	for (int j = 0; j < s->njobs; j++)
		ev->job_first[j + 2] += ev->job_first[j + 1];
	for (int c = 0; c < nc; c++)
		if (ev->claim_job[c] >= 0)
			ev->job_list[ev->job_first[ev->claim_job[c] + 1]++] = c;
}

/* The walk reached job j: its claims are its own to use. */
void
tide_claims_take(TideWork *w, int j)
{
	TideClaimWork *ev = w->claims;

	if (!ev || !ev->job_claims[j])
		return;
	for (int i = ev->job_first[j]; i < ev->job_first[j + 1]; i++)
		if (ev->claim_on[ev->job_list[i]])
			claim_apply(w, ev->job_list[i], -1);
}

/* Job j was tried: if it did not fit, hold its claims again. */
void
tide_claims_give(TideWork *w, int j, bool placed)
{
	TideClaimWork *ev = w->claims;

	if (!ev || !ev->job_claims[j] || placed)
		return;
	for (int i = ev->job_first[j]; i < ev->job_first[j + 1]; i++)
		if (!ev->claim_on[ev->job_list[i]])
			claim_apply(w, ev->job_list[i], +1);
}

bool		tide_claims_quiet_owners = true;

bool
tide_claims_waiting(const TideWork *w, int j)
{
	return w->claims && w->claims->job_waiting[j] && tide_claims_quiet_owners;
}

/* Would req fit on the node of claim c if the claim were free? */
static bool
fits_with_claim(const TideWork *w, int c, const int64_t *req)
{
	const TideSnapshot *s = w->s;
	const TideClaimWork *ev = w->claims;
	const TideNode *n = &s->nodes[s->claims[c].node];
	const int64_t *eff = ev->claim_res + (size_t) c * w->nres;
	int64_t		gpu = req[TIDE_RES_GPU];

	for (int r = 0; r < w->nres; r++)
		if (req[r] > 0 && req[r] > tide_sat_add(tide_sat_sub(n->capacity[r], n->used[r]), eff[r]))
			return false;
	if (gpu >= TIDE_MILLI)
		return __builtin_popcountll(n->free_whole | (ev->claim_milli[c] ? 0 : ev->claim_gpus[c])) >= gpu / TIDE_MILLI;
	if (gpu > 0)
		for (int g = 0; g < n->ngpus; g++)
		{
			int64_t		back = 0;

			if ((ev->claim_gpus[c] >> g) & 1)
				back = ev->claim_milli[c] ? ev->claim_milli[c] : TIDE_MILLI;
			if (n->gpu_free[g] + back >= gpu)
				return true;
		}
	return gpu <= 0;
}

/*
 * What note_held_by_claims() found for one shape class (prep.c) in one
 * queue: every job of that shape and queue gets the same answer, keyed by
 * the class itself, so two shapes never share one.
 */
typedef struct HeldAnswer
{
	int32_t		shape;			/* the class's first job */
	int32_t		queue;
	int32_t		nodes;			/* claimed nodes it would fit on, 0: none */
	int64_t		owner;			/* the owner of the first of their claims */
} HeldAnswer;

/* An answer looked up: the answers so far and the key. */
typedef struct HeldKey
{
	const HeldAnswer *answers;
	int32_t		shape;
	int32_t		queue;
} HeldKey;

static bool
held_is(const void *ctx, int32_t entry)
{
	const HeldKey *key = ctx;

	return key->answers[entry].shape == key->shape && key->answers[entry].queue == key->queue;
}

/*
 * R-C2: a pending job that would fit on resources held for a preemptor
 * says so ("held for job 42 (1 node)"), as for a reservation.
 */
static void
note_held_by_claims(TideWork *w)
{
	TideSnapshot *s = w->s;
	TideClaimWork *ev = w->claims;
	bool		any = false;
	uint64_t	mask;
	int32_t    *slot;			/* answer + 1, 0 empty (hash.h) */
	HeldAnswer *answers;
	int32_t		nanswers = 0;

	for (int c = 0; c < s->nclaims && !any; c++)
		any = ev->claim_on[c];
	if (!any)
		return;
	slot = tide_work_table(w, sizeof(int32_t), &mask);
	answers = tide_work_alloc_raw(w, sizeof(HeldAnswer) * (s->njobs + 1));
	for (int j = 0; j < s->njobs; j++)
	{
		TideOutcome *o = &w->r->outcomes[j];
		const TideJob *job = &s->jobs[j];
		int			nodes = 0;
		int64_t		owner = 0;
		uint64_t	k = 0;
		HeldKey		key;

		if (o->status != TIDE_PENDING || ev->job_claims[j] || w->info[j].bad ||
			o->klass == TIDE_CLASS_NONE || o->nreasons >= TIDE_MAX_REASONS)
			continue;
		/* a cacheable job has its class (prep.c): one answer per class and queue */
		key.shape = w->info[j].cacheable ? w->info[j].shape : -1;
		if (key.shape >= 0)
		{
			key.answers = answers;
			key.queue = job->queue;
			k = tide_table_find(slot, mask,
								tide_hash_mix(w->info[key.shape].hash, (uint64_t) job->queue + 1),
								held_is, &key);
			if (slot[k])
			{
				const HeldAnswer *a = &answers[slot[k] - 1];

				if (a->nodes > 0)
					tide_reason_held(w, o, -1, a->nodes, a->owner);
				continue;
			}
		}
		for (int c = 0; c < s->nclaims; c++)
		{
			bool		fit = false;

			if (!ev->claim_on[c] || !tide_node_usable(w, j, s->claims[c].node))
				continue;
			for (int ri = 0; ri < job->nroles && !fit; ri++)
				fit = fits_with_claim(w, c, job->roles[ri].request);
			if (fit)
			{
				nodes++;
				if (!owner)
					owner = s->claims[c].job_id;
			}
		}
		if (nodes > 0)
			tide_reason_held(w, o, -1, nodes, owner);
		if (key.shape >= 0)
		{
			HeldAnswer *a = &answers[nanswers];

			a->shape = key.shape;
			a->queue = job->queue;
			a->nodes = nodes;
			a->owner = owner;
			slot[k] = ++nanswers;
		}
	}
}

/*
 * After the walk, before evictions: owners of earlier claims that are
 * still waiting say so; lapsed claims are free for all now; then the jobs
 * that would fit on claimed resources say whom they are held for.
 */
void
tide_claims_settle(TideWork *w)
{
	TideSnapshot *s = w->s;
	TideClaimWork *ev = w->claims;
	TideResult *r = w->r;

	if (!ev)
		return;
	/* owners of earlier claims: still waiting, or lapsed (free for all now) */
	for (int j = 0; j < s->njobs; j++)
	{
		TideOutcome *o = &r->outcomes[j];

		if (!ev->job_claims[j] || o->status == TIDE_PLACED)
			continue;
		if (ev->job_waiting[j] && o->status == TIDE_PENDING)
		{
			o->evict_state = TIDE_EV_WAITING;
			o->nreasons = 0;
			tide_reason_evict_wait(w, o);
			continue;
		}
		o->evict_state = TIDE_EV_LAPSED;
		tide_claims_take(w, j);
	}
	note_held_by_claims(w);
}

/*
 * The decide is over: release every claim still charged, so that the
 * snapshot's nodes hold what its allocations and placements use, as
 * before tide_claims_begin.
 */
void
tide_claims_end(TideWork *w)
{
	TideClaimWork *ev = w->claims;

	if (!ev)
		return;
	for (int c = 0; c < w->s->nclaims; c++)
		if (ev->claim_on[c])
			claim_apply(w, c, -1);
}
