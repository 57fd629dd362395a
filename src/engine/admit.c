/*
 * admit.c: may the queue hold this job (R-A1), and can it ever (R-A2)?
 *
 * A job's gang minimum (minreq: the requests of its first min_available
 * replicas, plus the card key when its gpu_type is known) is checked
 * against its queue: within quota (on every resource the quota names) it
 * is guaranteed; above quota but within capability it is borrowing; above
 * capability it waits.  Usage counts what the queue holds plus what
 * reservations (R-L2) hold in it.  In a queue with an owner limit (R-A4)
 * every class also needs the job's owner to stay within it.  Card keys of
 * jobs without a gpu_type are checked per partition when a node is chosen
 * (tide_part_card_ok in fit.c, with the limit tests tide_over() and
 * tide_over4()).  In a queue tree (R-O5) every queue above the leaf is
 * checked too (tide_tree_admit, tree.c, R-A3).
 */
#include "admit.h"
#include "fit.h"
#include "reasons.h"
#include "tree.h"

/*
 * Does the queue stay within its capability of r with need more (held
 * counting when the queue's hold applies to the job)?  If not, o says why:
 * the queue's hold (R-L2) when the ask would fit without it, else the
 * capability (R-A1).
 */
static inline bool
within_capability(TideWork *w, const TideJob *job, const TideQueue *q, int r, int64_t held,
				  int64_t need, TideOutcome *o)
{
	int64_t		total;

	if (!tide_over4(q->capability[r], q->usage[r], q->idle_usage[r], held, need))
		return true;
	/* non-idle and idle usage, saturated (for the reason's numbers) */
	total = tide_sat_add(q->usage[r], q->idle_usage[r]);
	if (held > 0 && !tide_over(q->capability[r], total, need))
		tide_reason_held_queue(w, o, r, job->queue, tide_sat_add(total, held), need, q->capability[r],
							   q->hold_job);
	else
		tide_reason_capability(w, o, r, tide_sat_add(total, held), need, q->capability[r], job->queue);
	return false;
}

/*
 * R-A4: does the job's owner stay within the queue's owner limit with the
 * job's minimum?  Idle, borrowing and guaranteed jobs alike; reservations
 * hold nothing against it.  If not, o names the limit per resource.
 */
static bool
within_owner_limit(TideWork *w, const TideJob *job, const TideQueue *q, const int64_t *need,
				   TideOutcome *o)
{
	const int64_t *u;
	bool		ok = true;

	if (__builtin_expect(q->owner_cap == NULL, 1) || job->owner < 0)
		return true;
	u = tide_owner_usage(w->s, job->queue, job->owner);
	for (int r = 0; r < w->nres; r++)
		if (need[r] > 0 && tide_over(q->owner_cap[r], u ? u[r] : 0, need[r]))
		{
			tide_reason_owner_limit(w, o, r, job->owner, u ? u[r] : 0, need[r], q->owner_cap[r],
									job->queue);
			ok = false;
		}
	return ok;
}

/*
 * Classify a non-idle job: TIDE_CLASS_GUARANTEED, TIDE_CLASS_BORROWING, or
 * TIDE_CLASS_NONE with every capability reason added to o.
 */
int
tide_admit(TideWork *w, int j, TideOutcome *o)
{
	TideSnapshot *s = w->s;
	const TideJob *job = &s->jobs[j];
	const TideQueue *q = &s->queues[job->queue];
	const int64_t *need = tide_job_minreq(w, j);
	int			use_held = -1;
	bool		cap_ok = true;
	bool		quota_ok = q->has_quota;

	for (int r = 0; r < w->nres; r++)
	{
		int64_t		held;

		if (need[r] == 0)
			continue;
		held = tide_queue_held(w, job, q, r, &use_held);
		if (!within_capability(w, job, q, r, held, need[r], o))
			cap_ok = false;
		/* a sum past INT64_MAX already failed capability above: unlimited is never over */
		if (quota_ok && q->quota[r] != TIDE_UNLIMITED && tide_over4(q->quota[r], q->usage[r], held, 0, need[r]))
			quota_ok = false;
	}
	if (!within_owner_limit(w, job, q, need, o))
		cap_ok = false;
	/* R-A3: every queue above the leaf, when it has any */
	if (__builtin_expect(q->parent >= 0, 0) && !tide_tree_admit(w, j, need, &quota_ok, o))
		cap_ok = false;
	if (!cap_ok)
		return TIDE_CLASS_NONE;
	return quota_ok ? TIDE_CLASS_GUARANTEED : TIDE_CLASS_BORROWING;
}

/*
 * Idle job (R-A1): its minimum fits in the group's capacity minus the
 * group's non-idle usage, and in its queue's capability.
 */
bool
tide_admit_idle(TideWork *w, int j, TideOutcome *o)
{
	TideSnapshot *s = w->s;
	const TideJob *job = &s->jobs[j];
	const TideQueue *q = &s->queues[job->queue];
	const int64_t *need = tide_job_minreq(w, j);
	int			g = w->info[j].group;
	bool		ok = true;
	int			use_held = -1;

	if (g < 0)
		return false;
	for (int r = 0; r < w->nres; r++)
	{
		const int64_t *cap = w->ix->groups[g].capacity;
		const int64_t *nonidle = w->group_nonidle + (size_t) g * w->nres;
		int64_t		held;

		if (need[r] == 0)
			continue;
		held = tide_queue_held(w, job, q, r, &use_held);
		if (tide_over(cap[r], nonidle[r], need[r]))
		{
			ok = false;
			tide_reason_quota_idle(w, o, r, nonidle[r], need[r], cap[r], g);
		}
		if (!within_capability(w, job, q, r, held, need[r], o))
			ok = false;
	}
	if (!within_owner_limit(w, job, q, need, o))
		ok = false;
	if (__builtin_expect(q->parent >= 0, 0) && !tide_tree_admit(w, j, need, NULL, o))
		ok = false;
	return ok;
}

