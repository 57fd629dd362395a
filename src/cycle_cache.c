/*
 * cycle_cache.c: the incremental load (docs/cadence.md#incremental-loads).
 *
 * A whole-cluster tide.run_cycle() keeps, in its backend, the rows its two
 * biggest load queries returned: the pending jobs with their tasks and the
 * live allocations, as minimal tuples in query order.  The next cycle in
 * the same backend reads tide.job_changes (extension/64_change_counter.sql)
 * for the jobs any transaction wrote since the kept load's snapshot, reads
 * those jobs' rows again by key, drops their kept rows, merges the fresh
 * ones in by key, and hands every row to the same callbacks a full load
 * uses (cycle_rows_replay): what is derived from the rows (indexes, names,
 * vectors, owners, reasons) is made again each cycle exactly as a full load
 * makes it, so that the decisions cannot differ.  Only raw rows are kept.
 *
 * What it cannot apply exactly loads in full, and keeps that: the first
 * cycle of a backend; another database, a reinstalled or updated
 * extension, a table rewritten (VACUUM FULL, CLUSTER: new files, so the
 * kept row addresses and TOAST pointers would be stale); a TRUNCATE;
 * changes pruned that the kept load had not seen (another backend's
 * cycles); more changed jobs than a fraction of what is kept; a kept set
 * grown to twice its live size.  A transaction or subtransaction that
 * aborts after the cache changed in it drops what is kept, and so does a
 * prepared one (it may yet be rolled back elsewhere).
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/xid8.h"

#include "cycle_cache.h"

/* Changed jobs above which a full load is cheaper: this fraction of those kept. */
#define CHANGED_FRACTION 4
#define CHANGED_MIN 2000

/* What identifies the tables the kept rows came from. */
typedef struct CacheKey
{
	Oid			db;
	Oid			files[3];		/* jobs, job_tasks, allocations */
	char		version[32];	/* the extension's */
} CacheKey;

typedef struct CycleCache
{
	MemoryContext cxt;			/* NULL: nothing kept */
	bool		valid;			/* kept rows stand for a committed load */
	bool		dirty;			/* changed in the running transaction */
	bool		poisoned;		/* a subtransaction aborted since: drop at its end */
	CacheKey	key;
	MemoryContext side;			/* what loads keep beside the rows (cycle_jobs.c) */
	uint64		xmin;			/* the kept load's */
	CycleRowSet jobs;
	CycleRowSet allocs;
	CycleRow   *jobs_spare;		/* the arrays the next merges write into */
	int64		jobs_spare_cap;
	CycleRow   *allocs_spare;
	int64		allocs_spare_cap;
} CycleCache;

static CycleCache cache;
static bool callbacks_registered = false;

static const char *const Q_KEY =
"SELECT LEAST(pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot()),"
"                        pg_catalog.pg_current_xact_id()),"
"       (SELECT max(s.changes_pruned_below) FROM tide.cycle_state s),"
"       pg_catalog.pg_relation_filenode('tide.jobs'), pg_catalog.pg_relation_filenode('tide.job_tasks'),"
"       pg_catalog.pg_relation_filenode('tide.allocations'),"
"       (SELECT e.extversion FROM pg_catalog.pg_extension e WHERE e.extname = 'pg_tide')";

/* At most $2 + 1 rows: more means a full load. */
static const char *const Q_CHANGED =
"SELECT count(*), coalesce(bool_or(c.job_id IS NULL), false),"
"       coalesce(pg_catalog.array_agg(DISTINCT c.job_id) FILTER (WHERE c.job_id IS NOT NULL), '{}')"
"  FROM (SELECT c.job_id FROM tide.job_changes c WHERE c.xid >= $1 LIMIT $2) c";

