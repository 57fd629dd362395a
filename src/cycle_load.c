/*
 * cycle_load.c: the load phase of tide.run_cycle(): every query the cycle
 * reads with, copied into the engine's snapshot (see cycle_load.h).
 *
 * One query per table, all under one snapshot taken when the load starts
 * (it sees the cycle's own earlier writes: nodes marked lost, the shapes
 * refreshed), so that a job's queue and tasks and an allocation's node are
 * always there.  Nodes, queues and live allocations come first: they fix
 * the resource names and the indexes the jobs are read into.  The pending
 * jobs with their tasks, the biggest query by far, are streamed
 * (cycle_recv.c): each row goes straight into the snapshot.
 *
 * Each query's columns are named by the constants that follow it
 * (Anum_<query>_<column>, 1-based, as in PostgreSQL's catalog headers):
 * change the SELECT list and its constants together.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "cycle.h"
#include "cycle_load.h"
#include "cycle_recv.h"
#include "cycle_rows.h"
#include "cycle_shapes.h"
#include "gpumask.h"
#include "resvec.h"

static const char *const Q_NODES =
"SELECT n.name, n.resource_group, n.capacity, n.gpu_type, n.gpu_topology, n.state,"
"       n.allow_cpu_jobs,"
"       " CYCLE_LABEL_ARRAYS("n.labels") ","
"       n.heartbeat_at"
"  FROM tide.nodes n WHERE ($1::text IS NULL OR n.resource_group = $1)"
" ORDER BY n.name COLLATE \"C\"";
#define Anum_nodes_name				1
#define Anum_nodes_resource_group	2
#define Anum_nodes_capacity			3
#define Anum_nodes_gpu_type			4
#define Anum_nodes_gpu_topology		5
#define Anum_nodes_state			6
#define Anum_nodes_allow_cpu_jobs	7
#define Anum_nodes_label_keys		8
#define Anum_nodes_label_values		9
#define Anum_nodes_heartbeat_at		10

static const char *const Q_QUEUES =
"SELECT q.name, q.resource_group, q.quota, q.capability, q.priority, q.placement,"
"       q.service_type, q.reclaimable, q.preemption_within,"
"       (EXTRACT(epoch FROM q.min_runtime) * 1000000)::bigint"
"  FROM tide.queues q WHERE ($1::text IS NULL OR q.resource_group = $1)"
" ORDER BY q.name COLLATE \"C\"";
#define Anum_queues_name			1
#define Anum_queues_resource_group	2
#define Anum_queues_quota			3
#define Anum_queues_capability		4
#define Anum_queues_priority		5
#define Anum_queues_placement		6
#define Anum_queues_service_type	7
#define Anum_queues_reclaimable		8
#define Anum_queues_preemption_within 9
#define Anum_queues_min_runtime_us	10

/*
 * The pending jobs with their tasks, one row per task (a job without any:
 * one row, the task columns NULL), in job id order; streamed (cycle_recv.c).
 */
static const char *const Q_JOBS =
"SELECT j.id, j.queue, j.priority, j.created_at, j.idle, j.reserve, j.retry_of IS NOT NULL,"
"       j.preemptable, j.service_type, j.min_available, j.gpu_type,"
"       " CYCLE_LABEL_ARRAYS("j.node_selector") ","
"       (EXTRACT(epoch FROM j.time_limit) * 1000000)::bigint,"
"       CASE WHEN j.avoid_nodes = '{}' THEN NULL ELSE j.avoid_nodes END,"
"       j.pending_reason, t.role, t.replicas, t.request, t.ctid"
"  FROM tide.jobs j LEFT JOIN tide.job_tasks t ON t.job_id = j.id"
" WHERE j.state = 'pending' AND NOT j.unschedulable AND NOT j.cancel_requested"
"   AND ($1::text IS NULL OR j.queue = ANY ($2::text[]))"
" ORDER BY j.id";				/* tide_job_index() relies on this order */
#define Anum_jobs_id				1
#define Anum_jobs_queue				2
#define Anum_jobs_priority			3
#define Anum_jobs_created_at		4
#define Anum_jobs_idle				5
#define Anum_jobs_reserve			6
#define Anum_jobs_is_retry			7
#define Anum_jobs_preemptable		8
#define Anum_jobs_service_type		9
#define Anum_jobs_min_available		10
#define Anum_jobs_gpu_type			11
#define Anum_jobs_selector_keys		12
#define Anum_jobs_selector_values	13
#define Anum_jobs_time_limit_us		14
#define Anum_jobs_avoid_nodes		15
#define Anum_jobs_pending_reason	16
#define Anum_jobs_role				17
#define Anum_jobs_replicas			18
#define Anum_jobs_request			19
#define Anum_jobs_task_ctid			20

