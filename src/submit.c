/*
 * submit.c: tide.submit(), one one-role job, and tide.submit_array(), an
 * array of them (R-P5), in C.
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
 *     here, then tide._admit_job, tide._check_job_values, tide._check_payload and
 *     tide._check_task_values, called through fmgr (their errors, codes,
 *     hints and contexts are theirs);
 *   - while its own three INSERTs run (fixed statements with saved plans,
 *     no user code in between), the backend's writer is 'submit'
 *     (writer.c): the triggers whose work tide.submit does itself have
 *     WHEN (tide._writer() <> 'submit'),
 *     so they are not even called for its rows; every other writer (a
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
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "changed.h"
#include "cut.h"
#include "writer.h"

PG_FUNCTION_INFO_V1(tide_submit);
PG_FUNCTION_INFO_V1(tide_submit_array);

/* tide.submit's arguments, in order (extension/30_api.sql) */
enum
{
	A_QUEUE, A_REQUEST, A_REPLICAS, A_PRIORITY, A_NAME, A_IDLE, A_RESERVE, A_SERVICE_TYPE,
	A_PREEMPTABLE, A_MIN_AVAILABLE, A_GPU_TYPE, A_NODE_SELECTOR, A_TIME_LIMIT, A_MAX_RETRIES,
	A_ON_EVICT, A_COMMAND, A_ROLE, A_AFTER, A_HOLD, A_BEGIN_AT, A_ENV, A_WORKDIR, A_LABELS, A_KEY,
	A_WARN_BEFORE, A_GRACE_PERIOD,
	A_COUNT
};

/* tide.submit_array's arguments: queue, request, size, max_running, then A_REPLICAS on */
#define ARRAY_A_SIZE		2
#define ARRAY_A_MAX_RUNNING	3
#define ARRAY_A_FIRST_REST	4

/* the largest array (R-P5): one statement inserts it */
#define ARRAY_MAX_SIZE 1000000

/* One submission's arguments, checked (submit_check) */
typedef struct SubmitArgs
{
	Datum		a[A_COUNT];
	bool		n[A_COUNT];
	Datum		queue_type;		/* the queue's service_type */
} SubmitArgs;

/*
 * The job: $1..$14 its columns, $15 held, $16 begin_at, $17 env, $18
 * workdir, $19 labels, $20 key, $21 warn_before, $22 grace_period.  Its wait flags and reason follow from the
 * facts (32_pipelines.sql): deferred while begin_at is ahead, queue_held
 * while its queue or one above it is, the reason naming that queue
 * (held_by, R-P2..R-P4).  A second job with the owner's key
 * inserts nothing (R-P6).
 */
#define JOB_COLUMNS \
"INSERT INTO tide.jobs (name, queue, priority, service_type, preemptable, idle, reserve," \
"                       min_available, node_selector, gpu_type, time_limit, max_retries," \
"                       on_evict, command, held, begin_at, env, workdir, labels," \
"                       warn_before, grace_period"
#define JOB_WAITS \
"  FROM (SELECT coalesce($16 OPERATOR(pg_catalog.>) pg_catalog.now(), false) AS d," \
"               h.hb IS NOT NULL AS qh, h.hb" \
"          FROM (SELECT (SELECT q.held_by FROM tide.queues q" \
"                         WHERE q.name OPERATOR(pg_catalog.=) $2) AS hb) h) w"
static const char *const Q_JOB =
JOB_COLUMNS ", key, deferred, queue_held, pending_reason)"
" SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $21, $22,"
"        $20, w.d, w.qh, CASE WHEN $15 OR w.d OR w.qh"
"                        THEN tide._wait_text($15, w.qh, w.hb, NULL, w.d, $16, false, NULL, NULL) END"
JOB_WAITS
" ON CONFLICT (owner, key) WHERE key IS NOT NULL DO NOTHING"
" RETURNING id";

