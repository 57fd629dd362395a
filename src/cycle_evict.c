/*
 * cycle_evict.c: the eviction writes of tide.run_cycle() (R-E1 to R-E6),
 * after the placement writes (cycle_place.c): one tide._evict() call with
 * arrays for every victim (it writes the tide.evictions rows, sets the jobs
 * evicting and their allocations releasing, and notifies the victims'
 * nodes), then the resources held for preemptors replaced.  Nodes lost
 * (R-C3) and the holds loaded are part of the load (cycle_load.c).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "cycle_evict.h"
#include "cycle_rows.h"

/* The goal: with retries left the job fails and its retry takes the retry lane (R-E5). */
static const char *const W_EVICT =
"SELECT pg_catalog.cardinality(tide._evict($1::bigint[], $2::text[],"
"         ARRAY(SELECT CASE WHEN j.attempt <= j.max_retries THEN 'fail' END"
"                 FROM unnest($1::bigint[]) WITH ORDINALITY AS u(id, o)"
"                 LEFT JOIN tide.jobs j ON j.id = u.id"
"                ORDER BY u.o),"
"         $3::bigint[]))";

static const char *const W_HOLDS_DELETE =
"DELETE FROM tide.eviction_holds h"
" WHERE h.job_id = ANY ($1::bigint[])"
"    OR NOT EXISTS (SELECT 1 FROM tide.jobs j WHERE j.id = h.job_id AND j.state = 'pending')";

static const char *const W_HOLDS_INSERT =
"INSERT INTO tide.eviction_holds (job_id, role, replica, node, resources, gpus, gpu_milli, cycle_id)"
" SELECT u.job_id, u.role, u.replica, u.node, u.resources, u.gpus, u.gpu_milli, $8"
"   FROM unnest($1::bigint[], $2::text[], $3::integer[], $4::text[], $5, $6, $7::integer[])"
"        AS u(job_id, role, replica, node, resources, gpus, gpu_milli)";

char *
tide_cycle_victim_reason(const TideSnapshot *s, const TideEviction *e)
{
	const TideJob *p = &s->jobs[e->preemptor];

	return psprintf("evicted for job %lld of queue %s (%s)", (long long) p->id,
					s->queues[p->queue].name, tide_rule_name(e->rule));
}

int
tide_cycle_write_evictions(const CycleLoad *l, const TideResult *r, int64 cycle_id,
						   const CycleTypes *types, int lost)
{
	TideSnapshot *s = l->s;
	int			evicted = 0;
	int			ret;
	bool		isnull;

	/*
	 * victims: one call with arrays (R-E5: whole jobs; NOTIFY by tide._evict).
	 * They come from the engine's result: in the rare cycle that gives a
	 * placement back (its tasks changed, cycle_place.c) a victim chosen while that
	 * placement counted may turn out unneeded; the held resources then go to
	 * the preemptor's next cycle.
	 */
	if (r->nevictions > 0)
	{
		int			n = r->nevictions;
		Datum	   *ids = palloc(sizeof(Datum) * n);
		Datum	   *reasons = palloc(sizeof(Datum) * n);
		Datum	   *preemptors = palloc(sizeof(Datum) * n);
		Datum		args[3];
		Oid			argtypes[3] = {INT8ARRAYOID, TEXTARRAYOID, INT8ARRAYOID};

		for (int i = 0; i < n; i++)
		{
			ids[i] = Int64GetDatum(r->evictions[i].job_id);
			reasons[i] = CStringGetTextDatum(tide_cycle_victim_reason(s, &r->evictions[i]));
			preemptors[i] = Int64GetDatum(s->jobs[r->evictions[i].preemptor].id);
		}
		args[0] = PointerGetDatum(tide_array_of(ids, NULL, n, INT8OID));
		args[1] = PointerGetDatum(tide_array_of(reasons, NULL, n, TEXTOID));
		args[2] = PointerGetDatum(tide_array_of(preemptors, NULL, n, INT8OID));
		ret = SPI_execute_with_args(W_EVICT, 3, argtypes, args, NULL, false, 1);
		if (ret != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "tide.run_cycle: writing evictions failed: %s", SPI_result_code_string(ret));
		evicted = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		if (isnull)
			evicted = 0;
	}

	/* holds: drop those of placed, gone, lapsed or re-evicting jobs; add the new */
	{
		int			nd = 0;
		Datum	   *drop = palloc(sizeof(Datum) * (s->njobs + 1));
		Datum		arg;
		Oid			argtype = INT8ARRAYOID;

		for (int j = 0; j < s->njobs; j++)
			if (r->outcomes[j].evict_state == TIDE_EV_LAPSED ||
				r->outcomes[j].evict_state == TIDE_EV_EVICTED)
				drop[nd++] = Int64GetDatum(s->jobs[j].id);
		arg = PointerGetDatum(tide_array_of(drop, NULL, nd, INT8OID));
		ret = SPI_execute_with_args(W_HOLDS_DELETE, 1, &argtype, &arg, NULL, false, 0);
		if (ret != SPI_OK_DELETE)
			elog(ERROR, "tide.run_cycle: dropping eviction holds failed: %s", SPI_result_code_string(ret));
	}
	if (r->nnew_claims > 0)
	{
		PlacementRows rows;
		Datum		args[PLACEMENT_ROWS_NARGS];
		Oid			argtypes[PLACEMENT_ROWS_NARGS];

		placement_rows_init(&rows, r->nnew_claims);
		for (int i = 0; i < r->nnew_claims; i++)
		{
			const TideClaim *cl = &r->new_claims[i];
			int			ri = l->role_base[cl->job] + cl->role;

			placement_rows_add(&rows, s->jobs[cl->job].id, CStringGetTextDatum(l->role_name[ri]),
							   cl->replica, CStringGetTextDatum(s->nodes[cl->node].name),
							   l->role_request[ri], cl->gpus, cl->gpu_milli);
		}
		placement_rows_args(&rows, types, cycle_id, args, argtypes);
		ret = SPI_execute_with_args(W_HOLDS_INSERT, PLACEMENT_ROWS_NARGS, argtypes, args, NULL, false, 0);
		if (ret != SPI_OK_INSERT)
			elog(ERROR, "tide.run_cycle: writing eviction holds failed: %s", SPI_result_code_string(ret));
	}

	return evicted + lost;
}
