/*
 * cycle.c: tide.run_cycle(), the SPI adapter around the policy engine.
 *
 * One cycle, in the caller's transaction (R-C1):
 *   1. pg_try_advisory_xact_lock(tide._cycle_lock_key()); NULL at once if
 *      another cycle holds it;
 *   2. a tide.cycles row, and the transaction-local setting tide.cycle_id
 *      that the state-machine triggers copy into tide.job_events;
 *   3. load: one query per table (nodes, queues, pending jobs, their tasks,
 *      live allocations), copied into the engine's snapshot;
 *   4. decide: tide_decide() (src/engine, plain C);
 *   5. write, set-based: one UPDATE of tide.jobs (placed jobs to allocated,
 *      unschedulable marks, changed pending reasons up to
 *      tide.reason_updates_per_cycle; job rows another transaction holds
 *      are left for the next cycle after tide.cycle_lock_timeout); a check
 *      that the placed jobs' tasks did not change meanwhile (those that did
 *      go back to pending); one statement replacing tide.reason_backlog
 *      with the other reasons; one INSERT into tide.allocations from
 *      unnest(); the evictions (cycle_evict.c); one UPDATE of the cycle row
 *      with counters and the load/decide/write times.
 * Launchers are woken by the allocations' insert trigger (one NOTIFY per
 * node, delivered at commit).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "portability/instr_time.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "cycle.h"
#include "cycle_evict.h"
#include "cycle_rows.h"
#include "engine.h"
#include "gpumask.h"
#include "resvec.h"

PG_FUNCTION_INFO_V1(tide_run_cycle);
PG_FUNCTION_INFO_V1(tide_cycle_writing);

/*
 * True only while tide.run_cycle() runs one of its own writes that the
 * triggers treat specially: its allocation insert skips the task check the
 * cycle has already made (with the jobs locked), and only its give-up
 * UPDATE may move a job from allocated back to pending.  A backend-local
 * flag, so no setting can fake it.
 */
static bool cycle_writing = false;

static int	execute_as_cycle(const char *sql, int nargs, Oid *types, Datum *args);

#define REASON_MAX 1024
#define SPI_processed_of(t) ((t)->numvals)

static const char *const Q_NODES =
"SELECT n.name, n.resource_group, n.capacity, n.gpu_type, n.gpu_topology, n.state,"
"       n.allow_cpu_jobs,"
"       CASE WHEN n.labels = '{}' THEN NULL ELSE ARRAY(SELECT e.key FROM pg_catalog.jsonb_each_text(n.labels) e ORDER BY e.key) END,"
"       CASE WHEN n.labels = '{}' THEN NULL ELSE ARRAY(SELECT e.value FROM pg_catalog.jsonb_each_text(n.labels) e ORDER BY e.key) END,"
"       n.heartbeat_at"
"  FROM tide.nodes n ORDER BY n.name COLLATE \"C\"";

static const char *const Q_QUEUES =
"SELECT q.name, q.resource_group, q.quota, q.capability, q.priority, q.placement,"
"       q.service_type, q.reclaimable, q.preemption_within,"
"       (EXTRACT(epoch FROM q.min_runtime) * 1000000)::bigint"
"  FROM tide.queues q ORDER BY q.name COLLATE \"C\"";

static const char *const Q_JOBS =
"SELECT j.id, j.queue, j.priority, j.created_at, j.idle, j.reserve, j.retry_of IS NOT NULL,"
"       j.preemptable, j.service_type, j.min_available, j.gpu_type,"
"       CASE WHEN j.node_selector = '{}' THEN NULL ELSE ARRAY(SELECT e.key FROM pg_catalog.jsonb_each_text(j.node_selector) e ORDER BY e.key) END,"
"       CASE WHEN j.node_selector = '{}' THEN NULL ELSE ARRAY(SELECT e.value FROM pg_catalog.jsonb_each_text(j.node_selector) e ORDER BY e.key) END,"
"       (EXTRACT(epoch FROM j.time_limit) * 1000000)::bigint,"
"       CASE WHEN j.avoid_nodes = '{}' THEN NULL ELSE j.avoid_nodes END,"
"       j.pending_reason"
"  FROM tide.jobs j"
" WHERE j.state = 'pending' AND NOT j.unschedulable AND NOT j.cancel_requested"
" ORDER BY j.id";

static const char *const Q_TASKS =
"SELECT t.job_id, t.role, t.replicas, t.request, t.ctid"
"  FROM tide.job_tasks t JOIN tide.jobs j ON j.id = t.job_id"
" WHERE j.state = 'pending' AND NOT j.unschedulable AND NOT j.cancel_requested"
" ORDER BY t.job_id";	/* roles sorted by name in load_snapshot (a merge, no sort) */

static const char *const Q_ALLOCS =
"SELECT a.id, a.job_id, a.node, a.resources, a.gpus, a.gpu_milli, a.state, j.queue,"
"       j.idle, j.preemptable, j.priority, j.service_type, a.started_at,"
"       a.started_at + j.time_limit, coalesce(a.started_at, a.created_at)"
"  FROM tide.allocations a JOIN tide.jobs j ON j.id = a.job_id"
" WHERE a.state <> 'released'";

static const char *const W_ALLOCS =
"INSERT INTO tide.allocations (job_id, role, replica, node, resources, gpus, gpu_milli, cycle_id)"
" SELECT u.job_id, u.role, u.replica, u.node, u.resources, u.gpus, u.gpu_milli, $8"
"   FROM unnest($1, $2, $3, $4, $5, $6, $7)"
"        AS u(job_id, role, replica, node, resources, gpus, gpu_milli)";

/*
 * Job states first: a job cancelled (or otherwise moved on) since the load
 * is no longer pending, so the UPDATE skips it, and only the placed jobs it
 * returns get allocation rows.
 */
#define W_JOBS_SET \
"    SET state = CASE WHEN u.placed THEN 'allocated' ELSE j.state END," \
"        state_reason = CASE WHEN u.placed THEN u.reason ELSE j.state_reason END," \
"        pending_reason = CASE WHEN u.placed THEN NULL ELSE u.reason END," \
"        unschedulable = u.unschedulable" \
"   FROM unnest($1::bigint[], $2::boolean[], $3::text[], $4::boolean[])" \
"        AS u(id, placed, reason, unschedulable)"

static const char *const W_JOBS =
"WITH upd AS ("
" UPDATE tide.jobs j" W_JOBS_SET
"  WHERE j.id = u.id AND j.state = 'pending' AND NOT j.cancel_requested"
" RETURNING j.id, u.placed)"
"SELECT pg_catalog.array_agg(upd.id) FROM upd WHERE upd.placed";

