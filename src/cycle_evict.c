/*
 * cycle_evict.c: the eviction half of tide.run_cycle() (R-E1 to R-E6, R-C3),
 * beside the SPI adapter in cycle.c.
 *
 *   before the load: nodes whose heartbeat is older than tide.node_timeout
 *     are marked down with tide._nodes_lost (their allocations released as
 *     lost, their jobs retried or handled per on_evict);
 *   after the load: the resources held for preemptors (tide.eviction_holds
 *     of pending jobs) go into the snapshot as claims, and evictions are
 *     switched on;
 *   after the writes of cycle.c: one tide._evict() call with arrays for
 *     every victim (it writes the tide.evictions rows, sets the jobs
 *     evicting and their allocations releasing, and notifies the victims'
 *     nodes), the held resources replaced, and jobs_evicted counted.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "cycle_evict.h"
#include "cycle_rows.h"
#include "gpumask.h"
#include "resvec.h"

/* tide.node_timeout (seconds; 0 = never), defined in pg_tide.c */
int			tide_node_timeout = 30;

static const char *const W_LOST =
"SELECT pg_catalog.cardinality(tide._nodes_lost(x.names,"
"         pg_catalog.format('no heartbeat for more than %s', $1::pg_catalog.interval)))"
"  FROM (SELECT pg_catalog.array_agg(n.name ORDER BY n.name) AS names"
"          FROM tide.nodes n"
"         WHERE n.state <> 'down' AND n.heartbeat_at < pg_catalog.now() - $1::pg_catalog.interval) x"
" WHERE x.names IS NOT NULL";

static const char *const Q_CLAIMS =
"SELECT h.job_id, h.node, h.resources, h.gpus, h.gpu_milli,"
"       EXISTS (SELECT 1 FROM tide.evictions e"
"                WHERE e.preemptor_job_id = h.job_id AND e.cycle_id = h.cycle_id"
"                  AND e.acked_at IS NULL)"
"  FROM tide.eviction_holds h JOIN tide.jobs j ON j.id = h.job_id"
" WHERE j.state = 'pending' AND NOT j.unschedulable AND NOT j.cancel_requested"
" ORDER BY h.job_id, h.role COLLATE \"C\", h.replica";

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

/* R-C3: mark down the nodes whose launcher went silent; returns the jobs hit. */
int
tide_cycle_nodes_lost(void)
{
	Datum		arg;
	Oid			argtype = INTERVALOID;
	Interval   *iv;
	int			ret;

	bool		isnull;
	Datum		d;

	if (tide_node_timeout <= 0)
		return 0;
	iv = palloc0(sizeof(Interval));
	iv->time = (int64) tide_node_timeout * USECS_PER_SEC;
	arg = IntervalPGetDatum(iv);
	ret = SPI_execute_with_args(W_LOST, 1, &argtype, &arg, NULL, false, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "tide.run_cycle: marking lost nodes failed: %s", SPI_result_code_string(ret));
	if (SPI_processed != 1)
		return 0;
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? 0 : DatumGetInt32(d);
}

/* Index of a node by name: snapshot nodes are sorted by name (C collation). */
static int
node_index(const TideSnapshot *s, const char *name)
{
	int			lo = 0,
				hi = s->nnodes - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;
		int			cmp = strcmp(s->nodes[mid].name, name);

		if (cmp == 0)
			return mid;
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/* Switch evictions on and give the snapshot what is held for preemptors (R-E6). */
void
tide_cycle_load_claims(TideSnapshot *s)
{
	SPITupleTable *t;
	int			ret;
	uint64		n;

	s->evict = true;
	ret = SPI_execute(Q_CLAIMS, false, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "tide.run_cycle: loading eviction holds failed: %s", SPI_result_code_string(ret));
	t = SPI_tuptable;
	n = SPI_processed;
	s->claims = tide_alloc(s, sizeof(TideClaim) * (n + 1));
	s->nclaims = 0;
	for (uint64 i = 0; i < n; i++)
	{
		TideClaim  *cl = &s->claims[s->nclaims];
		bool		isnull;
		Datum		d;
		ResVec	   *rv;
		int64	   *v = tide_vec_new(s);
		char	   *node = TextDatumGetCString(SPI_getbinval(t->vals[i], t->tupdesc, 2, &isnull));

		cl->job_id = DatumGetInt64(SPI_getbinval(t->vals[i], t->tupdesc, 1, &isnull));
		cl->node = node_index(s, node);
		if (cl->node < 0)
			continue;
		rv = DatumGetResVecP(SPI_getbinval(t->vals[i], t->tupdesc, 3, &isnull));
		for (int k = 0; k < resvec_count(rv); k++)
		{
			int			r = tide_res_lookup(s, resvec_name(rv, k));

			if (r >= 0)
				v[r] = resvec_milli(rv, k);
		}
		cl->res = v;
		cl->gpus = DatumGetGpuMask(SPI_getbinval(t->vals[i], t->tupdesc, 4, &isnull));
		d = SPI_getbinval(t->vals[i], t->tupdesc, 5, &isnull);
		cl->gpu_milli = isnull ? 0 : DatumGetInt32(d);
		cl->waiting = DatumGetBool(SPI_getbinval(t->vals[i], t->tupdesc, 6, &isnull));
		s->nclaims++;
	}
}

/* The victim's reason: which rule, for which job (tide.evictions.reason). */
static char *
victim_reason(const TideSnapshot *s, const TideEviction *e)
{
	const TideJob *p = &s->jobs[e->preemptor];

	return psprintf("evicted for job %lld of queue %s (%s)", (long long) p->id,
					s->queues[p->queue].name, tide_rule_name(e->rule));
}

/*
 * Write the eviction decisions; returns the number of jobs evicted, the
 * lost ones (tide_cycle_nodes_lost) included.  role_request: the resvec
 * datum of each snapshot role (cycle.c's load).
 */
int
tide_cycle_write_evictions(TideSnapshot *s, const TideResult *r, int64 cycle_id,
						   const Datum *role_request, const CycleTypes *types, int lost)
{
	int			evicted = 0;
	int			ret;
	bool		isnull;

	/*
	 * victims: one call with arrays (R-E5: whole jobs; NOTIFY by tide._evict).
	 * They come from the engine's result: in the rare cycle that gives a
	 * placement back (its tasks changed, cycle.c) a victim chosen while that
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
			reasons[i] = CStringGetTextDatum(victim_reason(s, &r->evictions[i]));
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
			int			k = -1;

			/* the claim's vector is its role's request: find the role */
			for (int x = 0; x < s->nroles && k < 0; x++)
				if (s->roles[x].request == cl->res)
					k = x;
			if (k < 0)
				elog(ERROR, "tide.run_cycle: eviction hold of job %lld has no role", (long long) cl->job_id);
			placement_rows_add(&rows, cl->job_id, CStringGetTextDatum(s->roles[k].name), cl->replica,
							   CStringGetTextDatum(s->nodes[cl->node].name), role_request[k],
							   cl->gpus, cl->gpu_milli);
		}
		placement_rows_args(&rows, types, cycle_id, args, argtypes);
		ret = SPI_execute_with_args(W_HOLDS_INSERT, PLACEMENT_ROWS_NARGS, argtypes, args, NULL, false, 0);
		if (ret != SPI_OK_INSERT)
			elog(ERROR, "tide.run_cycle: writing eviction holds failed: %s", SPI_result_code_string(ret));
	}

	return evicted + lost;
}
