/*
 * changed.c: tide._changed(), the statement trigger that bumps
 * tide.change_seq for every write the scheduling cycle reads
 * (extension/64_change_counter.sql says why and how a cycle uses it).
 *
 * In C because every submission by INSERT fires it twice (tide.jobs and
 * tide.job_tasks): as plpgsql it was a SECURITY DEFINER call with its own
 * search_path and two queries.  tide.submit (submit.c) calls
 * tide_note_change() once instead, its statements skipping the trigger.
 * It takes the shared advisory lock of tide._change_lock_key() until the
 * transaction ends, then draws the next value of tide.change_seq (in that
 * order: a cycle that reads the counter and then gets the lock exclusively
 * knows every writer counted in the value has ended).  Nothing here depends on search_path or on the caller's
 * privileges: the sequence is found in schema tide and drawn without a
 * permission check, as the definer's function did.
 *
 * tide._log_job_changes(), the statement triggers beside it, name the jobs
 * a statement wrote in tide.job_changes, for the cycle's incremental load
 * (cycle_cache.c): the ids of the transition table's column given as the
 * trigger's argument, sorted and each once, in one INSERT of a saved plan.
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "nodes/makefuncs.h"
#include "nodes/pg_list.h"
#include "parser/parse_func.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/tuplestore.h"

#include "changed.h"
#include "writer.h"

PG_FUNCTION_INFO_V1(tide_changed);
PG_FUNCTION_INFO_V1(tide_log_job_changes);

/*
 * The lock key, from tide._change_lock_key() (an immutable constant): read
 * once per backend, so that the key is written in one place.
 */
static int64
change_lock_key(void)
{
	static bool known = false;
	static int64 key = 0;

	if (!known)
	{
		Oid			fn = LookupFuncName(list_make2(makeString("tide"), makeString("_change_lock_key")),
										0, NULL, false);

		key = DatumGetInt64(OidFunctionCall0(fn));
		known = true;
	}
	return key;
}

void
tide_note_change(void)
{
	Oid			seq;

	DirectFunctionCall1(pg_advisory_xact_lock_shared_int8, Int64GetDatum(change_lock_key()));
	seq = get_relname_relid("change_seq", get_namespace_oid("tide", false));
	if (!OidIsValid(seq))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("sequence tide.change_seq does not exist")));
	(void) nextval_internal(seq, false);
}

/* tide._changed() RETURNS trigger: see the head of the file */
Datum
tide_changed(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("tide._changed() must be called as a trigger")));

	/* a cycle's own writes do not count (it bumps once at its end) */
	if (!tide_writer_in_cycle())
		tide_note_change();
	return PointerGetDatum(NULL);
}

static int
cmp_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a,
				y = *(const int64 *) b;

	return x < y ? -1 : x > y;
}

