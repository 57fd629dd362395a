/*
 * cycle_loop.c: the C side of tide.cycle_loop(), the looping procedure that
 * pg_cron < 1.5 starts every minute (extension/70_cron.sql).
 *
 * - tide._apply_reload(): a loop runs for a minute in one backend that
 *   never goes idle, so it never reaches the point where a backend reads
 *   the configuration again after pg_reload_conf().  The loop calls this
 *   before each cycle, so a setting changed with ALTER SYSTEM and a reload
 *   reaches the next cycle, as it would reach a backend's next command.
 * - tide._start_cycle_loop(): pg_cron 1.4 starts jobs at whole minutes
 *   only, so tide.schedule_cycles() starts the loop at once in a dynamic
 *   background worker of its own; it runs until the minute ends, when
 *   pg_cron's job takes over (the loop lock in tide.cycle_loop() lets one
 *   loop per resource group run cycles at a time).
 */
#include "postgres.h"

#include <signal.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/params.h"
#include "parser/analyze.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "tcop/pquery.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/portal.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "cut.h"

PG_FUNCTION_INFO_V1(tide_apply_reload);
PG_FUNCTION_INFO_V1(tide_start_cycle_loop);

PGDLLEXPORT void tide_cycle_loop_worker(Datum main_arg);

/* What the worker needs, in bgw_extra (BGW_EXTRALEN bytes) */
typedef struct CycleLoopArgs
{
	Oid			database;
	Oid			role;
	int32		every_secs;
	bool		whole;			/* the whole cluster's loop (no group) */
	char		group[BGW_EXTRALEN - 3 * sizeof(int32) - 4];
} CycleLoopArgs;

StaticAssertDecl(sizeof(CycleLoopArgs) <= BGW_EXTRALEN,
				 "CycleLoopArgs must fit in bgw_extra");

static bool sighup_checked = false;

/*
 * tide._apply_reload() -> boolean: reads the configuration files again if
 * a reload was signalled since this backend last did (true if it read
 * them).  A backend notes SIGHUP and reads the files when it next waits
 * for a command; a background worker ignores SIGHUP unless it asked for
 * it, and pg_cron's workers do not: the first call in such a process takes
 * SIGHUP like a backend and reads the files once, so no reload between the
 * worker's start and this call is missed.  Another handler (a process of
 * some other extension's own) is left alone.
 */
Datum
tide_apply_reload(PG_FUNCTION_ARGS)
{
	bool		reloaded = false;

	if (!sighup_checked)
	{
		pqsigfunc	prev = pqsignal(SIGHUP, SignalHandlerForConfigReload);

		sighup_checked = true;
		if (prev == SIG_IGN)
			ConfigReloadPending = true;
		else if (prev != SignalHandlerForConfigReload)
			(void) pqsignal(SIGHUP, prev);
	}
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
		reloaded = true;
	}
	PG_RETURN_BOOL(reloaded);
}

/* A loop to start when the transaction that asked for it commits */
typedef struct PendingLoop
{
	CycleLoopArgs args;
	SubTransactionId subid;		/* the subtransaction that asked */
	struct PendingLoop *next;
} PendingLoop;

static PendingLoop *pending_loops = NULL;
static bool callbacks_registered = false;

/*
 * Starts a worker for each pending loop.  Called after the commit, where
 * an error can no longer be raised: a worker that cannot start is a NOTICE
 * (the cycles then start with pg_cron's job at the next minute).
 */
static void
start_pending_loops(void)
{
	while (pending_loops != NULL)
	{
		PendingLoop *p = pending_loops;
		BackgroundWorker worker;
		BackgroundWorkerHandle *handle;

		pending_loops = p->next;
		memset(&worker, 0, sizeof(worker));
		worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
		worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
		worker.bgw_restart_time = BGW_NEVER_RESTART;
		strlcpy(worker.bgw_library_name, "pg_tide", BGW_MAXLEN);
		strlcpy(worker.bgw_function_name, "tide_cycle_loop_worker", BGW_MAXLEN);
		strlcpy(worker.bgw_type, "pg_tide cycle loop", BGW_MAXLEN);
		snprintf(worker.bgw_name, BGW_MAXLEN, "pg_tide cycle loop%s%s",
				 p->args.whole ? "" : " of ", p->args.group);
		memcpy(worker.bgw_extra, &p->args, sizeof(p->args));
		worker.bgw_notify_pid = 0;
		if (!RegisterDynamicBackgroundWorker(&worker, &handle))
			ereport(NOTICE,
					(errmsg("no background worker free to start the cycle loop: cycles start at the next whole minute"),
					 errhint("Raise max_worker_processes (a restart) above what pg_cron and parallel queries use.")));
		pfree(p);
	}
}

/* Forgets the pending loops of subtransaction subid (all when invalid) */
static void
drop_pending_loops(SubTransactionId subid)
{
	PendingLoop **link = &pending_loops;

	while (*link != NULL)
	{
		PendingLoop *p = *link;

		if (subid == InvalidSubTransactionId || p->subid == subid)
		{
			*link = p->next;
			pfree(p);
		}
		else
			link = &p->next;
	}
}

static void
loops_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT)
		start_pending_loops();
	else if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PREPARE ||
			 event == XACT_EVENT_PARALLEL_ABORT)
		drop_pending_loops(InvalidSubTransactionId);
}

static void
loops_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	PendingLoop *p;

	if (event == SUBXACT_EVENT_ABORT_SUB)
		drop_pending_loops(mySubid);
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
		for (p = pending_loops; p != NULL; p = p->next)
			if (p->subid == mySubid)
				p->subid = parentSubid;
}

