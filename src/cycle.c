/*
 * cycle.c: tide.run_cycle(), the SPI adapter around the policy engine:
 * the order of one cycle, in the caller's transaction (R-C1).
 *
 *   1. lock: pg_try_advisory_xact_lock(tide._cycle_lock_key()), or for one
 *      resource group's cycle that key shared and the group's own
 *      (try_cycle_lock); NULL at once if another cycle holds it;
 *   2. a tide.cycles row, and the transaction-local setting tide.cycle_id
 *      that the state-machine triggers copy into tide.job_events;
 *   3. load: nodes lost marked down (cycle_lost.c, R-C3), jobs past their
 *      time limit or start timeout evicted (cycle_limits.c, R-T1, R-T4); then, unless
 *      nothing changed since the last complete cycle (quiet: tide.change_seq
 *      as it recorded, no clock-driven decision due; the cycle row is all it
 *      writes), one query per table into the engine's snapshot
 *      (cycle_load.c);
 *   4. decide: tide_decide() (src/engine, plain C);
 *   5. write: placements (cycle_place.c), then evictions (cycle_evict.c),
 *      then the queues' decayed usage (cycle_fair.c, R-O6) and the owners'
 *      within queues (cycle_owner_fair.c, R-O7);
 *   6. record: the cycle row's counters and load/decide/write times, and
 *      in tide.cycle_state the counter the load saw (bumped once if the
 *      cycle changed anything, so that the next cycle loads again).
 * Launchers are notified by triggers, delivered at commit: the allocations'
 * insert trigger (one NOTIFY per node that got work) and tide._evict (the
 * victims' nodes).
 *
 * The cycle's files (each calls only files listed after it; the drawing is
 * in docs/development.md):
 *
 *   cycle.c        orchestration: lock, cycle row, load, decide, write, record
 *   cycle_lost.c   nodes whose launcher went silent (R-C3), marked down
 *   cycle_limits.c jobs past their time limit or start timeout, evicted
 *   cycle_load.c   every query the cycle reads with, into the engine's snapshot
 *   cycle_cache.c  the rows a whole-cluster load keeps, and what changed since
 *   cycle_jobs.c   the pending jobs and their tasks, streamed into it
 *   cycle_recv.c   a load query's rows streamed to a callback, no tuple table
 *   cycle_loader.c what both halves of the load share: lookups by name
 *   cycle_shapes.c the typical workload of frag queues: refreshed, loaded
 *   cycle_labels.c labels (jsonb) as the snapshot's label ids
 *   cycle_place.c  placements written: jobs, allocations, reasons, backlog
 *   cycle_guard.c  the cycle's writes without triggers: node locks, R-C4, NOTIFYs
 *   cycle_evict.c  evictions written: victims and held resources
 *   cycle_fair.c   fair share over time: decayed usage read and written (R-O6)
 *   cycle_owner_fair.c  the same for owners within a queue (R-O7)
 *   cycle_rows.c   the arrays the writes unnest
 *   cycle_snapshot.h  the snapshot as loaded (CycleLoad), a type only
 *   cycle_timer.h  the clocks of the phase timings, inline only
 *   settings.h     the settings (defined in pg_tide.c)
 */
#include "postgres.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "cycle_cache.h"
#include "cycle_evict.h"
#include "cycle_fair.h"
#include "cycle_owner_fair.h"
#include "cycle_limits.h"
#include "cycle_load.h"
#include "cycle_lost.h"
#include "cycle_place.h"
#include "cycle_rows.h"
#include "cycle_shapes.h"
#include "cycle_timer.h"
#include "pipelines.h"
#include "writer.h"

PG_FUNCTION_INFO_V1(tide_run_cycle);
PG_FUNCTION_INFO_V1(tide_run_cycle_group);

/* The longest a cycle stays quiet: reasons that follow the clock refresh. */
#define QUIET_MAX_USECS		(60 * USECS_PER_SEC)

/*
 * The change counter, then whether every writer that bumped it is done: the
 * counter is read by the scan, before the lock is tried in the target list.
 */
static const char *const Q_CHANGES =
"SELECT s.last_value,"
"       CASE WHEN pg_catalog.pg_try_advisory_lock(tide._change_lock_key())"
"            THEN pg_catalog.pg_advisory_unlock(tide._change_lock_key()) ELSE false END"
"  FROM tide.change_seq s";