static const char *const Q_ALLOCS =
"SELECT a.id, a.job_id, a.node, a.resources, a.gpus, a.gpu_milli, a.state, j.queue,"
"       j.idle, j.preemptable, j.priority, j.service_type, a.started_at,"
"       a.started_at + j.time_limit, coalesce(a.started_at, a.created_at)"
"  FROM tide.allocations a JOIN tide.jobs j ON j.id = a.job_id"
" WHERE a.state <> 'released' AND ($1::text IS NULL OR j.queue = ANY ($2::text[]))"
"   AND ($1::text IS NULL OR a.node = ANY ($3::text[]))";
#define Anum_allocs_id				1
#define Anum_allocs_job_id			2
#define Anum_allocs_node			3
#define Anum_allocs_resources		4
#define Anum_allocs_gpus			5
#define Anum_allocs_gpu_milli		6
#define Anum_allocs_state			7
#define Anum_allocs_queue			8
#define Anum_allocs_idle			9
#define Anum_allocs_preemptable		10
#define Anum_allocs_priority		11
#define Anum_allocs_service_type	12
#define Anum_allocs_started_at		13
#define Anum_allocs_end_at			14
#define Anum_allocs_placed_at		15

/* Resources held for preemptors (R-E6): one row per held replica. */
static const char *const Q_CLAIMS =
"SELECT h.job_id, h.node, h.resources, h.gpus, h.gpu_milli,"
"       EXISTS (SELECT 1 FROM tide.evictions e"
"                WHERE e.preemptor_job_id = h.job_id AND e.cycle_id = h.cycle_id"
"                  AND e.acked_at IS NULL)"
"  FROM tide.eviction_holds h JOIN tide.jobs j ON j.id = h.job_id"
" WHERE j.state = 'pending' AND NOT j.unschedulable AND NOT j.cancel_requested"
"   AND ($1::text IS NULL OR j.queue = ANY ($2::text[]))"
" ORDER BY h.job_id, h.role COLLATE \"C\", h.replica";
#define Anum_claims_job_id			1
#define Anum_claims_node			2
#define Anum_claims_resources		3
#define Anum_claims_gpus			4
#define Anum_claims_gpu_milli		5
#define Anum_claims_waiting			6

/*
 * Rows are deformed once and kept, one row per result table:
 * SPI_getbinval would walk every earlier varlena column again for each
 * column asked.
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

/*
 * Names sorted by strcmp (the queries' COLLATE "C" order), to look up the
 * index of a node or queue by its name.
 */
typedef struct NameMap
{
	char	  **names;
	int			n;
} NameMap;

/* One load in progress. */
typedef struct Loader
{
	CycleLoad  *l;
	TideSnapshot *s;
	SPITupleTable *nodes,
			   *queues,
			   *allocs,
			   *claims;
	const char *group;			/* the resource group loaded, NULL: all */
	Datum		group_queues;	/* text[] of its queues' names */
	Datum		group_nodes;	/* text[] of its nodes' names */
	NameMap		node_names;
	NameMap		queue_names;
	char	  **group_names;	/* resource group ids, in order of appearance */
	int			ngroups;
	HTAB	   *unknown;		/* what jobs ask for that nothing offers */
	const char **unknown_names; /* the snapshot's unknown_names, by id */
	int			nunknown;
	int			unknown_cap;
	int			jobs_cap;		/* room in the job arrays (load_jobs) */
	int			roles_cap;		/* room in the role arrays */
	int64	   *requests;		/* the roles' request vectors, nres each */
	char	   *role_name;		/* the last role name copied */
	RowCache	cache[ROWCACHE_TABLES];
} Loader;

/* The engine's allocator: the cycle's memory context, huge blocks allowed. */
static void *
cycle_alloc(void *ctx, size_t size)
{
	return MemoryContextAllocExtended((MemoryContext) ctx, size, MCXT_ALLOC_HUGE);
}

/*
 * Run one load query: $1 the resource group (NULL: every group), $2 and $3
 * the names of its queues and nodes (arrays of constants plan as index
 * scans where a subquery would not); its rows stay valid until SPI_finish.
 */
static SPITupleTable *
run_select(Loader *ld, const char *sql)
{
	Oid			argtypes[3] = {TEXTOID, TEXTARRAYOID, TEXTARRAYOID};
	Datum		args[3] = {ld->group ? CStringGetTextDatum(ld->group) : (Datum) 0,
	ld->group_queues, ld->group_nodes};
	int			ret = SPI_execute_with_args(sql, 3, argtypes, args, ld->group ? NULL : "nnn", true, 0);

	if (ret != SPI_OK_SELECT)
		elog(ERROR, "tide.run_cycle: query failed (%s): %s", SPI_result_code_string(ret), sql);
	return SPI_tuptable;
}