/*
 * tide._start_cycle_loop(every interval, resource_group text) -> boolean:
 * starts CALL tide.cycle_loop(every, NULL, resource_group) in a background
 * worker in this database as the calling role, once this transaction
 * commits (a rolled back schedule starts nothing); false, with a NOTICE
 * saying why, when it cannot.
 */
Datum
tide_start_cycle_loop(PG_FUNCTION_ARGS)
{
	Interval   *every = PG_GETARG_INTERVAL_P(0);
	CycleLoopArgs args;
	PendingLoop *p;
	int64		usecs;

	memset(&args, 0, sizeof(args));
	args.database = MyDatabaseId;
	args.role = GetUserId();
	usecs = every->time + (int64) every->day * USECS_PER_DAY;
	if (every->month != 0 || usecs < USECS_PER_SEC || usecs % USECS_PER_SEC != 0 ||
		usecs / USECS_PER_SEC > SECS_PER_HOUR)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cycle loop interval must be 1 to 3600 whole seconds, not %s",
						DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(every))))));
	args.every_secs = (int32) (usecs / USECS_PER_SEC);
	args.whole = PG_ARGISNULL(1);
	if (!args.whole)
	{
		char	   *group = text_to_cstring(PG_GETARG_TEXT_PP(1));

		if (strlen(group) >= sizeof(args.group))
		{
			ereport(NOTICE,
					(errmsg("cycles of resource group \"%s\" start at the next whole minute",
							tide_cut(group, TIDE_CUT_DEFAULT)),
					 errdetail("The name is too long to hand to a background worker (%zu bytes, at most %zu).",
							   strlen(group), sizeof(args.group) - 1)));
			PG_RETURN_BOOL(false);
		}
		strlcpy(args.group, group, sizeof(args.group));
	}

	if (!callbacks_registered)
	{
		RegisterXactCallback(loops_xact_callback, NULL);
		RegisterSubXactCallback(loops_subxact_callback, NULL);
		callbacks_registered = true;
	}
	p = MemoryContextAlloc(TopMemoryContext, sizeof(PendingLoop));
	p->args = args;
	p->subid = GetCurrentSubTransactionId();
	p->next = pending_loops;
	pending_loops = p;
	PG_RETURN_BOOL(true);
}

/*
 * Runs one CALL statement as a client's simple query would (postgres.c's
 * exec_simple_query, as pg_cron's workers do): at top level, through a
 * portal, so that the procedure may COMMIT.  Its parse and plan trees live
 * in their own memory context, since each COMMIT ends the transaction in
 * whose memory they would otherwise be.
 */
static void
run_call(const char *sql, int nparams, Oid *types, ParamListInfo params)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "pg_tide cycle loop",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old;
	RawStmt    *raw;
	List	   *querytrees;
	List	   *plantrees;
	Portal		portal;
	DestReceiver *dest;
	QueryCompletion qc;
	bool		snapshot_set = false;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	old = MemoryContextSwitchTo(cxt);
	raw = linitial_node(RawStmt, pg_parse_query(sql));
	if (analyze_requires_snapshot(raw))
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		snapshot_set = true;
	}
	querytrees = pg_analyze_and_rewrite_fixedparams(raw, sql, types, nparams, NULL);
	plantrees = pg_plan_queries(querytrees, sql, CURSOR_OPT_PARALLEL_OK, NULL);
	if (snapshot_set)
		PopActiveSnapshot();

	portal = CreatePortal("", true, true);
	portal->visible = false;
	PortalDefineQuery(portal, NULL, sql, CMDTAG_CALL, plantrees, NULL);
	PortalStart(portal, params, 0, InvalidSnapshot);
	dest = CreateDestReceiver(DestNone);
	(void) PortalRun(portal, FETCH_ALL, true, true, dest, dest, &qc);
	dest->rDestroy(dest);
	PortalDrop(portal, false);
	MemoryContextSwitchTo(old);
	CommitTransactionCommand();
	MemoryContextDelete(cxt);
}

/*
 * The background worker: connects to the database as the role that called
 * tide.schedule_cycles() and runs that minute's cycle loop.
 */
void
tide_cycle_loop_worker(Datum main_arg)
{
	CycleLoopArgs args;
	Oid			types[2] = {INTERVALOID, TEXTOID};
	ParamListInfo params;
	Interval   *every;

	memcpy(&args, MyBgworkerEntry->bgw_extra, sizeof(args));
	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(args.database, args.role, 0);
	pgstat_report_appname("pg_tide cycle loop");

	every = palloc0(sizeof(Interval));
	every->time = (int64) args.every_secs * USECS_PER_SEC;
	params = makeParamList(2);
	params->params[0].value = IntervalPGetDatum(every);
	params->params[0].isnull = false;
	params->params[0].pflags = PARAM_FLAG_CONST;
	params->params[0].ptype = INTERVALOID;
	params->params[1].value = args.whole ? (Datum) 0 : CStringGetTextDatum(args.group);
	params->params[1].isnull = args.whole;
	params->params[1].pflags = PARAM_FLAG_CONST;
	params->params[1].ptype = TEXTOID;

	pgstat_report_activity(STATE_RUNNING, "CALL tide.cycle_loop($1, NULL, $2)");
	run_call("CALL tide.cycle_loop($1, NULL, $2)", 2, types, params);
	pgstat_report_activity(STATE_IDLE, NULL);
	proc_exit(0);
}
