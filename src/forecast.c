/*
 * forecast.c: tide._forecast(stop_job), the engine's own forecast as rows.
 *
 * The same load as tide.run_cycle() and tide.dry_run() (cycle_load.c), in
 * the caller's transaction, so what the caller changed and has not
 * committed is seen (a what-if that is then rolled back); then the
 * engine's forecast (src/engine/forecast.c), stepped from one end time to
 * the next.  Nothing is written, no lock is taken: the load reads one
 * snapshot of the tables, which a cycle committing meanwhile does not
 * change.  stop_job not NULL: stop once that job is placed (its own row
 * is exact, the others after it are left out).
 *
 * A submitter (not a member of tide_reader or tide_admin) gets the rows of
 * its own jobs only: the load runs as the function's owner (every job
 * counts, as in the cycle), and the jobs of other owners a row waits on are
 * counted in why, never named (Kueue's visibility API does the same).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/syscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "cycle_load.h"
#include "forecast.h"

PG_FUNCTION_INFO_V1(tide_forecast_rows);

/* The OUT columns of tide._forecast() (extension/85_forecast.sql), 0-based. */
enum
{
	FC_JOB_ID,
	FC_START_AT,
	FC_UNKNOWN_BECAUSE,
	FC_WHY,
	FC_NCOLS
};

/* The engine gives back each decide's scratch at the next one. */
static void
forecast_free(void *ctx, void *ptr)
{
	(void) ctx;
	pfree(ptr);
}

static const char *
why_text(int how)
{
	switch (how)
	{
		case TIDE_FC_UNKNOWN:
			return "waits on running jobs without a time limit (unknown_because)";
		case TIDE_FC_NEVER:
			return "no running job's end lets it start as things stand";
		case TIDE_FC_UNSCHEDULABLE:
			return "unschedulable: no node could ever hold it (R-A2)";
		default:
			return NULL;
	}
}

/* A job id and the name of its owner, to filter a submitter's rows. */
typedef struct JobOwner
{
	int64		id;
	const char *owner;
} JobOwner;

typedef struct Viewer
{
	const char *name;			/* the submitter, NULL: sees every job */
	JobOwner   *owners;			/* sorted by id */
	int			nowners;
} Viewer;

static int
cmp_job_owner(const void *a, const void *b)
{
	int64		x = ((const JobOwner *) a)->id;
	int64		y = ((const JobOwner *) b)->id;

	return x < y ? -1 : x > y;
}

/*
 * Every job's owner (the load keeps owners only for queues with an owner
 * limit), read as the function's owner.
 */
