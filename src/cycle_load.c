/*
 * cycle_load.c: the load phase of tide.run_cycle(): every query the cycle
 * reads with, copied into the engine's snapshot (see cycle_load.h).
 *
 * One query per table, all under one snapshot taken when the load starts
 * (it sees the cycle's own earlier writes: nodes marked lost, the shapes
 * refreshed), so that a job's queue and tasks and an allocation's node are
 * always there.  Nodes, queues and live allocations come first: they fix
 * the resource names and the indexes the jobs are read into.  The pending
 * jobs with their tasks, the biggest query by far, are streamed straight
 * into the snapshot (cycle_jobs.c).
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
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "cycle_cache.h"
#include "cycle_fair.h"
#include "cycle_jobs.h"
#include "cycle_labels.h"
#include "cycle_load.h"
#include "cycle_loader.h"
#include "cycle_owner_fair.h"
#include "cycle_recv.h"
#include "cycle_shapes.h"
#include "cycle_timer.h"
#include "gpumask.h"
#include "resvec.h"
#include "settings.h"

static const char *const Q_NODES =
"SELECT n.name, n.resource_group, n.capacity, n.gpu_type, n.gpu_topology, n.state,"
"       n.allow_cpu_jobs,"
"       n.labels,"
"       n.heartbeat_at"
"  FROM tide.nodes n WHERE ($1::text IS NULL OR n.resource_group = $1)";
#define Anum_nodes_name				1
#define Anum_nodes_resource_group	2
#define Anum_nodes_capacity			3
#define Anum_nodes_gpu_type			4
#define Anum_nodes_gpu_topology		5
#define Anum_nodes_state			6
#define Anum_nodes_allow_cpu_jobs	7
#define Anum_nodes_labels			8
#define Anum_nodes_heartbeat_at		9

/*
 * A node's row as Q_NODES streams it, its texts and varlenas copied into
 * the load's arena (a value equal to the previous row's is that copy: most
 * nodes share their group, capacity, card type and topology).  The query
 * gives them in no order; they are sorted by name here (sort_nodes), as
 * ORDER BY name COLLATE "C" did at a tuplesort's cost.
 */
typedef struct NodeRow
{
	const char *name;			/* NUL-terminated */
	int			namelen;
	const char *group;
	Datum		capacity;		/* resvec, as stored (a short header stays) */
	const char *gpu_type;		/* NULL: none */
	Datum		topology;		/* int4[]; 0: none */
	Datum		labels;			/* jsonb; 0: none */
	int			state;
	bool		allow_cpu_jobs;
	TimestampTz heartbeat_at;
} NodeRow;

static const char *const Q_QUEUES =
"SELECT q.name, q.resource_group, q.quota, q.capability, q.priority, q.placement,"
"       q.service_type, q.reclaimable, q.preemption_within,"
"       (EXTRACT(epoch FROM q.min_runtime) * 1000000)::bigint, q.owner_capability,"
"       q.parent, q.owner_fair_share"
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
#define Anum_queues_owner_capability 11
#define Anum_queues_parent			12
#define Anum_queues_owner_fair_share 13

#define Q_ALLOCS_COLUMNS \
"SELECT a.id, a.job_id, a.node, a.resources, a.gpus, a.gpu_milli, a.state, j.queue," \
"       j.idle, j.preemptable, j.priority, j.service_type, a.started_at," \
"       a.started_at + j.time_limit, coalesce(a.started_at, a.created_at), j.owner"
#define Q_ALLOCS_WHERE \
" WHERE a.state <> 'released' AND ($1::text IS NULL OR j.queue = ANY ($2::text[]))" \
"   AND ($1::text IS NULL OR a.node = ANY ($3::text[]))"
/* in id order: an incremental load (cycle_cache.c) gives them in the same */
static const char *const Q_ALLOCS = Q_ALLOCS_COLUMNS
"  FROM tide.allocations a JOIN tide.jobs j ON j.id = a.job_id" Q_ALLOCS_WHERE " ORDER BY a.id";
/*
 * The changed jobs' ($4, distinct) allocations, looked up from the ids:
 * "a.job_id = ANY ($4)" let the planner, its statistics behind a table
 * that the settle had just rewritten, scan every allocation and merge
 * with all of tide.jobs (28 ms at 100k pending, for 35 ids).
 */
