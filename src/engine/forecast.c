/*
 * forecast.c: when the engine's own order starts each pending job, if the
 * running jobs end at their time limits (Slurm's backfill plan, queryable).
 *
 * The same snapshot as a cycle, the same tide_decide(), stepped in time:
 * decide at t = now; every job placed starts at t and its replicas are
 * charged as running until t + its time limit (no end without one); t then
 * moves to the next end among the running allocations, those ending by it
 * are released, and the engine decides again, until every job is placed or
 * no known end is left.  A job past its limit, or stopping (releasing),
 * ends now.  Nothing is evicted: the forecast assumes no job is preempted.
 *
 * The snapshot is worked on in place: placed jobs leave the job array
 * (compacted, in the same order), the running list is replaced by one
 * sized for every replica the pending jobs could add, so memory is the
 * snapshot's plus O(jobs + running); with mem.free set each decide's
 * scratch and result are given back by the next.
 */
#include <string.h>

#include "forecast.h"
#include "sort.h"

typedef struct Blocker
{
	int32_t		group;
	int64_t		id;
} Blocker;

static int
cmp_blocker(const void *a, const void *b, void *ctx)
{
	const Blocker *x = a;
	const Blocker *y = b;

	(void) ctx;
	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return 0;
}

/* Every replica the pending jobs could start: the room the running list needs. */
static int64_t
replicas_of_jobs(const TideSnapshot *s)
{
	int64_t		n = 0;

	for (int j = 0; j < s->njobs; j++)
		for (int k = 0; k < s->jobs[j].nroles; k++)
			n += s->jobs[j].roles[k].replicas > 0 ? s->jobs[j].roles[k].replicas : 0;
	return n;
}

/* Charge the placements of r as running from t, and note each job's start. */
static void
record_placements(TideSnapshot *s, const TideResult *r, TideForecast *f,
				  const int32_t *orig, int64_t t, int64_t *next_alloc)
{
	for (int i = 0; i < r->nplacements; i++)
	{
		const TidePlacement *p = &r->placements[i];
		const TideJob *jb = &s->jobs[p->job];
		TideRunning *a = &s->running[s->nrunning++];
		int			o = orig[p->job];

		if (f->how[o] != TIDE_FC_PLACED)
		{
			f->how[o] = TIDE_FC_PLACED;
			f->start[o] = t;
		}
		memset(a, 0, sizeof(TideRunning));
		a->alloc_id = (*next_alloc)++;
		a->job_id = jb->id;
		a->queue = jb->queue;
		a->node = p->node;
		a->idle = jb->idle;
		a->preemptable = jb->preemptable;
		a->service = jb->service;
		a->priority = jb->priority;
		a->started_at = t;
		a->placed_at = t;
		a->end_at = jb->time_limit > 0 ? t + jb->time_limit : TIDE_TIME_UNKNOWN;
		a->res = p->res;
		a->gpus = p->gpus;
		a->gpu_milli = p->gpu_milli;
		a->owner = jb->owner;
	}
}

/* Drop the jobs the decide placed or found unschedulable; keep the order. */
static void
compact_jobs(TideSnapshot *s, const TideResult *r, TideForecast *f, int32_t *orig)
{
	int			n = 0;

	for (int j = 0; j < s->njobs; j++)
	{
		int			st = r->outcomes[j].status;

		if (st == TIDE_UNSCHEDULABLE && f->how[orig[j]] != TIDE_FC_PLACED)
			f->how[orig[j]] = TIDE_FC_UNSCHEDULABLE;
		if (st != TIDE_PENDING)
			continue;
		if (n != j)
		{
			s->jobs[n] = s->jobs[j];
			orig[n] = orig[j];
		}
		n++;
	}
	s->njobs = n;
}

/* The earliest known end after the running list, TIDE_TIME_UNKNOWN if none. */
static int64_t
next_end(const TideSnapshot *s)
{
	int64_t		t = TIDE_TIME_UNKNOWN;

	for (int i = 0; i < s->nrunning; i++)
		if (s->running[i].end_at < t)
			t = s->running[i].end_at;
	return t;
}

/* Release every allocation that ends by t (swap-remove from the list). */
static void
release_until(TideSnapshot *s, int64_t t)
{
	int			i = 0;

	while (i < s->nrunning)
	{
		TideRunning *a = &s->running[i];

		if (a->end_at > t)
		{
			i++;
			continue;
		}
		if (a->node >= 0 && a->node < s->nnodes)
			tide_charge_owned(s, a->node, a->queue, a->owner, a->idle, a->res,
							  a->gpus, a->gpu_milli, -1);
		*a = s->running[--s->nrunning];
	}
}

