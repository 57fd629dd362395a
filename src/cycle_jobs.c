/*
 * cycle_jobs.c: the pending jobs of the load (cycle_load.c) with their
 * tasks, streamed from one query (cycle_recv.c) into the snapshot's job
 * and role arrays (see cycle_loader.h).
 *
 * A load that keeps its rows for the next (cycle_cache.c) keeps its
 * converted jobs too: the arrays it made, and the texts and vectors they
 * point to (JobMemo).  The next, incremental, load copies an unchanged
 * job's entries from there instead of taking its kept rows apart and
 * converting them again, which at 100k pending jobs was a fifth of a busy
 * cycle.  Only what a full load would make the same is copied: the
 * resources and queues must be the ones the memo was made with (indexes),
 * and a job whose conversion depends on the order of what earlier jobs
 * interned (label ids of a node selector, the reasons of unknown names)
 * or on the nodes (failed attempts' node indexes) is converted again from
 * its rows.  Owner ids are interned again, in job order, as a full load
 * does.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "cycle_cache.h"
#include "cycle_jobs.h"
#include "cycle_labels.h"
#include "cycle_loader.h"
#include "cycle_recv.h"
#include "settings.h"

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
 * The converted jobs of the last load that kept its rows, for the next
 * (see the top of the file): its arrays, which were its snapshot's, in
 * arrays; the texts and request vectors they point to in strings, which
 * later loads add to (a copied job's texts stay where they are).  Both
 * contexts live under cycle_cache_context(), which goes with the kept
 * rows; their reset callbacks forget them here.
 */
typedef struct JobMemo
{
	MemoryContext arrays;		/* NULL: no memo */
	MemoryContext strings;
	Size		strings_live;	/* bytes of strings the memo's jobs use */
	int			njobs;
	const TideJob *jobs;		/* in id order */
	const int32 *role_base;
	const int32 *str_bytes;		/* bytes of strings each job made */
	const TideRole *roles;
	const int64 *requests;		/* nres a role */
	const ItemPointerData *job_tid;
	const ItemPointerData *role_tid;
	char	  **job_reason;
	char	  **role_name;
	const Datum *role_request;
	/* what the indexes in the jobs mean */
	int			nres;
	char	  **res_names;
	int			nqueues;
	char	  **queue_names;
	char	  **owner_names;	/* by the memo's owner ids */
	int			nowners;
} JobMemo;

static JobMemo memo;

/* Where the load in progress puts its job arrays and its strings. */
static MemoryContext load_arrays;
static MemoryContext load_strings;
static int32 *load_str_bytes;	/* [jobs_cap] */
static LoaderArena load_arena;	/* in load_strings */
static Size load_mark;			/* load_arena.used when the last fresh job began */
static int	load_mark_job = -1; /* that job, or -1 */

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

	ld->s->jobs = grow_array(load_arrays, ld->s->jobs, sizeof(TideJob), cap);
	l->role_base = grow_array(load_arrays, l->role_base, sizeof(int32), cap);
	l->job_tid = grow_array(load_arrays, l->job_tid, sizeof(ItemPointerData), cap);
	l->job_reason = grow_array(load_arrays, l->job_reason, sizeof(char *), cap);
	load_str_bytes = grow_array(load_arrays, load_str_bytes, sizeof(int32), cap);
	ld->jobs_cap = cap;
}

static void
roles_grow(Loader *ld)
{
	CycleLoad  *l = ld->l;
	int			cap = ld->roles_cap ? ld->roles_cap * 2 : JOBS_INITIAL;

	ld->s->roles = grow_array(load_arrays, ld->s->roles, sizeof(TideRole), cap);
	ld->requests = grow_array(load_arrays, ld->requests, sizeof(int64) * ld->s->nres, cap);
	l->role_request = grow_array(load_arrays, l->role_request, sizeof(Datum), cap);
	l->role_name = grow_array(load_arrays, l->role_name, sizeof(char *), cap);
	l->role_tid = grow_array(load_arrays, l->role_tid, sizeof(ItemPointerData), cap);
	ld->roles_cap = cap;
}

/*
 * The job texts' arena (request vectors, pending reasons, role names):
 * where the load keeps them, load_strings.  An incremental load makes
 * few, into a context kept across loads: smaller blocks.
 */
#define ARENA_BLOCK (64 * 1024)
#define ARENA_BLOCK_INCREMENTAL (4 * 1024)
/* Kept texts past twice what the jobs use and this: convert anew. */
#define STRINGS_SLACK (4 * 1024 * 1024)