static const char *const Q_ALLOCS_CHANGED = Q_ALLOCS_COLUMNS
"  FROM pg_catalog.unnest($4::bigint[]) c(job_id)"
"  JOIN tide.allocations a ON a.job_id = c.job_id JOIN tide.jobs j ON j.id = a.job_id" Q_ALLOCS_WHERE
" ORDER BY a.id";
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
#define Anum_allocs_owner			16

/* Resources held for preemptors (R-E6): one row per held replica. */
static const char *const Q_CLAIMS =
"SELECT h.job_id, h.node, h.resources, h.gpus, h.gpu_milli,"
"       EXISTS (SELECT 1 FROM tide.evictions e"
"                WHERE e.preemptor_job_id = h.job_id AND e.cycle_id = h.cycle_id"
"                  AND e.acked_at IS NULL)"
/* or on what that cycle's other victims free (R-E4): while one stops there */
"       OR EXISTS (SELECT 1 FROM tide.allocations a JOIN tide.evictions e ON e.job_id = a.job_id"
"                   WHERE a.node = h.node AND a.state = 'releasing'"
"                     AND e.cycle_id = h.cycle_id AND e.acked_at IS NULL)"
"  FROM tide.eviction_holds h JOIN tide.jobs j ON j.id = h.job_id"
" WHERE j.state = 'pending' AND NOT j.unschedulable AND NOT j.cancel_requested AND NOT j.waiting"
"   AND ($1::text IS NULL OR j.queue = ANY ($2::text[]))"
" ORDER BY h.job_id, h.role COLLATE \"C\", h.replica";
#define Anum_claims_job_id			1
#define Anum_claims_node			2
#define Anum_claims_resources		3
#define Anum_claims_gpus			4
#define Anum_claims_gpu_milli		5
#define Anum_claims_waiting			6

/* The engine's allocator: the cycle's memory context, huge blocks allowed. */
static void *
cycle_alloc(void *ctx, size_t size)
{
	return MemoryContextAllocExtended((MemoryContext) ctx, size, MCXT_ALLOC_HUGE);
}

/*
 * Run one load query with the first three of loader_query_args() (the
 * names as arrays of constants plan as index scans where a subquery would
 * not); its rows stay valid until SPI_finish.
 */