/* The ids (sorted, each once; NULL: everything) into tide.job_changes. */
static void
log_ids(int64 *ids, int n, bool all)
{
	static SPIPlanPtr plan = NULL;
	Oid			argtype = INT8ARRAYOID;
	Datum		arg;
	int			kept = 0;
	int			ret;

	if (!all)
	{
		qsort(ids, n, sizeof(int64), cmp_int64);
		for (int i = 0; i < n; i++)
			if (kept == 0 || ids[kept - 1] != ids[i])
				ids[kept++] = ids[i];
		if (kept == 0)
			return;
	}
	if ((ret = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "tide._log_job_changes: SPI_connect failed: %s", SPI_result_code_string(ret));
	if (plan == NULL)
	{
		SPIPlanPtr	p = SPI_prepare("INSERT INTO tide.job_changes (job_id)"
									" SELECT pg_catalog.unnest(coalesce($1, '{NULL}'::bigint[]))",
									1, &argtype);

		if (p == NULL || SPI_keepplan(p) != 0)
			elog(ERROR, "tide._log_job_changes: cannot prepare: %s", SPI_result_code_string(SPI_result));
		plan = p;
	}
	if (!all)
	{
		Datum	   *d = palloc(sizeof(Datum) * kept);

		for (int i = 0; i < kept; i++)
			d[i] = Int64GetDatum(ids[i]);
		arg = PointerGetDatum(construct_array(d, kept, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	}
	else
		arg = (Datum) 0;
	ret = SPI_execute_plan(plan, &arg, all ? "n" : NULL, false, 0);
	if (ret != SPI_OK_INSERT)
		elog(ERROR, "tide._log_job_changes: insert failed: %s", SPI_result_code_string(ret));
	SPI_finish();
}

/*
 * tide._log_job_changes() RETURNS trigger, AFTER ... FOR EACH STATEMENT
 * with a transition table (REFERENCING NEW TABLE for INSERT and UPDATE, OLD
 * TABLE for DELETE), or AFTER TRUNCATE; its argument names the bigint
 * column that holds the job's id.
 */
Datum
tide_log_job_changes(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	Tuplestorestate *ts;
	TupleDesc	desc;
	TupleTableSlot *slot;
	AttrNumber	att;
	int64	   *ids;
	int			n = 0,
				cap = 64,
				rp;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_FOR_STATEMENT(td->tg_event) ||
		!TRIGGER_FIRED_AFTER(td->tg_event) || td->tg_trigger->tgnargs != 1)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("tide._log_job_changes() must be an AFTER ... FOR EACH STATEMENT trigger with one argument")));
	if (TRIGGER_FIRED_BY_TRUNCATE(td->tg_event))
	{
		log_ids(NULL, 0, true);
		return PointerGetDatum(NULL);
	}
	/* tide.submit's task rows belong to the job its own INSERT named */
	if (tide_writer() == TIDE_WRITER_SUBMIT && TRIGGER_FIRED_BY_INSERT(td->tg_event) &&
		strcmp(td->tg_trigger->tgargs[0], "job_id") == 0 &&
		strcmp(RelationGetRelationName(td->tg_relation), "job_tasks") == 0)
		return PointerGetDatum(NULL);

	/*
	 * The cycle inserts allocations only for the jobs its own UPDATE of
	 * tide.jobs moved in this transaction (cycle_place.c), which that
	 * statement's trigger named already: 17,000 rows less to log and prune
	 * after a first cycle at 100,000 pending.
	 */
	if (tide_writer() == TIDE_WRITER_CYCLE_WRITE && TRIGGER_FIRED_BY_INSERT(td->tg_event) &&
		strcmp(RelationGetRelationName(td->tg_relation), "allocations") == 0)
		return PointerGetDatum(NULL);
	ts = TRIGGER_FIRED_BY_DELETE(td->tg_event) ? td->tg_oldtable : td->tg_newtable;
	if (ts == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("tide._log_job_changes() needs a transition table (REFERENCING ... TABLE AS)")));
	desc = RelationGetDescr(td->tg_relation);
	att = SPI_fnumber(desc, td->tg_trigger->tgargs[0]);
	if (att <= 0 || TupleDescAttr(desc, att - 1)->atttypid != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("tide._log_job_changes(): no bigint column \"%s\" in \"%s\"",
						td->tg_trigger->tgargs[0], RelationGetRelationName(td->tg_relation))));
	ids = palloc(sizeof(int64) * cap);
	slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	/* a read pointer of our own: other triggers read the same store */
	rp = tuplestore_alloc_read_pointer(ts, EXEC_FLAG_REWIND);
	tuplestore_select_read_pointer(ts, rp);
	tuplestore_rescan(ts);
	while (tuplestore_gettupleslot(ts, true, false, slot))
	{
		bool		isnull;
		Datum		d = slot_getattr(slot, att, &isnull);

		if (isnull)
			continue;
		if (n == cap)
		{
			cap *= 2;
			ids = repalloc_huge(ids, sizeof(int64) * cap);
		}
		ids[n++] = DatumGetInt64(d);
	}
	tuplestore_select_read_pointer(ts, 0);
	ExecDropSingleTupleTableSlot(slot);
	log_ids(ids, n, false);
	pfree(ids);
	return PointerGetDatum(NULL);
}
