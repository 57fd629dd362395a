/*
 * cycle_limits.c: the cycle's steps that bound a job's run (R-T1, R-T4;
 * extension/63_run_limits.sql), before its load so that the load sees
 * their evictions.  Each is one statement over a partial index of the
 * rows that can be due (running jobs with a limit, replicas placed and not
 * started), reading only the due ones: a cycle with nothing due pays an
 * empty index range.  They are global, like the lost-node step: a group
 * cycle stops what is due in any group (the database decides, whatever the
 * launchers do), and parallel cycles skip each other's rows.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/timestamp.h"

#include "changed.h"
#include "cycle_limits.h"
#include "settings.h"

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
	int			stopped;

	stopped = step_count(SPI_execute(W_LIMITS, false, 1), "stopping jobs at their time limit");
	if (tide_start_timeout > 0)
	{
		Oid			types[2] = {INTERVALOID, INT4OID};
		Datum		args[2];
		Interval   *iv = palloc0(sizeof(Interval));

		iv->time = (int64) tide_start_timeout * USECS_PER_SEC;
		args[0] = IntervalPGetDatum(iv);
		args[1] = Int32GetDatum(tide_start_attempts);
		stopped += step_count(SPI_execute_with_args(W_UNSTARTED, 2, types, args, NULL, false, 1),
							  "releasing jobs not started in time");
	}
	/* the cycle's own writes bump nothing: this one must, or it stays quiet */
	if (stopped > 0)
		tide_note_change();
	return stopped;
}