/*
 * The same, skipping the job rows another transaction holds (they stay as
 * they are this cycle): what W_JOBS falls back to when it could not get its
 * row locks within tide.cycle_lock_timeout.  Locking first costs a lock record
 * per row, so it is not the usual path.
 */
static const char *const W_JOBS_SKIP_LOCKED =
"WITH lk AS MATERIALIZED ("
" SELECT j.id FROM tide.jobs j"
"  WHERE j.id = ANY ($1::bigint[]) AND j.state = 'pending' AND NOT j.cancel_requested"
"    FOR NO KEY UPDATE OF j SKIP LOCKED),"
" upd AS ("
" UPDATE tide.jobs j" W_JOBS_SET
"  WHERE j.id = u.id AND j.id IN (SELECT lk.id FROM lk)"
" RETURNING j.id, u.placed)"
"SELECT pg_catalog.array_agg(upd.id) FROM upd WHERE upd.placed";



/*
 * The task rows of the jobs placed, compared with those loaded (by ctid: an
 * inserted, deleted or updated task row differs).  Run after W_JOBS, whose
 * row locks keep the tasks of these jobs from changing any more (the tasks
 * trigger reads the job FOR SHARE), in the latest snapshot (whatever the
 * isolation level): it sees a task change that committed between the load
 * and those locks.
 */
static const char *const Q_TASKS_CHANGED =
"SELECT pg_catalog.array_agg(DISTINCT coalesce(l.job_id, n.job_id))"
"  FROM unnest($1::bigint[], $2::tid[]) AS l(job_id, tid)"
"  FULL JOIN (SELECT t.job_id, t.ctid AS tid FROM tide.job_tasks t WHERE t.job_id = ANY ($3::bigint[])) n"
"    ON n.job_id = l.job_id AND n.tid = l.tid"
" WHERE l.job_id IS NULL OR n.job_id IS NULL";

/* Placed jobs whose tasks changed go back to pending, without allocations. */
static const char *const W_GIVE_UP =
"UPDATE tide.jobs j"
"   SET state = 'pending', state_reason = 'its tasks changed while a cycle placed it',"
"       pending_reason = 'its tasks changed while a cycle placed it; the next cycle looks again'"
" WHERE j.id = ANY ($1::bigint[]) AND j.state = 'allocated'";

/* Every cycle replaces the backlog of reasons not yet in job rows. */
static const char *const W_BACKLOG =
"WITH gone AS (DELETE FROM tide.reason_backlog)"
" INSERT INTO tide.reason_backlog (cycle_id, reason, job_ids)"
" SELECT $1, g.reason, $2[g.lo:g.hi]"
"   FROM unnest($3, $4, $5) AS g(reason, lo, hi)";

static const char *const W_BACKLOG_CLEAR = "DELETE FROM tide.reason_backlog";

static const char *const W_CYCLE =
"UPDATE tide.cycles SET finished_at = pg_catalog.clock_timestamp(),"
"       jobs_considered = $2, jobs_placed = $3,"
"       jobs_unschedulable = $4, allocations_made = $5, holds = $6,"
"       reasons_deferred = $10, jobs_evicted = $11,"
"       load_ms = $7, decide_ms = $8, write_ms = $9"
" WHERE id = $1";

/* Milliseconds since start (the phase timings of tide.cycles). */
static double
elapsed_ms(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

/* Everything one cycle keeps between its phases. */
typedef struct Cycle
{
	MemoryContext mcxt;
	TideSnapshot *s;
	SPITupleTable *nodes,
			   *queues,
			   *jobs,
			   *tasks,
			   *allocs;
	char	  **group_names;	/* resource group ids */
	int			ngroups;
	Datum	   *role_request;	/* [nroles] resvec datum of each role's request */
	char	  **role_name;		/* [nroles] */
	ItemPointerData *role_tid;	/* [nroles] ctid of the task row loaded */
	char	  **job_reason;		/* [njobs] current pending_reason or NULL */
	CycleTypes	types;			/* OIDs of tide.resvec, tide.gpumask and their arrays */
} Cycle;

/* The engine's allocator: the cycle's memory context, huge blocks allowed. */
static void *
cycle_alloc(void *ctx, size_t size)
{
	return MemoryContextAllocExtended((MemoryContext) ctx, size, MCXT_ALLOC_HUGE);
}

/* Run one load query; its rows stay valid until SPI_finish. */
static SPITupleTable *
run_select(const char *sql)
{
	int			ret = SPI_execute(sql, false, 0);

	if (ret != SPI_OK_SELECT)
		elog(ERROR, "tide.run_cycle: query failed (%s): %s", SPI_result_code_string(ret), sql);
	return SPI_tuptable;
}

/*
 * Column colno (1-based) of a row.  Rows are deformed once and kept, one
 * row per result table: SPI_getbinval would walk every earlier varlena
 * column again for each column asked.
 */
#define ROWCACHE_COLS 24
#define ROWCACHE_TABLES 8

typedef struct RowCache
{
	SPITupleTable *t;
	uint64		row;
	Datum		vals[ROWCACHE_COLS];
	bool		nulls[ROWCACHE_COLS];
} RowCache;

static RowCache row_cache[ROWCACHE_TABLES];

static void
row_cache_reset(void)
{
	memset(row_cache, 0, sizeof(row_cache));
}

static Datum
col(SPITupleTable *t, uint64 row, int colno, bool *isnull)
{
	RowCache   *rc = NULL;

	for (int i = 0; i < ROWCACHE_TABLES && !rc; i++)
	{
		if (row_cache[i].t == t)
			rc = &row_cache[i];
		else if (row_cache[i].t == NULL)
		{
			rc = &row_cache[i];
			rc->t = t;
			rc->row = PG_UINT64_MAX;
		}
	}
	if (!rc || t->tupdesc->natts > ROWCACHE_COLS)
		return SPI_getbinval(t->vals[row], t->tupdesc, colno, isnull);
	if (rc->row != row)
	{
		heap_deform_tuple(t->vals[row], t->tupdesc, rc->vals, rc->nulls);
		rc->row = row;
	}
	*isnull = rc->nulls[colno - 1];
	return rc->vals[colno - 1];
}

/* A text column as a C string (palloc'd), NULL for SQL NULL. */
static char *
col_text(SPITupleTable *t, uint64 row, int colno)
{
	bool		isnull;
	Datum		d = col(t, row, colno, &isnull);

	return isnull ? NULL : TextDatumGetCString(d);
}

/* Small interner for resource group names (a few per cluster). */
static int
group_id(Cycle *c, const char *name)
{
	for (int i = 0; i < c->ngroups; i++)
		if (strcmp(c->group_names[i], name) == 0)
			return i;
	if (c->ngroups % 16 == 0)
		c->group_names = c->ngroups == 0
			? MemoryContextAlloc(c->mcxt, sizeof(char *) * 16)
			: repalloc(c->group_names, sizeof(char *) * (c->ngroups + 16));
	c->group_names[c->ngroups] = MemoryContextStrdup(c->mcxt, name);
	return c->ngroups++;
}

/* Intern every name of a resvec column (pass 1). */
static void
intern_resvec_column(Cycle *c, SPITupleTable *t, int colno)
{
	for (uint64 i = 0; i < SPI_processed_of(t); i++)
	{
		bool		isnull;
		Datum		d = col(t, i, colno, &isnull);
		ResVec	   *rv;

		if (isnull)
			continue;
		rv = DatumGetResVecP(d);
		for (int k = 0; k < resvec_count(rv); k++)
			if (tide_res_intern(c->s, resvec_name(rv, k)) < 0)
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("too many distinct resource names for a scheduling cycle"),
						 errdetail("At most %d names (card types included) are supported.", TIDE_MAX_RES)));
	}
}