static SPITupleTable *
run_select(Loader *ld, const char *sql)
{
	Oid			types[LOADER_NARGS];
	Datum		args[LOADER_NARGS];
	bool		nulls[LOADER_NARGS];
	char		n[LOADER_NARGS];
	int			ret;

	loader_query_args(ld, types, args, nulls);
	for (int i = 0; i < LOADER_NARGS; i++)
		n[i] = nulls[i] ? 'n' : ' ';
	ret = SPI_execute_plan(cycle_kept_plan(sql, 3, types, 0), args, n, true, 0);

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
	int			ret = SPI_execute_plan(cycle_kept_plan(sql, 1, &argtype, 0), &arg, NULL, true, 1);

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
	return loader_name_index_len(m, key, (int) strlen(key));
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

/* The allocations' pass 1: the load, and the names last interned. */
typedef struct AllocNames
{
	Loader	   *ld;
	ResVecMemo	memo;
} AllocNames;

/*
 * Intern the names of an allocation's resources (pass 1, a CycleRowFn
 * given the columns up to Anum_allocs_resources): a run of allocations
 * naming the same resources (nearly all do) interns them once.
 */
static void
intern_alloc_row(void *arg, const Datum *v, const bool *nulls)
{
	AllocNames *an = arg;
	ShortBuf	buf;
	ResVec	   *rv = DatumGetResVecP(loader_unpack_short(v[Anum_allocs_resources - 1], &buf));

	if (loader_resvec_names_seen(&an->memo, rv))
		return;
	for (int k = 0; k < resvec_count(rv); k++)
		intern_name(an->ld, resvec_name(rv, k));
}

/* A limit vector: the names it lists limit, the others are unlimited (R-A1). */
static void
resvec_to_limit(TideSnapshot *s, Datum d, int64 *v)
{
	for (int r = 0; r < s->nres; r++)
		v[r] = TIDE_UNLIMITED;
	loader_resvec_to_vec(s, d, v);
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

static int
service_of(const char *s)
{
	return loader_service_of_len(s, s ? (int) strlen(s) : 0);
}

/* A microsecond count column, 0 for NULL (none). */
static int64
col_micros(Loader *ld, SPITupleTable *t, uint64 row, int colno)
{
	bool		isnull;
	Datum		d = col(ld, t, row, colno, &isnull);

	return isnull ? 0 : DatumGetInt64(d);
}

/* Is a text datum word (read in place)? */
static bool
text_is(Datum d, const char *word)
{
	text	   *t = DatumGetTextPP(d);
	int			len = VARSIZE_ANY_EXHDR(t);

	return len == (int) strlen(word) && memcmp(VARDATA_ANY(t), word, len) == 0;
}

/* A varlena column copied (loader_arena_copy), or prev when it holds the same bytes. */
static Datum
arena_varlena_same(Loader *ld, Datum d, Datum prev)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(d);
	struct varlena *p = (struct varlena *) DatumGetPointer(prev);

	/* the header's bytes too: a short one and a long one differ */
	if (p && !VARATT_IS_EXTERNAL(v) && !VARATT_IS_COMPRESSED(v) &&
		VARSIZE_ANY(v) == VARSIZE_ANY(p) && memcmp(v, p, VARSIZE_ANY(v)) == 0)
		return prev;
	return loader_arena_copy(ld, d);
}

/* A text column as a NUL-terminated copy (*len its bytes), or prev when equal. */
static const char *
arena_text_same(Loader *ld, Datum d, const char *prev, int *len)
{
	text	   *t = DatumGetTextPP(d);
	int			n = VARSIZE_ANY_EXHDR(t);
	char	   *p;

	if (len)
		*len = n;
	if (prev && strncmp(prev, VARDATA_ANY(t), n) == 0 && prev[n] == '\0')
		return prev;
	p = loader_arena_alloc(ld, n + 1);
	memcpy(p, VARDATA_ANY(t), n);
	p[n] = '\0';
	return p;
}

/* One row of Q_NODES (a CycleRowFn): kept for sort_nodes and load_nodes. */
static void
node_row(void *arg, const Datum *v, const bool *nulls)
{
	Loader	   *ld = arg;
	NodeRow    *prev = ld->nnode_rows > 0 ? ld->node_rows[ld->nnode_rows - 1] : NULL;
	NodeRow    *n;
	NodeRow		none = {0};

	if (ld->nnode_rows == ld->node_rows_cap)
	{
		if (ld->node_rows_cap >= INT32_MAX / 4)
			ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
							errmsg("too many rows for one scheduling cycle")));
		ld->node_rows_cap = ld->node_rows_cap ? ld->node_rows_cap * 2 : 1024;
		ld->node_rows = ld->node_rows == NULL
			? MemoryContextAllocHuge(ld->l->mcxt, sizeof(NodeRow *) * ld->node_rows_cap)
			: repalloc_huge(ld->node_rows, sizeof(NodeRow *) * ld->node_rows_cap);
	}
	if (prev == NULL)
		prev = &none;
	n = loader_arena_alloc(ld, sizeof(NodeRow));
	ld->node_rows[ld->nnode_rows++] = n;
	n->name = arena_text_same(ld, v[Anum_nodes_name - 1], NULL, &n->namelen);
	n->group = arena_text_same(ld, v[Anum_nodes_resource_group - 1], prev->group, NULL);
	n->capacity = arena_varlena_same(ld, v[Anum_nodes_capacity - 1], prev->capacity);
	n->gpu_type = nulls[Anum_nodes_gpu_type - 1] ? NULL :
		arena_text_same(ld, v[Anum_nodes_gpu_type - 1], prev->gpu_type, NULL);
	n->topology = nulls[Anum_nodes_gpu_topology - 1] ? (Datum) 0 :
		arena_varlena_same(ld, v[Anum_nodes_gpu_topology - 1], prev->topology);
	n->labels = nulls[Anum_nodes_labels - 1] ? (Datum) 0 :
		arena_varlena_same(ld, v[Anum_nodes_labels - 1], prev->labels);
	n->state = text_is(v[Anum_nodes_state - 1], "ready") ? TIDE_NODE_READY :
		text_is(v[Anum_nodes_state - 1], "draining") ? TIDE_NODE_DRAINING : TIDE_NODE_DOWN;
	n->allow_cpu_jobs = DatumGetBool(v[Anum_nodes_allow_cpu_jobs - 1]);
	n->heartbeat_at = nulls[Anum_nodes_heartbeat_at - 1] ? 0 :
		DatumGetTimestampTz(v[Anum_nodes_heartbeat_at - 1]);
}

