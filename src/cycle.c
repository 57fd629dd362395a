/*
 * cycle.c: tide.run_cycle(), the SPI adapter around the policy engine:
 * the order of one cycle, in the caller's transaction (R-C1).
 *
 *   1. lock: pg_try_advisory_xact_lock(tide._cycle_lock_key()); NULL at
 *      once if another cycle holds it;
 *   2. a tide.cycles row, and the transaction-local setting tide.cycle_id
 *      that the state-machine triggers copy into tide.job_events;
 *   3. load (cycle_load.c): nodes lost marked down (R-C3), then one query
 *      per table into the engine's snapshot;
 *   4. decide: tide_decide() (src/engine, plain C);
 *   5. write: placements (cycle_place.c), then evictions (cycle_evict.c);
 *   6. record: the cycle row's counters and load/decide/write times.
 * Launchers are notified by triggers, delivered at commit: the allocations'
 * insert trigger (one NOTIFY per node that got work) and tide._evict (the
 * victims' nodes).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "cycle.h"
#include "cycle_evict.h"
#include "cycle_load.h"
#include "cycle_place.h"
#include "cycle_rows.h"

PG_FUNCTION_INFO_V1(tide_run_cycle);

static const char *const W_CYCLE =
"UPDATE tide.cycles SET finished_at = pg_catalog.clock_timestamp(),"
"       jobs_considered = $2, jobs_placed = $3,"
"       jobs_unschedulable = $4, allocations_made = $5, holds = $6,"
"       reasons_deferred = $10, jobs_evicted = $11,"
"       load_ms = $7, decide_ms = $8, write_ms = $9"
" WHERE id = $1 AND started_at = $12";	/* the partition key: one partition */

/* The one-cycle-at-a-time lock (R-C1), without waiting: false if held. */
static bool
try_cycle_lock(void)
{
	bool		isnull;
	int			ret;

	ret = SPI_execute("SELECT pg_catalog.pg_try_advisory_xact_lock(tide._cycle_lock_key())", false, 1);
	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "tide.run_cycle: advisory lock query failed: %s", SPI_result_code_string(ret));
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * The tide.cycles row, and tide.cycle_id for the triggers; returns its id
 * and its started_at (the partition key, *started).
 */
static int64
begin_cycle_row(TimestampTz *started)
{
	bool		isnull;
	int			ret;
	int64		cycle_id;
	Datum		arg;
	Oid			argtype = INT8OID;

	ret = SPI_execute("INSERT INTO tide.cycles (started_at) VALUES (pg_catalog.clock_timestamp()) RETURNING id, started_at", false, 1);
	if (ret != SPI_OK_INSERT_RETURNING || SPI_processed != 1)
		elog(ERROR, "tide.run_cycle: cannot insert the cycle row: %s", SPI_result_code_string(ret));
	cycle_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	*started = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	arg = Int64GetDatum(cycle_id);
	ret = SPI_execute_with_args("SELECT pg_catalog.set_config('tide.cycle_id', $1::text, true)",
								1, &argtype, &arg, NULL, false, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "tide.run_cycle: cannot set tide.cycle_id: %s", SPI_result_code_string(ret));
	return cycle_id;
}

/* The cycle row's counters and phase times. */
static void
record_cycle(int64 cycle_id, TimestampTz started, const TideResult *r, const CyclePlaced *placed, int jobs_evicted,
			 double load_ms, double decide_ms, double write_ms)
{
	Datum		args[12];
	Oid			types[12] = {INT8OID, INT4OID, INT4OID, INT4OID, INT4OID, INT4OID,
	FLOAT8OID, FLOAT8OID, FLOAT8OID, INT4OID, INT4OID, TIMESTAMPTZOID};
	int			ret;

	args[0] = Int64GetDatum(cycle_id);
	args[1] = Int32GetDatum((int32) r->counters.jobs_considered);
	args[2] = Int32GetDatum(placed->jobs_placed);
	args[3] = Int32GetDatum((int32) r->counters.jobs_unschedulable);
	args[4] = Int32GetDatum(placed->allocs_made);
	args[5] = Int32GetDatum((int32) r->counters.holds);
	args[6] = Float8GetDatum(load_ms);
	args[7] = Float8GetDatum(decide_ms);
	args[8] = Float8GetDatum(write_ms);
	args[9] = Int32GetDatum(placed->reasons_deferred);
	args[10] = Int32GetDatum(jobs_evicted);
	args[11] = TimestampTzGetDatum(started);
	ret = SPI_execute_with_args(W_CYCLE, 12, types, args, NULL, false, 0);
	if (ret != SPI_OK_UPDATE)
		elog(ERROR, "tide.run_cycle: cannot update the cycle row: %s", SPI_result_code_string(ret));
}

/*
 * tide.run_cycle() returns bigint: one scheduling cycle; the cycle id, or
 * NULL at once when another cycle is running (R-C1).
 */
Datum
tide_run_cycle(PG_FUNCTION_ARGS)
{
	CycleLoad	l;
	CycleTypes	types;
	CyclePlaced placed;
	MemoryContext mcxt;
	TideResult *r;
	int64		cycle_id;
	TimestampTz started;
	int			ret,
				lost,
				jobs_evicted;
	instr_time	t0;
	double		load_ms,
				decide_ms,
				write_ms;
	MemoryContext caller = CurrentMemoryContext;

	if ((ret = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "tide.run_cycle: SPI_connect failed: %s", SPI_result_code_string(ret));
	if (!try_cycle_lock())
	{
		SPI_finish();
		PG_RETURN_NULL();
	}
	cycle_id = begin_cycle_row(&started);
	cycle_types_lookup(&types);

	/* the engine's memory: one context, gone at the end of the cycle */
	mcxt = AllocSetContextCreate(caller, "tide cycle", ALLOCSET_DEFAULT_SIZES);

	INSTR_TIME_SET_CURRENT(t0);
	lost = tide_cycle_nodes_lost();	/* before the load sees the nodes */
	tide_cycle_load(&l, mcxt);
	load_ms = cycle_elapsed_ms(t0);

	INSTR_TIME_SET_CURRENT(t0);
	r = tide_decide(l.s);
	decide_ms = cycle_elapsed_ms(t0);

	INSTR_TIME_SET_CURRENT(t0);
	tide_cycle_write_placements(&l, r, cycle_id, &types, &placed);
	jobs_evicted = tide_cycle_write_evictions(&l, r, cycle_id, &types, lost);
	write_ms = cycle_elapsed_ms(t0);

	record_cycle(cycle_id, started, r, &placed, jobs_evicted, load_ms, decide_ms, write_ms);

	MemoryContextDelete(mcxt);
	SPI_finish();
	PG_RETURN_INT64(cycle_id);
}