/* The names of the group's queues or nodes, as a text[] datum. */
static Datum
group_names(const char *group, const char *sql)
{
	Oid			argtype = TEXTOID;
	Datum		arg = CStringGetTextDatum(group);
	bool		isnull;
	Datum		d;
	int			ret = SPI_execute_with_args(sql, 1, &argtype, &arg, NULL, true, 1);

	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "tide.run_cycle: listing the group's names failed: %s", SPI_result_code_string(ret));
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return PointerGetDatum(PG_DETOAST_DATUM_COPY(d));
}

#define NROWS(t) ((t)->numvals)

/* Column colno (1-based, an Anum_ constant) of a row. */
static Datum
col(Loader *ld, SPITupleTable *t, uint64 row, int colno, bool *isnull)
{
	RowCache   *rc = NULL;

	for (int i = 0; i < ROWCACHE_TABLES && !rc; i++)
	{
		if (ld->cache[i].t == t)
			rc = &ld->cache[i];
		else if (ld->cache[i].t == NULL)
		{
			rc = &ld->cache[i];
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
col_text(Loader *ld, SPITupleTable *t, uint64 row, int colno)
{
	bool		isnull;
	Datum		d = col(ld, t, row, colno, &isnull);

	return isnull ? NULL : TextDatumGetCString(d);
}

/* A column that the query never returns NULL in. */
static Datum
col_notnull(Loader *ld, SPITupleTable *t, uint64 row, int colno)
{
	bool		isnull;

	return col(ld, t, row, colno, &isnull);
}

/* Index of a name in the map, or -1. */
static int
name_index(const NameMap *m, const char *key)
{
	int			lo = 0,
				hi = m->n - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;
		int			cmp = strcmp(m->names[mid], key);

		if (cmp == 0)
			return mid;
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/* Small interner for resource group names (a few per cluster). */
static int
group_id(Loader *ld, const char *name)
{
	for (int i = 0; i < ld->ngroups; i++)
		if (strcmp(ld->group_names[i], name) == 0)
			return i;
	if (ld->ngroups % 16 == 0)
		ld->group_names = ld->ngroups == 0
			? MemoryContextAlloc(ld->l->mcxt, sizeof(char *) * 16)
			: repalloc(ld->group_names, sizeof(char *) * (ld->ngroups + 16));
	ld->group_names[ld->ngroups] = MemoryContextStrdup(ld->l->mcxt, name);
	return ld->ngroups++;
}

static void
intern_name(Loader *ld, const char *name)
{
	if (tide_res_intern(ld->s, name) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many distinct resource names for a scheduling cycle"),
				 errdetail("Node capacities, node card types, queue quotas and capabilities, and live allocations name more than %d resources.",
						   TIDE_MAX_RES),
				 errhint("Remove names no job needs from tide.nodes.capacity or tide.queues quota and capability.")));
}

/*
 * Names only jobs use (R-A2).  The snapshot's name table holds what nodes,
 * queues and live allocations name; a job that asks for any other resource
 * or card type can never fit, so it is marked unschedulable with that name
 * instead of adding it to the table: one tenant's made-up names can never
 * fill the table every other job's placement needs.  reason: the pending
 * reason's text, one per name.  Returns 1 + the id.
 */
#define UNKNOWN_KEY_LEN 320		/* a reason with a card type of up to 255 bytes */

typedef struct UnknownEntry
{
	char		key[UNKNOWN_KEY_LEN];
	int32		id;
} UnknownEntry;

static int32
unknown_name(Loader *ld, const char *reason)
{
	char		key[UNKNOWN_KEY_LEN];
	UnknownEntry *e;
	bool		found;

	if (ld->unknown == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = UNKNOWN_KEY_LEN;
		ctl.entrysize = sizeof(UnknownEntry);
		ctl.hcxt = ld->l->mcxt;
		ld->unknown = hash_create("tide unknown names", 64, &ctl,
								  HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	}
	strlcpy(key, reason, sizeof(key));
	e = hash_search(ld->unknown, key, HASH_ENTER, &found);
	if (!found)
	{
		if (ld->nunknown == ld->unknown_cap)
		{
			ld->unknown_cap = ld->unknown_cap == 0 ? 64 : ld->unknown_cap * 2;
			ld->unknown_names = ld->nunknown == 0
				? MemoryContextAlloc(ld->l->mcxt, sizeof(char *) * ld->unknown_cap)
				: repalloc(ld->unknown_names, sizeof(char *) * ld->unknown_cap);
		}
		ld->unknown_names[ld->nunknown] = MemoryContextStrdup(ld->l->mcxt, key);
		e->id = ld->nunknown++;
	}
	return e->id + 1;
}

/* Intern every name of a resvec column (pass 1). */
static void
intern_resvec_column(Loader *ld, SPITupleTable *t, int colno)
{
	for (uint64 i = 0; i < NROWS(t); i++)
	{
		bool		isnull;
		Datum		d = col(ld, t, i, colno, &isnull);
		ResVec	   *rv;

		if (isnull)
			continue;
		rv = DatumGetResVecP(d);
		for (int k = 0; k < resvec_count(rv); k++)
			intern_name(ld, resvec_name(rv, k));
	}
}

/* Intern the names of a text column (card types) (pass 1). */
static void
intern_text_column(Loader *ld, SPITupleTable *t, int colno)
{
	for (uint64 i = 0; i < NROWS(t); i++)
	{
		char	   *name = col_text(ld, t, i, colno);

		if (name)
			intern_name(ld, name);
	}
}

/*
 * Fill v (nres, zeroed) from a resvec: its quantities in milli.  Returns
 * the first name the snapshot does not know, or NULL.
 */
static const char *
resvec_to_vec(TideSnapshot *s, Datum d, int64 *v)
{
	ResVec	   *rv = DatumGetResVecP(d);
	const char *missing = NULL;

	for (int k = 0; k < resvec_count(rv); k++)
	{
		int			r = tide_res_lookup(s, resvec_name(rv, k));

		if (r >= 0)
			v[r] = resvec_milli(rv, k);
		else if (missing == NULL)
			missing = resvec_name(rv, k);
	}
	return missing;
}

/* A limit vector: the names it lists limit, the others are unlimited (R-A1). */
static void
resvec_to_limit(TideSnapshot *s, Datum d, int64 *v)
{
	for (int r = 0; r < s->nres; r++)
		v[r] = TIDE_UNLIMITED;
	resvec_to_vec(s, d, v);
}

/* Sorted label ids of parallel key/value text arrays (NULL: none). */
static int32 *
label_ids(Loader *ld, SPITupleTable *t, uint64 row, int kcol, int vcol, int32 *n)
{
	bool		kn,
				vn;
	Datum		kd = col(ld, t, row, kcol, &kn);
	Datum		vd = col(ld, t, row, vcol, &vn);

	*n = 0;
	if (kn || vn)
		return NULL;
	return cycle_label_ids(ld->s, ld->l->mcxt, kd, vd, n);
}

/* The engine's node order of a tide.queues placement text (R-L5). */
static int
placement_of(const char *pl)
{
	if (pl && strcmp(pl, "spread") == 0)
		return TIDE_PLACE_SPREAD;
	if (pl && strcmp(pl, "frag") == 0)
		return TIDE_PLACE_FRAG;
	return TIDE_PLACE_PACK;
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

/* A microsecond count column, 0 for NULL (none). */
static int64
col_micros(Loader *ld, SPITupleTable *t, uint64 row, int colno)
{
	bool		isnull;
	Datum		d = col(ld, t, row, colno, &isnull);

	return isnull ? 0 : DatumGetInt64(d);
}

static void
load_nodes(Loader *ld)
{
	TideSnapshot *s = ld->s;
	SPITupleTable *t = ld->nodes;

	ld->node_names.names = MemoryContextAlloc(ld->l->mcxt, sizeof(char *) * (NROWS(t) + 1));
	ld->node_names.n = (int) NROWS(t);
	for (uint64 i = 0; i < NROWS(t); i++)
	{
		TideNode   *n = &s->nodes[i];
		bool		isnull;
		Datum		d;
		char	   *gt,
				   *st;

		ld->node_names.names[i] = MemoryContextStrdup(ld->l->mcxt, col_text(ld, t, i, Anum_nodes_name));
		n->name = ld->node_names.names[i];
		n->group = group_id(ld, col_text(ld, t, i, Anum_nodes_resource_group));
		resvec_to_vec(s, col_notnull(ld, t, i, Anum_nodes_capacity), n->capacity);
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
		gt = col_text(ld, t, i, Anum_nodes_gpu_type);
		n->gpu_type = gt ? tide_res_lookup(s, gt) : -1;
		d = col(ld, t, i, Anum_nodes_gpu_topology, &isnull);
		if (!isnull)
		{
			Datum	   *doms;
			bool	   *dnulls;
			int			nd;

			deconstruct_array(DatumGetArrayTypeP(d), INT4OID, 4, true, TYPALIGN_INT, &doms, &dnulls, &nd);
			for (int g = 0; g < nd && g < n->ngpus; g++)
				n->gpu_domain[g] = dnulls[g] ? 0 : (int16) DatumGetInt32(doms[g]);
		}
		st = col_text(ld, t, i, Anum_nodes_state);
		n->state = strcmp(st, "ready") == 0 ? TIDE_NODE_READY :
			strcmp(st, "draining") == 0 ? TIDE_NODE_DRAINING : TIDE_NODE_DOWN;
		if (n->unusable)
			n->state = TIDE_NODE_DOWN;
		n->allow_cpu_jobs = DatumGetBool(col_notnull(ld, t, i, Anum_nodes_allow_cpu_jobs));
		n->labels = label_ids(ld, t, i, Anum_nodes_label_keys, Anum_nodes_label_values, &n->nlabels);
		d = col(ld, t, i, Anum_nodes_heartbeat_at, &isnull);
		n->heartbeat_at = isnull ? 0 : DatumGetTimestampTz(d);
	}
}

static void
load_queues(Loader *ld)
{
	TideSnapshot *s = ld->s;
	SPITupleTable *t = ld->queues;

	ld->queue_names.names = MemoryContextAlloc(ld->l->mcxt, sizeof(char *) * (NROWS(t) + 1));
	ld->queue_names.n = (int) NROWS(t);
	for (uint64 i = 0; i < NROWS(t); i++)
	{
		TideQueue  *q = &s->queues[i];
		bool		isnull;
		Datum		d;
		char	   *pl,
				   *pw;

		ld->queue_names.names[i] = MemoryContextStrdup(ld->l->mcxt, col_text(ld, t, i, Anum_queues_name));
		q->name = ld->queue_names.names[i];
		q->group = group_id(ld, col_text(ld, t, i, Anum_queues_resource_group));
		d = col(ld, t, i, Anum_queues_quota, &isnull);
		if (!isnull && resvec_count(DatumGetResVecP(d)) > 0)
		{
			q->has_quota = true;
			resvec_to_limit(s, d, q->quota);
		}
		d = col(ld, t, i, Anum_queues_capability, &isnull);
		if (!isnull)
			resvec_to_limit(s, d, q->capability);
		q->priority = DatumGetInt32(col_notnull(ld, t, i, Anum_queues_priority));
		pl = col_text(ld, t, i, Anum_queues_placement);
		q->placement = placement_of(pl);
		q->service = service_of(col_text(ld, t, i, Anum_queues_service_type));
		q->reclaimable = DatumGetBool(col_notnull(ld, t, i, Anum_queues_reclaimable));
		pw = col_text(ld, t, i, Anum_queues_preemption_within);
		q->preemption_within = pw && strcmp(pw, "lower_priority") == 0
			? TIDE_PREEMPT_LOWER_PRIORITY : TIDE_PREEMPT_NEVER;
		q->min_runtime = col_micros(ld, t, i, Anum_queues_min_runtime_us);
	}
}

/*
 * Roles are walked in name order (C collation), whatever order the task
 * rows came in: insertion sort of one job's roles, most jobs have one.
 */
static void
sort_roles(CycleLoad *l, int first, int n)
{
	TideRole   *roles = &l->s->roles[first];

	for (int i = 1; i < n; i++)
	{
		for (int k = i; k > 0 && strcmp(l->role_name[first + k - 1], l->role_name[first + k]) > 0; k--)
		{
			TideRole	r = roles[k];
			char	   *name = l->role_name[first + k];
			Datum		req = l->role_request[first + k];
			ItemPointerData tid = l->role_tid[first + k];

			roles[k] = roles[k - 1];
			roles[k - 1] = r;
			l->role_name[first + k] = l->role_name[first + k - 1];
			l->role_name[first + k - 1] = name;
			l->role_request[first + k] = l->role_request[first + k - 1];
			l->role_request[first + k - 1] = req;
			l->role_tid[first + k] = l->role_tid[first + k - 1];
			l->role_tid[first + k - 1] = tid;
		}
	}
}

/* Node indexes of a text[] of node names (failed attempts, R-L4). */
static void
load_avoid(Loader *ld, TideJob *j, Datum d)
{
	Datum	   *names;
	bool	   *nulls;
	int			n;
	int32	   *av;

	deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT, &names, &nulls, &n);
	av = MemoryContextAlloc(ld->l->mcxt, sizeof(int32) * (n + 1));
	for (int k = 0; k < n; k++)
	{
		int			ni = nulls[k] ? -1 : name_index(&ld->node_names, TextDatumGetCString(names[k]));

		if (ni >= 0)
			av[j->navoid++] = ni;
	}
	j->avoid = av;
}

/*
 * The job rows arrive before their count is known: the job and role arrays
 * start at JOBS_INITIAL and double.  Roles' request vectors sit in one pool
 * (ld->requests, nres a role) that the roles point into once all are in.
 */
#define JOBS_INITIAL 256

static void *
grow_array(MemoryContext mcxt, void *p, size_t elem, int cap)
{
	if (cap > INT32_MAX / 4)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						errmsg("too many rows for one scheduling cycle")));
	return p == NULL ? MemoryContextAllocHuge(mcxt, elem * cap) : repalloc_huge(p, elem * cap);
}

static void
jobs_grow(Loader *ld)
{
	CycleLoad  *l = ld->l;
	int			cap = ld->jobs_cap ? ld->jobs_cap * 2 : JOBS_INITIAL;

	ld->s->jobs = grow_array(l->mcxt, ld->s->jobs, sizeof(TideJob), cap);
	l->role_base = grow_array(l->mcxt, l->role_base, sizeof(int32), cap);
	l->job_reason = grow_array(l->mcxt, l->job_reason, sizeof(char *), cap);
	ld->jobs_cap = cap;
}

static void
roles_grow(Loader *ld)
{
	CycleLoad  *l = ld->l;
	int			cap = ld->roles_cap ? ld->roles_cap * 2 : JOBS_INITIAL;

	ld->s->roles = grow_array(l->mcxt, ld->s->roles, sizeof(TideRole), cap);
	ld->requests = grow_array(l->mcxt, ld->requests, sizeof(int64) * ld->s->nres, cap);
	l->role_request = grow_array(l->mcxt, l->role_request, sizeof(Datum), cap);
	l->role_name = grow_array(l->mcxt, l->role_name, sizeof(char *), cap);
	l->role_tid = grow_array(l->mcxt, l->role_tid, sizeof(ItemPointerData), cap);
	ld->roles_cap = cap;
}

/* A text column as a C string allocated in mcxt. */
static char *
text_in(MemoryContext mcxt, Datum d)
{
	MemoryContext old = MemoryContextSwitchTo(mcxt);
	char	   *str = TextDatumGetCString(d);

	MemoryContextSwitchTo(old);
	return str;
}

/* The job columns of a job's first row. */
static void
job_start(Loader *ld, const Datum *v, const bool *nulls)
{
	CycleLoad  *l = ld->l;
	TideSnapshot *s = ld->s;
	int			ji = s->njobs;
	TideJob    *j;
	char	   *gt;

	if (ji == ld->jobs_cap)
		jobs_grow(ld);
	j = &s->jobs[ji];
	memset(j, 0, sizeof(TideJob));
	j->id = DatumGetInt64(v[Anum_jobs_id - 1]);
	j->queue = name_index(&ld->queue_names, TextDatumGetCString(v[Anum_jobs_queue - 1]));
	if (j->queue < 0)
		j->queue = 0;			/* cannot happen: a job's queue is in the same
								 * snapshot */
	j->priority = DatumGetInt32(v[Anum_jobs_priority - 1]);
	j->created_at = DatumGetTimestampTz(v[Anum_jobs_created_at - 1]);
	j->idle = DatumGetBool(v[Anum_jobs_idle - 1]);
	j->reserve = DatumGetBool(v[Anum_jobs_reserve - 1]);
	j->is_retry = DatumGetBool(v[Anum_jobs_is_retry - 1]);
	j->preemptable = DatumGetBool(v[Anum_jobs_preemptable - 1]);
	j->service = service_of(nulls[Anum_jobs_service_type - 1] ? NULL :
							TextDatumGetCString(v[Anum_jobs_service_type - 1]));
	j->min_available = nulls[Anum_jobs_min_available - 1] ? 0 :
		DatumGetInt32(v[Anum_jobs_min_available - 1]);
	j->gpu_type = -1;
	if (!nulls[Anum_jobs_gpu_type - 1])
	{
		gt = TextDatumGetCString(v[Anum_jobs_gpu_type - 1]);
		j->gpu_type = tide_res_lookup(s, gt);
		if (j->gpu_type < 0)
			j->unknown_name = unknown_name(ld, psprintf("no node with gpu_type %s in the resource group", gt));
	}
	if (!nulls[Anum_jobs_selector_keys - 1] && !nulls[Anum_jobs_selector_values - 1])
		j->selector = cycle_label_ids(s, l->mcxt, v[Anum_jobs_selector_keys - 1],
									  v[Anum_jobs_selector_values - 1], &j->nselector);
	j->time_limit = nulls[Anum_jobs_time_limit_us - 1] ? 0 :
		DatumGetInt64(v[Anum_jobs_time_limit_us - 1]);
	if (!nulls[Anum_jobs_avoid_nodes - 1])
		load_avoid(ld, j, v[Anum_jobs_avoid_nodes - 1]);
	l->job_reason[ji] = nulls[Anum_jobs_pending_reason - 1] ? NULL :
		text_in(l->mcxt, v[Anum_jobs_pending_reason - 1]);
	l->role_base[ji] = s->nroles;
	s->njobs++;
}

/* The task columns of a row: one more role of the last job. */
static void
role_add(Loader *ld, const Datum *v)
{
	CycleLoad  *l = ld->l;
	TideSnapshot *s = ld->s;
	TideJob    *j = &s->jobs[s->njobs - 1];
	int			ri = s->nroles;
	TideRole   *r;
	int64	   *req;
	char	   *name;
	const char *missing;
	MemoryContext old;

	if (ri == ld->roles_cap)
		roles_grow(ld);
	r = &s->roles[ri];
	memset(r, 0, sizeof(TideRole));
	/* most roles are named alike (main): one copy of a run of equal names */
	name = TextDatumGetCString(v[Anum_jobs_role - 1]);
	if (ld->role_name == NULL || strcmp(ld->role_name, name) != 0)
		ld->role_name = MemoryContextStrdup(l->mcxt, name);
	l->role_name[ri] = ld->role_name;
	r->name = ld->role_name;
	r->replicas = DatumGetInt32(v[Anum_jobs_replicas - 1]);
	/* kept for the writes; detoasted once, read below from the copy */
	old = MemoryContextSwitchTo(l->mcxt);
	l->role_request[ri] = PointerGetDatum(PG_DETOAST_DATUM_COPY(v[Anum_jobs_request - 1]));
	MemoryContextSwitchTo(old);
	ItemPointerCopy((ItemPointer) DatumGetPointer(v[Anum_jobs_task_ctid - 1]), &l->role_tid[ri]);
	req = ld->requests + (size_t) s->nres * ri;
	memset(req, 0, sizeof(int64) * s->nres);
	missing = resvec_to_vec(s, l->role_request[ri], req);
	if (missing && j->unknown_name == 0)
		j->unknown_name = unknown_name(ld, psprintf("no node offers resource %s", missing));
	j->nroles++;
	s->nroles++;
}

/* One row of Q_JOBS (a CycleRowFn). */
static void
job_row(void *arg, const Datum *v, const bool *nulls)
{
	Loader	   *ld = arg;
	TideSnapshot *s = ld->s;

	if (s->njobs == 0 || s->jobs[s->njobs - 1].id != DatumGetInt64(v[Anum_jobs_id - 1]))
		job_start(ld, v, nulls);
	if (!nulls[Anum_jobs_role - 1])
		role_add(ld, v);
}

/* Pending jobs and their roles, streamed in job id order. */
static void
load_jobs(Loader *ld)
{
	Oid			argtypes[3] = {TEXTOID, TEXTARRAYOID, TEXTARRAYOID};
	Datum		args[3] = {ld->group ? CStringGetTextDatum(ld->group) : (Datum) 0,
	ld->group_queues, ld->group_nodes};
	bool		nulls[3] = {ld->group == NULL, ld->group == NULL, ld->group == NULL};
	CycleLoad  *l = ld->l;
	TideSnapshot *s = ld->s;

	s->njobs = s->nroles = 0;
	jobs_grow(ld);
	roles_grow(ld);
	cycle_stream(Q_JOBS, 3, argtypes, args, nulls, job_row, ld);
	/* the arrays stay where they are now: point into them, then sort roles */
	for (int ri = 0; ri < s->nroles; ri++)
		s->roles[ri].request = ld->requests + (size_t) s->nres * ri;
	for (int ji = 0; ji < s->njobs; ji++)
	{
		s->jobs[ji].roles = &s->roles[l->role_base[ji]];
		sort_roles(l, l->role_base[ji], s->jobs[ji].nroles);
	}
	s->nunknown = ld->nunknown;
	s->unknown_names = ld->unknown_names;
}

/* Live allocations: charge nodes and queues (R-C4), keep end times (R-L2). */
static void
load_allocs(Loader *ld)
{
	TideSnapshot *s = ld->s;
	SPITupleTable *t = ld->allocs;

	for (uint64 i = 0; i < NROWS(t); i++)
	{
		TideRunning *a = &s->running[i];
		bool		isnull;
		Datum		d;
		int64	   *v = tide_vec_new(s);

		a->alloc_id = DatumGetInt64(col_notnull(ld, t, i, Anum_allocs_id));
		a->job_id = DatumGetInt64(col_notnull(ld, t, i, Anum_allocs_job_id));
		a->node = name_index(&ld->node_names, col_text(ld, t, i, Anum_allocs_node));
		resvec_to_vec(s, col_notnull(ld, t, i, Anum_allocs_resources), v);
		a->res = v;
		a->gpus = DatumGetGpuMask(col_notnull(ld, t, i, Anum_allocs_gpus));
		d = col(ld, t, i, Anum_allocs_gpu_milli, &isnull);
		a->gpu_milli = isnull ? 0 : DatumGetInt32(d);
		a->releasing = strcmp(col_text(ld, t, i, Anum_allocs_state), "releasing") == 0;
		a->queue = name_index(&ld->queue_names, col_text(ld, t, i, Anum_allocs_queue));
		a->idle = DatumGetBool(col_notnull(ld, t, i, Anum_allocs_idle));
		a->preemptable = DatumGetBool(col_notnull(ld, t, i, Anum_allocs_preemptable));
		a->priority = DatumGetInt32(col_notnull(ld, t, i, Anum_allocs_priority));
		a->service = service_of(col_text(ld, t, i, Anum_allocs_service_type));
		d = col(ld, t, i, Anum_allocs_started_at, &isnull);
		a->started_at = isnull ? 0 : DatumGetTimestampTz(d);
		d = col(ld, t, i, Anum_allocs_end_at, &isnull);
		a->end_at = isnull ? TIDE_TIME_UNKNOWN : DatumGetTimestampTz(d);
		a->placed_at = DatumGetTimestampTz(col_notnull(ld, t, i, Anum_allocs_placed_at));
		tide_charge(s, a->node, a->queue, a->idle, v, a->gpus, a->gpu_milli, +1);
	}
}

/* Switch evictions on and give the snapshot what is held for preemptors (R-E6). */
static void
load_claims(Loader *ld)
{
	TideSnapshot *s = ld->s;
	SPITupleTable *t;

	s->evict = true;
	t = ld->claims = run_select(ld, Q_CLAIMS);
	s->claims = tide_alloc(s, sizeof(TideClaim) * (NROWS(t) + 1));
	s->nclaims = 0;
	for (uint64 i = 0; i < NROWS(t); i++)
	{
		TideClaim  *cl = &s->claims[s->nclaims];
		bool		isnull;
		Datum		d;
		int64	   *v = tide_vec_new(s);

		cl->job_id = DatumGetInt64(col_notnull(ld, t, i, Anum_claims_job_id));
		cl->node = name_index(&ld->node_names, col_text(ld, t, i, Anum_claims_node));
		if (cl->node < 0)
			continue;
		resvec_to_vec(s, col_notnull(ld, t, i, Anum_claims_resources), v);
		cl->res = v;
		cl->gpus = DatumGetGpuMask(col_notnull(ld, t, i, Anum_claims_gpus));
		d = col(ld, t, i, Anum_claims_gpu_milli, &isnull);
		cl->gpu_milli = isnull ? 0 : DatumGetInt32(d);
		cl->waiting = DatumGetBool(col_notnull(ld, t, i, Anum_claims_waiting));
		s->nclaims++;
	}
}

void
tide_cycle_load(CycleLoad *l, MemoryContext mcxt, const char *group)
{
	TideMem		mem = {cycle_alloc, NULL, mcxt};
	Loader	   *ld = palloc0(sizeof(Loader));
	TideSnapshot *s;
	char		err[256];
	instr_time	t0;

	memset(l, 0, sizeof(CycleLoad));
	l->mcxt = mcxt;
	ld->l = l;
	l->group = ld->group = group;

	/* one snapshot for every query, that sees this cycle's own writes */
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (group)
	{
		ld->group_queues = group_names(group, "SELECT coalesce(pg_catalog.array_agg(q.name), '{}') FROM tide.queues q WHERE q.resource_group = $1");
		ld->group_nodes = group_names(group, "SELECT coalesce(pg_catalog.array_agg(n.name), '{}') FROM tide.nodes n WHERE n.resource_group = $1");
	}
	INSTR_TIME_SET_CURRENT(t0);
	ld->nodes = run_select(ld, Q_NODES);
	ld->queues = run_select(ld, Q_QUEUES);
	ld->allocs = run_select(ld, Q_ALLOCS);
	elog(DEBUG1, "tide.run_cycle: nodes, queues, allocations selected in %.1f ms", cycle_elapsed_ms(t0));
	INSTR_TIME_SET_CURRENT(t0);
	if (NROWS(ld->nodes) > INT32_MAX / 4 || NROWS(ld->allocs) > INT32_MAX / 4)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						errmsg("too many rows for one scheduling cycle")));

	s = tide_snapshot_create(&mem);
	l->s = ld->s = s;
	s->now = GetCurrentTimestamp();

	/*
	 * pass 1: every resource name the cluster offers or accounts, card types
	 * included; jobs' names are looked up, never added (unknown_name)
	 */
	intern_resvec_column(ld, ld->nodes, Anum_nodes_capacity);
	intern_text_column(ld, ld->nodes, Anum_nodes_gpu_type);
	intern_resvec_column(ld, ld->queues, Anum_queues_quota);
	intern_resvec_column(ld, ld->queues, Anum_queues_capability);
	intern_resvec_column(ld, ld->allocs, Anum_allocs_resources);

	/* pass 2: the rows (nodes and queues first: jobs name them) */
	tide_snapshot_alloc_cluster(s, (int) NROWS(ld->nodes), (int) NROWS(ld->queues),
								(int) NROWS(ld->allocs));
	load_nodes(ld);
	load_queues(ld);
	elog(DEBUG1, "tide.run_cycle: nodes and queues converted in %.1f ms", cycle_elapsed_ms(t0));
	INSTR_TIME_SET_CURRENT(t0);
	load_jobs(ld);
	elog(DEBUG1, "tide.run_cycle: %d jobs, %d roles loaded in %.1f ms", s->njobs, s->nroles, cycle_elapsed_ms(t0));
	INSTR_TIME_SET_CURRENT(t0);
	if (!tide_snapshot_finish(s, err, sizeof(err)))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("cannot schedule: %s", err)));
	load_allocs(ld);
	load_claims(ld);
	tide_cycle_shapes_load(s, mcxt, group);
	PopActiveSnapshot();
	elog(DEBUG1, "tide.run_cycle: allocations, claims and shapes loaded in %.1f ms", cycle_elapsed_ms(t0));
}