/* Names in COLLATE "C" order: bytes compared unsigned, a prefix first. */
static int
node_row_cmp(const void *a, const void *b)
{
	const NodeRow *x = *(NodeRow *const *) a;
	const NodeRow *y = *(NodeRow *const *) b;
	int			c = memcmp(x->name, y->name, Min(x->namelen, y->namelen));

	if (c != 0)
		return c;
	return (x->namelen > y->namelen) - (x->namelen < y->namelen);
}

/* The nodes of the load: streamed (no tuple table), sorted by name. */
static void
select_nodes(Loader *ld)
{
	Oid			types[LOADER_NARGS];
	Datum		args[LOADER_NARGS];
	bool		nulls[LOADER_NARGS];

	loader_query_args(ld, types, args, nulls);
	cycle_stream_plan(cycle_kept_plan(Q_NODES, 3, types, 0), args, nulls, node_row, ld, NULL);
	if (ld->nnode_rows > 1)
		qsort(ld->node_rows, ld->nnode_rows, sizeof(NodeRow *), node_row_cmp);
}

/* Intern every name of the nodes' capacities, then of their card types (pass 1). */
static void
intern_node_names(Loader *ld)
{
	for (int i = 0; i < ld->nnode_rows; i++)
	{
		NodeRow    *n = ld->node_rows[i];
		ShortBuf	buf;
		ResVec	   *rv;

		/* a copy shared with the node before: the same names, interned already */
		if (i > 0 && n->capacity == ld->node_rows[i - 1]->capacity)
			continue;
		rv = DatumGetResVecP(loader_unpack_short(n->capacity, &buf));
		for (int k = 0; k < resvec_count(rv); k++)
			intern_name(ld, resvec_name(rv, k));
	}
	for (int i = 0; i < ld->nnode_rows; i++)
	{
		NodeRow    *n = ld->node_rows[i];

		if (n->gpu_type && (i == 0 || n->gpu_type != ld->node_rows[i - 1]->gpu_type))
			intern_name(ld, n->gpu_type);
	}
}