/*
 * R-A2 checks that need no node scan: a resource or card type that nothing
 * in the cluster offers, malformed GPU requests, a minimum
 * above the queue's capability, a group without nodes, no partition of the
 * group that could ever hold one replica.  Returns false (reasons in o)
 * when the job can never run as things stand.
 */
bool
tide_static_check(TideWork *w, int j, TideOutcome *o)
{
	TideSnapshot *s = w->s;
	const TideJob *job = &s->jobs[j];
	const TideQueue *q = &s->queues[job->queue];
	const int64_t *need = tide_job_minreq(w, j);
	int			g = w->info[j].group;
	bool		ok = true;

	if (job->unknown_name > 0 && job->unknown_name <= s->nunknown)
	{
		tide_reason_unknown_name(w, o, job->unknown_name - 1);
		return false;
	}
	if (job->nroles <= 0 || w->info[j].total_replicas <= 0)
	{
		tide_reason_no_tasks(w, o);
		return false;
	}
	for (int ri = 0; ri < job->nroles; ri++)
	{
		int64_t		gpu = tide_role_gpu(&job->roles[ri]);

		if (gpu > TIDE_MILLI && gpu % TIDE_MILLI != 0)
		{
			tide_reason_fraction(w, o, ri, gpu);
			ok = false;
		}
		else if (gpu > (int64_t) TIDE_MAX_GPUS * TIDE_MILLI)
		{
			tide_reason_too_many_gpus(w, o, ri, gpu);
			ok = false;
		}
	}
	for (int r = 0; r < w->nres; r++)
		if (need[r] > 0 && need[r] >= q->capability[r] &&
			need[r] > q->capability[r] - (q->capability[r] == TIDE_UNLIMITED))
		{
			if (need[r] == INT64_MAX)
			{
				/* the gang minimum saturated: no queue can ever account it */
				tide_reason_uncountable(w, o, r, need[r], job->queue);
				ok = false;
				continue;
			}
			tide_reason_cap_never(w, o, r, need[r], q->capability[r], job->queue);
			ok = false;
		}
	/* R-A3: nor one above the capability of a queue above it */
	for (int a = q->parent, d = 1; w->tree_caps && w->tree_caps[job->queue] && a >= 0 && d < TIDE_MAX_DEPTH;
		 a = s->queues[a].parent, d++)
		for (uint64_t m = w->tree_caps[job->queue]; m; m &= m - 1)
		{
			int			r = __builtin_ctzll(m);

			if (need[r] > 0 && need[r] < INT64_MAX && s->queues[a].capability[r] != TIDE_UNLIMITED &&
				need[r] > s->queues[a].capability[r])
			{
				tide_reason_cap_never(w, o, r, need[r], s->queues[a].capability[r], a);
				ok = false;
			}
		}
	if (q->inner)
	{
		/* jobs live only in leaves: the SQL checks refuse it, the engine never places it */
		tide_reason_inner_queue(w, o, job->queue);
		ok = false;
	}
	/* R-A4: a minimum above the owner limit alone never runs, whoever owns it */
	for (int r = 0; q->owner_cap && job->owner >= 0 && r < w->nres; r++)
		if (need[r] > 0 && need[r] < INT64_MAX && q->owner_cap[r] != TIDE_UNLIMITED &&
			need[r] > q->owner_cap[r])
		{
			tide_reason_owner_never(w, o, r, need[r], q->owner_cap[r], job->queue);
			ok = false;
		}
	if (!ok)
		return false;
	if (g < 0)
	{
		tide_reason_no_nodes(w, o, job->queue);
		return false;
	}
	/* each role needs a partition whose largest node could hold one replica */
	for (int ri = 0; ri < job->nroles; ri++)
	{
		const TideRole *role = &job->roles[ri];
		const TideGroup *grp = &w->ix->groups[g];
		bool		any = false,
					fits = false;
		int			shortres = -1;
		int64_t		largest = 0;

		for (int pi = grp->plo; pi < grp->phi && !fits; pi++)
		{
			const TidePart *p = &w->ix->parts[pi];
			bool		pf = true;

			if (!tide_part_allowed(w, j, role, p))
				continue;
			any = true;
			for (int r = 0; r < w->nres && pf; r++)
				if (role->request[r] > p->maxcap[r])
				{
					pf = false;
					if (shortres < 0 || shortres == r)
					{
						shortres = r;
						if (p->maxcap[r] > largest)
							largest = p->maxcap[r];
					}
				}
			if (pf && role->request[TIDE_RES_GPU] > (int64_t) p->maxgpus * TIDE_MILLI)
			{
				pf = false;
				if (shortres < 0)
					shortres = TIDE_RES_GPU;
				if (shortres == TIDE_RES_GPU && (int64_t) p->maxgpus * TIDE_MILLI > largest)
					largest = (int64_t) p->maxgpus * TIDE_MILLI;
			}
			fits = pf;
		}
		if (fits)
			continue;
		ok = false;
		if (!any)
		{
			if (role->request[TIDE_RES_GPU] > 0 && job->gpu_type >= 0)
				tide_reason_no_type(w, o, ri, job->gpu_type);
			else if (role->request[TIDE_RES_GPU] == 0)
				tide_reason_cpu_on_gpu(w, o, ri);
			else
				tide_reason_no_type(w, o, ri, -1);
		}
		else
			tide_reason_too_big(w, o, shortres, ri, role->request[shortres], largest);
	}
	return ok;
}
