/*
 * cycle_jobs.c: the pending jobs of the load (cycle_load.c) with their
 * tasks, streamed from one query (cycle_recv.c) into the snapshot's job
 * and role arrays (see cycle_loader.h).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "cycle_jobs.h"
#include "cycle_labels.h"
#include "cycle_loader.h"
#include "cycle_recv.h"

/*
 * The pending jobs with their tasks, one row per task (a job without any:
 * one row, the task columns NULL), in job id order; streamed (cycle_recv.c).
 */
#define Q_JOBS_SELECT \
"SELECT j.id, j.queue, j.priority, j.created_at, j.idle, j.reserve, j.retry_of IS NOT NULL," \
"       j.preemptable, j.service_type, j.min_available, j.gpu_type," \
"       j.node_selector, (EXTRACT(epoch FROM j.time_limit) * 1000000)::bigint, j.avoid_nodes," \
"       j.pending_reason, t.role, t.replicas, t.request, t.ctid, j.ctid, j.owner" \
"  FROM tide.jobs j LEFT JOIN tide.job_tasks t ON t.job_id = j.id" \
" WHERE j.state = 'pending' AND NOT j.unschedulable AND NOT j.cancel_requested AND NOT j.waiting" \
"   AND ($1::text IS NULL OR j.queue = ANY ($2::text[]))"
static const char *const Q_JOBS = Q_JOBS_SELECT
" ORDER BY j.id";				/* tide_job_index() relies on this order */
/* the same rows of the jobs an incremental load reads again ($4) */
static const char *const Q_JOBS_CHANGED = Q_JOBS_SELECT
"   AND j.id = ANY ($4::bigint[])"
" ORDER BY j.id";
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
#define Anum_jobs_node_selector		12
#define Anum_jobs_time_limit_us		13
#define Anum_jobs_avoid_nodes		14
#define Anum_jobs_pending_reason	15
#define Anum_jobs_role				16
#define Anum_jobs_replicas			17
#define Anum_jobs_request			18
#define Anum_jobs_task_ctid			19
#define Anum_jobs_ctid				20
#define Anum_jobs_owner				21

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

/* Is an array datum '{}' (no dimensions), read without a copy? */
static bool
empty_array(Datum d)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(d);

	return !VARATT_IS_EXTERNAL(v) && !VARATT_IS_COMPRESSED(v) &&
		VARSIZE_ANY_EXHDR(v) <= ARR_OVERHEAD_NONULLS(0) - VARHDRSZ;
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
		int			ni = nulls[k] ? -1 : loader_name_index_text(&ld->node_names, names[k]);

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

/*
 * The reason of a job that asks for a gpu_type or a resource no node of its
 * group has (R-A2), worded by the engine's table of reasons (palloc'd).
 */
static char *
unknown_text(bool gpu_type, const char *name)
{
	size_t		len = strlen(name) + 128;
	char	   *buf = palloc(len);

	tide_reason_unknown_text(gpu_type, name, buf, len);
	return buf;
}

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
	l->job_tid = grow_array(l->mcxt, l->job_tid, sizeof(ItemPointerData), cap);
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

/*
 * Room for small copies kept for the whole cycle (request vectors, pending
 * reasons, role names): many copies in few allocations.
 */
#define ARENA_BLOCK (64 * 1024)

static char *
arena_alloc(Loader *ld, Size len)
{
	char	   *p;

	if (ld->arena_left < MAXALIGN(len))
	{
		ld->arena_left = Max(ARENA_BLOCK, MAXALIGN(len));
		ld->arena = MemoryContextAllocHuge(ld->l->mcxt, ld->arena_left);
	}
	p = ld->arena;
	ld->arena += MAXALIGN(len);
	ld->arena_left -= MAXALIGN(len);
	return p;
}

/* A varlena datum as stored (a short header stays short), detoasted if it is not. */
static Datum
arena_copy(Loader *ld, Datum d)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(d);
	char	   *p;

	if (VARATT_IS_EXTENDED(v) && !VARATT_IS_SHORT(v))
		v = PG_DETOAST_DATUM(d);	/* compressed or out of line */
	p = arena_alloc(ld, VARSIZE_ANY(v));
	memcpy(p, v, VARSIZE_ANY(v));
	return PointerGetDatum(p);
}