static const char *const Q_STATE =
"SELECT c.change_seq, c.recheck_at <= pg_catalog.clock_timestamp()"
"  FROM tide.cycle_state c WHERE c.resource_group = $1";

static const char *const W_STATE =
"INSERT INTO tide.cycle_state AS c (resource_group, change_seq, recheck_at, cycle_id)"
" VALUES ($1, $2, $3, $4)"
" ON CONFLICT (resource_group) DO UPDATE"
" SET change_seq = excluded.change_seq, recheck_at = excluded.recheck_at, cycle_id = excluded.cycle_id";

static const char *const W_BUMP =
"SELECT pg_catalog.pg_advisory_xact_lock_shared(tide._change_lock_key()),"
"       pg_catalog.nextval('tide.change_seq')";

static const char *const W_CYCLE =
"UPDATE tide.cycles SET finished_at = pg_catalog.clock_timestamp(),"
"       jobs_considered = $2, jobs_placed = $3,"
"       jobs_unschedulable = $4, allocations_made = $5, holds = $6,"
"       reasons_deferred = $10, jobs_evicted = $11,"
"       load_ms = $7, decide_ms = $8, write_ms = $9, load = $13"
" WHERE id = $1 AND started_at = $12";	/* the partition key: one partition */

/*
 * The one-cycle-at-a-time lock (R-C1), without waiting: false if held.  The
 * whole-cluster cycle (group NULL) takes tide._cycle_lock_key() exclusively;
 * a resource group's cycle takes it shared, so that group cycles run side by
 * side but never with a whole-cluster cycle, and then its group's own key
 * exclusively: (1953064037 = 'tide', hashtext(group)) in the two-key space
 * of advisory locks, apart from the bigint keys.  A hash collision of two
 * groups only makes their cycles take turns.
 */
static bool
try_cycle_lock(const char *group)
{
	bool		isnull;
	int			ret;
	Datum		arg;
	Oid			argtype = TEXTOID;

	if (group == NULL)
		ret = SPI_execute("SELECT pg_catalog.pg_try_advisory_xact_lock(tide._cycle_lock_key())", false, 1);
	else
	{
		arg = CStringGetTextDatum(group);
		ret = SPI_execute_with_args("SELECT CASE WHEN pg_catalog.pg_try_advisory_xact_lock_shared(tide._cycle_lock_key())"
									" THEN pg_catalog.pg_try_advisory_xact_lock(1953064037, pg_catalog.hashtext($1))"
									" ELSE false END",
									1, &argtype, &arg, NULL, false, 1);
	}
	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "tide.run_cycle: advisory lock query failed: %s", SPI_result_code_string(ret));
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * The tide.cycles row, and tide.cycle_id for the triggers; returns its id
 * and its started_at (the partition key, *started).
 */
static int64
begin_cycle_row(TimestampTz *started)
{
	bool		isnull;
	int			ret;
	int64		cycle_id;
	Datum		arg;
	Oid			argtype = INT8OID;

	ret = SPI_execute("INSERT INTO tide.cycles (started_at) VALUES (pg_catalog.clock_timestamp()) RETURNING id, started_at", false, 1);
	if (ret != SPI_OK_INSERT_RETURNING || SPI_processed != 1)
		elog(ERROR, "tide.run_cycle: cannot insert the cycle row: %s", SPI_result_code_string(ret));
	cycle_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	*started = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	arg = Int64GetDatum(cycle_id);
	ret = SPI_execute_with_args("SELECT pg_catalog.set_config('tide.cycle_id', $1::text, true)",
								1, &argtype, &arg, NULL, false, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "tide.run_cycle: cannot set tide.cycle_id: %s", SPI_result_code_string(ret));
	return cycle_id;
}