/*
 * An array (R-P5): its row, then its size members, in one statement as
 * the caller; $1..$19, $21 and $22 as for Q_JOB, $20 key (of the array),
 * $23 size, $24 max_running.
 * Members beyond max_running start throttled.  Identity values are drawn
 * in the order rows are produced: ids ascend with the index.
 */
static const char *const Q_ARRAY =
"WITH a AS (INSERT INTO tide.job_arrays (queue, size, max_running, key) VALUES ($2, $23, $24, $20)"
"           ON CONFLICT (owner, key) WHERE key IS NOT NULL DO NOTHING RETURNING id),"
" j AS (" JOB_COLUMNS ", deferred, queue_held, array_id, array_index, array_throttled, pending_reason)"
"  SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $21, $22,"
"         w.d, w.qh, a.id, i, i OPERATOR(pg_catalog.>=) coalesce($24, $23),"
"         CASE WHEN $15 OR w.d OR w.qh OR i OPERATOR(pg_catalog.>=) coalesce($24, $23)"
"              THEN tide._wait_text($15, w.qh, w.hb, NULL, w.d, $16,"
"                                   i OPERATOR(pg_catalog.>=) coalesce($24, $23), a.id, $24) END"
"  " JOB_WAITS ", a, pg_catalog.generate_series(0, $23 OPERATOR(pg_catalog.-) 1) i"
"   ORDER BY i"
"  RETURNING id)"
"SELECT a.id FROM a";

/*
 * The members' tasks, $1 the array, as the caller: a statement of its own,
 * so that row-level security sees the members it checks them against.
 */
static const char *const Q_ARRAY_TASKS =
"INSERT INTO tide.job_tasks (job_id, role, replicas, request)"
" SELECT j.id, $2, $3, $4 FROM tide.jobs j WHERE j.array_id OPERATOR(pg_catalog.=) $1 ORDER BY j.id";

/* what an earlier submission with the caller's key made (R-P6) */
static const char *const Q_KEY_JOB =
"SELECT j.id FROM tide.jobs j"
" WHERE j.owner OPERATOR(pg_catalog.=) CURRENT_USER AND j.key OPERATOR(pg_catalog.=) $1";
static const char *const Q_KEY_ARRAY =
"SELECT a.id FROM tide.job_arrays a"
" WHERE a.owner OPERATOR(pg_catalog.=) CURRENT_USER AND a.key OPERATOR(pg_catalog.=) $1";

/* after => ids: each must succeed first (R-P1), with the caller's rights */
static const char *const Q_AFTER_JOB =
"INSERT INTO tide.job_dependencies (job_id, depends_on, condition)"
" SELECT $1, d.id, 'succeeded' FROM (SELECT DISTINCT pg_catalog.unnest($2) AS id) d ORDER BY d.id";
static const char *const Q_AFTER_ARRAY =
"INSERT INTO tide.job_dependencies (job_id, depends_on, condition)"
" SELECT m.id, d.id, 'succeeded' FROM tide.jobs m, (SELECT DISTINCT pg_catalog.unnest($2) AS id) d"
"  WHERE m.array_id OPERATOR(pg_catalog.=) $1 ORDER BY m.id, d.id";

static const char *const Q_TASK =
"INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES ($1, $2, $3, $4)";

/* what tide._jobs_after_insert() logs for a new job: pending, submitted */
static const char *const Q_EVENT =
"INSERT INTO tide.job_events (job_id, old_state, new_state, reason, cycle_id)"
" VALUES ($1, NULL, 'pending', 'submitted', tide._current_cycle())";
static const char *const Q_EVENTS_ARRAY =
"INSERT INTO tide.job_events (job_id, old_state, new_state, reason, cycle_id)"
" SELECT j.id, NULL, 'pending', 'submitted', tide._current_cycle() FROM tide.jobs j"
"  WHERE j.array_id OPERATOR(pg_catalog.=) $1 ORDER BY j.id";

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
	FmgrInfo	check_payload;
	FmgrInfo	job_time_limit;
} SubmitCache;

