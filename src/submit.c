/*
 * submit.c: tide.submit(), one one-role job, in C.
 *
 * A job written by a plain INSERT goes through the insert triggers of
 * tide.jobs and tide.job_tasks (extension/23_job_checks.sql,
 * 24_job_history.sql, 64_change_counter.sql): they check the job and its
 * task row by row, defer a check that the job has tasks to commit, log the
 * submission in tide.job_events and bump the change counter.  tide.submit
 * checks its arguments first anyway (so that an error names the argument,
 * not a job id that the rollback removes), with the same functions the
 * triggers call, and then writes exactly one job with one task: everything
 * the triggers would check again is known already.  So, as the cycle does
 * with its own writes (cycle_guard.c):
 *
 *   - the checks run once, before any row is written: the argument checks
 *     here, then tide._admit_job, tide._check_job_values and
 *     tide._check_task_values, called through fmgr (their errors, codes,
 *     hints and contexts are theirs);
 *   - while its own three INSERTs run (fixed statements with saved plans,
 *     no user code in between), the backend's writer is 'submit'
 *     (writer.c): the triggers whose work tide.submit does itself have
 *     WHEN (tide._writer() <> 'submit'), so they are not even called for
 *     its rows; every other writer (a
 *     plain INSERT, tide.submit_many, the retries of the state machine)
 *     still meets them all;
 *   - what those triggers did for the rows, it does: the job takes the
 *     queue's service_type when none is given, the queue row is locked FOR
 *     KEY SHARE outside read committed, the event row is inserted, and the
 *     change counter bumped (once, not once per table).
 *
 * The job and task rows are inserted with the caller's rights: privileges
 * and row-level security decide as they do for the same INSERT by hand.
 * The event row and the queue lock are written with the rights of the
 * owner of tide.job_events, as the SECURITY DEFINER history trigger did.
 * The writer is put back however the statements end (PG_FINALLY), and no
 * setting can set it.  What else runs while it is set is what the table
 * owner put on the tables (defaults, policies, triggers of its own): a
 * trigger of the owner's that writes jobs meets the writer too.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "parser/parse_type.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "changed.h"
#include "writer.h"

PG_FUNCTION_INFO_V1(tide_submit);

/* tide.submit's arguments, in order (extension/30_api.sql) */
enum
{
	A_QUEUE, A_REQUEST, A_REPLICAS, A_PRIORITY, A_NAME, A_IDLE, A_RESERVE, A_SERVICE_TYPE,
	A_PREEMPTABLE, A_MIN_AVAILABLE, A_GPU_TYPE, A_NODE_SELECTOR, A_TIME_LIMIT, A_MAX_RETRIES,
	A_ON_EVICT, A_COMMAND, A_ROLE, A_COUNT
};

static const char *const Q_JOB =
"INSERT INTO tide.jobs (name, queue, priority, service_type, preemptable, idle, reserve,"
"                       min_available, node_selector, gpu_type, time_limit, max_retries,"
"                       on_evict, command)"
" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
" RETURNING id";

static const char *const Q_TASK =
"INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES ($1, $2, $3, $4)";

/* what tide._jobs_after_insert() logs for a new job: pending, submitted */
static const char *const Q_EVENT =
"INSERT INTO tide.job_events (job_id, old_state, new_state, reason, cycle_id)"
" VALUES ($1, NULL, 'pending', 'submitted', tide._current_cycle())";

/* what tide._jobs_before_insert() does outside read committed */
static const char *const Q_LOCK_QUEUE =
"SELECT FROM tide.queues q WHERE q.name OPERATOR(pg_catalog.=) $1 FOR KEY SHARE";

/*
 * Per backend: the check functions and the saved plans.  A change of any
 * function (DROP EXTENSION and CREATE again, say) forgets both: the plan
 * cache would find the tables again, but the task plan's parameter type
 * (tide.resvec) would be the old one.
 */
typedef struct SubmitCache
{
	bool		valid;
	Oid			resvec;
	FmgrInfo	admit_job;
	FmgrInfo	check_job;
	FmgrInfo	check_task;
} SubmitCache;

static SubmitCache cache;
static bool callback_registered = false;
static SPIPlanPtr plan_job = NULL;
static SPIPlanPtr plan_task = NULL;
static SPIPlanPtr plan_event = NULL;
static SPIPlanPtr plan_lock_queue = NULL;

