/*
 * philly_forecast.c: how right the engine's forecast (tide_forecast) is,
 * measured on the Philly replay (--forecast).
 *
 * At each instant where jobs arrive (within the window of days, counted
 * from the first arrival), before the
 * instant's decide: a copy of the replay's snapshot (the same nodes and
 * queues, with the queues' decayed usage; every running allocation
 * charged and ending at its start + its time limit; every waiting job,
 * each with time_limit = duration x --limit-factor) is given to
 * tide_forecast(), which uses it up.  The new jobs' answers are kept and,
 * once the replay has run, compared with the real starts: there jobs end
 * at their true run time, and later arrivals may pass them (backfill).
 * The forecast cannot know either.
 *
 * Error = forecast start - real start (positive: the forecast was late,
 * pessimistic).  Jobs the forecast answers with no time (waiting on a job
 * without a time limit, or on nothing it knows the end of) are counted
 * apart.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forecast.h"
#include "philly.h"

/*
 * The time limit the forecast gives a job: its run time x the factor
 * (at least 1 us), so that at 1x a running job ends exactly when it does.
 */
static int64_t
fc_limit(const PJob *jb, double factor)
{
	int64_t		l = llround((double) jb->duration * factor);

	return l > 0 ? l : 1;
}

static int
cmp_int(const void *a, const void *b)
{
	return *(const int *) a - *(const int *) b;
}

PhForecast *
phf_new(int njobs, double factor, int64_t from, int64_t until)
{
	PhForecast *pf = sim_alloc(sizeof(PhForecast));

	pf->factor = factor;
	pf->from = from;
	pf->until = until;
	pf->start = sim_alloc(sizeof(int64_t) * (njobs + 1));
	pf->how = sim_alloc(sizeof(int8_t) * (njobs + 1));
	pf->asked = sim_alloc(sizeof(int8_t) * (njobs + 1));
	pf->waiting = sim_alloc(sizeof(int) * (njobs + 1));
	return pf;
}

/*
 * The copy of the replay's snapshot at t: its cluster and queues, the
 * running jobs ending at their limits, the waiting jobs pf->waiting[0..nw).
 */
static TideSnapshot *
copy_snapshot(PhForecast *pf, const TideSnapshot *live, int nnodes, int per_node,
			  const PhQueues *fq, int policy, const PJob *jobs, const Heap *running,
			  const PPlace *pool, int nw, int64_t t)
{
	TideMem		mem = sim_pool_mem(&pf->pool);
	TideSnapshot *s = tide_snapshot_create(&mem);
	char		err[256];
	int			nalloc = 0;
	int64_t    *vec[TIDE_MAX_GPUS + 1];

	ph_fill_cluster(s, nnodes, per_node, fq, policy);
	s->half_life = live->half_life;
	if (!tide_snapshot_finish(s, err, sizeof(err)))
		sim_die(SIM_EXIT_DATA, "internal error: forecast snapshot: %s", err);
	for (int q = 0; q < s->nqueues; q++)
	{
		memcpy(s->queues[q].decayed, live->queues[q].decayed, sizeof(double) * s->nres);
		s->queues[q].decayed_at = live->queues[q].decayed_at;
	}
	for (int g = 1; g <= per_node; g++)
	{
		vec[g] = tide_vec_new(s);
		vec[g][TIDE_RES_GPU] = (int64_t) g * TIDE_MILLI;
	}
	for (int h = 0; h < running->n; h++)
		nalloc += jobs[running->a[h].job].npl;
	s->running = tide_alloc(s, sizeof(TideRunning) * (nalloc + 1));
	for (int h = 0; h < running->n; h++)
	{
		const PJob *jb = &jobs[running->a[h].job];

		for (int k = 0; k < jb->npl; k++)
		{
			TideRunning *a = &s->running[s->nrunning++];

			a->alloc_id = s->nrunning;
			a->job_id = running->a[h].job + 1;
			a->queue = jb->queue;
			a->node = pool[jb->pl_first + k].node;
			a->service = TIDE_SVC_TRAINING;
			a->started_at = a->placed_at = jb->start;
			a->end_at = jb->start + fc_limit(jb, pf->factor);
			a->res = vec[jb->per_replica];
			a->gpus = pool[jb->pl_first + k].gpus;
			tide_charge(s, a->node, a->queue, false, a->res, a->gpus, 0, +1);
		}
	}
	tide_snapshot_alloc_jobs(s, nw, nw);
	for (int k = 0; k < nw; k++)
		ph_fill_job(s, k, &jobs[pf->waiting[k]], pf->waiting[k],
					fc_limit(&jobs[pf->waiting[k]], pf->factor), false);
	s->now = t;
	return s;
}

/*
 * The forecast at t, before t's decide, of the jobs arriving at t (within
 * the window): lines are the waiting lines (new jobs included), running
 * the heap of running jobs.
 */
void
phf_step(PhForecast *pf, const TideSnapshot *live, int nnodes, int per_node,
		 const PhQueues *fq, int policy, const PJob *jobs, const Heap *running,
		 const PPlace *pool, const PQueue *lines, int nlines, int64_t t)
{
	TideForecast *f;
	int			nw = 0,
				nnew = 0;
	int64_t		stop = 0;
	double		t0 = sim_now();

	for (int q = 0; q < nlines; q++)
		for (int k = lines[q].head; k < lines[q].tail; k++)
		{
			int			jn = lines[q].job[k];

			pf->waiting[nw++] = jn;
			if (jobs[jn].arrival == t && t >= pf->from && t < pf->until)
			{
				nnew++;
				stop = jn + 1;
			}
		}
	if (nnew == 0)
		return;
	qsort(pf->waiting, nw, sizeof(int), cmp_int);

	/* the new jobs are the last in arrival order: one of them, stop once placed */
	f = tide_forecast(copy_snapshot(pf, live, nnodes, per_node, fq, policy, jobs, running,
									pool, nw, t),
					  nnew == 1 ? stop : 0, false);
	pf->calls++;
	pf->steps += f->nsteps;
	for (int k = 0; k < f->njobs; k++)
	{
		int			jn = (int) f->job_id[k] - 1;

		if (jobs[jn].arrival != t || t < pf->from || t >= pf->until)
			continue;
		pf->asked[jn] = 1;
		pf->how[jn] = f->how[k];
		pf->start[jn] = f->start[k];
	}
	sim_pool_reset(&pf->pool);
	pf->seconds += sim_now() - t0;
}

