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
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "commands/sequence.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "nodes/makefuncs.h"
#include "nodes/pg_list.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "changed.h"
#include "writer.h"

PG_FUNCTION_INFO_V1(tide_changed);

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
