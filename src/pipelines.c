/*
 * pipelines.c: the scheduling cycle's part in pipelines and sweeps
 * (R-P1..R-P6, extension/32_pipelines.sql).  Waiting jobs are out of the
 * set the cycle loads (tide.jobs.waiting); all the cycle does for them is
 * to wake, before its load, the deferred ones whose begin_at has passed,
 * through an index of the deferred jobs (only the due ones are read).
 */
#include "postgres.h"

#include "executor/spi.h"
#include "utils/builtins.h"

#include "changed.h"
#include "pipelines.h"

int
tide_cycle_wake_due(void)
{
	bool		isnull;
	int			woken;
	int			ret = SPI_execute("SELECT tide._wake_due()", false, 1);

	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "tide.run_cycle: waking deferred jobs failed: %s", SPI_result_code_string(ret));
	woken = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	/* the cycle's own writes bump nothing: this one must, or it stays quiet */
	if (woken > 0)
		tide_note_change();
	return woken;
}
