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
 *   - the engine kept R-C4 over what the load saw, so only the locked
 *     nodes that changed since are checked again: a capacity other than
 *     the one loaded, or a live allocation the load did not see as it is
 *     now (Q_CHANGED, in a snapshot taken after the locks); those go
 *     through tide._overcommitted with the rows about to be inserted, in
 *     that snapshot, and a node that would break it drops its jobs too
 *     (dropping a job only lowers what any node holds);
 *   - the placed jobs' history rows are written by the statement that
 *     moves them (tide._cycle_place_jobs), and each node that got work is
 *     notified once.
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
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "cycle_guard.h"
#include "cycle_rows.h"
#include "gpumask.h"
#include "resvec.h"
#include "settings.h"
#include "writer.h"

/* work_mem (kB) of the cycle's trigger-less writes, at least */
#define CYCLE_WRITE_WORK_MEM_KB 65536

/*
 * Lock the nodes the engine placed on, in name order, returning for each
 * the index given with it, whether it is still ready, and its capacity now.
 * A node gone is not returned; the SKIP LOCKED form leaves out those
 * another transaction holds.
 */
#define Q_LOCK_NODES(SKIP) \
"SELECT u.i, n.state = 'ready', n.capacity" \
"  FROM tide.nodes n JOIN unnest($1::text[], $2::int[]) AS u(name, i) ON u.name = n.name" \
" ORDER BY n.name" \
"   FOR NO KEY UPDATE OF n" SKIP
static const char *const Q_LOCK = Q_LOCK_NODES("");
static const char *const Q_LOCK_SKIP = Q_LOCK_NODES(" SKIP LOCKED");

/*
 * The locked nodes whose live allocations are not those the load saw ($3 ..
 * $7: id, node index, resources, GPUs, GPU share of each allocation loaded
 * on them): one inserted, moved there, or changed in place since.  Read in
 * a snapshot taken after the locks.  Released ones are left out: they only
 * lower what a node holds.
 */
static const char *const Q_CHANGED =
"SELECT DISTINCT u.i"
"  FROM unnest($1::text[], $2::int[]) AS u(name, i)"
"  JOIN tide.allocations a ON a.node = u.name AND a.state <> 'released'"
"  LEFT JOIN unnest($3::bigint[], $4::int[], $5::tide.resvec[], $6::tide.gpumask[], $7::int[])"
"         AS k(id, i, resources, gpus, gpu_milli) ON k.id = a.id"
" WHERE k.id IS NULL OR k.i <> u.i"
"    OR NOT (k.resources OPERATOR(tide.=) a.resources)"
"    OR NOT (k.gpus OPERATOR(tide.=) a.gpus)"
"    OR k.gpu_milli IS DISTINCT FROM a.gpu_milli";

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
	TideWriter	was;

	if (flags & CYCLE_NO_TRIGGERS)
	{
		nest = NewGUCNestLevel();
		(void) set_config_option("session_replication_role", "replica", PGC_SUSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);

		/*
		 * PostgreSQL fills the transition tables of the statement triggers
		 * on tide.jobs and tide.allocations whether they fire or not: the
		 * old and new job rows of 22k placements (100k pending) are 13 MB,
		 * spilled to a temporary file under the default work_mem.
		 */
		if (work_mem < CYCLE_WRITE_WORK_MEM_KB)
			(void) set_config_option("work_mem", CppAsString2(CYCLE_WRITE_WORK_MEM_KB), PGC_USERSET,
									 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	}
	/*
	 * Only while one of its own writes runs may tide._cycle_place_jobs()
	 * write history, and only the cycle's give-up UPDATE move a job from
	 * allocated back to pending (tide._writer() = 'cycle_write').
	 */
	was = tide_writer_set((flags & (CYCLE_WRITING | CYCLE_NO_TRIGGERS)) ? TIDE_WRITER_CYCLE_WRITE
						  : tide_writer());
	PG_TRY();
	{
		ret = SPI_execute_with_args(sql, nargs, types, args, NULL, false, 0);
	}
	PG_FINALLY();
	{
		tide_writer_set(was);
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

/* Does a node's capacity now (a resvec datum) differ from the one loaded? */
static bool
capacity_changed(const TideSnapshot *s, const TideNode *n, Datum now)
{
	ResVec	   *rv = DatumGetResVecP(now);
	int			loaded = 0;

	for (int r = 0; r < s->nres; r++)
		loaded += n->capacity[r] != 0;
	if (resvec_count(rv) != loaded)
		return true;
	for (int k = 0; k < resvec_count(rv); k++)
	{
		int			r = tide_res_lookup(s, resvec_name(rv, k));

		if (r < 0 || n->capacity[r] != resvec_milli(rv, k))
			return true;
	}
	return false;
}

/*
 * Run sql (a query whose first column is a node index) in the latest
 * snapshot and set flags[i] for every index it returns; what names the
 * check in errors.
 */
static void
mark_latest(const char *sql, int nargs, Oid *types, Datum *args, const char *what, bool *flags)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, types);
	int			ret;

	if (plan == NULL)
		elog(ERROR, "tide.run_cycle: preparing the %s failed: %s", what, SPI_result_code_string(SPI_result));
	ret = SPI_execute_snapshot(plan, args, NULL, GetLatestSnapshot(), InvalidSnapshot, false, false, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "tide.run_cycle: the %s failed: %s", what, SPI_result_code_string(ret));
	for (uint64 k = 0; k < SPI_processed; k++)
	{
		bool		isnull;

		flags[DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[k], SPI_tuptable->tupdesc, 1, &isnull))] = true;
	}
	SPI_freeplan(plan);
}