/* Intern the names of a text column (card types) (pass 1). */
static void
intern_text_column(Cycle *c, SPITupleTable *t, int colno)
{
	for (uint64 i = 0; i < SPI_processed_of(t); i++)
	{
		char	   *name = col_text(t, i, colno);

		if (name && tide_res_intern(c->s, name) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("too many distinct resource names for a scheduling cycle"),
					 errdetail("At most %d names (card types included) are supported.", TIDE_MAX_RES)));
	}
}

/* Fill v (nres, zeroed) from a resvec: its quantities in milli. */
static void
resvec_to_vec(TideSnapshot *s, Datum d, int64 *v)
{
	ResVec	   *rv = DatumGetResVecP(d);

	for (int k = 0; k < resvec_count(rv); k++)
	{
		int			r = tide_res_lookup(s, resvec_name(rv, k));

		if (r >= 0)
			v[r] = resvec_milli(rv, k);
	}
}

/* A limit vector: the names it lists limit, the others are unlimited (R-A1). */
static void
resvec_to_limit(TideSnapshot *s, Datum d, int64 *v)
{
	ResVec	   *rv = DatumGetResVecP(d);

	for (int r = 0; r < s->nres; r++)
		v[r] = TIDE_UNLIMITED;
	for (int k = 0; k < resvec_count(rv); k++)
	{
		int			r = tide_res_lookup(s, resvec_name(rv, k));

		if (r >= 0)
			v[r] = resvec_milli(rv, k);
	}
}

/* Sorted label ids of parallel key/value text arrays (NULL: none). */
static int32 *
label_ids(Cycle *c, SPITupleTable *t, uint64 row, int kcol, int vcol, int *n)
{
	bool		kn,
				vn;
	Datum		kd = col(t, row, kcol, &kn);
	Datum		vd = col(t, row, vcol, &vn);
	Datum	   *keys,
			   *vals;
	bool	   *knulls,
			   *vnulls;
	int			nk,
				nv;
	int32	   *ids;

	*n = 0;
	if (kn || vn)
		return NULL;
	deconstruct_array(DatumGetArrayTypeP(kd), TEXTOID, -1, false, TYPALIGN_INT, &keys, &knulls, &nk);
	deconstruct_array(DatumGetArrayTypeP(vd), TEXTOID, -1, false, TYPALIGN_INT, &vals, &vnulls, &nv);
	ids = MemoryContextAlloc(c->mcxt, sizeof(int32) * (nk + 1));
	for (int i = 0; i < nk && i < nv; i++)
	{
		int32		id;
		int			k;

		if (knulls[i] || vnulls[i])
			continue;
		id = tide_label_intern(c->s, TextDatumGetCString(keys[i]), TextDatumGetCString(vals[i]));
		k = *n;
		while (k > 0 && ids[k - 1] > id)
		{
			ids[k] = ids[k - 1];
			k--;
		}
		ids[k] = id;
		(*n)++;
	}
	return ids;
}

