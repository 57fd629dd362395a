/*
 * cycle_lost.c: nodes whose launcher went silent (R-C3), marked down by the
 * cycle before it loads, or listed by tide.dry_run() (see cycle_lost.h).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/timestamp.h"

#include "cycle_lost.h"
#include "settings.h"

/* R-C3: the nodes silent for longer than $1 (tide.node_timeout), and why. */
#define LOST_NODES \
"SELECT n.name, n.reason FROM tide._nodes_silent($1::pg_catalog.interval) n"

static const char *const Q_LOST = LOST_NODES " ORDER BY n.name COLLATE \"C\"";
#define Anum_lost_name				1
#define Anum_lost_reason			2

/* The same nodes marked down; its one column: the jobs hit. */
static const char *const W_LOST =
"SELECT pg_catalog.cardinality(tide._nodes_lost(x.names, x.reason, true))"
"  FROM (SELECT pg_catalog.array_agg(l.name ORDER BY l.name) AS names, pg_catalog.min(l.reason) AS reason"
"          FROM (" LOST_NODES ") l) x"
" WHERE x.names IS NOT NULL";

/* Run a lost-node statement with tide.node_timeout as $1. */
static int
run_lost(const char *sql)
{
	Datum		arg;
	Oid			argtype = INTERVALOID;
	Interval   *iv;

	iv = palloc0(sizeof(Interval));
	iv->time = (int64) tide_node_timeout * USECS_PER_SEC;
	arg = IntervalPGetDatum(iv);
	return SPI_execute_with_args(sql, 1, &argtype, &arg, NULL, false, 0);
}

int
tide_cycle_nodes_lost(void)
{
	int			ret;
	bool		isnull;
	Datum		d;

	if (tide_node_timeout <= 0)
		return 0;
	ret = run_lost(W_LOST);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "tide.run_cycle: marking lost nodes failed: %s", SPI_result_code_string(ret));
	if (SPI_processed != 1)
		return 0;
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? 0 : DatumGetInt32(d);
}

int
tide_cycle_nodes_to_lose(char ***names, char ***reasons)
{
	int			ret;
	int			n;

	*names = *reasons = NULL;
	if (tide_node_timeout <= 0)
		return 0;
	ret = run_lost(Q_LOST);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "tide.dry_run: listing lost nodes failed: %s", SPI_result_code_string(ret));
	n = (int) SPI_processed;
	*names = palloc(sizeof(char *) * (n + 1));
	*reasons = palloc(sizeof(char *) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		(*names)[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, Anum_lost_name);
		(*reasons)[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, Anum_lost_reason);
	}
	return n;
}