/*
 * Mark changed[k] for the locked nodes (touched[k]) whose live allocations
 * differ from those the load saw (Q_CHANGED, in the latest snapshot).
 */
static void
mark_allocations_changed(const CycleLoad *l, const CycleTypes *types, Datum *qargs, Oid *qtypes,
						 const bool *touched, bool *changed)
{
	TideSnapshot *s = l->s;
	int			n = 0;
	Datum	   *ids = palloc(sizeof(Datum) * (s->nrunning + 1));
	Datum	   *node = palloc(sizeof(Datum) * (s->nrunning + 1));
	Datum	   *res = palloc(sizeof(Datum) * (s->nrunning + 1));
	Datum	   *gpus = palloc(sizeof(Datum) * (s->nrunning + 1));
	Datum	   *milli = palloc(sizeof(Datum) * (s->nrunning + 1));
	bool	   *milli_null = palloc(sizeof(bool) * (s->nrunning + 1));

	for (int i = 0; i < s->nrunning; i++)
	{
		const TideRunning *a = &s->running[i];

		if (a->node < 0 || !touched[a->node])
			continue;
		ids[n] = Int64GetDatum(a->alloc_id);
		node[n] = Int32GetDatum(a->node);
		res[n] = cycle_vec_resvec(s, a->res);
		gpus[n] = GpuMaskGetDatum(a->gpus);
		milli[n] = Int32GetDatum(a->gpu_milli);
		milli_null[n] = a->gpu_milli == 0;
		n++;
	}
	qargs[2] = PointerGetDatum(tide_array_of(ids, NULL, n, INT8OID));
	qargs[3] = PointerGetDatum(tide_array_of(node, NULL, n, INT4OID));
	qargs[4] = PointerGetDatum(tide_array_of(res, NULL, n, types->resvec));
	qargs[5] = PointerGetDatum(tide_array_of(gpus, NULL, n, types->gpumask));
	qargs[6] = PointerGetDatum(tide_array_of(milli, milli_null, n, INT4OID));
	qtypes[2] = INT8ARRAYOID;
	qtypes[3] = INT4ARRAYOID;
	qtypes[4] = types->resvec_array;
	qtypes[5] = types->gpumask_array;
	qtypes[6] = INT4ARRAYOID;
	mark_latest(Q_CHANGED, 7, qtypes, qargs, "allocation check", changed);
}

/*
 * R-C4 over the changed nodes (changed[k], n of them), with what the
 * placements add there, in the latest snapshot (tide._overcommitted): the
 * nodes it would break become bad.
 */