static SubmitCache cache;
static bool callback_registered = false;
static SPIPlanPtr plan_job = NULL;
static SPIPlanPtr plan_task = NULL;
static SPIPlanPtr plan_event = NULL;
static SPIPlanPtr plan_lock_queue = NULL;
static SPIPlanPtr plan_array = NULL;
static SPIPlanPtr plan_array_tasks = NULL;
static SPIPlanPtr plan_events_array = NULL;
static SPIPlanPtr plan_key_job = NULL;
static SPIPlanPtr plan_key_array = NULL;
static SPIPlanPtr plan_after_job = NULL;
static SPIPlanPtr plan_after_array = NULL;

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
	Oid			job[8] = {TEXTOID, TEXTOID, INT4OID, INT4OID, INTERVALOID, TEXTOID, JSONBOID, TEXTOID};
	Oid			task[4] = {INT8OID, TEXTOID, INT4OID, InvalidOid};
	Oid			payload[3] = {JSONBOID, TEXTOID, JSONBOID};
	Oid			limits[5] = {TEXTOID, INTERVALOID, INTERVALOID, INTERVALOID, BOOLOID};

	SPIPlanPtr *plans[] = {&plan_job, &plan_task, &plan_event, &plan_lock_queue, &plan_array,
	&plan_array_tasks, &plan_events_array, &plan_key_job, &plan_key_array, &plan_after_job, &plan_after_array};

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
	lookup_function(&cache.check_job, "_check_job_values", 8, job);
	lookup_function(&cache.check_task, "_check_task_values", 4, task);
	lookup_function(&cache.check_payload, "_check_payload", 3, payload);
	lookup_function(&cache.job_time_limit, "_job_time_limit", 5, limits);
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
 * Run one of the statements tide.submit makes as the owner of the history
 * (the queue lock, the event rows), switching back before returning;
 * *switched tells the caller's PG_FINALLY to switch back on an error.
 */