/*
 * A bounded batch a cycle, oldest first (tide._prune_job_changes,
 * 64_change_counter.sql): a backlog of changes (100,000 submissions, the
 * first cycle's own writes) is deleted over the next cycles instead of in
 * one, where it cost the first cycle at 100,000 pending a seventh of its
 * time.  The batch starts at PRUNE_ROWS (under a millisecond of deleting)
 * and grows by as much after every cycle that filled it, back to
 * PRUNE_ROWS after one that did not: a backlog of B rows is gone within
 * about sqrt(2 B / PRUNE_ROWS) cycles (220,000 rows in 21, the largest
 * batch 21,000 rows), and writers that log more than a batch a cycle are
 * kept up with.  A cycle that finds another pruning leaves it the work
 * (resource groups' cycles run side by side); each scope marks its own
 * row, and the mark is the highest of them.
 */
#define PRUNE_ROWS 1000
#define PRUNE_ROWS_MAX (1000 * PRUNE_ROWS)
static const char *const W_PRUNE = "SELECT tide._prune_job_changes($1, $2, $3)";
static int32 prune_batch = PRUNE_ROWS;

/* Drop everything kept. */
static void
cache_reset(void)
{
	if (cache.side)
		MemoryContextDelete(cache.side);
	if (cache.cxt)
		MemoryContextDelete(cache.cxt);
	memset(&cache, 0, sizeof(cache));
}

static void
xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			if (cache.poisoned)
				cache_reset();
			cache.dirty = false;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			if (cache.dirty)
				cache_reset();
			break;
		default:
			break;
	}
}

/*
 * A subtransaction rolled back after the cache changed in this transaction
 * may have undone writes the load saw: what is kept is dropped, but only
 * when the transaction ends (a load may be using the rows right now, as
 * when a function it calls catches an error).
 */
static void
subxact_callback(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB && cache.dirty)
	{
		cache.poisoned = true;
		cache.valid = false;
	}
}

/* The cache is about to change in this transaction. */
static void
cache_touch(void)
{
	if (!callbacks_registered)
	{
		RegisterXactCallback(xact_callback, NULL);
		RegisterSubXactCallback(subxact_callback, NULL);
		callbacks_registered = true;
	}
	if (cache.cxt == NULL)
	{
		cache.cxt = AllocSetContextCreate(TopMemoryContext, "tide kept load", ALLOCSET_DEFAULT_SIZES);
		cache.side = AllocSetContextCreate(TopMemoryContext, "tide kept beside the load", ALLOCSET_SMALL_SIZES);
	}
	cache.dirty = true;
	cache.valid = false;		/* until cycle_cache_loaded() */
}

static uint64
xid8_value(Datum d)
{
	return U64FromFullTransactionId(DatumGetFullTransactionId(d));
}

/* The key and xmin of this load; *pruned the pruned mark (0: none). */
static void
read_key(CacheKey *key, uint64 *xmin, uint64 *pruned)
{
	bool		isnull;
	Datum		d;
	int			ret = SPI_execute(Q_KEY, true, 1);

	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "tide.run_cycle: reading the load's key failed: %s", SPI_result_code_string(ret));
	memset(key, 0, sizeof(CacheKey));
	key->db = MyDatabaseId;
	*xmin = xid8_value(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	*pruned = isnull ? 0 : xid8_value(d);
	for (int i = 0; i < 3; i++)
	{
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3 + i, &isnull);
		key->files[i] = isnull ? InvalidOid : DatumGetObjectId(d);
	}
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 6, &isnull);
	if (!isnull)
		strlcpy(key->version, TextDatumGetCString(d), sizeof(key->version));
}