static void
forget_functions(Datum arg, int cacheid, uint32 hashvalue)
{
	cache.valid = false;
}

static void
lookup_function(FmgrInfo *finfo, const char *name, int nargs, const Oid *argtypes)
{
	Oid			fn = LookupFuncName(list_make2(makeString("tide"), makeString((char *) name)),
									nargs, argtypes, false);

	fmgr_info_cxt(fn, finfo, TopMemoryContext);
}

static void
load_cache(void)
{
	Oid			admit[6] = {TEXTOID, TEXTOID, BOOLOID, BOOLOID, TEXTOID, INT4OID};
	Oid			job[7] = {TEXTOID, TEXTOID, INT4OID, INT4OID, INTERVALOID, TEXTOID, JSONBOID};
	Oid			task[4] = {INT8OID, TEXTOID, INT4OID, InvalidOid};

	SPIPlanPtr *plans[] = {&plan_job, &plan_task, &plan_event, &plan_lock_queue};

	if (cache.valid)
		return;
	for (int i = 0; i < (int) lengthof(plans); i++)
	{
		/* (a tide.submit whose statements are running may be using them) */
		if (*plans[i] != NULL && tide_writer() != TIDE_WRITER_SUBMIT)
			SPI_freeplan(*plans[i]);
		*plans[i] = NULL;
	}
	if (!callback_registered)
	{
		CacheRegisterSyscacheCallback(PROCOID, forget_functions, (Datum) 0);
		callback_registered = true;
	}
	cache.resvec = typenameTypeId(NULL, makeTypeNameFromNameList(list_make2(makeString("tide"),
																			makeString("resvec"))));
	task[3] = cache.resvec;
	lookup_function(&cache.admit_job, "_admit_job", 6, admit);
	lookup_function(&cache.check_job, "_check_job_values", 7, job);
	lookup_function(&cache.check_task, "_check_task_values", 4, task);
	cache.valid = true;
}

static SPIPlanPtr
saved_plan(SPIPlanPtr *plan, const char *sql, int nargs, Oid *types)
{
	if (*plan == NULL)
	{
		SPIPlanPtr	p = SPI_prepare(sql, nargs, types);

		if (p == NULL)
			elog(ERROR, "tide.submit: preparing \"%s\" failed: %s", sql, SPI_result_code_string(SPI_result));
		SPI_keepplan(p);
		*plan = p;
	}
	return *plan;
}

/* Call a check function (not strict: NULL arguments are passed as NULL). */
static Datum
call_check(FmgrInfo *finfo, int nargs, const Datum *args, const bool *nulls, bool *isnull)
{
	LOCAL_FCINFO(fcinfo, FUNC_MAX_ARGS);
	Datum		result;
	AclResult	acl = pg_proc_aclcheck(finfo->fn_oid, GetUserId(), ACL_EXECUTE);

	/* the caller's right to call it, as a call from SQL would check */
	if (acl != ACLCHECK_OK)
		aclcheck_error(acl, OBJECT_FUNCTION, get_func_name(finfo->fn_oid));
	InitFunctionCallInfoData(*fcinfo, finfo, nargs, InvalidOid, NULL, NULL);
	for (int i = 0; i < nargs; i++)
	{
		fcinfo->args[i].value = args[i];
		fcinfo->args[i].isnull = nulls[i];
	}
	result = FunctionCallInvoke(fcinfo);
	*isnull = fcinfo->isnull;
	return result;
}

static Oid
events_owner(void)
{
	Oid			rel = get_relname_relid("job_events", get_namespace_oid("tide", false));
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(rel));
	Oid			owner;

	if (!HeapTupleIsValid(tuple))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("table tide.job_events does not exist")));
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	return owner;
}

static Datum
text_datum(const char *s)
{
	return CStringGetTextDatum(s);
}

static void
run_plan(SPIPlanPtr plan, Datum *values, const char *nulls, int expected)
{
	int			ret = SPI_execute_plan(plan, values, nulls, false, 0);

	if (ret != expected)
		elog(ERROR, "tide.submit: a statement returned %s", SPI_result_code_string(ret));
}

/*
 * tide.submit(queue, request, replicas, priority, name, idle, reserve,
 * service_type, preemptable, min_available, gpu_type, node_selector,
 * time_limit, max_retries, on_evict, command, role) RETURNS bigint
 */
