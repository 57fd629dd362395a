/*
 * forecast.h: when the engine's own order starts each pending job if the
 * running jobs end at their time limits (forecast.c).
 */
#ifndef TIDE_FORECAST_H
#define TIDE_FORECAST_H

#include "engine.h"

/* What the forecast found for one job. */
typedef enum TideForecastHow
{
	TIDE_FC_NOT_ASKED = 0,		/* the forecast stopped before it (stop_id) */
	TIDE_FC_PLACED = 1,			/* start holds its start */
	TIDE_FC_UNKNOWN = 2,		/* it waits on jobs without a time limit */
	TIDE_FC_NEVER = 3,			/* every known end passed and it still waits */
	TIDE_FC_UNSCHEDULABLE = 4	/* R-A2: can never fit as things stand */
} TideForecastHow;

typedef struct TideForecast
{
	int32_t		njobs;			/* the snapshot's pending jobs at the call */
	int64_t    *job_id;			/* [njobs] in the snapshot's order */
	int64_t    *start;			/* [njobs] microseconds, TIDE_TIME_UNKNOWN if none */
	int8_t	   *how;			/* [njobs] TideForecastHow */
	int32_t    *group;			/* [njobs] resource group of the job's queue */

	/*
	 * The jobs without a time limit still running when no known end was
	 * left, with their resource group, sorted by group then id: a job
	 * TIDE_FC_UNKNOWN waits on those of its group.
	 */
	int32_t		nblockers;
	int32_t    *blocker_group;
	int64_t    *blocker_id;
	int32_t		nsteps;			/* decide calls made */
} TideForecast;

/*
 * Step the snapshot from s->now from one end time to the next, deciding
 * at each (evictions off).  The snapshot is used up: its cluster state,
 * jobs and running list are changed.  stop_id > 0: stop once that job is
 * placed.  plain: every decide in full, with the pending reasons (the
 * reference the tests hold the faster stepping to); the answers are the
 * same.
 */
extern TideForecast *tide_forecast(TideSnapshot *s, int64_t stop_id, bool plain);

/* The blockers of job j of the forecast (those of its group): count, *ids. */
extern int	tide_forecast_blockers(const TideForecast *f, int j, const int64_t **ids);

#endif							/* TIDE_FORECAST_H */
