/*
 * cycle_limits.c: the cycle's steps that bound a job's run (R-T1, R-T4;
 * extension/63_run_limits.sql), before its load so that the load sees
 * their evictions.  Each reads a partial index of the rows that can be due
 * (running jobs with a limit by the end of their limit, replicas placed
 * and not started by placement time).  First one query asks each index
 * for its earliest entry (one descent each, whatever the planner's
 * estimates and however many rows the indexes hold); only when one is due
 * does the step's function run.  So a cycle with nothing due plans and
 * runs one small query and compiles no PL/pgSQL, which matters to a
 * pg_cron cycle that starts in a new backend.  The steps are global, like
 * the lost-node step: a group's cycle stops what is due in any group (the
 * database decides, whatever the launchers do), and parallel cycles skip
 * each other's rows.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/timestamp.h"

#include "changed.h"
#include "cycle_limits.h"
#include "settings.h"

/* Is anything due at $1: a time limit; a start timeout of $2 (NULL: off)? */
static const char *const Q_DUE = "SELECT d.limits, d.starts FROM tide._limits_due($1, $2) d";

static const char *const W_LIMITS = "SELECT tide._stop_at_limits()";
static const char *const W_UNSTARTED = "SELECT tide._stop_unstarted($1, $2)";

/* The one integer a step's statement returns. */
static int
step_count(int ret, const char *what)
{
	bool		isnull;
	Datum		d;

	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "tide.run_cycle: %s failed: %s", what, SPI_result_code_string(ret));
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? 0 : DatumGetInt32(d);
}

int
tide_cycle_run_limits(void)
{
	int			stopped = 0;
	Interval   *iv = palloc0(sizeof(Interval));
	Datum		args[2];
	Oid			types[2] = {TIMESTAMPTZOID, INTERVALOID};
	char		nulls[2] = {' ', tide_start_timeout > 0 ? ' ' : 'n'};
	bool		isnull;
	bool		limits_due,
				starts_due;
	int			ret;

	iv->time = (int64) tide_start_timeout * USECS_PER_SEC;
	args[0] = TimestampTzGetDatum(GetCurrentTimestamp());
	args[1] = IntervalPGetDatum(iv);
	ret = SPI_execute_with_args(Q_DUE, 2, types, args, nulls, false, 1);
	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "tide.run_cycle: looking for jobs past their limits failed: %s", SPI_result_code_string(ret));
	limits_due = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	starts_due = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));

	if (limits_due)
		stopped += step_count(SPI_execute(W_LIMITS, false, 1), "stopping jobs at their time limit");
	if (starts_due)
	{
		Oid			utypes[2] = {INTERVALOID, INT4OID};
		Datum		uargs[2];

		uargs[0] = IntervalPGetDatum(iv);
		uargs[1] = Int32GetDatum(tide_start_attempts);
		stopped += step_count(SPI_execute_with_args(W_UNSTARTED, 2, utypes, uargs, NULL, false, 1),
							  "releasing jobs not started in time");
	}
	/* the cycle's own writes bump nothing: this one must, or it stays quiet */
	if (stopped > 0)
		tide_note_change();
	return stopped;
}