Datum
tide_submit(PG_FUNCTION_ARGS)
{
	Datum		a[A_COUNT];
	bool		n[A_COUNT];
	Datum		args[14];
	bool		argnulls[14];
	char		nulls[14];
	Oid			types[14];
	Datum		queue_type;
	bool		isnull;
	volatile int64 job = 0;
	Oid			save_userid;
	int			save_sec_context;
	Oid			owner;
	volatile bool switched = false;
	volatile TideWriter was_writing = TIDE_WRITER_NONE;

	for (int i = 0; i < A_COUNT; i++)
	{
		n[i] = PG_ARGISNULL(i);
		a[i] = n[i] ? (Datum) 0 : PG_GETARG_DATUM(i);
	}
	if (n[A_QUEUE])
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("queue must not be NULL"),
				 errhint("Name one of the queues in tide.queues.")));
	if (n[A_REQUEST])
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("request must not be NULL"),
				 errhint("Give the per-replica resources, e.g. 'cpu=4, memory=16Gi, gpu=1'.")));
	if (n[A_REPLICAS] || DatumGetInt32(a[A_REPLICAS]) < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 n[A_REPLICAS] ? errmsg("replicas must be at least 1, not NULL")
				 : errmsg("replicas must be at least 1, not %d", DatumGetInt32(a[A_REPLICAS]))));
	if (!n[A_MIN_AVAILABLE] && DatumGetInt32(a[A_MIN_AVAILABLE]) > DatumGetInt32(a[A_REPLICAS]))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("min_available %d is above the %d replicas",
						DatumGetInt32(a[A_MIN_AVAILABLE]), DatumGetInt32(a[A_REPLICAS])),
				 errhint("Leave min_available NULL to require every replica.")));

	/* the defaults of the SQL signature, for arguments passed as NULL */
#define COALESCE(i, d) do { if (n[i]) { a[i] = (d); n[i] = false; } } while (0)
	COALESCE(A_PRIORITY, Int32GetDatum(0));
	COALESCE(A_IDLE, BoolGetDatum(false));
	COALESCE(A_RESERVE, BoolGetDatum(false));
	COALESCE(A_PREEMPTABLE, BoolGetDatum(true));
	COALESCE(A_NODE_SELECTOR, DirectFunctionCall1(jsonb_in, CStringGetDatum("{}")));
	COALESCE(A_MAX_RETRIES, Int32GetDatum(0));
	COALESCE(A_ON_EVICT, text_datum("requeue"));
	COALESCE(A_ROLE, text_datum("main"));