static char *
arena_alloc(Loader *ld, Size len)
{
	return loader_arena_take(&load_arena, len);
}

/* A varlena datum as stored (a short header stays short), detoasted if it is not. */
static Datum
arena_copy(Loader *ld, Datum d)
{
	return loader_arena_datum(&load_arena, d);
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

/* The strings the last job converted from its rows made, counted. */
static void
fresh_job_end(void)
{
	if (load_mark_job >= 0)
		load_str_bytes[load_mark_job] = (int32) Min(load_arena.used - load_mark, PG_INT32_MAX);
	load_mark_job = -1;
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
	fresh_job_end();
	load_mark_job = ji;
	load_mark = load_arena.used;
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

/* The arrays stay where they are now: point into them, then sort roles. */
static void
jobs_finish(Loader *ld)
{
	CycleLoad  *l = ld->l;
	TideSnapshot *s = ld->s;

	fresh_job_end();
	for (int ri = 0; ri < s->nroles; ri++)
		s->roles[ri].request = ld->requests + (size_t) s->nres * ri;
	for (int ji = 0; ji < s->njobs; ji++)
	{
		s->jobs[ji].roles = &s->roles[l->role_base[ji]];
		sort_roles(l, l->role_base[ji], s->jobs[ji].nroles);
	}
}

/* The load's job arrays, to set aside and put back. */
typedef struct JobArrays
{
	TideJob    *jobs;
	int			njobs;
	TideRole   *roles;
	int			nroles;
	int			jobs_cap,
				roles_cap;
	int64	   *requests;
	int32	   *role_base;
	ItemPointerData *job_tid,
			   *role_tid;
	char	  **job_reason,
			  **role_name;
	Datum	   *role_request;
	int32	   *str_bytes;
	MemoryContext arrays,
				strings;
	LoaderArena arena;
	char	   *last_role_name;
} JobArrays;

static void
arrays_swap(Loader *ld, JobArrays *a, bool save)
{
	CycleLoad  *l = ld->l;
	TideSnapshot *s = ld->s;
	JobArrays	now = {s->jobs, s->njobs, s->roles, s->nroles, ld->jobs_cap, ld->roles_cap, ld->requests,
		l->role_base, l->job_tid, l->role_tid, l->job_reason, l->role_name, l->role_request,
	load_str_bytes, load_arrays, load_strings, load_arena, ld->role_name};

	if (!save)
	{
		s->jobs = a->jobs;
		s->njobs = a->njobs;
		s->roles = a->roles;
		s->nroles = a->nroles;
		ld->jobs_cap = a->jobs_cap;
		ld->roles_cap = a->roles_cap;
		ld->requests = a->requests;
		l->role_base = a->role_base;
		l->job_tid = a->job_tid;
		l->role_tid = a->role_tid;
		l->job_reason = a->job_reason;
		l->role_name = a->role_name;
		l->role_request = a->role_request;
		load_str_bytes = a->str_bytes;
		load_arrays = a->arrays;
		load_strings = a->strings;
		load_arena = a->arena;
		ld->role_name = a->last_role_name;
	}
	*a = now;
}

static bool
same_text(const char *a, const char *b)
{
	return a == NULL ? b == NULL : b != NULL && strcmp(a, b) == 0;
}

static bool
same_ints(const int32 *a, const int32 *b, int n)
{
	return n == 0 || memcmp(a, b, sizeof(int32) * n) == 0;
}

/* What differs between job ji as copied (c) and as converted from its rows (now), or NULL. */
static const char *
job_differs(const Loader *ld, const JobArrays *c, int ji)
{
	const CycleLoad *l = ld->l;
	const TideSnapshot *s = ld->s;
	const TideJob *a = &c->jobs[ji],
			   *b = &s->jobs[ji];

	if (a->id != b->id || a->queue != b->queue || a->priority != b->priority ||
		a->created_at != b->created_at || a->idle != b->idle || a->reserve != b->reserve ||
		a->is_retry != b->is_retry || a->preemptable != b->preemptable || a->service != b->service ||
		a->min_available != b->min_available || a->gpu_type != b->gpu_type ||
		a->time_limit != b->time_limit || a->unknown_name != b->unknown_name || a->owner != b->owner)
		return "its columns";
	if (a->nselector != b->nselector || !same_ints(a->selector, b->selector, a->nselector) ||
		a->navoid != b->navoid || !same_ints(a->avoid, b->avoid, a->navoid))
		return "its node selector or avoided nodes";
	if (!same_text(c->job_reason[ji], l->job_reason[ji]) ||
		!ItemPointerEquals(&c->job_tid[ji], &l->job_tid[ji]))
		return "its pending reason or row";
	if (a->nroles != b->nroles)
		return "its roles";
	for (int k = 0; k < a->nroles; k++)
	{
		int			ra = c->role_base[ji] + k,
					rb = l->role_base[ji] + k;
		Datum		da = c->role_request[ra],
					db = l->role_request[rb];

		if (strcmp(c->roles[ra].name, s->roles[rb].name) != 0 || c->roles[ra].replicas != s->roles[rb].replicas ||
			memcmp(c->roles[ra].request, s->roles[rb].request, sizeof(int64) * s->nres) != 0 ||
			!ItemPointerEquals(&c->role_tid[ra], &l->role_tid[rb]) ||
			VARSIZE_ANY(DatumGetPointer(da)) != VARSIZE_ANY(DatumGetPointer(db)) ||
			memcmp(DatumGetPointer(da), DatumGetPointer(db), VARSIZE_ANY(DatumGetPointer(da))) != 0)
			return "a role";
	}
	return NULL;
}

/*
 * tide.check_incremental_load: convert every job from its rows again, in
 * the snapshot's context, and fail where that differs from what the load
 * made (copied from the kept load's or not); then put the load's arrays
 * back.  Interning again what is interned already gives the same ids.
 */
static void
memo_check(Loader *ld, const CycleRowSet *rows)
{
	JobArrays	copied;
	TideSnapshot *s = ld->s;

	arrays_swap(ld, &copied, true);
	s->jobs = NULL;
	s->roles = NULL;
	ld->requests = NULL;
	ld->l->role_base = NULL;
	ld->l->job_tid = ld->l->role_tid = NULL;
	ld->l->job_reason = ld->l->role_name = NULL;
	ld->l->role_request = NULL;
	load_str_bytes = NULL;
	ld->jobs_cap = ld->roles_cap = 0;
	ld->role_name = NULL;
	load_arrays = load_strings = ld->l->mcxt;
	memset(&load_arena, 0, sizeof(load_arena));
	load_arena.cxt = load_strings;
	load_arena.block = ARENA_BLOCK;
	s->njobs = s->nroles = 0;
	jobs_grow(ld);
	roles_grow(ld);
	cycle_rows_replay(rows, job_row, ld);
	jobs_finish(ld);
	if (s->njobs != copied.njobs || s->nroles != copied.nroles)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("tide.run_cycle: the incremental load made %d jobs and %d roles, their rows %d and %d",
						copied.njobs, copied.nroles, s->njobs, s->nroles)));
	for (int ji = 0; ji < s->njobs; ji++)
	{
		const char *what = job_differs(ld, &copied, ji);

		if (what)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("tide.run_cycle: the incremental load's job " INT64_FORMAT " differs from its rows in %s",
							s->jobs[ji].id, what)));
	}
	arrays_swap(ld, &copied, false);
}

