/*
 * cycle_guard.c: how tide.run_cycle() writes its own rows safely without
 * paying, row by row, for the triggers that guard every other writer.
 *
 * Every other writer of tide.jobs and tide.allocations goes through the
 * state-machine triggers, the allocations' foreign key to tide.nodes and
 * the R-C4 check of the allocations' insert trigger.  The cycle's two big
 * statements (its UPDATE of tide.jobs, its INSERT INTO tide.allocations)
 * run instead with session_replication_role = replica, set here by C code
 * around those two fixed statements only (run_cycle's own search_path;
 * no user code runs in between), and make the same guarantees set-based:
 *
 *   - the touched nodes are locked once, in name order, FOR NO KEY UPDATE
 *     (the lock the allocations' insert trigger takes for other writers,
 *     and which an UPDATE of a node's capacity or state also needs), so no
 *     capacity change, drain, delete or other insert on them runs until the
 *     cycle commits; a node gone, no longer ready, or held by another
 *     transaction past tide.cycle_lock_timeout drops the jobs placed on it
 *     from this cycle;
 *   - R-C4 is checked once for all those nodes, their live allocations and
 *     the rows about to be inserted, in a snapshot taken after the locks
 *     (tide._overcommitted); a node that would break it drops its jobs too
 *     (dropping a job only lowers what any node holds);
 *   - the placed jobs' history rows are written in one statement
 *     (tide._log_cycle_placed), and each node that got work is notified
 *     once.
 *
 * No setting a user can change turns the triggers off for anyone else:
 * session_replication_role is superuser-only, and the cycle restores it
 * before anything else runs.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "cycle.h"
#include "cycle_guard.h"

PG_FUNCTION_INFO_V1(tide_cycle_writing);

/*
 * True only while tide.run_cycle() runs one of its own writes: only then
 * may tide._log_cycle_placed() write history, and only the cycle's give-up
 * UPDATE move a job from allocated back to pending.  A backend-local flag,
 * so no setting can fake it.
 */
static bool cycle_writing = false;

/*
 * Lock the nodes the engine placed on, in name order, returning for each
 * the index given with it and whether it is still ready.  A node gone is
 * not returned; the SKIP LOCKED form leaves out those another transaction
 * holds.
 */
#define Q_LOCK_NODES(SKIP) \
"SELECT u.i, n.state = 'ready'" \
"  FROM tide.nodes n JOIN unnest($1::text[], $2::int[]) AS u(name, i) ON u.name = n.name" \
" ORDER BY n.name" \
"   FOR NO KEY UPDATE OF n" SKIP
static const char *const Q_LOCK = Q_LOCK_NODES("");
static const char *const Q_LOCK_SKIP = Q_LOCK_NODES(" SKIP LOCKED");

/* The locked nodes that the placements would overcommit (R-C4). */
static const char *const Q_OVERCOMMITTED =
"SELECT DISTINCT u.i"
"  FROM unnest($1::text[], $2::int[]) AS u(name, i)"
"  JOIN tide._overcommitted($1, $3, $4, $5, $6) o ON o.node = u.name";

static const char *const Q_NOTIFY =
"SELECT pg_catalog.count(pg_catalog.pg_notify(tide.node_channel(u.node), 'claim'))"
"  FROM unnest($1::text[]) AS u(node)";

int
cycle_execute(const char *sql, int nargs, Oid *types, Datum *args, int flags)
{
	volatile int ret = 0;
	volatile int nest = -1;

	if (flags & CYCLE_NO_TRIGGERS)
	{
		nest = NewGUCNestLevel();
		(void) set_config_option("session_replication_role", "replica", PGC_SUSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
	cycle_writing = (flags & (CYCLE_WRITING | CYCLE_NO_TRIGGERS)) != 0;
	PG_TRY();
	{
		ret = SPI_execute_with_args(sql, nargs, types, args, NULL, false, 0);
	}
	PG_FINALLY();
	{
		cycle_writing = false;
	}
	PG_END_TRY();
	if (nest >= 0)
		AtEOXact_GUC(true, nest);
	return ret;
}

int
cycle_execute_waiting(const char *sql, const char *skip_sql, int nargs, Oid *types, Datum *args,
					  int flags, const char *what)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile int ret = 0;
	char		timeout[32];

	if (tide_cycle_lock_timeout == 0)
		return cycle_execute(skip_sql, nargs, types, args, flags);
	snprintf(timeout, sizeof(timeout), "%dms", tide_cycle_lock_timeout);
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		int			nest = NewGUCNestLevel();

		(void) set_config_option("lock_timeout", timeout, PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		ret = cycle_execute(sql, nargs, types, args, flags);
		AtEOXact_GUC(true, nest);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
			ReThrowError(edata);
		FreeErrorData(edata);
		ereport(LOG,
				(errmsg("tide.run_cycle: %s was held by another transaction; this cycle skips the held ones", what)));
		ret = cycle_execute(skip_sql, nargs, types, args, flags);
	}
	PG_END_TRY();
	return ret;
}

/*
 * For each row of SPI_tuptable (column 1 a node index): bad[i] becomes
 * value_when_listed, or true if has_ok_column and column 2 is not true.
 */
static void
mark_nodes(bool *bad, bool value_when_listed, bool has_ok_column)
{
	for (uint64 k = 0; k < SPI_processed; k++)
	{
		bool		isnull;
		int			i = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[k], SPI_tuptable->tupdesc, 1, &isnull));
		bool		ok = true;

		if (has_ok_column)
			ok = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[k], SPI_tuptable->tupdesc, 2, &isnull)) && !isnull;
		bad[i] = ok ? value_when_listed : true;
	}
}