static void
run_as_owner(Oid owner, Oid save_userid, int save_sec_context, volatile bool *switched,
			 SPIPlanPtr *plan, const char *sql, int nargs, Oid *types, Datum *args, int expected)
{
	SetUserIdAndSecContext(owner, save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	*switched = true;
	run_plan(saved_plan(plan, sql, nargs, types), args, NULL, expected);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	*switched = false;
}

/*
 * The arguments every submission shares, checked once: the defaults of
 * the SQL signature filled in for NULLs, NULLs without one refused, then the check functions the
 * insert triggers call, in a new snapshot as PL/pgSQL evaluates the
 * statements of a volatile function, taken once the lock that the job's
 * INSERT takes on tide.jobs is held: a queue is deleted or renamed only
 * under a SHARE lock on tide.jobs, so the queue tide._admit_job finds is
 * still there when the job is written (the insert trigger asked again for
 * that reason; extension/27_queue_checks.sql).  Each check function is
 * called with the caller's EXECUTE privilege checked, as from SQL.
 */
static void
submit_check(SubmitArgs *s)
{
	Datum	   *a = s->a;
	bool	   *n = s->n;
	bool		isnull;

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
	/*
	 * NULL means the default (docs/policy.md): an argument with a default
	 * given as NULL takes it, as if left out; those whose NULL means
	 * something (name, service_type, min_available, ...) keep it.
	 */
#define COALESCE(i, d) do { if (n[i]) { a[i] = (d); n[i] = false; } } while (0)
	COALESCE(A_REPLICAS, Int32GetDatum(1));
	COALESCE(A_PRIORITY, Int32GetDatum(0));
	COALESCE(A_IDLE, BoolGetDatum(false));
	COALESCE(A_RESERVE, BoolGetDatum(false));
	COALESCE(A_PREEMPTABLE, BoolGetDatum(true));
	COALESCE(A_NODE_SELECTOR, DirectFunctionCall1(jsonb_in, CStringGetDatum("{}")));
	COALESCE(A_MAX_RETRIES, Int32GetDatum(0));
	COALESCE(A_ON_EVICT, text_datum("requeue"));
	COALESCE(A_ROLE, text_datum("main"));
	COALESCE(A_HOLD, BoolGetDatum(false));
	COALESCE(A_ENV, DirectFunctionCall1(jsonb_in, CStringGetDatum("{}")));
	COALESCE(A_LABELS, DirectFunctionCall1(jsonb_in, CStringGetDatum("{}")));
#undef COALESCE

	if (DatumGetInt32(a[A_REPLICAS]) < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("replicas must be at least 1, not %d", DatumGetInt32(a[A_REPLICAS]))));
	if (!n[A_MIN_AVAILABLE] && DatumGetInt32(a[A_MIN_AVAILABLE]) > DatumGetInt32(a[A_REPLICAS]))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("min_available %d is above the %d replicas",
						DatumGetInt32(a[A_MIN_AVAILABLE]), DatumGetInt32(a[A_REPLICAS])),
				 errhint("Leave min_available NULL to require every replica.")));
	if (!n[A_AFTER])
	{
		ArrayType  *after = DatumGetArrayTypeP(a[A_AFTER]);

		if (ARR_NDIM(after) > 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("after must be a one-dimensional array of job ids, not %d-dimensional", ARR_NDIM(after))));
		if (array_contains_nulls(after))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("after must not contain NULL"),
					 errhint("Give the ids of the jobs that must succeed first.")));
		if (ArrayGetNItems(ARR_NDIM(after), ARR_DIMS(after)) == 0)
			n[A_AFTER] = true;	/* '{}': no dependency */
	}
	if (!n[A_KEY] && VARSIZE_ANY_EXHDR(DatumGetPointer(a[A_KEY])) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key must not be empty"),
				 errhint("Leave key NULL to submit without an idempotency key.")));


	load_cache();
	LockRelationOid(get_relname_relid("jobs", get_namespace_oid("tide", false)), RowExclusiveLock);
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	{
		Datum		v[8];
		bool		vn[8];

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
		s->queue_type = call_check(&cache.admit_job, 6, v, vn, &isnull);
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
		v[7] = a[A_NAME];
		vn[7] = n[A_NAME];
		(void) call_check(&cache.check_job, 8, v, vn, &isnull);

		v[0] = (Datum) 0;
		vn[0] = true;
		v[1] = a[A_ROLE];
		vn[1] = false;
		v[2] = a[A_REPLICAS];
		vn[2] = false;
		v[3] = a[A_REQUEST];
		vn[3] = false;
		(void) call_check(&cache.check_task, 4, v, vn, &isnull);

		/* the payload (env, workdir, labels), as the insert trigger checks it */
		v[0] = a[A_ENV];
		vn[0] = false;
		v[1] = a[A_WORKDIR];
		vn[1] = n[A_WORKDIR];
		v[2] = a[A_LABELS];
		vn[2] = false;
		(void) call_check(&cache.check_payload, 3, v, vn, &isnull);

		/* the queue's default and maximum time limit, the warning (R-T1, R-T2) */
		v[0] = a[A_QUEUE];
		vn[0] = false;
		v[1] = a[A_TIME_LIMIT];
		vn[1] = n[A_TIME_LIMIT];
		v[2] = a[A_WARN_BEFORE];
		vn[2] = n[A_WARN_BEFORE];
		v[3] = a[A_GRACE_PERIOD];
		vn[3] = n[A_GRACE_PERIOD];
		v[4] = BoolGetDatum(false);
		vn[4] = false;
		a[A_TIME_LIMIT] = call_check(&cache.job_time_limit, 5, v, vn, &n[A_TIME_LIMIT]);
	}
	PopActiveSnapshot();
}

/*
 * The job columns' parameters ($1..$22 of Q_JOB and of Q_ARRAY, whose $20
 * is the array's key) into args, nulls and types; returns how many.
 */