/* A reset callback: the memo's arrays or strings are gone. */
static void
memo_gone(void *arg)
{
	MemoryContext cxt = (MemoryContext) arg;

	if (memo.arrays == cxt || memo.strings == cxt)
	{
		memo.arrays = NULL;		/* no memo without both */
		if (memo.strings == cxt)
			memo.strings = NULL;
	}
}

/* Forget cxt here when it goes (the callback lives in it). */
static void
memo_watch(MemoryContext cxt)
{
	MemoryContextCallback *cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));

	cb->func = memo_gone;
	cb->arg = cxt;
	MemoryContextRegisterResetCallback(cxt, cb);
}

static char **
copy_names(MemoryContext cxt, char *const *names, int n)
{
	char	  **copy = MemoryContextAlloc(cxt, sizeof(char *) * (n + 1));

	for (int i = 0; i < n; i++)
		copy[i] = MemoryContextStrdup(cxt, names[i]);
	return copy;
}

static bool
same_names(char *const *a, const char *const *b, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return true;
}

/*
 * Does the memo mean what this load's indexes mean: the same resources in
 * the same order (vectors, card types) and the same queues (queue indexes)?
 */
static bool
memo_fits(const Loader *ld)
{
	const TideSnapshot *s = ld->s;

	return memo.arrays != NULL && memo.strings == load_strings &&
		memo.nres == s->nres && same_names(memo.res_names, s->res_names, s->nres) &&
		memo.nqueues == ld->queue_names.n &&
		same_names(memo.queue_names, (const char *const *) ld->queue_names.names, ld->queue_names.n);
}

/*
 * Can memo job m be copied as it is, its owner id made again?  Not when
 * its conversion interned what a full load interns in job order (label
 * ids, unknown names' reasons), named nodes by index, or did not read the
 * owner its queue now looks at.
 */
