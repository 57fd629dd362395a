/*
 * cycle_shapes.c: the typical workload of frag queues (R-L5): the request
 * shapes with weights for which frag keeps room (TideSnapshot.workload,
 * frag.c).
 *
 * They are an administrator's (tide.workload_shapes, per resource group or
 * for all), else the recent submissions' (tide.recent_shapes, a rollup of
 * the last tide.frag_shapes_jobs jobs remade by the cycle at most every
 * tide.frag_shapes_refresh seconds, 28_workload_shapes.sql), else none: the
 * engine then uses the pending jobs' requests.  The submit path does no
 * work for them; a loading cycle reads at most SHAPES_MAX rows, and only
 * when one of its queues places by frag.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "cycle_labels.h"
#include "cycle_recv.h"
#include "cycle_shapes.h"
#include "cycle_timer.h"
#include "resvec.h"
#include "settings.h"

/* More than frag keeps (its FRAG_MAX_SHAPES): it chooses the heaviest itself. */
#define SHAPES_MAX	256

/*
 * The shapes that apply to $1 (NULL: every group), heaviest first: the
 * administrator's, and the recent ones ($2) of the groups it sets none for.
 * Equal shapes (of several groups) are one, their weights summed.
 */
static const char *const Q_SHAPES =
"WITH x AS ("
"  SELECT w.request, w.gpu_type, w.node_selector, w.weight FROM tide.workload_shapes w"
"   WHERE $1::text IS NULL OR w.resource_group IS NULL OR w.resource_group = $1"
"  UNION ALL"
"  SELECT r.request, r.gpu_type, r.node_selector, r.weight FROM tide.recent_shapes r"
"   WHERE $2 AND ($1::text IS NULL OR r.resource_group = $1)"
"     AND NOT EXISTS (SELECT 1 FROM tide.workload_shapes w"
"                      WHERE w.resource_group IS NULL OR w.resource_group = r.resource_group))"
"SELECT x.request, x.gpu_type, x.node_selector, pg_catalog.sum(x.weight)"
"  FROM x GROUP BY x.request, x.gpu_type, x.node_selector"
" ORDER BY pg_catalog.sum(x.weight) * coalesce(tide.get(x.request, 'gpu'), 0) DESC,"
"          x.request, x.gpu_type COLLATE \"C\", x.node_selector"
" LIMIT " CppAsString2(SHAPES_MAX);
#define Anum_shapes_request			1
#define Anum_shapes_gpu_type		2
#define Anum_shapes_node_selector	3
#define Anum_shapes_weight			4

void
tide_cycle_shapes_refresh(void)
{
	Oid			types[2] = {INTERVALOID, INT4OID};
	Datum		args[2];
	Interval   *iv;
	int			ret;
	instr_time	t0;
	double		c0;

	if (tide_frag_shapes_refresh < 0 || tide_frag_shapes_jobs <= 0)
		return;
	iv = palloc0(sizeof(Interval));
	iv->time = (int64) tide_frag_shapes_refresh * USECS_PER_SEC;
	args[0] = IntervalPGetDatum(iv);
	args[1] = Int32GetDatum(tide_frag_shapes_jobs);
	INSTR_TIME_SET_CURRENT(t0);
	c0 = cycle_cpu_ms();
	ret = SPI_execute_with_args("SELECT tide._refresh_workload_shapes_due($1, $2)",
								2, types, args, NULL, false, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "tide.run_cycle: refreshing tide.recent_shapes failed: %s",
			 SPI_result_code_string(ret));
	elog(DEBUG1, "tide.run_cycle: shapes refresh checked in %.1f ms (cpu %.1f)",
		 cycle_elapsed_ms(t0), cycle_cpu_ms() - c0);
}

/*
 * One shape into ws; false when no node of the snapshot could ever hold it
 * (a resource or card type none offers): it would weigh on every node
 * alike and change no choice.
 */
static bool
load_shape(TideSnapshot *s, MemoryContext mcxt, HeapTuple tup, TupleDesc td, TideWorkShape *ws)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, td, Anum_shapes_request, &isnull);
	ResVec	   *rv = DatumGetResVecP(d);
	int64	   *req = MemoryContextAllocZero(mcxt, sizeof(int64) * (s->nres + 1));
	char	   *gt;

	for (int k = 0; k < resvec_count(rv); k++)
	{
		int			r = tide_res_lookup(s, resvec_name(rv, k));

		if (r < 0)
			return false;
		req[r] = resvec_milli(rv, k);
	}
	ws->request = req;
	gt = SPI_getvalue(tup, td, Anum_shapes_gpu_type);
	ws->gpu_type = gt ? tide_res_lookup(s, gt) : -1;
	if (gt && ws->gpu_type < 0)
		return false;
	d = SPI_getbinval(tup, td, Anum_shapes_node_selector, &isnull);
	ws->selector = isnull ? NULL : cycle_label_ids(s, mcxt, d, &ws->nselector);
	if (ws->selector == NULL)
		ws->nselector = 0;
	ws->weight = DatumGetFloat8(SPI_getbinval(tup, td, Anum_shapes_weight, &isnull));
	return !isnull && ws->weight > 0;
}

void
tide_cycle_shapes_load(TideSnapshot *s, MemoryContext mcxt, const char *group)
{
	Oid			types[2] = {TEXTOID, BOOLOID};
	Datum		args[2] = {group ? CStringGetTextDatum(group) : (Datum) 0,
	BoolGetDatum(tide_frag_shapes_jobs > 0)};
	bool		any = false;
	TideWorkShape *ws;
	int			ret;
	int			n = 0;

	s->nworkload = 0;
	s->workload = NULL;
	for (int q = 0; q < s->nqueues && !any; q++)
		any = s->queues[q].placement == TIDE_PLACE_FRAG;
	if (!any)
		return;
	/* read only: in the snapshot of the rest of the load */
	ret = SPI_execute_plan(cycle_kept_plan(Q_SHAPES, 2, types, 0), args, group ? NULL : "n ", true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "tide.run_cycle: query failed (%s): %s", SPI_result_code_string(ret), Q_SHAPES);
	ws = MemoryContextAllocZero(mcxt, sizeof(TideWorkShape) * (SPI_processed + 1));
	for (uint64 i = 0; i < SPI_processed; i++)
		if (load_shape(s, mcxt, SPI_tuptable->vals[i], SPI_tuptable->tupdesc, &ws[n]))
			n++;
	s->workload = ws;
	s->nworkload = n;
}