/* The jobs changed since the kept load, if few enough: false if a full load is needed. */
static bool
read_changed(CycleDelta *d)
{
	Oid			types[2] = {XID8OID, INT4OID};
	int64		limit = Max(CHANGED_MIN, cache.jobs.n / CHANGED_FRACTION);
	Datum		args[2] = {FullTransactionIdGetDatum(FullTransactionIdFromU64(cache.xmin)),
	Int32GetDatum((int32) Min(limit, PG_INT32_MAX - 1) + 1)};
	bool		isnull;
	int			ret = SPI_execute_with_args(Q_CHANGED, 2, types, args, NULL, true, 1);
	Datum	   *ids;
	int			n;
	ArrayType  *arr;

	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "tide.run_cycle: reading tide.job_changes failed: %s", SPI_result_code_string(ret));
	if (DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)) > limit)
	{
		d->why_full = "many jobs changed";
		return false;
	}
	if (DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull)))
	{
		d->why_full = "a table was truncated";
		return false;
	}
	arr = DatumGetArrayTypePCopy(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));
	deconstruct_array(arr, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &ids, NULL, &n);
	d->nchanged = n;
	d->changed = palloc(sizeof(int64) * (n + 1));
	for (int i = 0; i < n; i++)
		d->changed[i] = DatumGetInt64(ids[i]);	/* DISTINCT: sorted */
	d->changed_array = PointerGetDatum(arr);
	return true;
}

/*
 * The row arrays (the sets' and the spare ones): not tuples, so left out
 * when the tuples' memory is weighed against their live size.
 */
static Size
rows_arrays_bytes(void)
{
	return sizeof(CycleRow) * (cache.jobs.cap + cache.allocs.cap +
							   cache.jobs_spare_cap + cache.allocs_spare_cap);
}

/* What the kept rows take (their contexts), less the arrays. */
static Size
rows_bytes(void)
{
	return MemoryContextMemAllocated(cache.cxt, true) - rows_arrays_bytes();
}

void
cycle_cache_begin(CycleDelta *d, bool cycle, bool keep, bool whole)
{
	CacheKey	key;
	uint64		pruned;

	memset(d, 0, sizeof(CycleDelta));
	if (!cycle)
		return;
	d->prune = true;
	read_key(&key, &d->xmin, &pruned);
	if (!keep)
	{
		if (whole && cache.cxt)
		{
			cache_touch();		/* gone for good, even if this rolls back */
			cache_reset();
		}
		return;
	}
	d->keep = true;
	if (cache.cxt == NULL || !cache.valid || cache.poisoned)
		d->why_full = "nothing kept";
	else if (memcmp(&key, &cache.key, sizeof(CacheKey)) != 0)
		d->why_full = "the tables or the extension changed";
	else if (pruned > cache.xmin)
		d->why_full = "changes pruned by another backend";
	else if (cache.jobs.bytes + cache.allocs.bytes > 0 &&
			 rows_bytes() >
			 2 * (cache.jobs.bytes + cache.allocs.bytes) + 16 * 1024 * 1024)
		d->why_full = "the kept rows grew past twice their size";
	else
		d->incremental = read_changed(d);
	if (!d->incremental)
	{
		elog(DEBUG1, "tide.run_cycle: full load (%s)", d->why_full);
		cache_reset();
		cache_touch();
		cycle_rowset_init(&cache.jobs, cache.cxt, 1);
		cycle_rowset_init(&cache.allocs, cache.cxt, 2);
	}
	else
	{
		elog(DEBUG1, "tide.run_cycle: incremental load, %d jobs changed", d->nchanged);
		cache_touch();
	}
	cache.key = key;
}

/* Is id among the (sorted) changed jobs? */
static bool
is_changed(const CycleDelta *d, int64 id)
{
	int			lo = 0,
				hi = d->nchanged - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (d->changed[mid] == id)
			return true;
		if (d->changed[mid] < id)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return false;
}

