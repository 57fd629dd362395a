/*
 * writer.c: who is writing in this backend.
 *
 * tide.submit and tide.run_cycle() do themselves, set-based or once, what
 * some triggers of tide.jobs, tide.job_tasks and tide.allocations would do
 * row by row, and they do it for exactly the rows of their own fixed
 * statements.  While those statements run, the writer they set here says
 * so: the triggers' WHEN clauses read it through tide._writer() and step
 * aside, and the change counter (changed.c) does not count a cycle's own
 * writes.  A backend-local value that only this module's callers set:
 * no setting, no SQL and no other session can change it, and each writer
 * puts back the value it found however its statements end.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"

#include "writer.h"

PG_FUNCTION_INFO_V1(tide_writer_sql);

static TideWriter writer = TIDE_WRITER_NONE;

/* The labels of the SQL enum tide.writer, by TideWriter. */
static const char *const writer_labels[TIDE_WRITER_COUNT] = {
	[TIDE_WRITER_NONE] = "none",
	[TIDE_WRITER_SUBMIT] = "submit",
	[TIDE_WRITER_CYCLE] = "cycle",
	[TIDE_WRITER_CYCLE_WRITE] = "cycle_write",
};

TideWriter
tide_writer(void)
{
	return writer;
}

TideWriter
tide_writer_set(TideWriter w)
{
	TideWriter	was = writer;

	writer = w;
	return was;
}

bool
tide_writer_in_cycle(void)
{
	return writer == TIDE_WRITER_CYCLE || writer == TIDE_WRITER_CYCLE_WRITE;
}

/*
 * tide._writer() RETURNS tide.writer: who writes now.  A trigger's WHEN
 * calls it once per row, so the labels' OIDs are looked up once per call
 * site (fn_extra) and each call returns one of them.
 */
Datum
tide_writer_sql(PG_FUNCTION_ARGS)
{
	Oid		   *oids = (Oid *) fcinfo->flinfo->fn_extra;

	if (oids == NULL)
	{
		Oid			type = get_func_rettype(fcinfo->flinfo->fn_oid);

		oids = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(Oid) * TIDE_WRITER_COUNT);
		for (int i = 0; i < TIDE_WRITER_COUNT; i++)
			oids[i] = DatumGetObjectId(DirectFunctionCall2(enum_in, CStringGetDatum(writer_labels[i]),
														   ObjectIdGetDatum(type)));
		fcinfo->flinfo->fn_extra = oids;
	}
	PG_RETURN_OID(oids[writer]);
}