/* The jobs without a known end still running, by group then id, once each. */
static void
collect_blockers(TideSnapshot *s, TideForecast *f)
{
	Blocker    *b = tide_alloc(s, sizeof(Blocker) * (s->nrunning + 1));
	int			n = 0,
				k = 0;

	for (int i = 0; i < s->nrunning; i++)
	{
		const TideRunning *a = &s->running[i];

		if (a->end_at != TIDE_TIME_UNKNOWN || a->node < 0 || a->node >= s->nnodes)
			continue;
		b[n].group = s->nodes[a->node].group;
		b[n].id = a->job_id;
		n++;
	}
	tide_sort(b, n, sizeof(Blocker), cmp_blocker, NULL);
	f->blocker_group = tide_alloc(s, sizeof(int32_t) * (n + 1));
	f->blocker_id = tide_alloc(s, sizeof(int64_t) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		if (k > 0 && f->blocker_group[k - 1] == b[i].group && f->blocker_id[k - 1] == b[i].id)
			continue;
		f->blocker_group[k] = b[i].group;
		f->blocker_id[k] = b[i].id;
		k++;
	}
	f->nblockers = k;
}

TideForecast *
tide_forecast(TideSnapshot *s, int64_t stop_id, bool plain)
{
	TideForecast *f = tide_alloc(s, sizeof(TideForecast));
	int64_t		cap = (int64_t) s->nrunning + replicas_of_jobs(s);
	TideRunning *run = tide_alloc(s, sizeof(TideRunning) * (cap + 1));
	int32_t    *orig = tide_alloc(s, sizeof(int32_t) * (s->njobs + 1));
	int64_t		next_alloc = 1;
	int64_t		t = s->now;
	bool		stopped = false;

	f->njobs = s->njobs;
	f->job_id = tide_alloc(s, sizeof(int64_t) * (s->njobs + 1));
	f->start = tide_alloc(s, sizeof(int64_t) * (s->njobs + 1));
	f->how = tide_alloc(s, sizeof(int8_t) * (s->njobs + 1));
	f->group = tide_alloc(s, sizeof(int32_t) * (s->njobs + 1));
	for (int j = 0; j < s->njobs; j++)
	{
		orig[j] = j;
		f->job_id[j] = s->jobs[j].id;
		f->start[j] = TIDE_TIME_UNKNOWN;
		f->group[j] = s->jobs[j].queue >= 0 && s->jobs[j].queue < s->nqueues
			? s->queues[s->jobs[j].queue].group : -1;
	}

	/* the running list, with room for every replica; past or stopping: now */
	memcpy(run, s->running, sizeof(TideRunning) * s->nrunning);
	for (int i = 0; i < s->nrunning; i++)
	{
		if (run[i].releasing || (run[i].end_at != TIDE_TIME_UNKNOWN && run[i].end_at < t))
			run[i].end_at = t;
		if (run[i].alloc_id >= next_alloc)
			next_alloc = run[i].alloc_id + 1;
	}
	s->running = run;
	s->evict = false;
	s->no_reasons = !plain;

	for (;;)
	{
		TideResult *r = tide_decide(s);

		f->nsteps++;
		record_placements(s, r, f, orig, t, &next_alloc);
		compact_jobs(s, r, f, orig);
		/* claims (R-E6) are for the victims stopping now: once is enough */
		s->nclaims = 0;
		if (stop_id > 0)
		{
			int			j = tide_job_index(s, stop_id);

			if (j < 0)
			{
				stopped = true;
				break;
			}
		}
		if (s->njobs == 0)
			break;
		t = next_end(s);
		if (t == TIDE_TIME_UNKNOWN)
			break;
		release_until(s, t);
		s->now = t;
	}

	for (int j = 0; j < s->njobs; j++)
		f->how[orig[j]] = stopped ? TIDE_FC_NOT_ASKED : TIDE_FC_NEVER;
	collect_blockers(s, f);
	for (int j = 0; j < f->njobs; j++)
	{
		const int64_t *ids;

		if (f->how[j] == TIDE_FC_NEVER && tide_forecast_blockers(f, j, &ids) > 0)
			f->how[j] = TIDE_FC_UNKNOWN;
	}
	return f;
}

int
tide_forecast_blockers(const TideForecast *f, int j, const int64_t **ids)
{
	int32_t		g = f->group[j];
	int			lo = 0,
				hi = f->nblockers;

	/* the first blocker of group g */
	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (f->blocker_group[mid] < g)
			lo = mid + 1;
		else
			hi = mid;
	}
	*ids = f->blocker_id + lo;
	hi = lo;
	while (hi < f->nblockers && f->blocker_group[hi] == g)
		hi++;
	return hi - lo;
}