/* The cycle row's counters and phase times. */
static void
record_cycle(int64 cycle_id, TimestampTz started, const TideResult *r, const CyclePlaced *placed, int jobs_evicted,
			 double load_ms, double decide_ms, double write_ms, const char *load)
{
	Datum		args[13];
	Oid			types[13] = {INT8OID, INT4OID, INT4OID, INT4OID, INT4OID, INT4OID,
	FLOAT8OID, FLOAT8OID, FLOAT8OID, INT4OID, INT4OID, TIMESTAMPTZOID, TEXTOID};
	int			ret;

	args[0] = Int64GetDatum(cycle_id);
	args[1] = Int32GetDatum((int32) r->counters.jobs_considered);
	args[2] = Int32GetDatum(placed->jobs_placed);
	args[3] = Int32GetDatum((int32) r->counters.jobs_unschedulable);
	args[4] = Int32GetDatum(placed->allocs_made);
	args[5] = Int32GetDatum((int32) r->counters.holds);
	args[6] = Float8GetDatum(load_ms);
	args[7] = Float8GetDatum(decide_ms);
	args[8] = Float8GetDatum(write_ms);
	args[9] = Int32GetDatum(placed->reasons_deferred);
	args[10] = Int32GetDatum(jobs_evicted);
	args[11] = TimestampTzGetDatum(started);
	args[12] = CStringGetTextDatum(load);
	ret = SPI_execute_with_args(W_CYCLE, 13, types, args, NULL, false, 0);
	if (ret != SPI_OK_UPDATE)
		elog(ERROR, "tide.run_cycle: cannot update the cycle row: %s", SPI_result_code_string(ret));
}

/*
 * Reads tide.change_seq into *seq; true if no writer that bumped it is
 * still in flight (then the load sees every change up to *seq).
 */
static bool
read_changes(int64 *seq)
{
	bool		isnull;
	int			ret;

	ret = SPI_execute(Q_CHANGES, false, 1);
	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "tide.run_cycle: reading tide.change_seq failed: %s", SPI_result_code_string(ret));
	*seq = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
}

/* Did the last complete cycle of scope load at seq, with no clock change due? */
static bool
state_unchanged(const char *scope, int64 seq)
{
	Datum		arg = CStringGetTextDatum(scope);
	Oid			argtype = TEXTOID;
	bool		isnull,
				due_null;
	Datum		d,
				due;
	int			ret;

	ret = SPI_execute_with_args(Q_STATE, 1, &argtype, &arg, NULL, true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "tide.run_cycle: reading tide.cycle_state failed: %s", SPI_result_code_string(ret));
	if (SPI_processed != 1)
		return false;
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	due = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &due_null);
	return !isnull && DatumGetInt64(d) == seq && !due_null && !DatumGetBool(due);
}

/*
 * When the clock alone may change a decision on this snapshot: a running
 * job passing its queue's min_runtime (R-E4: it becomes a possible victim)
 * or its time limit (the backfill shadows, R-L2); at most a minute ahead
 * (the pending reasons that follow the clock).  No pending job: a minute.
 */
static TimestampTz
recheck_time(const TideSnapshot *s)
{
	TimestampTz at = s->now + QUIET_MAX_USECS;

	if (s->njobs == 0)
		return at;
	for (int i = 0; i < s->nrunning; i++)
	{
		const TideRunning *a = &s->running[i];
		int64		min_runtime = s->queues[a->queue].min_runtime;

		if (min_runtime > 0 && a->placed_at > 0 && a->placed_at + min_runtime > s->now &&
			a->placed_at + min_runtime < at)
			at = a->placed_at + min_runtime;
		if (a->end_at != TIDE_TIME_UNKNOWN && a->end_at > s->now && a->end_at < at)
			at = a->end_at;
	}
	return at;
}

/*
 * Records what this complete cycle loaded: seq when no writer was in flight
 * (else NULL: the next cycle loads); if it changed anything, bumps the
 * counter so that the next cycle of any scope loads again.
 */
static void
record_state(const char *scope, int64 cycle_id, bool settled, int64 seq,
			 TimestampTz recheck, bool changed)
{
	Datum		args[4];
	Oid			types[4] = {TEXTOID, INT8OID, TIMESTAMPTZOID, INT8OID};
	char		nulls[4] = {' ', settled ? ' ' : 'n', ' ', ' '};
	int			ret;

	if (changed)
	{
		ret = SPI_execute(W_BUMP, false, 1);
		if (ret != SPI_OK_SELECT)
			elog(ERROR, "tide.run_cycle: bumping tide.change_seq failed: %s", SPI_result_code_string(ret));
	}
	args[0] = CStringGetTextDatum(scope);
	args[1] = Int64GetDatum(seq);
	args[2] = TimestampTzGetDatum(recheck);
	args[3] = Int64GetDatum(cycle_id);
	ret = SPI_execute_with_args(W_STATE, 4, types, args, nulls, false, 0);
	if (ret != SPI_OK_INSERT)
		elog(ERROR, "tide.run_cycle: cannot record tide.cycle_state: %s", SPI_result_code_string(ret));
}