static int
job_params(const SubmitArgs *s, Datum *args, char *nulls, Oid *types)
{
	const Datum *a = s->a;
	const bool *n = s->n;
	int			k = 0;

#define ARG(v, isnull, t) do { args[k] = (v); nulls[k] = (isnull) ? 'n' : ' '; types[k] = (t); k++; } while (0)
	ARG(a[A_NAME], n[A_NAME], TEXTOID);
	ARG(a[A_QUEUE], false, TEXTOID);
	ARG(a[A_PRIORITY], false, INT4OID);
	/* a job without a service_type takes its queue's */
	ARG(n[A_SERVICE_TYPE] ? s->queue_type : a[A_SERVICE_TYPE], false, TEXTOID);
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
	ARG(a[A_HOLD], false, BOOLOID);
	ARG(a[A_BEGIN_AT], n[A_BEGIN_AT], TIMESTAMPTZOID);
	ARG(a[A_ENV], false, JSONBOID);
	ARG(a[A_WORKDIR], n[A_WORKDIR], TEXTOID);
	ARG(a[A_LABELS], false, JSONBOID);
	ARG(a[A_KEY], n[A_KEY], TEXTOID);
	ARG(a[A_WARN_BEFORE], n[A_WARN_BEFORE], INTERVALOID);
	ARG(a[A_GRACE_PERIOD], n[A_GRACE_PERIOD], INTERVALOID);
#undef ARG
	return k;
}

/*
 * The task's parameters: $1 the job (or, for Q_ARRAY_TASKS, the array),
 * $2 role, $3 replicas, $4 request.
 */
static void
task_params(const SubmitArgs *s, int64 id, Datum *args, Oid *types)
{
	args[0] = Int64GetDatum(id);
	args[1] = s->a[A_ROLE];
	args[2] = s->a[A_REPLICAS];
	args[3] = s->a[A_REQUEST];
	types[0] = INT8OID;
	types[1] = TEXTOID;
	types[2] = INT4OID;
	types[3] = cache.resvec;
}

/*
 * The id an earlier submission with the caller's key made, or 0 (R-P6).
 * Inside SPI.
 */