static void
check_changed_nodes(const CycleLoad *l, const TideResult *r, const CycleTypes *types,
					const bool *changed, int n, bool *bad)
{
	TideSnapshot *s = l->s;
	Datum	   *names = palloc(sizeof(Datum) * (n + 1));
	Datum	   *index = palloc(sizeof(Datum) * (n + 1));
	Datum	   *node_text = palloc0(sizeof(Datum) * (s->nnodes + 1));
	PlacementRows rows;
	Datum		args[PLACEMENT_ROWS_NARGS];
	Oid			argtypes[PLACEMENT_ROWS_NARGS];
	Datum		qargs[6];
	Oid			qtypes[6] = {TEXTARRAYOID, INT4ARRAYOID};
	int			m = 0;

	placement_rows_init(&rows, r->nplacements);
	for (int i = 0; i < r->nplacements; i++)
	{
		const TidePlacement *p = &r->placements[i];
		int			ri = l->role_base[p->job] + p->role;

		if (!changed[p->node])
			continue;
		if (node_text[p->node] == (Datum) 0)
		{
			node_text[p->node] = CStringGetTextDatum(s->nodes[p->node].name);
			names[m] = node_text[p->node];
			index[m] = Int32GetDatum(p->node);
			m++;
		}
		placement_rows_add(&rows, s->jobs[p->job].id, CStringGetTextDatum(l->role_name[ri]), p->replica,
						   node_text[p->node], l->role_request[ri], p->gpus, p->gpu_milli);
	}
	Assert(m == n);
	qargs[0] = PointerGetDatum(tide_array_of(names, NULL, m, TEXTOID));
	qargs[1] = PointerGetDatum(tide_array_of(index, NULL, m, INT4OID));
	placement_rows_args(&rows, types, 0, args, argtypes);
	for (int k = 0; k < 4; k++)
	{
		qargs[2 + k] = args[3 + k];
		qtypes[2 + k] = argtypes[3 + k];
	}
	mark_latest(Q_OVERCOMMITTED, 6, qtypes, qargs, "capacity check", bad);
}

int
cycle_lock_nodes(const CycleLoad *l, const TideResult *r, const CycleTypes *types, bool *dropped)
{
	TideSnapshot *s = l->s;
	bool	   *bad = palloc(sizeof(bool) * (s->nnodes + 1));
	bool	   *touched = palloc0(sizeof(bool) * (s->nnodes + 1));
	bool	   *changed = palloc0(sizeof(bool) * (s->nnodes + 1));
	Datum	   *names = palloc(sizeof(Datum) * (s->nnodes + 1));
	Datum	   *index = palloc(sizeof(Datum) * (s->nnodes + 1));
	Datum		qargs[7];
	Oid			qtypes[7];
	int			n = 0;
	int			nchanged = 0;
	int			ndropped = 0;
	int			ret;

	if (r->nplacements == 0)
		return 0;
	for (int i = 0; i < r->nplacements; i++)
		touched[r->placements[i].node] = true;
	for (int k = 0; k < s->nnodes; k++)
	{
		if (!touched[k])
			continue;			/* nothing placed there */
		names[n] = CStringGetTextDatum(s->nodes[k].name);
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
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	t = SPI_tuptable->vals[i];
		TupleDesc	d = SPI_tuptable->tupdesc;
		bool		isnull;
		int			k = DatumGetInt32(SPI_getbinval(t, d, 1, &isnull));
		Datum		ready = SPI_getbinval(t, d, 2, &isnull);

		bad[k] = isnull || !DatumGetBool(ready);
		if (!bad[k] && capacity_changed(s, &s->nodes[k], SPI_getbinval(t, d, 3, &isnull)))
			changed[k] = true;
	}

	/*
	 * The engine kept R-C4 over what the load saw: only a node whose
	 * capacity or live allocations changed since needs the check again,
	 * with the rows about to be added, in a snapshot taken after the locks.
	 */
	mark_allocations_changed(l, types, qargs, qtypes, touched, changed);
	for (int k = 0; k < s->nnodes; k++)
		nchanged += changed[k] && !bad[k];
	elog(DEBUG1, "tide.run_cycle: %d nodes locked, %d of them changed since the load", n, nchanged);
	if (nchanged > 0)
	{
		for (int k = 0; k < s->nnodes; k++)
			changed[k] = changed[k] && !bad[k];
		check_changed_nodes(l, r, types, changed, nchanged, bad);
	}

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