/*
 * The order memo (src/engine/order.c): the job order of this backend's
 * last decide, which the next decide of the same scope reuses for the jobs
 * that did not change instead of sorting every queue again.  The engine
 * checks it against the jobs themselves, so it need not follow aborts or
 * full loads: a memo that no longer fits costs time, never a decision.  It
 * lives in its own context under TopMemoryContext (about 32 bytes a pending
 * job), a decide's new one in another until the decide returns, when the
 * old one goes; a decide that errors leaves its context to the next.
 */
static MemoryContext order_memo_cxt = NULL;
static MemoryContext order_memo_next = NULL;
static const TideOrderMemo *order_memo = NULL;
static const char *order_memo_scope = NULL;	/* in order_memo_cxt */

static void *
order_memo_alloc(void *ctx, size_t size)
{
	return MemoryContextAllocExtended((MemoryContext) ctx, size, MCXT_ALLOC_HUGE);
}

/* The memo for a decide of scope, and where it leaves its own. */
static void
order_memo_give(TideSnapshot *s, const char *scope)
{
	if (order_memo_next)
		MemoryContextDelete(order_memo_next);
	order_memo_next = AllocSetContextCreate(TopMemoryContext, "tide order memo", ALLOCSET_SMALL_SIZES);
	s->order_memo = order_memo && strcmp(order_memo_scope, scope) == 0 ? order_memo : NULL;
	s->order_mem.alloc = order_memo_alloc;
	s->order_mem.free = NULL;
	s->order_mem.ctx = order_memo_next;
}

/* The decide returned: the memo it left is kept, the one before goes. */
static void
order_memo_keep(const TideResult *r, const char *scope)
{
	if (order_memo_cxt)
		MemoryContextDelete(order_memo_cxt);
	order_memo_cxt = order_memo_next;
	order_memo_next = NULL;
	order_memo = r->order_memo;
	order_memo_scope = MemoryContextStrdup(order_memo_cxt, scope);
}

/*
 * The cycle after its row: lost nodes, then quiet or load, decide, write.
 * Returns nothing; the caller owns the lock and the row.
 */
static void
cycle_body(int64 cycle_id, TimestampTz started, const char *group)
{
	const char *scope = group ? group : "";
	CycleLoad	l;
	CycleTypes	types;
	CyclePlaced placed;
	MemoryContext mcxt;
	TideResult *r;
	TideResult	quiet;
	int			lost,
				stopped,
				jobs_evicted;
	bool		settled,
				changed;
	int64		seq;
	instr_time	t0;
	double		load_ms,
				decide_ms,
				write_ms;

	INSTR_TIME_SET_CURRENT(t0);
	lost = tide_cycle_nodes_lost();	/* before the load sees the nodes */
	tide_cycle_wake_due();		/* deferred jobs now due (R-P3), counted as a change */
	stopped = tide_cycle_run_limits();	/* time limits, start timeouts (R-T1, R-T4) */
	settled = read_changes(&seq);
	if (lost == 0 && settled && state_unchanged(scope, seq))
	{
		/* quiet: nothing the load would read has changed */
		memset(&quiet, 0, sizeof(quiet));
		memset(&placed, 0, sizeof(placed));
		record_cycle(cycle_id, started, &quiet, &placed, 0, cycle_elapsed_ms(t0), 0, 0, "quiet");
		return;
	}

	tide_cycle_shapes_refresh();	/* at most every tide.frag_shapes_refresh */
	cycle_types_lookup(&types);
	/* the engine's memory: one context, gone at the end of the cycle */
	mcxt = AllocSetContextCreate(CurrentMemoryContext, "tide cycle", ALLOCSET_DEFAULT_SIZES);
	tide_cycle_load_kept(&l, mcxt, group, true);
	load_ms = cycle_elapsed_ms(t0);

	INSTR_TIME_SET_CURRENT(t0);
	order_memo_give(l.s, scope);
	r = tide_decide(l.s);
	order_memo_keep(r, scope);
	decide_ms = cycle_elapsed_ms(t0);

	INSTR_TIME_SET_CURRENT(t0);
	tide_cycle_write_placements(&l, r, cycle_id, &types, &placed);
	jobs_evicted = tide_cycle_write_evictions(&l, r, cycle_id, &types, lost + stopped);
	tide_cycle_fair_write(l.s);	/* R-O6: the averages decide brought up to now */
	tide_cycle_owner_fair_write(l.s);	/* R-O7: the owners' */
	write_ms = cycle_elapsed_ms(t0);

	record_cycle(cycle_id, started, r, &placed, jobs_evicted, load_ms, decide_ms, write_ms,
				 l.incremental ? "incremental" : "full");
	changed = lost > 0 || r->nplacements > 0 || placed.jobs_placed > 0 || jobs_evicted > 0 ||
		r->counters.jobs_unschedulable > 0 || placed.reasons_deferred > 0;
	record_state(scope, cycle_id, settled, seq, recheck_time(l.s), changed);
	if (l.kept)
		cycle_cache_prune(scope, l.xmin);	/* what every later load has seen */
	MemoryContextDelete(mcxt);
}