#undef COALESCE

	/*
	 * The checks, in a new snapshot as PL/pgSQL evaluates the statements of
	 * a volatile function, taken once the lock that the job's INSERT takes
	 * on tide.jobs is held: a queue is deleted or renamed only under a SHARE
	 * lock on tide.jobs, so the queue tide._admit_job finds is still there
	 * when the job is written (the insert trigger asked again for that
	 * reason; extension/27_queue_checks.sql).  Each check function is
	 * called with the caller's EXECUTE privilege checked, as from SQL.
	 */
	load_cache();
	LockRelationOid(get_relname_relid("jobs", get_namespace_oid("tide", false)), RowExclusiveLock);
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	{
		Datum		v[7];
		bool		vn[7];

		v[0] = a[A_QUEUE];
		vn[0] = false;
		v[1] = text_datum(GetUserNameFromId(GetUserId(), false));
		vn[1] = false;
		v[2] = BoolGetDatum(false);
		vn[2] = false;
		v[3] = a[A_PREEMPTABLE];
		vn[3] = false;
		v[4] = a[A_SERVICE_TYPE];
		vn[4] = n[A_SERVICE_TYPE];
		v[5] = a[A_PRIORITY];
		vn[5] = false;
		queue_type = call_check(&cache.admit_job, 6, v, vn, &isnull);
		if (isnull)
			elog(ERROR, "tide.submit: queue \"%s\" has no service_type", TextDatumGetCString(a[A_QUEUE]));

		v[0] = a[A_SERVICE_TYPE];
		vn[0] = n[A_SERVICE_TYPE];
		v[1] = a[A_ON_EVICT];
		vn[1] = false;
		v[2] = a[A_MIN_AVAILABLE];
		vn[2] = n[A_MIN_AVAILABLE];
		v[3] = a[A_MAX_RETRIES];
		vn[3] = false;
		v[4] = a[A_TIME_LIMIT];
		vn[4] = n[A_TIME_LIMIT];
		v[5] = a[A_GPU_TYPE];
		vn[5] = n[A_GPU_TYPE];
		v[6] = a[A_NODE_SELECTOR];
		vn[6] = false;
		(void) call_check(&cache.check_job, 7, v, vn, &isnull);

		v[0] = (Datum) 0;
		vn[0] = true;
		v[1] = a[A_ROLE];
		vn[1] = false;
		v[2] = a[A_REPLICAS];
		vn[2] = false;
		v[3] = a[A_REQUEST];
		vn[3] = false;
		(void) call_check(&cache.check_task, 4, v, vn, &isnull);
	}
	PopActiveSnapshot();

	owner = events_owner();
	GetUserIdAndSecContext(&save_userid, &save_sec_context);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "tide.submit: SPI_connect failed");
	was_writing = tide_writer_set(TIDE_WRITER_SUBMIT);
	PG_TRY();
	{
		int			k = 0;

		/* outside read committed, lock the queue as a foreign key would */
		if (XactIsoLevel != XACT_READ_COMMITTED)
		{
			types[0] = TEXTOID;
			SetUserIdAndSecContext(owner, save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
			switched = true;
			run_plan(saved_plan(&plan_lock_queue, Q_LOCK_QUEUE, 1, types), &a[A_QUEUE], NULL, SPI_OK_SELECT);
			SetUserIdAndSecContext(save_userid, save_sec_context);
			switched = false;
		}

		/* the job, with the caller's rights */
#define ARG(v, isnull, t) do { args[k] = (v); argnulls[k] = (isnull); types[k] = (t); k++; } while (0)
		ARG(a[A_NAME], n[A_NAME], TEXTOID);
		ARG(a[A_QUEUE], false, TEXTOID);
		ARG(a[A_PRIORITY], false, INT4OID);
		/* a job without a service_type takes its queue's */
		ARG(n[A_SERVICE_TYPE] ? queue_type : a[A_SERVICE_TYPE], false, TEXTOID);
		ARG(a[A_PREEMPTABLE], false, BOOLOID);
		ARG(a[A_IDLE], false, BOOLOID);
		ARG(a[A_RESERVE], false, BOOLOID);
		ARG(a[A_MIN_AVAILABLE], n[A_MIN_AVAILABLE], INT4OID);
		ARG(a[A_NODE_SELECTOR], false, JSONBOID);
		ARG(a[A_GPU_TYPE], n[A_GPU_TYPE], TEXTOID);
		ARG(a[A_TIME_LIMIT], n[A_TIME_LIMIT], INTERVALOID);
		ARG(a[A_MAX_RETRIES], false, INT4OID);
		ARG(a[A_ON_EVICT], false, TEXTOID);
		ARG(a[A_COMMAND], n[A_COMMAND], TEXTOID);
#undef ARG
		for (int i = 0; i < k; i++)
			nulls[i] = argnulls[i] ? 'n' : ' ';
		run_plan(saved_plan(&plan_job, Q_JOB, k, types), args, nulls, SPI_OK_INSERT_RETURNING);
		if (SPI_processed != 1)
			elog(ERROR, "tide.submit: the job's INSERT wrote " UINT64_FORMAT " rows", SPI_processed);
		job = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

		/* its task, with the caller's rights */
		args[0] = Int64GetDatum(job);
		args[1] = a[A_ROLE];
		args[2] = a[A_REPLICAS];
		args[3] = a[A_REQUEST];
		types[0] = INT8OID;
		types[1] = TEXTOID;
		types[2] = INT4OID;
		types[3] = cache.resvec;
		run_plan(saved_plan(&plan_task, Q_TASK, 4, types), args, NULL, SPI_OK_INSERT);

		/* its submission in the history, as the history's owner */
		SetUserIdAndSecContext(owner, save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
		switched = true;
		run_plan(saved_plan(&plan_event, Q_EVENT, 1, types), args, NULL, SPI_OK_INSERT);
		SetUserIdAndSecContext(save_userid, save_sec_context);
		switched = false;

		/* one bump of the change counter for both tables */
		if (!tide_writer_in_cycle())
			tide_note_change();
	}
	PG_FINALLY();
	{
		tide_writer_set(was_writing);
		if (switched)
			SetUserIdAndSecContext(save_userid, save_sec_context);
	}
	PG_END_TRY();
	SPI_finish();
	PG_RETURN_INT64(job);
}