/* Index of key in names sorted by strcmp (COLLATE "C" order), or -1. */
static int
bsearch_name(char **names, int n, const char *key)
{
	int			lo = 0,
				hi = n - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;
		int			cmp = strcmp(names[mid], key);

		if (cmp == 0)
			return mid;
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/* The engine's service type of a tide.jobs/queues service_type text. */
static int
service_of(const char *s)
{
	if (s && strcmp(s, "inference") == 0)
		return TIDE_SVC_INFERENCE;
	if (s && strcmp(s, "training") == 0)
		return TIDE_SVC_TRAINING;
	return TIDE_SVC_UNKNOWN;
}

/*
 * Roles are walked in name order (C collation), whatever order the task
 * rows came in: insertion sort of one job's roles, most jobs have one.
 */
static void
sort_roles(Cycle *c, int first, int n)
{
	TideRole   *roles = &c->s->roles[first];

	for (int i = 1; i < n; i++)
	{
		for (int k = i; k > 0 && strcmp(c->role_name[first + k - 1], c->role_name[first + k]) > 0; k--)
		{
			TideRole	r = roles[k];
			char	   *name = c->role_name[first + k];
			Datum		req = c->role_request[first + k];
			ItemPointerData tid = c->role_tid[first + k];

			roles[k] = roles[k - 1];
			roles[k - 1] = r;
			c->role_name[first + k] = c->role_name[first + k - 1];
			c->role_name[first + k - 1] = name;
			c->role_request[first + k] = c->role_request[first + k - 1];
			c->role_request[first + k - 1] = req;
			c->role_tid[first + k] = c->role_tid[first + k - 1];
			c->role_tid[first + k - 1] = tid;
		}
	}
}

/* Load the five tables and build the snapshot (load phase). */
static void
load_snapshot(Cycle *c)
{
	TideMem		mem = {cycle_alloc, NULL, c->mcxt};
	TideSnapshot *s;
	uint64		nn,
				nq,
				nj,
				nt,
				na;
	char	  **node_names,
			  **queue_names;
	char		err[256];
	uint64		ti = 0;
	int			nroles = 0;

	/*
	 * Each query takes its own snapshot (READ COMMITTED).  Referenced rows
	 * are loaded after the rows that reference them, so a job's tasks and
	 * queue, and an allocation's node, are always there: a queue or node
	 * cannot be deleted while referenced, and one created between two
	 * queries is simply seen by the later one.
	 */
	row_cache_reset();
	c->jobs = run_select(Q_JOBS);
	c->tasks = run_select(Q_TASKS);
	c->allocs = run_select(Q_ALLOCS);
	c->queues = run_select(Q_QUEUES);
	c->nodes = run_select(Q_NODES);
	nn = SPI_processed_of(c->nodes);
	nq = SPI_processed_of(c->queues);
	nj = SPI_processed_of(c->jobs);
	nt = SPI_processed_of(c->tasks);
	na = SPI_processed_of(c->allocs);
	if (nn > INT32_MAX / 4 || nj > INT32_MAX / 4 || nt > INT32_MAX / 4 || na > INT32_MAX / 4)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						errmsg("too many rows for one scheduling cycle")));

	s = tide_snapshot_create(&mem);
	c->s = s;
	s->now = GetCurrentTimestamp();

	/* pass 1: every resource name, card types included */
	intern_resvec_column(c, c->nodes, 3);
	intern_text_column(c, c->nodes, 4);
	intern_resvec_column(c, c->queues, 3);
	intern_resvec_column(c, c->queues, 4);
	intern_text_column(c, c->jobs, 11);
	intern_resvec_column(c, c->tasks, 4);
	intern_resvec_column(c, c->allocs, 4);

	tide_snapshot_alloc_cluster(s, (int) nn, (int) nq, (int) na);

	/* nodes (sorted by name: index lookups by bsearch) */
	node_names = MemoryContextAlloc(c->mcxt, sizeof(char *) * (nn + 1));
	for (uint64 i = 0; i < nn; i++)
	{
		TideNode   *n = &s->nodes[i];
		bool		isnull;
		Datum		d;
		char	   *gt,
				   *st,
				   *grp;

		node_names[i] = MemoryContextStrdup(c->mcxt, col_text(c->nodes, i, 1));
		n->name = node_names[i];
		grp = col_text(c->nodes, i, 2);
		n->group = group_id(c, grp);
		resvec_to_vec(s, col(c->nodes, i, 3, &isnull), n->capacity);
		/* compare before narrowing: a huge count must not wrap into range */
		if (n->capacity[TIDE_RES_GPU] / TIDE_MILLI > TIDE_MAX_GPUS)
		{
			/* one odd node must not stop scheduling: it just gets no work */
			ereport(WARNING,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("node \"%s\" has %lld GPUs, at most %d are supported: it gets no work",
							n->name, (long long) (n->capacity[TIDE_RES_GPU] / TIDE_MILLI),
							TIDE_MAX_GPUS),
					 errhint("Register it as several nodes of at most %d GPUs.", TIDE_MAX_GPUS)));
			n->ngpus = 0;
			n->capacity[TIDE_RES_GPU] = 0;
			n->unusable = true;
		}
		else
			n->ngpus = (int) (n->capacity[TIDE_RES_GPU] / TIDE_MILLI);
		gt = col_text(c->nodes, i, 4);
		n->gpu_type = gt ? tide_res_lookup(s, gt) : -1;
		d = col(c->nodes, i, 5, &isnull);
		if (!isnull)
		{
			Datum	   *doms;
			bool	   *dnulls;
			int			nd;

			deconstruct_array(DatumGetArrayTypeP(d), INT4OID, 4, true, TYPALIGN_INT, &doms, &dnulls, &nd);
			for (int g = 0; g < nd && g < n->ngpus; g++)
				n->gpu_domain[g] = dnulls[g] ? 0 : (int16) DatumGetInt32(doms[g]);
		}
		st = col_text(c->nodes, i, 6);
		n->state = strcmp(st, "ready") == 0 ? TIDE_NODE_READY :
			strcmp(st, "draining") == 0 ? TIDE_NODE_DRAINING : TIDE_NODE_DOWN;
		if (n->unusable)
			n->state = TIDE_NODE_DOWN;
		n->allow_cpu_jobs = DatumGetBool(col(c->nodes, i, 7, &isnull));
		n->labels = label_ids(c, c->nodes, i, 8, 9, &n->nlabels);
		d = col(c->nodes, i, 10, &isnull);
		n->heartbeat_at = isnull ? 0 : DatumGetTimestampTz(d);
	}

	/* queues (sorted by name) */
	queue_names = MemoryContextAlloc(c->mcxt, sizeof(char *) * (nq + 1));
	for (uint64 i = 0; i < nq; i++)
	{
		TideQueue  *q = &s->queues[i];
		bool		isnull;
		Datum		d;
		char	   *pl,
				   *pw;

		queue_names[i] = MemoryContextStrdup(c->mcxt, col_text(c->queues, i, 1));
		q->name = queue_names[i];
		q->group = group_id(c, col_text(c->queues, i, 2));
		d = col(c->queues, i, 3, &isnull);
		if (!isnull && resvec_count(DatumGetResVecP(d)) > 0)
		{
			q->has_quota = true;
			resvec_to_limit(s, d, q->quota);
		}
		d = col(c->queues, i, 4, &isnull);
		if (!isnull)
			resvec_to_limit(s, d, q->capability);
		q->priority = DatumGetInt32(col(c->queues, i, 5, &isnull));
		pl = col_text(c->queues, i, 6);
		q->placement = pl && strcmp(pl, "spread") == 0 ? TIDE_PLACE_SPREAD : TIDE_PLACE_PACK;
		q->service = service_of(col_text(c->queues, i, 7));
		q->reclaimable = DatumGetBool(col(c->queues, i, 8, &isnull));
		pw = col_text(c->queues, i, 9);
		q->preemption_within = pw && strcmp(pw, "lower_priority") == 0
			? TIDE_PREEMPT_LOWER_PRIORITY : TIDE_PREEMPT_NEVER;
		d = col(c->queues, i, 10, &isnull);
		q->min_runtime = isnull ? 0 : DatumGetInt64(d);
	}

	/* jobs and their roles (both sorted by job id: a merge) */
	tide_snapshot_alloc_jobs(s, (int) nj, (int) nt);
	c->role_request = MemoryContextAlloc(c->mcxt, sizeof(Datum) * (nt + 1));
	c->role_name = MemoryContextAlloc(c->mcxt, sizeof(char *) * (nt + 1));
	c->role_tid = MemoryContextAlloc(c->mcxt, sizeof(ItemPointerData) * (nt + 1));
	c->job_reason = MemoryContextAlloc(c->mcxt, sizeof(char *) * (nj + 1));
	for (uint64 i = 0; i < nj; i++)
	{
		TideJob    *j = &s->jobs[i];
		bool		isnull;
		Datum		d;
		char	   *gt;

		j->id = DatumGetInt64(col(c->jobs, i, 1, &isnull));
		j->queue = bsearch_name(queue_names, (int) nq, col_text(c->jobs, i, 2));
		j->priority = DatumGetInt32(col(c->jobs, i, 3, &isnull));
		j->created_at = DatumGetTimestampTz(col(c->jobs, i, 4, &isnull));
		j->idle = DatumGetBool(col(c->jobs, i, 5, &isnull));
		j->reserve = DatumGetBool(col(c->jobs, i, 6, &isnull));
		j->is_retry = DatumGetBool(col(c->jobs, i, 7, &isnull));
		j->preemptable = DatumGetBool(col(c->jobs, i, 8, &isnull));
		j->service = service_of(col_text(c->jobs, i, 9));
		d = col(c->jobs, i, 10, &isnull);
		j->min_available = isnull ? 0 : DatumGetInt32(d);
		gt = col_text(c->jobs, i, 11);
		j->gpu_type = gt ? tide_res_lookup(s, gt) : -1;
		j->selector = label_ids(c, c->jobs, i, 12, 13, &j->nselector);
		d = col(c->jobs, i, 14, &isnull);
		j->time_limit = isnull ? 0 : DatumGetInt64(d);
		d = col(c->jobs, i, 15, &isnull);
		if (!isnull)
		{
			Datum	   *names;
			bool	   *nulls;
			int			n;
			int32	   *av;

			deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT, &names, &nulls, &n);
			av = MemoryContextAlloc(c->mcxt, sizeof(int32) * (n + 1));
			for (int k = 0; k < n; k++)
			{
				int			ni = nulls[k] ? -1 : bsearch_name(node_names, (int) nn, TextDatumGetCString(names[k]));

				if (ni >= 0)
					av[j->navoid++] = ni;
			}
			j->avoid = av;
		}
		c->job_reason[i] = col_text(c->jobs, i, 16);
		if (j->queue < 0)
			j->queue = 0;		/* cannot happen: queues are loaded after the
								 * jobs that reference them (below) */

		/* roles: the task rows of this job */
		j->roles = &s->roles[nroles];
		while (ti < nt && DatumGetInt64(col(c->tasks, ti, 1, &isnull)) < j->id)
			ti++;
		while (ti < nt && DatumGetInt64(col(c->tasks, ti, 1, &isnull)) == j->id)
		{
			TideRole   *r = &s->roles[nroles];

			c->role_name[nroles] = col_text(c->tasks, ti, 2);
			r->name = c->role_name[nroles];
			r->replicas = DatumGetInt32(col(c->tasks, ti, 3, &isnull));
			c->role_request[nroles] = col(c->tasks, ti, 4, &isnull);
			ItemPointerCopy((ItemPointer) DatumGetPointer(col(c->tasks, ti, 5, &isnull)), &c->role_tid[nroles]);
			resvec_to_vec(s, c->role_request[nroles], r->request);
			j->nroles++;
			nroles++;
			ti++;
		}
		sort_roles(c, (int) (j->roles - s->roles), j->nroles);
	}
	s->nroles = nroles;

	if (!tide_snapshot_finish(s, err, sizeof(err)))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("cannot schedule: %s", err)));

	/* live allocations: charge nodes and queues (R-C4), keep end times (R-L2) */
	for (uint64 i = 0; i < na; i++)
	{
		TideRunning *a = &s->running[i];
		bool		isnull;
		Datum		d;
		int64	   *v = tide_vec_new(s);

		a->alloc_id = DatumGetInt64(col(c->allocs, i, 1, &isnull));
		a->job_id = DatumGetInt64(col(c->allocs, i, 2, &isnull));
		a->node = bsearch_name(node_names, (int) nn, col_text(c->allocs, i, 3));
		resvec_to_vec(s, col(c->allocs, i, 4, &isnull), v);
		a->res = v;
		a->gpus = DatumGetGpuMask(col(c->allocs, i, 5, &isnull));
		d = col(c->allocs, i, 6, &isnull);
		a->gpu_milli = isnull ? 0 : DatumGetInt32(d);
		a->releasing = strcmp(col_text(c->allocs, i, 7), "releasing") == 0;
		a->queue = bsearch_name(queue_names, (int) nq, col_text(c->allocs, i, 8));
		a->idle = DatumGetBool(col(c->allocs, i, 9, &isnull));
		a->preemptable = DatumGetBool(col(c->allocs, i, 10, &isnull));
		a->priority = DatumGetInt32(col(c->allocs, i, 11, &isnull));
		a->service = service_of(col_text(c->allocs, i, 12));
		d = col(c->allocs, i, 13, &isnull);
		a->started_at = isnull ? 0 : DatumGetTimestampTz(d);
		d = col(c->allocs, i, 14, &isnull);
		a->end_at = isnull ? TIDE_TIME_UNKNOWN : DatumGetTimestampTz(d);
		a->placed_at = DatumGetTimestampTz(col(c->allocs, i, 15, &isnull));
		tide_charge(s, a->node, a->queue, a->idle, v, a->gpus, a->gpu_milli, +1);
	}
}

