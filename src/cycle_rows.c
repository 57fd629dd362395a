/*
 * cycle_rows.c: the arrays tide.run_cycle() writes with (see cycle_rows.h).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "parser/parse_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "cycle_rows.h"
#include "gpumask.h"
#include "resvec.h"

Datum
cycle_vec_resvec(const TideSnapshot *s, const int64 *v)
{
	const char *names[TIDE_MAX_RES];
	int64		milli[TIDE_MAX_RES];
	int			n = 0;

	for (int r = 0; r < s->nres; r++)
	{
		if (v[r] <= 0)
			continue;
		names[n] = s->res_names[r];
		milli[n] = v[r];
		n++;
	}
	return ResVecPGetDatum(resvec_from_pairs(n, names, milli));
}

ArrayType *
tide_array_of(Datum *elems, bool *nulls, int n, Oid elemtype)
{
	int16		typlen;
	bool		typbyval;
	char		typalign;
	int			dims[1];
	int			lbs[1];

	if (n == 0)
		return construct_empty_array(elemtype);
	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	dims[0] = n;
	lbs[0] = 1;
	return construct_md_array(elems, nulls, 1, dims, lbs, elemtype, typlen, typbyval, typalign);
}

void
placement_rows_init(PlacementRows *rows, int capacity)
{
	int			cap = capacity + 1;

	rows->n = 0;
	rows->job_id = palloc(sizeof(Datum) * cap);
	rows->role = palloc(sizeof(Datum) * cap);
	rows->replica = palloc(sizeof(Datum) * cap);
	rows->node = palloc(sizeof(Datum) * cap);
	rows->resources = palloc(sizeof(Datum) * cap);
	rows->gpus = palloc(sizeof(Datum) * cap);
	rows->gpu_milli = palloc(sizeof(Datum) * cap);
	rows->milli_null = palloc(sizeof(bool) * cap);
}

/* One more row; the caller sized the rows for it (placement_rows_init). */
void
placement_rows_add(PlacementRows *rows, int64 job_id, Datum role, int replica,
				   Datum node, Datum resources, uint64 gpus, int gpu_milli)
{
	int			k = rows->n++;

	rows->job_id[k] = Int64GetDatum(job_id);
	rows->role[k] = role;
	rows->replica[k] = Int32GetDatum(replica);
	rows->node[k] = node;
	rows->resources[k] = resources;
	rows->gpus[k] = GpuMaskGetDatum(gpus);
	rows->gpu_milli[k] = Int32GetDatum(gpu_milli);
	rows->milli_null[k] = gpu_milli == 0;
}

void
placement_rows_args(const PlacementRows *rows, const CycleTypes *types, int64 cycle_id,
					Datum *args, Oid *argtypes)
{
	int			n = rows->n;

	args[0] = PointerGetDatum(tide_array_of(rows->job_id, NULL, n, INT8OID));
	args[1] = PointerGetDatum(tide_array_of(rows->role, NULL, n, TEXTOID));
	args[2] = PointerGetDatum(tide_array_of(rows->replica, NULL, n, INT4OID));
	args[3] = PointerGetDatum(tide_array_of(rows->node, NULL, n, TEXTOID));
	args[4] = PointerGetDatum(tide_array_of(rows->resources, NULL, n, types->resvec));
	args[5] = PointerGetDatum(tide_array_of(rows->gpus, NULL, n, types->gpumask));
	args[6] = PointerGetDatum(tide_array_of(rows->gpu_milli, rows->milli_null, n, INT4OID));
	args[7] = Int64GetDatum(cycle_id);
	argtypes[0] = INT8ARRAYOID;
	argtypes[1] = TEXTARRAYOID;
	argtypes[2] = INT4ARRAYOID;
	argtypes[3] = TEXTARRAYOID;
	argtypes[4] = types->resvec_array;
	argtypes[5] = types->gpumask_array;
	argtypes[6] = INT4ARRAYOID;
	argtypes[7] = INT8OID;
}

/*
 * OID of a type by name (the extension's types have no fixed OIDs), from
 * the catalog caches: no query.
 */
static Oid
type_oid(const char *name)
{
	Oid			oid;
	int32		typmod;

	parseTypeString(name, &oid, &typmod, true);
	if (!OidIsValid(oid))
		elog(ERROR, "tide.run_cycle: type %s does not exist", name);
	return oid;
}

void
cycle_types_lookup(CycleTypes *types)
{
	types->resvec = type_oid("tide.resvec");
	types->gpumask = type_oid("tide.gpumask");
	types->resvec_array = type_oid("tide.resvec[]");
	types->gpumask_array = type_oid("tide.gpumask[]");
}