static bool
memo_copyable(const Loader *ld, int m)
{
	const TideJob *mj = &memo.jobs[m];
	const TideQueue *q = &ld->s->queues[mj->queue];

	return mj->nselector == 0 && mj->navoid == 0 && mj->unknown_name == 0 &&
		(mj->owner >= 0 || !(q->owner_cap || q->owner_fair));
}

/*
 * Memo job m as the load's next job: its entries copied, its strings
 * shared.  owner_map caches the load's id of each memo owner id (-1 not
 * yet interned): interning it on first use, in job order, gives the ids a
 * full load gives.
 */
static void
memo_copy_job(Loader *ld, int m, int32 *owner_map)
{
	CycleLoad  *l = ld->l;
	TideSnapshot *s = ld->s;
	const TideJob *mj = &memo.jobs[m];
	int			ji = s->njobs;
	int			mr = memo.role_base[m];
	TideJob    *j;

	if (ji == ld->jobs_cap)
		jobs_grow(ld);
	fresh_job_end();
	j = &s->jobs[ji];
	*j = *mj;
	if (mj->owner >= 0)
	{
		const TideQueue *q = &s->queues[mj->queue];

		if (!(q->owner_cap || q->owner_fair))
			j->owner = -1;
		else
		{
			if (owner_map[mj->owner] < 0)
				owner_map[mj->owner] = loader_owner_id(ld, memo.owner_names[mj->owner],
													   (int) strlen(memo.owner_names[mj->owner]));
			j->owner = owner_map[mj->owner];
		}
	}
	l->job_reason[ji] = memo.job_reason[m];
	l->job_tid[ji] = memo.job_tid[m];
	l->role_base[ji] = s->nroles;
	load_str_bytes[ji] = memo.str_bytes[m];
	for (int k = mr; k < mr + mj->nroles; k++)
	{
		int			ri = s->nroles;

		if (ri == ld->roles_cap)
			roles_grow(ld);
		s->roles[ri] = memo.roles[k];
		l->role_name[ri] = memo.role_name[k];
		l->role_request[ri] = memo.role_request[k];
		l->role_tid[ri] = memo.role_tid[k];
		memcpy(ld->requests + (size_t) s->nres * ri, memo.requests + (size_t) s->nres * k,
			   sizeof(int64) * s->nres);
		s->nroles++;
	}
	s->njobs++;
}

/* Kept row i taken apart and handed to job_row(), as cycle_rows_replay() does. */
static void
replay_row(Loader *ld, const CycleRowSet *set, int64 i, Datum *values, bool *nulls, MemoryContext rowcxt)
{
	MemoryContext old;

	cycle_row_deform(set, set->desc, i, values, nulls);
	old = MemoryContextSwitchTo(rowcxt);
	job_row(ld, values, nulls);
	MemoryContextSwitchTo(old);
	MemoryContextReset(rowcxt);
}

/*
 * An incremental load's jobs: the merged rows (kept and re-read, in job id
 * order) walked beside the memo (in id order too); an unchanged job the
 * memo can give is copied from it, every other job converted from its
 * rows.
 */
static void
load_with_memo(Loader *ld, const CycleRowSet *set)
{
	const CycleDelta *d = &ld->delta;
	int			m = 0,
				c = 0;
	int64		i = 0;
	int32	   *owner_map = palloc(sizeof(int32) * (memo.nowners + 1));
	Datum	   *values = palloc(sizeof(Datum) * (set->desc ? set->desc->natts : 1));
	bool	   *nulls = palloc(sizeof(bool) * (set->desc ? set->desc->natts : 1));
	MemoryContext rowcxt = AllocSetContextCreate(CurrentMemoryContext, "tide load row", ALLOCSET_SMALL_SIZES);
	int			copied = 0;

	for (int k = 0; k < memo.nowners; k++)
		owner_map[k] = -1;
	while (i < set->n)
	{
		int64		id = set->rows[i].job_id;
		int64		end = i + 1;

		while (end < set->n && set->rows[end].job_id == id)
			end++;
		while (m < memo.njobs && memo.jobs[m].id < id)
			m++;
		while (c < d->nchanged && d->changed[c] < id)
			c++;
		if (m < memo.njobs && memo.jobs[m].id == id && !(c < d->nchanged && d->changed[c] == id) &&
			memo_copyable(ld, m))
		{
			memo_copy_job(ld, m, owner_map);
			copied++;
		}
		else
			for (; i < end; i++)
				replay_row(ld, set, i, values, nulls, rowcxt);
		i = end;
	}
	MemoryContextDelete(rowcxt);
	elog(DEBUG1, "tide.run_cycle: %d of %d jobs copied from the kept load's", copied, ld->s->njobs);
}

