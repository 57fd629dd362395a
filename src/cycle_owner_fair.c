/*
 * cycle_owner_fair.c: the owners' decayed usage within queues with
 * owner_fair_share (R-O7) between cycles, in tide.owner_fair_usage
 * (extension/65b_owner_fair.sql).
 *
 * As the queues' averages (cycle_fair.c): the load gives the snapshot each
 * (queue, owner) average kept with the time of its update; tide_decide()
 * decays them up to the cycle's time with the owners' usage it loaded
 * (src/engine/owner_order.c); the cycle writes them back, one upsert, and
 * deletes in one statement the rows of owners that hold nothing and whose
 * average is below 0.001 in every resource (so the table keeps the owners
 * seen within about ten half-lives).  Nothing is read or written while
 * tide.fair_share_half_life is 0 (the share is then the usage now);
 * tide.dry_run() loads them too and writes nothing.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "cycle_fair.h"
#include "cycle_owner_fair.h"
#include "cycle_rows.h"

/* one pair's resources one after the other, as tide_owner_fair_keep wants */
static const char *const Q_OWNER_FAIR =
"SELECT f.queue, f.owner, d.key, d.value::float8, f.updated_at"
"  FROM tide.owner_fair_usage f JOIN tide.queues q ON q.name = f.queue AND q.owner_fair_share,"
"       pg_catalog.jsonb_each_text(f.decayed) d"
" WHERE $1::text[] IS NULL OR f.queue = ANY ($1::text[])"
" ORDER BY f.queue, f.owner";
#define Anum_owner_fair_queue		1
#define Anum_owner_fair_owner		2
#define Anum_owner_fair_resource	3
#define Anum_owner_fair_decayed		4
#define Anum_owner_fair_updated_at	5

static const char *const W_OWNER_FAIR =
"INSERT INTO tide.owner_fair_usage AS f (queue, owner, decayed, updated_at)"
" SELECT u.queue, u.owner, u.decayed::jsonb, $4"
"   FROM unnest($1::text[], $2::text[], $3::text[]) AS u(queue, owner, decayed)"
" ON CONFLICT (queue, owner) DO UPDATE SET decayed = excluded.decayed, updated_at = excluded.updated_at";

static const char *const D_OWNER_FAIR =
"DELETE FROM tide.owner_fair_usage f USING unnest($1::text[], $2::text[]) AS u(queue, owner)"
" WHERE f.queue = u.queue AND f.owner = u.owner";

/* an average below this in every resource (milli-units: 0.001) is forgotten */
#define OWNER_FAIR_NEGLIGIBLE 1.0

/*
 * The kept averages of the owners of the snapshot's queues with
 * owner_fair, after the queues' (s->half_life set) and before the owner
 * names are handed to the snapshot: owners met only here get an id too.
 */
void
tide_cycle_owner_fair_load(Loader *ld)
{
	TideSnapshot *s = ld->s;
	Oid			argtype = TEXTARRAYOID;
	Datum		group = ld->group_queues;
	bool		any = false;
	int			ret;

	for (int q = 0; q < s->nqueues && !any; q++)
		any = s->queues[q].owner_fair;
	if (s->half_life <= 0 || !any)
		return;
	ret = SPI_execute_with_args(Q_OWNER_FAIR, 1, &argtype, &group, group ? NULL : "n", true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "tide.run_cycle: reading tide.owner_fair_usage failed: %s", SPI_result_code_string(ret));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		char	   *name = SPI_getvalue(row, desc, Anum_owner_fair_queue);
		char	   *owner = SPI_getvalue(row, desc, Anum_owner_fair_owner);
		char	   *res = SPI_getvalue(row, desc, Anum_owner_fair_resource);
		int			q = name ? loader_name_index_len(&ld->queue_names, name, (int) strlen(name)) : -1;
		int			r = res ? tide_res_lookup(s, res) : -1;
		int64		at;
		double		v;
		Datum		d;

		if (q < 0 || !owner || r < 0)
			continue;
		d = SPI_getbinval(row, desc, Anum_owner_fair_updated_at, &isnull);
		at = isnull ? TIDE_TIME_UNKNOWN : DatumGetTimestampTz(d);
		d = SPI_getbinval(row, desc, Anum_owner_fair_decayed, &isnull);
		v = isnull ? 0 : DatumGetFloat8(d);
		tide_owner_fair_keep(s, q, loader_owner_id(ld, owner, (int) strlen(owner)), r,
							 isfinite(v) ? v * TIDE_MILLI : 0, at);
	}
}

/*
 * Writes the averages tide_decide() brought up to s->now (on the
 * resources the queue's quota names, or every resource above zero in a
 * queue without one) and deletes the negligible ones.  Nothing while the
 * half-life is 0.
 */
void
tide_cycle_owner_fair_write(const TideSnapshot *s)
{
	int			nrows = tide_owner_fair_count(s);
	Datum	   *queues,
			   *owners,
			   *values,
			   *dqueues,
			   *downers;
	int			n = 0,
				nd = 0;
	int			ret;

	if (s->half_life <= 0 || nrows == 0)
		return;
	queues = palloc(sizeof(Datum) * nrows);
	owners = palloc(sizeof(Datum) * nrows);
	values = palloc(sizeof(Datum) * nrows);
	dqueues = palloc(sizeof(Datum) * nrows);
	downers = palloc(sizeof(Datum) * nrows);
	for (int i = 0; i < nrows; i++)
	{
		const TideOwnerFair *row = tide_owner_fair_row(s, i);
		const TideQueue *q = &s->queues[row->queue];

		if (row->owner < 0 || row->owner >= s->nowners)
			continue;
		if (tide_owner_fair_negligible(s, row, OWNER_FAIR_NEGLIGIBLE))
		{
			dqueues[nd] = CStringGetTextDatum(q->name);
			downers[nd++] = CStringGetTextDatum(s->owner_names[row->owner]);
			continue;
		}
		queues[n] = CStringGetTextDatum(q->name);
		owners[n] = CStringGetTextDatum(s->owner_names[row->owner]);
		values[n++] = tide_cycle_fair_json(s, q->has_quota ? q->quota : NULL, row->decayed);
	}
	if (n > 0)
	{
		Datum		args[4];
		Oid			types[4] = {TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID, TIMESTAMPTZOID};

		args[0] = PointerGetDatum(tide_array_of(queues, NULL, n, TEXTOID));
		args[1] = PointerGetDatum(tide_array_of(owners, NULL, n, TEXTOID));
		args[2] = PointerGetDatum(tide_array_of(values, NULL, n, TEXTOID));
		args[3] = TimestampTzGetDatum(s->now);
		ret = SPI_execute_with_args(W_OWNER_FAIR, 4, types, args, NULL, false, 0);
		if (ret != SPI_OK_INSERT)
			elog(ERROR, "tide.run_cycle: cannot write tide.owner_fair_usage: %s", SPI_result_code_string(ret));
	}
	if (nd > 0)
	{
		Datum		args[2];
		Oid			types[2] = {TEXTARRAYOID, TEXTARRAYOID};

		args[0] = PointerGetDatum(tide_array_of(dqueues, NULL, nd, TEXTOID));
		args[1] = PointerGetDatum(tide_array_of(downers, NULL, nd, TEXTOID));
		ret = SPI_execute_with_args(D_OWNER_FAIR, 2, types, args, NULL, false, 0);
		if (ret != SPI_OK_DELETE)
			elog(ERROR, "tide.run_cycle: cannot delete from tide.owner_fair_usage: %s", SPI_result_code_string(ret));
	}
}