static void
load_nodes(Loader *ld)
{
	TideSnapshot *s = ld->s;
	ResVecMemo	memo;
	const char *group = NULL;
	int			group_idx = -1;

	memset(&memo, 0, sizeof(memo));
	memo.count = -1;
	ld->node_names.names = MemoryContextAlloc(ld->l->mcxt, sizeof(char *) * (ld->nnode_rows + 1));
	ld->node_names.n = ld->nnode_rows;
	for (int i = 0; i < ld->nnode_rows; i++)
	{
		const NodeRow *r = ld->node_rows[i];
		const NodeRow *pr = i > 0 ? ld->node_rows[i - 1] : NULL;
		TideNode   *n = &s->nodes[i];
		ShortBuf	buf;

		ld->node_names.names[i] = (char *) r->name;
		n->name = r->name;
		if (r->group != group)
		{
			group = r->group;
			group_idx = group_id(ld, group);
		}
		n->group = group_idx;
		loader_resvec_to_vec_memo(s, &memo, loader_unpack_short(r->capacity, &buf), n->capacity);
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
		if (r->gpu_type == NULL)
			n->gpu_type = -1;
		else if (pr && r->gpu_type == pr->gpu_type)
			n->gpu_type = s->nodes[i - 1].gpu_type;
		else
			n->gpu_type = tide_res_lookup(s, r->gpu_type);
		if (r->topology && pr && r->topology == pr->topology && n->ngpus == s->nodes[i - 1].ngpus)
			memcpy(n->gpu_domain, s->nodes[i - 1].gpu_domain, sizeof(n->gpu_domain));
		else if (r->topology)
		{
			Datum	   *doms;
			bool	   *dnulls;
			int			nd;

			deconstruct_array(DatumGetArrayTypeP(r->topology), INT4OID, 4, true, TYPALIGN_INT,
							  &doms, &dnulls, &nd);
			for (int g = 0; g < nd && g < n->ngpus; g++)
				n->gpu_domain[g] = dnulls[g] ? 0 : (int16) DatumGetInt32(doms[g]);
		}
		n->state = n->unusable ? TIDE_NODE_DOWN : r->state;
		n->allow_cpu_jobs = r->allow_cpu_jobs;
		/* the same labels intern to the same ids: the array is shared (read only) */
		if (r->labels && pr && r->labels == pr->labels)
		{
			n->labels = s->nodes[i - 1].labels;
			n->nlabels = s->nodes[i - 1].nlabels;
		}
		else if (r->labels)
		{
			int32		nl;

			n->labels = cycle_label_ids(s, ld->l->mcxt, r->labels, &nl);
			n->nlabels = nl;
		}
		n->heartbeat_at = r->heartbeat_at;
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
		d = col(ld, t, i, Anum_queues_owner_capability, &isnull);
		if (!isnull)
		{
			/* R-A4: owners are tracked only in queues with a limit */
			q->owner_cap = tide_vec_new(s);
			resvec_to_limit(s, d, q->owner_cap);
		}
		/* R-O7: owners ordered by their share, tracked for it */
		q->owner_fair = DatumGetBool(col_notnull(ld, t, i, Anum_queues_owner_fair_share));
	}
	/*
	 * R-O5: parents by name, once every queue is known (a parent is in the
	 * same resource group, so a per-group load has it too)
	 */
	for (uint64 i = 0; i < NROWS(t); i++)
	{
		char	   *parent = col_text(ld, t, i, Anum_queues_parent);

		if (parent)
			s->queues[i].parent = name_index(&ld->queue_names, parent);
	}
}

/*
 * Live allocations, one row of Q_ALLOCS (a CycleRowFn): charge nodes and
 * queues (R-C4), keep end times (R-L2).
 */