static int64
keyed_id(SPIPlanPtr *plan, const char *sql, Datum key, const char *what)
{
	Oid			type = TEXTOID;
	bool		isnull;
	int64		id;

	run_plan(saved_plan(plan, sql, 1, &type), &key, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return 0;
	id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	ereport(NOTICE,
			(errmsg("%s %lld was submitted with key \"%s\" already; nothing new was submitted",
					what, (long long) id, tide_cut(TextDatumGetCString(key), TIDE_CUT_DEFAULT))));
	return id;
}

/* after => ids of a job or of an array's members (R-P1), as the caller */
static void
insert_after(SPIPlanPtr *plan, const char *sql, int64 id, Datum after)
{
	Datum		args[2] = {Int64GetDatum(id), after};
	Oid			types[2] = {INT8OID, INT8ARRAYOID};

	run_plan(saved_plan(plan, sql, 2, types), args, NULL, SPI_OK_INSERT);
}

/* Read arguments: positions of tide.submit, or shifted past size and max_running. */
static void
read_args(FunctionCallInfo fcinfo, SubmitArgs *s, bool array)
{
	for (int i = 0; i < A_COUNT; i++)
	{
		int			arg = (!array || i < A_REPLICAS) ? i : i - A_REPLICAS + ARRAY_A_FIRST_REST;

		s->n[i] = PG_ARGISNULL(arg);
		s->a[i] = s->n[i] ? (Datum) 0 : PG_GETARG_DATUM(arg);
	}
}

/*
 * tide.submit(queue, request, replicas, priority, name, idle, reserve,
 * service_type, preemptable, min_available, gpu_type, node_selector,
 * time_limit, max_retries, on_evict, command, role, after, hold, begin_at,
 * env, workdir, labels, key, warn_before, grace_period) RETURNS bigint
 */
Datum
tide_submit(PG_FUNCTION_ARGS)
{
	SubmitArgs	s;
	Datum		args[22];
	char		nulls[22];
	Oid			types[22];
	bool		isnull;
	volatile int64 job = 0;
	volatile bool existed = false;
	Oid			save_userid;
	int			save_sec_context;
	Oid			owner;
	volatile bool switched = false;
	volatile TideWriter was_writing = TIDE_WRITER_NONE;
	int			k;

	read_args(fcinfo, &s, false);
	submit_check(&s);

	owner = events_owner();
	GetUserIdAndSecContext(&save_userid, &save_sec_context);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "tide.submit: SPI_connect failed");
	/* a key seen before: its job, and nothing written */
	if (!s.n[A_KEY] && (job = keyed_id(&plan_key_job, Q_KEY_JOB, s.a[A_KEY], "job")) != 0)
	{
		SPI_finish();
		PG_RETURN_INT64(job);
	}
	was_writing = tide_writer_set(TIDE_WRITER_SUBMIT);
	PG_TRY();
	{
		/* outside read committed, lock the queue as a foreign key would */
		if (XactIsoLevel != XACT_READ_COMMITTED)
		{
			types[0] = TEXTOID;
			run_as_owner(owner, save_userid, save_sec_context, &switched,
						 &plan_lock_queue, Q_LOCK_QUEUE, 1, types, &s.a[A_QUEUE], SPI_OK_SELECT);
		}

		/* the job, with the caller's rights */
		k = job_params(&s, args, nulls, types);
		run_plan(saved_plan(&plan_job, Q_JOB, k, types), args, nulls, SPI_OK_INSERT_RETURNING);
		if (SPI_processed == 0 && !s.n[A_KEY])
		{
			/* another session committed the same key meanwhile (R-P6) */
			job = keyed_id(&plan_key_job, Q_KEY_JOB, s.a[A_KEY], "job");
			if (job == 0)
				elog(ERROR, "tide.submit: key \"%s\" conflicts, yet no job of it is visible",
					 TextDatumGetCString(s.a[A_KEY]));
			existed = true;
		}
		else
		{
			if (SPI_processed != 1)
				elog(ERROR, "tide.submit: the job's INSERT wrote " UINT64_FORMAT " rows", SPI_processed);
			job = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

			/* its task, with the caller's rights */
			task_params(&s, job, args, types);
			run_plan(saved_plan(&plan_task, Q_TASK, 4, types), args, NULL, SPI_OK_INSERT);

			/* its submission in the history, as the history's owner */
			run_as_owner(owner, save_userid, save_sec_context, &switched,
						 &plan_event, Q_EVENT, 1, types, args, SPI_OK_INSERT);

			/* one bump of the change counter for both tables */
			if (!tide_writer_in_cycle())
				tide_note_change();
		}
	}
	PG_FINALLY();
	{
		tide_writer_set(was_writing);
		if (switched)
			SetUserIdAndSecContext(save_userid, save_sec_context);
	}
	PG_END_TRY();
	/* its dependencies, through their triggers like any other rows */
	if (!existed && !s.n[A_AFTER])
		insert_after(&plan_after_job, Q_AFTER_JOB, job, s.a[A_AFTER]);
	SPI_finish();
	PG_RETURN_INT64(job);
}

/*
 * tide.submit_array(queue, request, size, max_running, then replicas ...
 * key as tide.submit) RETURNS bigint: one statement writes the array row,
 * its members and their tasks (R-P5).
 */