/*
 * A backend that runs cycles one after another (the cron loop, a resource
 * group's loop) asks the allocator for the same large arrays every cycle:
 * the engine's per-job arrays, the load's rows, megabytes at 100k jobs.
 * glibc gives the top of its heap back to the kernel whenever more than
 * its trim threshold is free there, which the end of a cycle always makes
 * so, and the next cycle faults every page of those arrays in afresh: on
 * this project's 2-core VM that was two thirds of a busy cycle at 100k
 * pending x 10k nodes (docs/benchmarks.md).  From its second cycle on, a
 * backend keeps up to KEEP_HEAP_MB of freed heap instead, and serves
 * arrays up to 32 MB from the heap; larger ones are still mapped and
 * unmapped each time.  Its resident size then stays at its largest
 * cycle's, which it reached anyway, or at the largest of whatever else it
 * ran since (sorts, hashes), up to that much freed.  A backend that runs
 * one cycle (a pooled session, a test) keeps glibc's defaults.
 */
#define KEEP_HEAP_MB 256

static void
keep_heap_from_second_cycle(void)
{
	static int	cycles = 0;

	if (cycles < 2 && ++cycles == 2)
	{
#if defined(__GLIBC__) && defined(M_TRIM_THRESHOLD)
		mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
		mallopt(M_TRIM_THRESHOLD, KEEP_HEAP_MB * 1024 * 1024);
#endif
	}
}

/* One cycle of the group (NULL: the whole cluster); NULL if one is running. */
static Datum
run_cycle(FunctionCallInfo fcinfo, const char *group)
{
	int64		cycle_id;
	TimestampTz started;
	int			ret;
	volatile TideWriter was;

	if ((ret = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "tide.run_cycle: SPI_connect failed: %s", SPI_result_code_string(ret));
	if (!try_cycle_lock(group))
	{
		SPI_finish();
		PG_RETURN_NULL();
	}
	keep_heap_from_second_cycle();
	cycle_id = begin_cycle_row(&started);
	/* its own writes do not bump the change counter (changed.c) */
	was = tide_writer_set(TIDE_WRITER_CYCLE);
	PG_TRY();
	{
		cycle_body(cycle_id, started, group);
	}
	PG_FINALLY();
	{
		tide_writer_set(was);
	}
	PG_END_TRY();
	SPI_finish();
	PG_RETURN_INT64(cycle_id);
}

/*
 * tide.run_cycle() returns bigint: one scheduling cycle; the cycle id, or
 * NULL at once when another cycle is running (R-C1).
 */
Datum
tide_run_cycle(PG_FUNCTION_ARGS)
{
	return run_cycle(fcinfo, NULL);
}

/*
 * tide.run_cycle(resource_group text) returns bigint: the cycle of one
 * resource group (its nodes, queues and their jobs); NULL at once while a
 * cycle of that group or of the whole cluster runs.
 */
Datum
tide_run_cycle_group(PG_FUNCTION_ARGS)
{
	return run_cycle(fcinfo, text_to_cstring(PG_GETARG_TEXT_PP(0)));
}