/* OID of a type by name (the extension's types have no fixed OIDs). */
static Oid
type_oid(const char *name)
{
	Oid			oid;
	int			ret;
	bool		isnull;
	Datum		arg = CStringGetTextDatum(name);
	Oid			argtype = TEXTOID;

	ret = SPI_execute_with_args("SELECT pg_catalog.to_regtype($1)::oid", 1, &argtype, &arg, NULL, true, 1);
	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "tide.run_cycle: type lookup failed for %s", name);
	oid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (isnull || !OidIsValid(oid))
		elog(ERROR, "tide.run_cycle: type %s does not exist", name);
	return oid;
}

/* "placed on n1, n2 and 3 more" */
static char *
placed_reason(Cycle *c, const TideResult *r, int j)
{
	StringInfoData buf;
	const TideOutcome *o = &r->outcomes[j];
	int			shown = 0;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "placed on ");
	for (int i = 0; i < o->nplacements; i++)
	{
		const char *name = c->s->nodes[r->placements[o->first_placement + i].node].name;
		bool		seen = false;

		for (int k = 0; k < i && !seen; k++)
			seen = r->placements[o->first_placement + k].node == r->placements[o->first_placement + i].node;
		if (seen)
			continue;
		if (shown == 3)
		{
			appendStringInfoString(&buf, " and more");
			break;
		}
		appendStringInfo(&buf, "%s%s", shown ? ", " : "", name);
		shown++;
	}
	return buf.data;
}