/* A text datum as a C string. */
static char *
arena_text(Loader *ld, Datum d)
{
	text	   *t = DatumGetTextPP(d);
	int			len = VARSIZE_ANY_EXHDR(t);
	char	   *p = arena_alloc(ld, len + 1);

	memcpy(p, VARDATA_ANY(t), len);
	p[len] = '\0';
	return p;
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
	j->queue = loader_name_index_text(&ld->queue_names, v[Anum_jobs_queue - 1]);
	if (j->queue < 0)
		j->queue = 0;			/* cannot happen: a job's queue is in the same
								 * snapshot */
	j->priority = DatumGetInt32(v[Anum_jobs_priority - 1]);
	j->created_at = DatumGetTimestampTz(v[Anum_jobs_created_at - 1]);
	j->idle = DatumGetBool(v[Anum_jobs_idle - 1]);
	j->reserve = DatumGetBool(v[Anum_jobs_reserve - 1]);
	j->is_retry = DatumGetBool(v[Anum_jobs_is_retry - 1]);
	j->preemptable = DatumGetBool(v[Anum_jobs_preemptable - 1]);
	if (!nulls[Anum_jobs_service_type - 1])
	{
		text	   *st = DatumGetTextPP(v[Anum_jobs_service_type - 1]);

		j->service = loader_service_of_len(VARDATA_ANY(st), VARSIZE_ANY_EXHDR(st));
	}
	else
		j->service = TIDE_SVC_UNKNOWN;
	j->min_available = nulls[Anum_jobs_min_available - 1] ? 0 :
		DatumGetInt32(v[Anum_jobs_min_available - 1]);
	j->gpu_type = -1;
	if (!nulls[Anum_jobs_gpu_type - 1])
	{
		gt = TextDatumGetCString(v[Anum_jobs_gpu_type - 1]);
		j->gpu_type = tide_res_lookup(s, gt);
		if (j->gpu_type < 0)
			j->unknown_name = loader_unknown_name(ld, unknown_text(true, gt));
	}
	if (!nulls[Anum_jobs_node_selector - 1])
		j->selector = cycle_label_ids(s, l->mcxt, v[Anum_jobs_node_selector - 1], &j->nselector);
	j->owner = -1;
	if (s->queues[j->queue].owner_cap || s->queues[j->queue].owner_fair)
	{
		/* R-A4, R-O7: only queues with an owner limit or owner order look at owners */
		text	   *o = DatumGetTextPP(v[Anum_jobs_owner - 1]);

		j->owner = loader_owner_id(ld, VARDATA_ANY(o), VARSIZE_ANY_EXHDR(o));
	}
	j->time_limit = nulls[Anum_jobs_time_limit_us - 1] ? 0 :
		DatumGetInt64(v[Anum_jobs_time_limit_us - 1]);
	if (!nulls[Anum_jobs_avoid_nodes - 1] && !empty_array(v[Anum_jobs_avoid_nodes - 1]))
		load_avoid(ld, j, v[Anum_jobs_avoid_nodes - 1]);
	l->job_reason[ji] = nulls[Anum_jobs_pending_reason - 1] ? NULL :
		arena_text(ld, v[Anum_jobs_pending_reason - 1]);
	l->role_base[ji] = s->nroles;
	ItemPointerCopy((ItemPointer) DatumGetPointer(v[Anum_jobs_ctid - 1]), &l->job_tid[ji]);
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
	text	   *name = DatumGetTextPP(v[Anum_jobs_role - 1]);
	int			len = VARSIZE_ANY_EXHDR(name);
	const char *missing;
	ShortBuf	buf;

	if (ri == ld->roles_cap)
		roles_grow(ld);
	r = &s->roles[ri];
	memset(r, 0, sizeof(TideRole));
	/* most roles are named alike (main): one copy of a run of equal names */
	if (ld->role_name == NULL || strncmp(ld->role_name, VARDATA_ANY(name), len) != 0 ||
		ld->role_name[len] != '\0')
		ld->role_name = arena_text(ld, v[Anum_jobs_role - 1]);
	l->role_name[ri] = ld->role_name;
	r->name = ld->role_name;
	r->replicas = DatumGetInt32(v[Anum_jobs_replicas - 1]);
	l->role_request[ri] = arena_copy(ld, v[Anum_jobs_request - 1]);
	ItemPointerCopy((ItemPointer) DatumGetPointer(v[Anum_jobs_task_ctid - 1]), &l->role_tid[ri]);
	req = ld->requests + (size_t) s->nres * ri;
	memset(req, 0, sizeof(int64) * s->nres);
	missing = loader_resvec_to_vec_memo(s, &ld->resvec_memo,
										loader_unpack_short(v[Anum_jobs_request - 1], &buf), req);
	if (missing && j->unknown_name == 0)
		j->unknown_name = loader_unknown_name(ld, unknown_text(false, missing));
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

void
cycle_load_jobs(Loader *ld)
{
	Oid			types[LOADER_NARGS];
	Datum		args[LOADER_NARGS];
	bool		nulls[LOADER_NARGS];
	CycleLoad  *l = ld->l;
	TideSnapshot *s = ld->s;

	s->njobs = s->nroles = 0;
	jobs_grow(ld);
	roles_grow(ld);
	if (ld->delta.incremental)
		/* the changed jobs read again, the kept rows with them (cycle_cache.c) */
		cycle_rows_replay(loader_changed_rows(ld, true, Q_JOBS_CHANGED, Anum_jobs_id), job_row, ld);
	else
	{
		loader_query_args(ld, types, args, nulls);
		cycle_stream_keep(Q_JOBS, 3, types, args, nulls, job_row, ld,
						  cycle_cache_rows(&ld->delta, true, Anum_jobs_id, NULL));
	}
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