static void
alloc_row(void *arg, const Datum *v, const bool *nulls)
{
	Loader	   *ld = arg;
	TideSnapshot *s = ld->s;
	TideRunning *a = &s->running[ld->nallocs_done++];
	int64	   *vec = tide_vec_new(s);
	ShortBuf	buf;

	a->alloc_id = DatumGetInt64(v[Anum_allocs_id - 1]);
	a->job_id = DatumGetInt64(v[Anum_allocs_job_id - 1]);
	a->node = loader_name_index_text(&ld->node_names, v[Anum_allocs_node - 1]);
	loader_resvec_to_vec_memo(s, &ld->resvec_memo,
							  loader_unpack_short(v[Anum_allocs_resources - 1], &buf), vec);
	a->res = vec;
	a->gpus = DatumGetGpuMask(v[Anum_allocs_gpus - 1]);
	a->gpu_milli = nulls[Anum_allocs_gpu_milli - 1] ? 0 : DatumGetInt32(v[Anum_allocs_gpu_milli - 1]);
	a->releasing = text_is(v[Anum_allocs_state - 1], "releasing");
	a->queue = loader_name_index_text(&ld->queue_names, v[Anum_allocs_queue - 1]);
	a->idle = DatumGetBool(v[Anum_allocs_idle - 1]);
	a->preemptable = DatumGetBool(v[Anum_allocs_preemptable - 1]);
	a->priority = DatumGetInt32(v[Anum_allocs_priority - 1]);
	if (nulls[Anum_allocs_service_type - 1])
		a->service = service_of(NULL);
	else
	{
		text	   *st = DatumGetTextPP(v[Anum_allocs_service_type - 1]);

		a->service = loader_service_of_len(VARDATA_ANY(st), VARSIZE_ANY_EXHDR(st));
	}
	a->started_at = nulls[Anum_allocs_started_at - 1] ? 0 : DatumGetTimestampTz(v[Anum_allocs_started_at - 1]);
	a->end_at = nulls[Anum_allocs_end_at - 1] ? TIDE_TIME_UNKNOWN : DatumGetTimestampTz(v[Anum_allocs_end_at - 1]);
	/* past its limit, not stopped yet: it ends now (R-T1), not in the past */
	if (a->end_at != TIDE_TIME_UNKNOWN && a->end_at < s->now)
		a->end_at = s->now;
	a->placed_at = DatumGetTimestampTz(v[Anum_allocs_placed_at - 1]);
	a->owner = -1;
	if (a->queue >= 0 && (s->queues[a->queue].owner_cap || s->queues[a->queue].owner_fair))
	{
		text	   *o = DatumGetTextPP(v[Anum_allocs_owner - 1]);

		a->owner = loader_owner_id(ld, VARDATA_ANY(o), VARSIZE_ANY_EXHDR(o));
	}
	tide_charge_owned(s, a->node, a->queue, a->owner, a->idle, vec, a->gpus, a->gpu_milli, +1);
}

/* Switch evictions on and give the snapshot what is held for preemptors (R-E6). */
static void
load_claims(Loader *ld)
{
	TideSnapshot *s = ld->s;
	SPITupleTable *t;

	s->evict = true;
	s->restart_cost = (int64) tide_eviction_restart_cost * USECS_PER_SEC;
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
		loader_resvec_to_vec(s, col_notnull(ld, t, i, Anum_claims_resources), v);
		cl->res = v;
		cl->gpus = DatumGetGpuMask(col_notnull(ld, t, i, Anum_claims_gpus));
		d = col(ld, t, i, Anum_claims_gpu_milli, &isnull);
		cl->gpu_milli = isnull ? 0 : DatumGetInt32(d);
		cl->waiting = DatumGetBool(col_notnull(ld, t, i, Anum_claims_waiting));
		s->nclaims++;
	}
}

/*
 * The live allocations' rows: all of them (keeping them with keep), or the
 * changed jobs' merged into the kept ones (cycle_cache.c).
 */
static CycleRowSet *
select_allocs(Loader *ld)
{
	Oid			types[LOADER_NARGS];
	Datum		args[LOADER_NARGS];
	bool		nulls[LOADER_NARGS];
	CycleRowSet *set;

	if (ld->delta.incremental)
		return loader_changed_rows(ld, false, Q_ALLOCS_CHANGED, Anum_allocs_job_id);
	loader_query_args(ld, types, args, nulls);
	set = cycle_cache_rows(&ld->delta, false, Anum_allocs_job_id, NULL);
	if (set == NULL)
	{
		set = MemoryContextAlloc(ld->l->mcxt, sizeof(CycleRowSet));
		cycle_rowset_init(set, ld->l->mcxt, Anum_allocs_job_id);
	}
	cycle_stream_keep(Q_ALLOCS, 3, types, args, nulls, NULL, NULL, set);
	return set;
}

void
tide_cycle_load(CycleLoad *l, MemoryContext mcxt, const char *group)
{
	tide_cycle_load_kept(l, mcxt, group, false);
}