/*
 * Where this load puts its arrays and strings: under the kept rows'
 * context when it keeps them (its arrays become the next load's memo), a
 * new strings context when there is none or the old one holds more than
 * twice what the jobs use; else the snapshot's context.
 */
static void
memo_begin(Loader *ld)
{
	MemoryContext keep = cycle_cache_context(&ld->delta);

	memset(&load_arena, 0, sizeof(load_arena));
	load_arena.block = ld->delta.incremental ? ARENA_BLOCK_INCREMENTAL : ARENA_BLOCK;
	load_mark_job = -1;
	load_str_bytes = NULL;
	if (keep == NULL)
		load_arrays = load_strings = ld->l->mcxt;
	else
	{
		load_arrays = AllocSetContextCreate(keep, "tide kept jobs", ALLOCSET_DEFAULT_SIZES);
		if (memo.strings == NULL || !ld->delta.incremental ||
			MemoryContextMemAllocated(memo.strings, false) > 2 * memo.strings_live + STRINGS_SLACK)
		{
			load_strings = AllocSetContextCreate(keep, "tide kept job texts", ALLOCSET_DEFAULT_SIZES);
			memo_watch(load_strings);
		}
		else
			load_strings = memo.strings;
	}
	load_arena.cxt = load_strings;
}

/* The load's jobs are in: its arrays are the next load's memo. */
static void
memo_install(Loader *ld)
{
	CycleLoad  *l = ld->l;
	TideSnapshot *s = ld->s;
	MemoryContext old_arrays = memo.arrays;
	MemoryContext old_strings = memo.strings;
	Size		live = 0;

	fresh_job_end();
	if (load_arrays == l->mcxt)
		return;
	for (int ji = 0; ji < s->njobs; ji++)
		live += load_str_bytes[ji];
	memo.arrays = NULL;			/* while it is made */
	memo.strings = load_strings;
	memo.strings_live = live;
	memo.njobs = s->njobs;
	memo.jobs = s->jobs;
	memo.role_base = l->role_base;
	memo.str_bytes = load_str_bytes;
	memo.roles = s->roles;
	memo.requests = ld->requests;
	memo.job_tid = l->job_tid;
	memo.role_tid = l->role_tid;
	memo.job_reason = l->job_reason;
	memo.role_name = l->role_name;
	memo.role_request = l->role_request;
	memo.nres = s->nres;
	memo.res_names = copy_names(load_arrays, (char *const *) s->res_names, s->nres);
	memo.nqueues = ld->queue_names.n;
	memo.queue_names = copy_names(load_arrays, ld->queue_names.names, ld->queue_names.n);
	memo.nowners = ld->nowners;
	memo.owner_names = copy_names(load_arrays, (char *const *) ld->owner_names, ld->nowners);
	memo_watch(load_arrays);
	memo.arrays = load_arrays;
	/* the last load's snapshot is gone: so is what only it used */
	if (old_arrays && old_arrays != load_arrays)
		MemoryContextDelete(old_arrays);
	if (old_strings && old_strings != load_strings)
		MemoryContextDelete(old_strings);
}

void
cycle_load_jobs(Loader *ld)
{
	Oid			types[LOADER_NARGS];
	Datum		args[LOADER_NARGS];
	bool		nulls[LOADER_NARGS];
	TideSnapshot *s = ld->s;
	CycleRowSet *rows = NULL;

	s->njobs = s->nroles = 0;
	memo_begin(ld);
	jobs_grow(ld);
	roles_grow(ld);
	if (ld->delta.incremental)
	{
		/* the changed jobs read again, the kept rows with them (cycle_cache.c) */
		rows = loader_changed_rows(ld, true, Q_JOBS_CHANGED, Anum_jobs_id);
		if (memo_fits(ld))
			load_with_memo(ld, rows);
		else
			cycle_rows_replay(rows, job_row, ld);
	}
	else
	{
		loader_query_args(ld, types, args, nulls);
		cycle_stream_keep(Q_JOBS, 3, types, args, nulls, job_row, ld,
						  cycle_cache_rows(&ld->delta, true, Anum_jobs_id, NULL));
	}
	jobs_finish(ld);
	if (tide_check_incremental_load && ld->delta.incremental)
		memo_check(ld, rows);
	s->nunknown = ld->nunknown;
	s->unknown_names = ld->unknown_names;
	memo_install(ld);
}
