/*
 * cycle_fair.c: the decayed usage of fair share over time (R-O6) between
 * cycles, in tide.queue_fair_usage (extension/65_fair_share.sql).
 *
 * The load gives the snapshot each queue's kept average and the time of
 * its update; tide_decide() decays them up to the cycle's time with the
 * usage it loaded (src/engine/share.c); the cycle writes them back, one
 * upsert of every queue with a quota (O(queues), HOT updates: no indexed
 * column changes).  Nothing is recomputed from history, and nothing is
 * read or written while tide.fair_share_half_life is 0 (the share is then
 * the usage now; the rows wait as they are, and a later half-life decays
 * them over the whole time since).  tide.dry_run() loads them too and
 * writes nothing.
 *
 * The averages are kept in the units of the quota (gpu 1.5, not 1500
 * milli) as float8 in jsonb: at a week's half-life a second moves them by
 * about 1e-6 of the usage, which milli-units would round away.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/timestamp.h"

#include "cycle_fair.h"
#include "cycle_recv.h"
#include "cycle_rows.h"
#include "settings.h"

static const char *const Q_FAIR =
"SELECT f.queue, d.key, d.value::float8, f.updated_at"
"  FROM tide.queue_fair_usage f, pg_catalog.jsonb_each_text(f.decayed) d"
" WHERE $1::text[] IS NULL OR f.queue = ANY ($1::text[])";
#define Anum_fair_queue			1
#define Anum_fair_resource		2
#define Anum_fair_decayed		3
#define Anum_fair_updated_at	4

static const char *const W_FAIR =
"INSERT INTO tide.queue_fair_usage AS f (queue, decayed, updated_at)"
" SELECT u.queue, u.decayed::jsonb, $3 FROM unnest($1::text[], $2::text[]) AS u(queue, decayed)"
" ON CONFLICT (queue) DO UPDATE SET decayed = excluded.decayed, updated_at = excluded.updated_at";

/*
 * The kept averages of the snapshot's queues, and the half-life, from the
 * setting.  names: the snapshot's queue names (the load's map); group:
 * the group's queue names as a text[] datum, or 0 for every queue.  A queue without a row starts from zero now; a resource
 * the snapshot does not know (no quota names it any more) is left out.
 */
void
tide_cycle_fair_load(TideSnapshot *s, const NameMap *names, Datum group)
{
	Oid			argtype = TEXTARRAYOID;
	int			ret;

	s->half_life = (int64) tide_fair_share_half_life * USECS_PER_SEC;
	if (s->half_life <= 0)
		return;
	ret = SPI_execute_plan(cycle_kept_plan(Q_FAIR, 1, &argtype, 0), &group, group ? NULL : "n", true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "tide.run_cycle: reading tide.queue_fair_usage failed: %s", SPI_result_code_string(ret));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		char	   *name = SPI_getvalue(row, desc, Anum_fair_queue);
		char	   *res = SPI_getvalue(row, desc, Anum_fair_resource);
		int			q = name ? loader_name_index_len(names, name, (int) strlen(name)) : -1;
		int			r = res ? tide_res_lookup(s, res) : -1;
		Datum		d;

		if (q < 0)
			continue;
		d = SPI_getbinval(row, desc, Anum_fair_updated_at, &isnull);
		if (!isnull)
			s->queues[q].decayed_at = DatumGetTimestampTz(d);
		d = SPI_getbinval(row, desc, Anum_fair_decayed, &isnull);
		if (r >= 0 && !isnull && isfinite(DatumGetFloat8(d)) && DatumGetFloat8(d) > 0)
			s->queues[q].decayed[r] = DatumGetFloat8(d) * TIDE_MILLI;
	}
}

/*
 * An average as the jsonb text kept ({"gpu": 1.5}, units of the quota):
 * the resources quota names, or with quota NULL those above zero.
 */
Datum
tide_cycle_fair_json(const TideSnapshot *s, const int64 *quota, const double *decayed)
{
	StringInfoData buf;
	bool		first = true;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	for (int r = 0; r < s->nres; r++)
	{
		if (quota ? quota[r] == TIDE_UNLIMITED : !(decayed[r] > 0))
			continue;
		if (!first)
			appendStringInfoString(&buf, ", ");
		first = false;
		escape_json(&buf, s->res_names[r]);
		appendStringInfo(&buf, ": %.17g", decayed[r] / TIDE_MILLI);
	}
	appendStringInfoChar(&buf, '}');
	return CStringGetTextDatum(buf.data);
}

/*
 * Writes the averages tide_decide() brought up to s->now, for every queue
 * with a quota, on the resources its quota names (the others order
 * nothing).  Nothing while the half-life is 0.
 */
void
tide_cycle_fair_write(const TideSnapshot *s)
{
	Datum	   *names,
			   *values;
	int			n = 0;
	Datum		args[3];
	Oid			types[3] = {TEXTARRAYOID, TEXTARRAYOID, TIMESTAMPTZOID};
	int			ret;

	if (s->half_life <= 0 || s->nqueues == 0)
		return;
	names = palloc(sizeof(Datum) * s->nqueues);
	values = palloc(sizeof(Datum) * s->nqueues);
	for (int i = 0; i < s->nqueues; i++)
	{
		const TideQueue *q = &s->queues[i];

		if (!q->has_quota)
			continue;
		names[n] = CStringGetTextDatum(q->name);
		values[n] = tide_cycle_fair_json(s, q->quota, q->decayed);
		n++;
	}
	if (n == 0)
		return;
	args[0] = PointerGetDatum(tide_array_of(names, NULL, n, TEXTOID));
	args[1] = PointerGetDatum(tide_array_of(values, NULL, n, TEXTOID));
	args[2] = TimestampTzGetDatum(s->now);
	ret = SPI_execute_with_args(W_FAIR, 3, types, args, NULL, false, 0);
	if (ret != SPI_OK_INSERT)
		elog(ERROR, "tide.run_cycle: cannot write tide.queue_fair_usage: %s", SPI_result_code_string(ret));
}
