/*
 * node_guard.c: the R-C4 reads of the triggers that guard a node's
 * capacity, in the latest snapshot.
 *
 * A writer of a node's allocations or capacity locks the node row first;
 * whoever held it before has committed (or rolled back) by then.  In READ
 * COMMITTED the trigger's next statement would see that; in REPEATABLE
 * READ or SERIALIZABLE its transaction snapshot may be older than that
 * commit (locking a row another transaction only locked raises no
 * serialization failure), so these reads take the latest snapshot
 * instead: with the lock held, nothing they do not see can be added.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/snapmgr.h"

PG_FUNCTION_INFO_V1(tide_node_usage_now);
PG_FUNCTION_INFO_V1(tide_overcommitted_now);

/*
 * The first row of sql (one argument) in the latest snapshot, as the
 * calling function's composite result; NULL when there is none.
 */
static Datum
latest_row(FunctionCallInfo fcinfo, const char *sql, Oid argtype)
{
	TupleDesc	tupdesc;
	Datum		arg = PG_GETARG_DATUM(0);
	SPIPlanPtr	plan;
	HeapTupleHeader result = NULL;
	int			ret;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if ((ret = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(ret));
	plan = SPI_prepare(sql, 1, &argtype);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	ret = SPI_execute_snapshot(plan, &arg, NULL, GetLatestSnapshot(), InvalidSnapshot, true, false, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_snapshot failed: %s", SPI_result_code_string(ret));
	if (SPI_processed > 0)
		result = SPI_returntuple(SPI_tuptable->vals[0], BlessTupleDesc(tupdesc));
	SPI_finish();
	if (result == NULL)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(PointerGetDatum(result));
}

/*
 * tide._node_usage_now(node text, OUT live bigint, OUT used tide.resvec,
 * OUT busy tide.gpumask): what the node's live allocations hold.
 */
Datum
tide_node_usage_now(PG_FUNCTION_ARGS)
{
	return latest_row(fcinfo,
					  "SELECT pg_catalog.count(*), tide.sum(a.resources), tide.union(a.gpus)"
					  "  FROM tide.allocations a WHERE a.node = $1 AND a.state <> 'released'",
					  TEXTOID);
}

/*
 * tide._overcommitted_now(nodes text[], OUT node text, OUT problem text):
 * the first node (by name) that breaks R-C4, and how (tide._overcommitted).
 */
Datum
tide_overcommitted_now(PG_FUNCTION_ARGS)
{
	return latest_row(fcinfo,
					  "SELECT o.node, o.problem FROM tide._overcommitted($1, '{}', '{}', '{}', '{}') o"
					  " ORDER BY 1 LIMIT 1",
					  TEXTARRAYOID);
}