void
cycle_placement_rows(const CycleLoad *l, const TideResult *r, const bool *keep,
					 PlacementRows *rows, Datum *node_text)
{
	TideSnapshot *s = l->s;

	placement_rows_init(rows, r->nplacements);
	for (int i = 0; i < r->nplacements; i++)
	{
		const TidePlacement *p = &r->placements[i];
		int			ri = l->role_base[p->job] + p->role;

		if (keep != NULL && !keep[p->job])
			continue;
		if (node_text[p->node] == (Datum) 0)
			node_text[p->node] = CStringGetTextDatum(s->nodes[p->node].name);
		placement_rows_add(rows, s->jobs[p->job].id, CStringGetTextDatum(l->role_name[ri]), p->replica,
						   node_text[p->node], l->role_request[ri], p->gpus, p->gpu_milli);
	}
}

int
cycle_lock_nodes(const CycleLoad *l, const TideResult *r, const CycleTypes *types, bool *dropped)
{
	TideSnapshot *s = l->s;
	bool	   *bad = palloc(sizeof(bool) * (s->nnodes + 1));
	Datum	   *names = palloc(sizeof(Datum) * (s->nnodes + 1));
	Datum	   *index = palloc(sizeof(Datum) * (s->nnodes + 1));
	Datum	   *node_text = palloc0(sizeof(Datum) * (s->nnodes + 1));
	PlacementRows rows;
	Datum		args[PLACEMENT_ROWS_NARGS];
	Oid			argtypes[PLACEMENT_ROWS_NARGS];
	Datum		qargs[6];
	Oid			qtypes[6];
	SPIPlanPtr	plan;
	int			n = 0;
	int			ndropped = 0;
	int			ret;

	if (r->nplacements == 0)
		return 0;
	cycle_placement_rows(l, r, NULL, &rows, node_text);
	for (int k = 0; k < s->nnodes; k++)
	{
		if (node_text[k] == (Datum) 0)
			continue;			/* nothing placed there */
		names[n] = node_text[k];
		index[n] = Int32GetDatum(k);
		n++;
	}
	qargs[0] = PointerGetDatum(tide_array_of(names, NULL, n, TEXTOID));
	qargs[1] = PointerGetDatum(tide_array_of(index, NULL, n, INT4OID));
	qtypes[0] = TEXTARRAYOID;
	qtypes[1] = INT4ARRAYOID;

	/* every touched node is bad until the lock returns it ready */
	for (int k = 0; k < s->nnodes; k++)
		bad[k] = true;
	ret = cycle_execute_waiting(Q_LOCK, Q_LOCK_SKIP, 2, qtypes, qargs, 0, "a node row");
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "tide.run_cycle: locking nodes failed: %s", SPI_result_code_string(ret));
	mark_nodes(bad, false, true);

	/* R-C4 over the locked nodes, in a snapshot taken after the locks */
	placement_rows_args(&rows, types, 0, args, argtypes);
	for (int k = 0; k < 4; k++)
	{
		qargs[2 + k] = args[3 + k];
		qtypes[2 + k] = argtypes[3 + k];
	}
	plan = SPI_prepare(Q_OVERCOMMITTED, 6, qtypes);
	if (plan == NULL)
		elog(ERROR, "tide.run_cycle: preparing the capacity check failed: %s", SPI_result_code_string(SPI_result));
	ret = SPI_execute_snapshot(plan, qargs, NULL, GetLatestSnapshot(), InvalidSnapshot, false, false, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "tide.run_cycle: checking capacity failed: %s", SPI_result_code_string(ret));
	mark_nodes(bad, true, false);
	SPI_freeplan(plan);

	for (int i = 0; i < r->nplacements; i++)
	{
		const TidePlacement *p = &r->placements[i];

		if (bad[p->node] && !dropped[p->job])
		{
			dropped[p->job] = true;
			ndropped++;
		}
	}
	if (ndropped > 0)
		ereport(LOG,
				(errmsg("tide.run_cycle: %d placed jobs left pending: a node of theirs changed or was held while the cycle placed them",
						ndropped)));
	return ndropped;
}

void
cycle_notify_nodes(Datum *node_text, int nnodes)
{
	Datum	   *names = palloc(sizeof(Datum) * (nnodes + 1));
	int			n = 0;
	Datum		arg;
	Oid			type = TEXTARRAYOID;
	int			ret;

	for (int k = 0; k < nnodes; k++)
		if (node_text[k] != (Datum) 0)
			names[n++] = node_text[k];
	if (n == 0)
		return;
	arg = PointerGetDatum(tide_array_of(names, NULL, n, TEXTOID));
	ret = SPI_execute_with_args(Q_NOTIFY, 1, &type, &arg, NULL, false, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "tide.run_cycle: notifying launchers failed: %s", SPI_result_code_string(ret));
}

/*
 * tide._cycle_writing() returns boolean: is this backend's tide.run_cycle()
 * running one of its own writes right now (for the triggers).
 */
Datum
tide_cycle_writing(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(cycle_writing);
}