/*
 * One set of errors: jobs, median, p90, p99 and mean of |error|, median
 * signed error, the share early (the forecast before the real start) and
 * late by a second or more.  prefix names the set.
 */
static void
print_errors(const char *prefix, double *abs_err, double *signed_err, int64_t n)
{
	int64_t		early = 0,
				late = 0;
	double		sum = 0;

	for (int64_t i = 0; i < n; i++)
	{
		early += signed_err[i] <= -1;
		late += signed_err[i] >= 1;
		sum += abs_err[i];
	}
	qsort(abs_err, n, sizeof(double), sim_cmp_double);
	qsort(signed_err, n, sizeof(double), sim_cmp_double);
	printf("%s_jobs: %lld\n", prefix, (long long) n);
	printf("%s_abs_median_s: %.0f\n", prefix, sim_percentile(abs_err, n, 0.5));
	printf("%s_abs_p90_s: %.0f\n", prefix, sim_percentile(abs_err, n, 0.9));
	printf("%s_abs_p99_s: %.0f\n", prefix, sim_percentile(abs_err, n, 0.99));
	printf("%s_abs_mean_s: %.0f\n", prefix, n ? sum / n : 0.0);
	printf("%s_signed_median_s: %.0f\n", prefix, sim_percentile(signed_err, n, 0.5));
	printf("%s_early_pct: %.1f\n", prefix, n ? 100.0 * early / n : 0.0);
	printf("%s_late_pct: %.1f\n", prefix, n ? 100.0 * late / n : 0.0);
}

/*
 * The summary lines (and with path, one CSV row per job asked): the
 * errors over every job with an answer, and over those that did not start
 * at once in the forecast or in reality.
 */
void
phf_report(const PhForecast *pf, const PJob *jobs, int njobs, const char *path)
{
	double	   *a_all = sim_alloc(sizeof(double) * (njobs + 1));
	double	   *s_all = sim_alloc(sizeof(double) * (njobs + 1));
	double	   *a_wait = sim_alloc(sizeof(double) * (njobs + 1));
	double	   *s_wait = sim_alloc(sizeof(double) * (njobs + 1));
	int64_t		n = 0,
				nwait = 0,
				asked = 0,
				unknown = 0,
				never = 0,
				other = 0;
	FILE	   *out = NULL;

	if (path && !(out = fopen(path, "w")))
		sim_die(SIM_EXIT_DATA, "cannot write %s: %s", path, strerror(errno));
	if (out)
		fprintf(out, "line,arrival_s,gpus,forecast_start_s,real_start_s,how\n");
	for (int j = 0; j < njobs; j++)
	{
		const PJob *jb = &jobs[j];
		double		e;

		if (!pf->asked[j])
			continue;
		asked++;
		if (out)
		{
			fprintf(out, "%d,%.0f,%d,", jb->line, jb->arrival / 1e6, jb->gpus);
			if (pf->how[j] == TIDE_FC_PLACED)
				fprintf(out, "%.0f", pf->start[j] / 1e6);
			fprintf(out, ",");
			if (jb->state == 2)
				fprintf(out, "%.0f", jb->start / 1e6);
			fprintf(out, ",%d\n", pf->how[j]);
		}
		if (pf->how[j] == TIDE_FC_UNKNOWN)
			unknown++;
		else if (pf->how[j] == TIDE_FC_NEVER)
			never++;
		if (pf->how[j] != TIDE_FC_PLACED || jb->state != 2)
		{
			other += pf->how[j] != TIDE_FC_UNKNOWN && pf->how[j] != TIDE_FC_NEVER;
			continue;
		}
		e = (pf->start[j] - jb->start) / 1e6;
		a_all[n] = fabs(e);
		s_all[n++] = e;
		if (pf->start[j] > jb->arrival || jb->start > jb->arrival)
		{
			a_wait[nwait] = fabs(e);
			s_wait[nwait++] = e;
		}
	}
	if (out && fclose(out) != 0)
		sim_die(SIM_EXIT_DATA, "cannot write %s: %s", path, strerror(errno));
	printf("forecast_limit_factor: %g\n", pf->factor);
	printf("forecast_from_day: %g\n", pf->from / 86400e6);
	if (pf->until < INT64_MAX)
		printf("forecast_days: %g\n", (pf->until - pf->from) / 86400e6);
	printf("forecast_asked: %lld\n", (long long) asked);
	printf("forecast_null_unknown: %lld\n", (long long) unknown);
	printf("forecast_null_never: %lld\n", (long long) never);
	printf("forecast_other: %lld\n", (long long) other);
	print_errors("forecast", a_all, s_all, n);
	print_errors("forecast_waited", a_wait, s_wait, nwait);
	printf("forecast_calls: %lld\n", (long long) pf->calls);
	printf("forecast_decides: %lld\n", (long long) pf->steps);
	free(a_all);
	free(s_all);
	free(a_wait);
	free(s_wait);
}