void
tide_cycle_load_kept(CycleLoad *l, MemoryContext mcxt, const char *group, bool cycle)
{
	TideMem		mem = {cycle_alloc, NULL, mcxt};
	Loader	   *ld = palloc0(sizeof(Loader));
	TideSnapshot *s;
	AllocNames *an;
	char		err[256];
	instr_time	t0;
	double		c0;

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
	c0 = cycle_cpu_ms();
	select_nodes(ld);
	ld->queues = run_select(ld, Q_QUEUES);
	cycle_cache_begin(&ld->delta, cycle, group == NULL && tide_incremental_load, group == NULL);
	l->kept = ld->delta.prune;
	l->incremental = ld->delta.incremental;
	l->xmin = ld->delta.xmin;
	ld->allocs = select_allocs(ld);
	elog(DEBUG1, "tide.run_cycle: nodes, queues, allocations selected in %.1f ms (cpu %.1f)",
		 cycle_elapsed_ms(t0), cycle_cpu_ms() - c0);
	INSTR_TIME_SET_CURRENT(t0);
	c0 = cycle_cpu_ms();
	if (ld->allocs->n > INT32_MAX / 4)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						errmsg("too many rows for one scheduling cycle")));

	s = tide_snapshot_create(&mem);
	l->s = ld->s = s;
	s->now = GetCurrentTimestamp();

	/*
	 * pass 1: every resource name the cluster offers or accounts, card types
	 * included; jobs' names are looked up, never added (loader_unknown_name)
	 */
	intern_node_names(ld);
	intern_resvec_column(ld, ld->queues, Anum_queues_quota);
	intern_resvec_column(ld, ld->queues, Anum_queues_capability);
	intern_resvec_column(ld, ld->queues, Anum_queues_owner_capability);
	an = palloc0(sizeof(AllocNames));
	an->ld = ld;
	an->memo.count = -1;
	cycle_rows_replay_cols(ld->allocs, Anum_allocs_resources, intern_alloc_row, an);
	pfree(an);

	/* pass 2: the rows (nodes and queues first: jobs name them) */
	tide_snapshot_alloc_cluster(s, ld->nnode_rows, (int) NROWS(ld->queues),
								(int) ld->allocs->n);
	load_nodes(ld);
	load_queues(ld);
	loader_name_map_hash(&ld->node_names, ld->l->mcxt);
	loader_name_map_hash(&ld->queue_names, ld->l->mcxt);
	tide_cycle_fair_load(s, &ld->queue_names, ld->group_queues);	/* R-O6: kept averages */
	elog(DEBUG1, "tide.run_cycle: nodes and queues converted in %.1f ms (cpu %.1f)",
		 cycle_elapsed_ms(t0), cycle_cpu_ms() - c0);
	INSTR_TIME_SET_CURRENT(t0);
	c0 = cycle_cpu_ms();
	cycle_load_jobs(ld);
	elog(DEBUG1, "tide.run_cycle: %d jobs, %d roles loaded in %.1f ms (cpu %.1f)", s->njobs, s->nroles,
		 cycle_elapsed_ms(t0), cycle_cpu_ms() - c0);
	INSTR_TIME_SET_CURRENT(t0);
	c0 = cycle_cpu_ms();
	if (!tide_snapshot_finish(s, err, sizeof(err)))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("cannot schedule: %s", err)));
	cycle_rows_replay(ld->allocs, alloc_row, ld);
	tide_cycle_owner_fair_load(ld);	/* R-O7: the owners' kept averages */
	/* every owner id is made by now (jobs, allocations): their names (R-A4) */
	s->owner_names = ld->owner_names;
	s->nowners = ld->nowners;
	load_claims(ld);
	tide_cycle_shapes_load(s, mcxt, group);
	cycle_cache_loaded(&ld->delta);
	PopActiveSnapshot();
	elog(DEBUG1, "tide.run_cycle: allocations, claims and shapes loaded in %.1f ms (cpu %.1f)",
		 cycle_elapsed_ms(t0), cycle_cpu_ms() - c0);
}