CycleRowSet *
cycle_cache_rows(CycleDelta *d, bool jobs, int job_col, const CycleRowSet *fresh)
{
	CycleRowSet *set = jobs ? &cache.jobs : &cache.allocs;
	CycleRow  **spare = jobs ? &cache.jobs_spare : &cache.allocs_spare;
	int64	   *spare_cap = jobs ? &cache.jobs_spare_cap : &cache.allocs_spare_cap;
	CycleRowSet merged;
	int64		i = 0,
				k = 0;

	if (!d->keep)
		return NULL;
	Assert(set->job_col == job_col);
	if (!d->incremental)
		return set;				/* empty: the full load streams into it */

	/*
	 * Kept rows of unchanged jobs, and fresh rows, by key.  The kept tuples
	 * are not read here (at 100k jobs, touching each one's header to count
	 * its bytes cost more than the rest of the merge): the byte count is
	 * the kept one, less the dropped tuples, plus the fresh ones.  The
	 * merge writes into the array the previous merge left, kept across
	 * cycles, so that its pages are not faulted in afresh every cycle.
	 */
	cycle_rowset_init(&merged, cache.cxt, job_col);
	merged.desc = set->desc;
	if (merged.desc == NULL && fresh->desc)
	{
		MemoryContext old = MemoryContextSwitchTo(cache.cxt);

		merged.desc = CreateTupleDescCopy(fresh->desc);
		MemoryContextSwitchTo(old);
	}
	merged.bytes = set->bytes;
	merged.cap = Max(set->n + fresh->n, 16);
	if (*spare && *spare_cap >= merged.cap && *spare_cap <= 2 * merged.cap + 1024)
		merged.cap = *spare_cap;
	else
	{
		/* none yet, too small, or left twice too large by a backlog that shrank */
		if (*spare)
			pfree(*spare);
		*spare = NULL;
		*spare_cap = 0;
		merged.cap += merged.cap / 4;
		*spare = MemoryContextAllocHuge(cache.cxt, sizeof(CycleRow) * merged.cap);
	}
	merged.rows = *spare;
	while (i < set->n || k < fresh->n)
	{
		if (i < set->n && is_changed(d, set->rows[i].job_id))
		{
			merged.bytes -= set->rows[i].tup->t_len;
			pfree(set->rows[i].tup);
			i++;
			continue;
		}
		if (k < fresh->n && (i >= set->n || fresh->rows[k].key < set->rows[i].key))
		{
			cycle_rowset_add(&merged, fresh->rows[k].key, fresh->rows[k].job_id, fresh->rows[k].tup);
			k++;
		}
		else
			merged.rows[merged.n++] = set->rows[i++];
	}
	/* the old array is the next merge's */
	*spare = set->rows;
	*spare_cap = set->rows ? set->cap : 0;
	*set = merged;
	return set;
}

MemoryContext
cycle_cache_context(const CycleDelta *d)
{
	return d->keep ? cache.side : NULL;
}

void
cycle_cache_loaded(const CycleDelta *d)
{
	if (!d->keep || cache.poisoned)
		return;
	cache.xmin = d->xmin;
	cache.valid = true;
	elog(DEBUG1, "tide.run_cycle: kept " INT64_FORMAT " job rows and " INT64_FORMAT " allocation rows, %.1f MB of tuples in %.1f MB",
		 cache.jobs.n, cache.allocs.n, (cache.jobs.bytes + cache.allocs.bytes) / 1048576.0,
		 rows_bytes() / 1048576.0);
}

void
cycle_cache_prune(const char *scope, uint64 xmin)
{
	Oid			types[3] = {XID8OID, TEXTOID, INT4OID};
	Datum		args[3] = {FullTransactionIdGetDatum(FullTransactionIdFromU64(xmin)), CStringGetTextDatum(scope),
	Int32GetDatum(prune_batch)};
	bool		isnull;
	Datum		d;
	int64		n;
	int			ret = SPI_execute_with_args(W_PRUNE, 3, types, args, NULL, false, 1);

	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "tide.run_cycle: pruning tide.job_changes failed: %s", SPI_result_code_string(ret));
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
	{
		elog(DEBUG1, "tide.run_cycle: tide.job_changes not pruned: another cycle prunes it");
		return;
	}
	n = DatumGetInt64(d);
	elog(DEBUG1, "tide.run_cycle: " INT64_FORMAT " of at most %d tide.job_changes rows pruned", n, prune_batch);
	prune_batch = n < prune_batch ? PRUNE_ROWS : Min(prune_batch + PRUNE_ROWS, PRUNE_ROWS_MAX);
}