/* Index of a job in the snapshot by id (jobs are sorted by id: the load query orders them), or -1. */
static int
job_index(const TideSnapshot *s, int64 id)
{
	int			lo = 0,
				hi = s->njobs - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (s->jobs[mid].id == id)
			return mid;
		if (s->jobs[mid].id < id)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/*
 * Set confirmed[] to value for the jobs of a bigint[] of ids (NULL: none),
 * keeping *count, the number confirmed, up to date.
 */
static void
set_confirmed(const TideSnapshot *s, Datum ids_array, bool isnull, bool *confirmed, bool value, int *count)
{
	Datum	   *ids;
	bool	   *nulls;
	int			n;

	if (isnull)
		return;
	deconstruct_array(DatumGetArrayTypeP(ids_array), INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &ids, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		int			j = job_index(s, DatumGetInt64(ids[i]));

		if (j >= 0 && confirmed[j] != value)
		{
			confirmed[j] = value;
			*count += value ? 1 : -1;
		}
	}
}

/* A pending reason left for tide.reason_backlog. */
typedef struct DeferredReason
{
	const char *reason;
	int32		text_id;		/* equal ids, equal texts (tide_reason_memo_text) */
	int64		id;
} DeferredReason;

static int
deferred_cmp(const void *a, const void *b)
{
	const DeferredReason *x = a;
	const DeferredReason *y = b;

	if (x->text_id != y->text_id)
		return x->text_id < y->text_id ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

/*
 * Replace tide.reason_backlog with this cycle's deferred reasons, one row
 * per distinct reason: sorted by text id, each group is a slice of one
 * bigint[] of job ids.
 */
static void
write_reason_backlog(DeferredReason *d, int n, int64 cycle_id)
{
	Datum	   *ids;
	Datum	   *texts;
	Datum	   *lo;
	Datum	   *hi;
	int			ngroups = 0;
	Datum		args[5];
	Oid			types[5] = {INT8OID, INT8ARRAYOID, TEXTARRAYOID, INT4ARRAYOID, INT4ARRAYOID};
	int			ret;

	if (n == 0)
	{
		ret = SPI_execute(W_BACKLOG_CLEAR, false, 0);
		if (ret != SPI_OK_DELETE)
			elog(ERROR, "tide.run_cycle: clearing tide.reason_backlog failed: %s", SPI_result_code_string(ret));
		return;
	}
	qsort(d, n, sizeof(DeferredReason), deferred_cmp);
	ids = palloc(sizeof(Datum) * n);
	texts = palloc(sizeof(Datum) * n);
	lo = palloc(sizeof(Datum) * n);
	hi = palloc(sizeof(Datum) * n);
	for (int i = 0; i < n; i++)
	{
		ids[i] = Int64GetDatum(d[i].id);
		if (i == 0 || d[i].text_id != d[i - 1].text_id)
		{
			texts[ngroups] = CStringGetTextDatum(d[i].reason);
			lo[ngroups] = Int32GetDatum(i + 1);
			ngroups++;
		}
		hi[ngroups - 1] = Int32GetDatum(i + 1);
	}
	args[0] = Int64GetDatum(cycle_id);
	args[1] = PointerGetDatum(tide_array_of(ids, NULL, n, INT8OID));
	args[2] = PointerGetDatum(tide_array_of(texts, NULL, ngroups, TEXTOID));
	args[3] = PointerGetDatum(tide_array_of(lo, NULL, ngroups, INT4OID));
	args[4] = PointerGetDatum(tide_array_of(hi, NULL, ngroups, INT4OID));
	ret = SPI_execute_with_args(W_BACKLOG, 5, types, args, NULL, false, 0);
	if (ret != SPI_OK_INSERT)
		elog(ERROR, "tide.run_cycle: writing tide.reason_backlog failed: %s", SPI_result_code_string(ret));
}

/*
 * W_JOBS in a subtransaction with lock_timeout = tide.cycle_lock_timeout; if
 * some job row is held longer by another transaction (a submitter's open
 * transaction on its own pending job: a cancel request, a task change),
 * W_JOBS_SKIP_LOCKED instead: no open transaction stalls the cycle for
 * everyone.  Leaves the result in SPI_tuptable, like SPI_execute.
 */
static int
update_jobs(Oid *types, Datum *args)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile int ret = 0;
	char		timeout[32];

	if (tide_cycle_lock_timeout == 0)
		return SPI_execute_with_args(W_JOBS_SKIP_LOCKED, 4, types, args, NULL, false, 1);
	snprintf(timeout, sizeof(timeout), "%dms", tide_cycle_lock_timeout);
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		int			nest = NewGUCNestLevel();

		(void) set_config_option("lock_timeout", timeout, PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		ret = SPI_execute_with_args(W_JOBS, 4, types, args, NULL, false, 1);
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
				(errmsg("tide.run_cycle: a job row was held by another transaction; this cycle skips the held ones")));
		ret = SPI_execute_with_args(W_JOBS_SKIP_LOCKED, 4, types, args, NULL, false, 1);
	}
	PG_END_TRY();
	return ret;
}

/*
 * Jobs whose tasks changed since the load are not placed after all: a task
 * row committed between the load and W_JOBS's row locks would otherwise
 * leave a job allocated without one of its roles.  Rare (tasks added to a
 * pending job in a later transaction than the job), and only the changed
 * jobs give way, so no submitter can stall the cycle by changing tasks:
 * they go back to pending, and the next cycle loads their new tasks.
 */
static void
give_up_changed_tasks(Cycle *c, bool *confirmed, int *jobs_placed)
{
	TideSnapshot *s = c->s;
	int			nj = 0,
				nr = 0;
	Datum	   *jobs = palloc(sizeof(Datum) * (s->njobs + 1));
	Datum	   *role_jobs = palloc(sizeof(Datum) * (s->nroles + 1));
	Datum	   *tids = palloc(sizeof(Datum) * (s->nroles + 1));
	Datum		args[3];
	Oid			types[3] = {INT8ARRAYOID, TIDARRAYOID, INT8ARRAYOID};
	SPIPlanPtr	plan;
	Datum		d;
	bool		isnull;
	int			before;
	int			ret;

	for (int j = 0; j < s->njobs; j++)
	{
		const TideJob *job = &s->jobs[j];
		int			first = (int) (job->roles - s->roles);

		if (!confirmed[j])
			continue;
		jobs[nj++] = Int64GetDatum(job->id);
		for (int k = 0; k < job->nroles; k++)
		{
			role_jobs[nr] = Int64GetDatum(job->id);
			tids[nr] = PointerGetDatum(&c->role_tid[first + k]);
			nr++;
		}
	}
	if (nj == 0)
		return;
	args[0] = PointerGetDatum(tide_array_of(role_jobs, NULL, nr, INT8OID));
	args[1] = PointerGetDatum(tide_array_of(tids, NULL, nr, TIDOID));
	args[2] = PointerGetDatum(tide_array_of(jobs, NULL, nj, INT8OID));
	plan = SPI_prepare(Q_TASKS_CHANGED, 3, types);
	if (plan == NULL)
		elog(ERROR, "tide.run_cycle: preparing the task check failed: %s", SPI_result_code_string(SPI_result));
	ret = SPI_execute_snapshot(plan, args, NULL, GetLatestSnapshot(), InvalidSnapshot, false, false, 1);
	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "tide.run_cycle: checking tasks failed: %s", SPI_result_code_string(ret));
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	SPI_freeplan(plan);
	if (isnull)
		return;					/* the usual case: nothing changed */

	ret = execute_as_cycle(W_GIVE_UP, 1, &types[2], &d);
	if (ret != SPI_OK_UPDATE)
		elog(ERROR, "tide.run_cycle: giving up changed jobs failed: %s", SPI_result_code_string(ret));
	before = *jobs_placed;
	set_confirmed(s, d, false, confirmed, false, jobs_placed);
	ereport(LOG,
			(errmsg("tide.run_cycle: %d placed jobs left pending: their tasks changed while the cycle placed them",
					before - *jobs_placed)));
}