Datum
tide_submit_array(PG_FUNCTION_ARGS)
{
	SubmitArgs	s;
	Datum		args[24];
	char		nulls[24];
	Oid			types[24];
	bool		isnull;
	volatile int64 array = 0;
	volatile bool existed = false;
	Oid			save_userid;
	int			save_sec_context;
	Oid			owner;
	volatile bool switched = false;
	volatile TideWriter was_writing = TIDE_WRITER_NONE;
	int			k;
	int32		size;

	read_args(fcinfo, &s, true);
	if (PG_ARGISNULL(ARRAY_A_SIZE) || PG_GETARG_INT32(ARRAY_A_SIZE) < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 PG_ARGISNULL(ARRAY_A_SIZE) ? errmsg("size must be at least 1, not NULL")
				 : errmsg("size must be at least 1, not %d", PG_GETARG_INT32(ARRAY_A_SIZE))));
	size = PG_GETARG_INT32(ARRAY_A_SIZE);
	if (size > ARRAY_MAX_SIZE)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("size %d is above the limit of %d members of an array", size, ARRAY_MAX_SIZE),
				 errhint("Submit several arrays.")));
	if (!PG_ARGISNULL(ARRAY_A_MAX_RUNNING) && PG_GETARG_INT32(ARRAY_A_MAX_RUNNING) < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_running must be at least 1, not %d", PG_GETARG_INT32(ARRAY_A_MAX_RUNNING)),
				 errhint("Leave max_running NULL to let every member run at once.")));
	submit_check(&s);

	owner = events_owner();
	GetUserIdAndSecContext(&save_userid, &save_sec_context);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "tide.submit_array: SPI_connect failed");
	if (!s.n[A_KEY] && (array = keyed_id(&plan_key_array, Q_KEY_ARRAY, s.a[A_KEY], "array")) != 0)
	{
		SPI_finish();
		PG_RETURN_INT64(array);
	}
	was_writing = tide_writer_set(TIDE_WRITER_SUBMIT);
	PG_TRY();
	{
		if (XactIsoLevel != XACT_READ_COMMITTED)
		{
			types[0] = TEXTOID;
			run_as_owner(owner, save_userid, save_sec_context, &switched,
						 &plan_lock_queue, Q_LOCK_QUEUE, 1, types, &s.a[A_QUEUE], SPI_OK_SELECT);
		}

		/* the array, its members and their tasks, with the caller's rights */
		k = job_params(&s, args, nulls, types);
		if (k != 22)
			elog(ERROR, "tide.submit_array: %d job parameters, not 22", k);
		args[22] = Int32GetDatum(size);
		nulls[22] = ' ';
		types[22] = INT4OID;
		args[23] = PG_ARGISNULL(ARRAY_A_MAX_RUNNING) ? (Datum) 0 : PG_GETARG_DATUM(ARRAY_A_MAX_RUNNING);
		nulls[23] = PG_ARGISNULL(ARRAY_A_MAX_RUNNING) ? 'n' : ' ';
		types[23] = INT4OID;
		run_plan(saved_plan(&plan_array, Q_ARRAY, 24, types), args, nulls, SPI_OK_SELECT);
		if (SPI_processed == 0 && !s.n[A_KEY])
		{
			array = keyed_id(&plan_key_array, Q_KEY_ARRAY, s.a[A_KEY], "array");
			if (array == 0)
				elog(ERROR, "tide.submit_array: key \"%s\" conflicts, yet no array of it is visible",
					 TextDatumGetCString(s.a[A_KEY]));
			existed = true;
		}
		else
		{
			if (SPI_processed != 1)
				elog(ERROR, "tide.submit_array: the array's INSERT returned " UINT64_FORMAT " rows", SPI_processed);
			array = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

			/* their tasks, with the caller's rights */
			task_params(&s, array, args, types);
			run_plan(saved_plan(&plan_array_tasks, Q_ARRAY_TASKS, 4, types), args, NULL, SPI_OK_INSERT);

			/* its members' submissions in the history, as the history's owner */
			args[0] = Int64GetDatum(array);
			types[0] = INT8OID;
			run_as_owner(owner, save_userid, save_sec_context, &switched,
						 &plan_events_array, Q_EVENTS_ARRAY, 1, types, args, SPI_OK_INSERT);

			if (!tide_writer_in_cycle())
				tide_note_change();
		}
	}
	PG_FINALLY();
	{
		tide_writer_set(was_writing);
		if (switched)
			SetUserIdAndSecContext(save_userid, save_sec_context);
	}
	PG_END_TRY();
	if (!existed && !s.n[A_AFTER])
		insert_after(&plan_after_array, Q_AFTER_ARRAY, array, s.a[A_AFTER]);
	SPI_finish();
	PG_RETURN_INT64(array);
}