static void
viewer_owners(Viewer *vw, MemoryContext mcxt)
{
	int			ret = SPI_execute("SELECT j.id, j.owner::text FROM tide.jobs j", true, 0);
	MemoryContext old;

	if (ret != SPI_OK_SELECT)
		elog(ERROR, "tide._forecast: owner query failed: %s", SPI_result_code_string(ret));
	old = MemoryContextSwitchTo(mcxt);
	vw->owners = palloc(sizeof(JobOwner) * (SPI_processed + 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		vw->owners[i].id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		vw->owners[i].owner = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
	}
	MemoryContextSwitchTo(old);
	vw->nowners = (int) SPI_processed;
	qsort(vw->owners, vw->nowners, sizeof(JobOwner), cmp_job_owner);
}

/* Is job id the viewer's own (always, for a reader)? */
static bool
viewer_sees(const Viewer *vw, int64 id)
{
	JobOwner	key = {id, NULL};
	JobOwner   *o;

	if (vw->name == NULL)
		return true;
	o = bsearch(&key, vw->owners, vw->nowners, sizeof(JobOwner), cmp_job_owner);
	return o && o->owner && strcmp(o->owner, vw->name) == 0;
}

static void
emit_rows(ReturnSetInfo *rsinfo, const TideForecast *f, const Viewer *vw, MemoryContext caller)
{
	for (int j = 0; j < f->njobs; j++)
	{
		Datum		v[FC_NCOLS];
		bool		null[FC_NCOLS] = {false, true, true, true};
		const char *why = why_text(f->how[j]);

		if (f->how[j] == TIDE_FC_NOT_ASKED || !viewer_sees(vw, f->job_id[j]))
			continue;
		v[FC_JOB_ID] = Int64GetDatum(f->job_id[j]);
		if (f->how[j] == TIDE_FC_PLACED)
		{
			v[FC_START_AT] = TimestampTzGetDatum((TimestampTz) f->start[j]);
			null[FC_START_AT] = false;
		}
		if (f->how[j] == TIDE_FC_UNKNOWN)
		{
			const int64 *ids;
			int			n = tide_forecast_blockers(f, j, (const int64_t **) &ids);
			MemoryContext old = MemoryContextSwitchTo(caller);
			Datum	   *elems = palloc(sizeof(Datum) * (n + 1));
			int			shown = 0;

			for (int i = 0; i < n; i++)
				if (viewer_sees(vw, ids[i]))
					elems[shown++] = Int64GetDatum(ids[i]);
			v[FC_UNKNOWN_BECAUSE] = PointerGetDatum(construct_array(elems, shown, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
			null[FC_UNKNOWN_BECAUSE] = false;
			if (shown < n)
				why = psprintf("%s, and %d jobs of other owners", why, n - shown);
			MemoryContextSwitchTo(old);
		}
		if (why)
		{
			v[FC_WHY] = CStringGetTextDatum(why);
			null[FC_WHY] = false;
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, null);
	}
}

/*
 * Forecast from the transaction's now(), not the clock's: every call in a
 * transaction answers alike (forecast, estimate_start and explain agree to
 * the microsecond), and "now" is now() as SQL sees it.  What the load found
 * past its limit (ended by the load's clock) ends then too.
 */
static void
use_transaction_time(TideSnapshot *s)
{
	int64		loaded = s->now;

	s->now = GetCurrentTransactionStartTimestamp();
	for (int i = 0; i < s->nrunning; i++)
		if (s->running[i].end_at != TIDE_TIME_UNKNOWN && s->running[i].end_at <= loaded)
			s->running[i].end_at = s->now;
}

static int
cmp_alloc_id(const void *a, const void *b)
{
	int64		x = ((const TideRunning *) a)->alloc_id;
	int64		y = ((const TideRunning *) b)->alloc_id;

	return x < y ? -1 : x > y;
}

/*
 * An allocation assigned but not started yet ends, for the forecast, its
 * time limit after it starts: after the job's start if it has one (another
 * replica started), else after now (the load leaves its end unknown, as
 * the cycle's backfill needs no more).
 */
static void
end_not_started(TideSnapshot *s)
{
	int			ret;

	qsort(s->running, s->nrunning, sizeof(TideRunning), cmp_alloc_id);
	ret = SPI_execute_with_args(
		"SELECT a.id, greatest(coalesce(j.started_at, $1) + j.time_limit, $1)"
		"  FROM tide.allocations a JOIN tide.jobs j ON j.id = a.job_id"
		" WHERE a.state = 'assigned' AND a.started_at IS NULL AND j.time_limit IS NOT NULL",
		1, (Oid[]) {TIMESTAMPTZOID}, (Datum[]) {TimestampTzGetDatum(s->now)}, NULL, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "tide._forecast: allocation query failed: %s", SPI_result_code_string(ret));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		TideRunning key;
		TideRunning *a;
		TimestampTz end_at;

		key.alloc_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		end_at = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));
		a = bsearch(&key, s->running, s->nrunning, sizeof(TideRunning), cmp_alloc_id);
		if (a && a->end_at == TIDE_TIME_UNKNOWN)
			a->end_at = end_at;
	}
}

static Oid
function_owner(Oid fn)
{
	HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "tide._forecast: cache lookup failed for function %u", fn);
	owner = ((Form_pg_proc) GETSTRUCT(tup))->proowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * tide._forecast(stop_job bigint) returns setof record: one row per
 * pending job the cycle would load (job_id, start_at, unknown_because,
 * why).
 */
Datum
tide_forecast_rows(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int64		stop = PG_ARGISNULL(0) ? 0 : PG_GETARG_INT64(0);
	MemoryContext caller;
	MemoryContext mcxt;
	CycleLoad	l;
	TideForecast *f;
	Viewer		vw = {NULL, NULL, 0};
	Oid			save_uid;
	int			save_sec;
	int			ret;

	InitMaterializedSRF(fcinfo, 0);
	caller = CurrentMemoryContext;
	GetUserIdAndSecContext(&save_uid, &save_sec);
	if (!has_privs_of_role(save_uid, get_role_oid("tide_reader", false)) &&
		!has_privs_of_role(save_uid, get_role_oid("tide_admin", false)))
		vw.name = GetUserNameFromId(save_uid, false);
	if ((ret = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "tide._forecast: SPI_connect failed: %s", SPI_result_code_string(ret));
	mcxt = AllocSetContextCreate(caller, "tide forecast", ALLOCSET_DEFAULT_SIZES);
	/* a submitter's forecast counts every job: load as the function's owner */
	if (vw.name)
		SetUserIdAndSecContext(function_owner(fcinfo->flinfo->fn_oid),
							   save_sec | SECURITY_LOCAL_USERID_CHANGE);
	PG_TRY();
	{
		tide_cycle_load(&l, mcxt, NULL);
		use_transaction_time(l.s);
		end_not_started(l.s);
		if (vw.name)
			viewer_owners(&vw, mcxt);
	}
	PG_FINALLY();
	{
		SetUserIdAndSecContext(save_uid, save_sec);
	}
	PG_END_TRY();
	l.s->mem.free = forecast_free;
	f = tide_forecast(l.s, stop > 0 ? stop : 0, false);
	elog(DEBUG1, "tide._forecast: %d jobs, %d decide steps", f->njobs, f->nsteps);
	emit_rows(rsinfo, f, &vw, caller);
	MemoryContextDelete(mcxt);
	SPI_finish();
	return (Datum) 0;
}