/* One write of the cycle's own, with cycle_writing set for its triggers. */
static int
execute_as_cycle(const char *sql, int nargs, Oid *types, Datum *args)
{
	volatile int ret = 0;

	cycle_writing = true;
	PG_TRY();
	{
		ret = SPI_execute_with_args(sql, nargs, types, args, NULL, false, 0);
	}
	PG_FINALLY();
	{
		cycle_writing = false;
	}
	PG_END_TRY();
	return ret;
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

/*
 * Write the decisions (write phase): job states and reasons, then the
 * allocations of the jobs the UPDATE confirmed placed.  Returns the number
 * of jobs placed and of allocation rows written.
 */
static void
write_decisions(Cycle *c, const TideResult *r, int64 cycle_id, int *jobs_placed, int *allocs_made,
				int *reasons_deferred)
{
	TideSnapshot *s = c->s;
	int			np = r->nplacements;
	int			ret;
	instr_time	t0;
	bool	   *confirmed = palloc0(sizeof(bool) * (s->njobs + 1));

	*jobs_placed = 0;
	*allocs_made = 0;

	/* jobs: placed ones, unschedulable ones, and changed reasons in budget */
	{
		int			n = 0;
		Datum	   *ids = palloc(sizeof(Datum) * (s->njobs + 1));
		Datum	   *placed = palloc(sizeof(Datum) * (s->njobs + 1));
		Datum	   *reasons = palloc(sizeof(Datum) * (s->njobs + 1));
		Datum	   *unsched = palloc(sizeof(Datum) * (s->njobs + 1));
		const char **fresh = palloc0(sizeof(char *) * (s->njobs + 1));
		int32	   *text_id = palloc(sizeof(int32) * (s->njobs + 1));
		Datum	   *text_datum = palloc0(sizeof(Datum) * (s->njobs + 1));
		int		   *order = palloc(sizeof(int) * (s->njobs + 1));
		int			norder = 0;
		int			budget = tide_reason_updates_per_cycle < 0 ? INT_MAX : tide_reason_updates_per_cycle;
		DeferredReason *deferred = palloc(sizeof(DeferredReason) * (s->njobs + 1));
		int			ndeferred = 0;
		TideReasonMemo *memo = tide_reason_memo_create(s, r);

#define REASON_DATUM(j) \
	(text_datum[text_id[j]] ? text_datum[text_id[j]] \
	 : (text_datum[text_id[j]] = CStringGetTextDatum(fresh[j])))

		INSTR_TIME_SET_CURRENT(t0);
		for (int j = 0; j < s->njobs; j++)
		{
			const TideOutcome *o = &r->outcomes[j];

			if (o->status == TIDE_PLACED)
			{
				ids[n] = Int64GetDatum(s->jobs[j].id);
				placed[n] = BoolGetDatum(true);
				reasons[n] = CStringGetTextDatum(placed_reason(c, r, j));
				unsched[n] = BoolGetDatum(false);
				n++;
				continue;
			}
			fresh[j] = tide_reason_memo_text(memo, j, &text_id[j]);
			if (o->status == TIDE_UNSCHEDULABLE)
			{
				/* always written: the mark keeps the job out of later loads */
				ids[n] = Int64GetDatum(s->jobs[j].id);
				placed[n] = BoolGetDatum(false);
				reasons[n] = REASON_DATUM(j);
				unsched[n] = BoolGetDatum(true);
				n++;
				fresh[j] = NULL;
				continue;
			}
			if (c->job_reason[j] != NULL && strcmp(c->job_reason[j], fresh[j]) == 0)
				fresh[j] = NULL;	/* nothing new to say */
		}
		elog(DEBUG1, "tide.run_cycle: %d reasons rendered in %.1f ms", s->njobs, elapsed_ms(t0));

		/*
		 * Changed reasons within the budget (tide.reason_updates_per_cycle):
		 * jobs no cycle has explained yet first, then the others, each in
		 * walk order (the jobs nearest to running first); the rest go to
		 * tide.reason_backlog.
		 */
		for (int i = 0; i < r->nwalk; i++)
			order[norder++] = r->walk[i];
		for (int j = 0; j < s->njobs; j++)
			if (r->outcomes[j].walk_pos < 0)
				order[norder++] = j;
		for (int pass = 0; pass < 2; pass++)
		{
			for (int i = 0; i < norder; i++)
			{
				int			j = order[i];

				if (fresh[j] == NULL || (pass == 0) != (c->job_reason[j] == NULL))
					continue;
				if (budget > 0)
				{
					ids[n] = Int64GetDatum(s->jobs[j].id);
					placed[n] = BoolGetDatum(false);
					reasons[n] = REASON_DATUM(j);
					unsched[n] = BoolGetDatum(false);
					n++;
					budget--;
				}
				else
				{
					deferred[ndeferred].reason = fresh[j];
					deferred[ndeferred].text_id = text_id[j];
					deferred[ndeferred].id = s->jobs[j].id;
					ndeferred++;
				}
				fresh[j] = NULL;
			}
		}
#undef REASON_DATUM
		if (n > 0)
		{
			Datum		args[4];
			Oid			types[4] = {INT8ARRAYOID, BOOLARRAYOID, TEXTARRAYOID, BOOLARRAYOID};

			args[0] = PointerGetDatum(tide_array_of(ids, NULL, n, INT8OID));
			args[1] = PointerGetDatum(tide_array_of(placed, NULL, n, BOOLOID));
			args[2] = PointerGetDatum(tide_array_of(reasons, NULL, n, TEXTOID));
			args[3] = PointerGetDatum(tide_array_of(unsched, NULL, n, BOOLOID));
			INSTR_TIME_SET_CURRENT(t0);
			ret = update_jobs(types, args);
			elog(DEBUG1, "tide.run_cycle: %d jobs updated in %.1f ms", n, elapsed_ms(t0));
			if (ret != SPI_OK_SELECT || SPI_processed != 1)
				elog(ERROR, "tide.run_cycle: updating jobs failed: %s", SPI_result_code_string(ret));
			{
				bool		isnull;
				Datum		placed_ids = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

				set_confirmed(s, placed_ids, isnull, confirmed, true, jobs_placed);
			}
			INSTR_TIME_SET_CURRENT(t0);
			give_up_changed_tasks(c, confirmed, jobs_placed);
			elog(DEBUG1, "tide.run_cycle: tasks of %d placed jobs checked in %.1f ms", *jobs_placed, elapsed_ms(t0));
		}
		INSTR_TIME_SET_CURRENT(t0);
		write_reason_backlog(deferred, ndeferred, cycle_id);
		elog(DEBUG1, "tide.run_cycle: %d reasons deferred in %.1f ms", ndeferred, elapsed_ms(t0));
		*reasons_deferred = ndeferred;
	}

	/* allocations of the confirmed jobs */
	{
		PlacementRows rows;
		Datum		args[PLACEMENT_ROWS_NARGS];
		Oid			types[PLACEMENT_ROWS_NARGS];
		Datum	   *node_text = palloc0(sizeof(Datum) * (s->nnodes + 1));

		placement_rows_init(&rows, np);
		for (int i = 0; i < np; i++)
		{
			const TidePlacement *p = &r->placements[i];
			const TideJob *job = &s->jobs[p->job];
			int			ri = (int) (job->roles - s->roles) + p->role;

			if (!confirmed[p->job])
				continue;
			if (node_text[p->node] == (Datum) 0)
				node_text[p->node] = CStringGetTextDatum(s->nodes[p->node].name);
			placement_rows_add(&rows, job->id, CStringGetTextDatum(c->role_name[ri]), p->replica,
							   node_text[p->node], c->role_request[ri], p->gpus, p->gpu_milli);
		}
		*allocs_made = rows.n;
		placement_rows_args(&rows, &c->types, cycle_id, args, types);
		INSTR_TIME_SET_CURRENT(t0);
		ret = rows.n == 0 ? SPI_OK_INSERT : execute_as_cycle(W_ALLOCS, PLACEMENT_ROWS_NARGS, types, args);
		elog(DEBUG1, "tide.run_cycle: %d allocations inserted in %.1f ms", rows.n, elapsed_ms(t0));
		if (ret != SPI_OK_INSERT)
			elog(ERROR, "tide.run_cycle: writing allocations failed: %s", SPI_result_code_string(ret));
	}

}

/*
 * tide.run_cycle() returns bigint: one scheduling cycle; the cycle id, or
 * NULL at once when another cycle is running (R-C1).
 */
Datum
tide_run_cycle(PG_FUNCTION_ARGS)
{
	Cycle		c;
	int			ret;
	bool		isnull;
	bool		locked;
	int64		cycle_id;
	instr_time	t0;
	double		load_ms,
				decide_ms,
				write_ms;
	TideResult *r;
	int			jobs_placed,
				allocs_made,
				lost,
				jobs_evicted,
				reasons_deferred;
	MemoryContext caller = CurrentMemoryContext;

	memset(&c, 0, sizeof(c));
	if ((ret = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "tide.run_cycle: SPI_connect failed: %s", SPI_result_code_string(ret));

	ret = SPI_execute("SELECT pg_catalog.pg_try_advisory_xact_lock(tide._cycle_lock_key())", false, 1);
	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "tide.run_cycle: advisory lock query failed: %s", SPI_result_code_string(ret));
	locked = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (!locked)
	{
		SPI_finish();
		PG_RETURN_NULL();
	}

	ret = SPI_execute("INSERT INTO tide.cycles (started_at) VALUES (pg_catalog.clock_timestamp()) RETURNING id", false, 1);
	if (ret != SPI_OK_INSERT_RETURNING || SPI_processed != 1)
		elog(ERROR, "tide.run_cycle: cannot insert the cycle row: %s", SPI_result_code_string(ret));
	cycle_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	{
		Datum		arg = Int64GetDatum(cycle_id);
		Oid			argtype = INT8OID;

		ret = SPI_execute_with_args("SELECT pg_catalog.set_config('tide.cycle_id', $1::text, true)",
									1, &argtype, &arg, NULL, false, 1);
		if (ret != SPI_OK_SELECT)
			elog(ERROR, "tide.run_cycle: cannot set tide.cycle_id: %s", SPI_result_code_string(ret));
	}
	c.types.resvec = type_oid("tide.resvec");
	c.types.gpumask = type_oid("tide.gpumask");
	c.types.resvec_array = type_oid("tide.resvec[]");
	c.types.gpumask_array = type_oid("tide.gpumask[]");

	/* the engine's memory: one context, gone at the end of the cycle */
	c.mcxt = AllocSetContextCreate(caller, "tide cycle", ALLOCSET_DEFAULT_SIZES);

	INSTR_TIME_SET_CURRENT(t0);
	lost = tide_cycle_nodes_lost();	/* R-C3, before the load sees the nodes */
	load_snapshot(&c);
	tide_cycle_load_claims(c.s);	/* evictions on, held resources (R-E6) */
	load_ms = elapsed_ms(t0);

	INSTR_TIME_SET_CURRENT(t0);
	r = tide_decide(c.s);
	decide_ms = elapsed_ms(t0);

	INSTR_TIME_SET_CURRENT(t0);
	write_decisions(&c, r, cycle_id, &jobs_placed, &allocs_made, &reasons_deferred);
	jobs_evicted = tide_cycle_write_evictions(c.s, r, cycle_id, c.role_request, &c.types, lost);
	write_ms = elapsed_ms(t0);

	{
		Datum		args[11];
		Oid			types[11] = {INT8OID, INT4OID, INT4OID, INT4OID, INT4OID, INT4OID,
		FLOAT8OID, FLOAT8OID, FLOAT8OID, INT4OID, INT4OID};

		args[0] = Int64GetDatum(cycle_id);
		args[1] = Int32GetDatum((int32) r->counters.jobs_considered);
		args[2] = Int32GetDatum(jobs_placed);
		args[3] = Int32GetDatum((int32) r->counters.jobs_unschedulable);
		args[4] = Int32GetDatum(allocs_made);
		args[5] = Int32GetDatum((int32) r->counters.holds);
		args[6] = Float8GetDatum(load_ms);
		args[7] = Float8GetDatum(decide_ms);
		args[8] = Float8GetDatum(write_ms);
		args[9] = Int32GetDatum(reasons_deferred);
		args[10] = Int32GetDatum(jobs_evicted);
		ret = SPI_execute_with_args(W_CYCLE, 11, types, args, NULL, false, 0);
		if (ret != SPI_OK_UPDATE)
			elog(ERROR, "tide.run_cycle: cannot update the cycle row: %s", SPI_result_code_string(ret));
	}

	MemoryContextDelete(c.mcxt);
	SPI_finish();
	PG_RETURN_INT64(cycle_id);
}
