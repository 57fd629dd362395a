/*
 * share.c: the share that orders queues of equal priority (R-O4), and the
 * usage it is taken from, decayed over time (R-O6).
 *
 * Each queue keeps an exponentially weighted average of its non-idle
 * usage, in the units of its usage (milli-units), with the half-life
 * s->half_life: over dt microseconds the old average keeps the weight
 * f = 2^(-dt/h) and the usage of the interval gets 1 - f,
 *
 *     D := f D + (1 - f) U
 *
 * where U is the usage the caller charged (what was allocated when the
 * interval ended: a job that ended between two cycles counts until the
 * later one).  Kept from call to call, never recomputed from history: an
 * average, not an integral, so it cannot overflow and a changed half-life
 * needs no reset (the next update decays over the elapsed time with the
 * new value).  With h = 0, f = 0: D = U, and the share is the current
 * usage over quota exactly, as before R-O6.
 *
 * The share of a queue during the walk is max over the resources its quota
 * names of (D + placed) / quota, where placed is what this walk has
 * placed in the queue so far (usage minus its value when the walk began),
 * so the walk still moves on between queues as they fill.  The per-level
 * form of queue trees sums D over a subtree (the average is linear); this
 * file works on one queue at a time, so a parent level can call it with
 * its own sums.
 */
#include <math.h>

#include "share.h"

/*
 * The weight the old average keeps after dt microseconds with half-life
 * half_life: 2^(-dt/h); 0 with no half-life (no memory), 1 when no time
 * passed (or the clock went back: nothing is decayed twice).
 */
double
tide_decay_factor(int64_t dt, int64_t half_life)
{
	if (half_life <= 0)
		return 0.0;
	if (dt <= 0)
		return 1.0;
	return exp2(-(double) dt / (double) half_life);
}

/*
 * One average as of *at brought to s->now: false when there is nothing to
 * weigh (an average never kept starts now, as it is; one already as of
 * now stays), else the weight f the old average keeps, and *at = now.
 */
bool
tide_decay_step(const TideSnapshot *s, int64_t *at, double *f)
{
	if (s->half_life <= 0)
		*f = 0.0;
	else if (*at == TIDE_TIME_UNKNOWN)
	{
		*at = s->now;
		return false;
	}
	else if (*at >= s->now)
		return false;
	else
		*f = tide_decay_factor(s->now - *at, s->half_life);
	*at = s->now;
	return true;
}

/*
 * Decays every queue's average up to s->now with the usage charged now
 * (R-O6).  A queue never seen before (decayed_at unknown) starts from the
 * average the caller gave (0: a new queue) at now.  Called by
 * tide_decide() before its walk; a caller that changes usage between
 * decide calls (tide-sim's departures) calls it first, so that the
 * interval before the change is weighed with the usage it had.
 */
void
tide_fair_decay(TideSnapshot *s)
{
	for (int i = 0; i < s->nqueues; i++)
	{
		TideQueue  *q = &s->queues[i];
		double		f;

		if (!tide_decay_step(s, &q->decayed_at, &f))
			continue;
		for (int r = 0; r < s->nres; r++)
			q->decayed[r] = f * q->decayed[r] + (1.0 - f) * (double) q->usage[r];
	}
}

/*
 * The dominant share of queue q (DRF): the largest usage / quota over the
 * resources its quota names; +inf without a quota (after every queue of
 * its priority that has one).  base NULL: the usage now (R-O4 with no
 * half-life, exactly the integer ratio); else the decayed average plus
 * what was placed since the walk began, base being q's usage then
 * ([nres], R-O6).
 */
double
tide_share(const TideSnapshot *s, const TideQueue *q, const int64_t *base)
{
	double		share = 0.0;
	bool		any = false;

	if (!q->has_quota)
		return INFINITY;
	for (int r = 0; r < s->nres; r++)
	{
		double		u;

		if (q->quota[r] == TIDE_UNLIMITED || q->quota[r] <= 0)
			continue;
		any = true;
		u = base ? q->decayed[r] + (double) (q->usage[r] - base[r]) : (double) q->usage[r];
		if (u / (double) q->quota[r] > share)
			share = u / (double) q->quota[r];
	}
	return any ? share : INFINITY;
}
