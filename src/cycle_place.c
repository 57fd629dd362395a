/*
 * cycle_place.c: the placement writes of tide.run_cycle() (write phase).
 *
 * Set-based, one statement per table: the touched nodes locked and R-C4
 * checked over them (cycle_guard.c; jobs on a node that changed wait for
 * the next cycle); one UPDATE of tide.jobs (placed jobs to allocated,
 * unschedulable marks, changed pending reasons within
 * tide.reason_updates_per_cycle less the jobs placed; job rows another
 * transaction holds are left for the next cycle after
 * tide.cycle_lock_timeout) writing the placed jobs' history rows too;
 * a check that the placed jobs' tasks did not change meanwhile (those that
 * did go back to pending); one statement replacing tide.reason_backlog
 * with the other reasons; one INSERT into tide.allocations from unnest();
 * one NOTIFY per node that got work (delivered at commit).  The UPDATE and
 * the INSERT fire no trigger: cycle_guard.c says what replaces them.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"

#include "cycle_guard.h"
#include "cycle_place.h"
#include "cycle_rows.h"
#include "cycle_timer.h"
#include "settings.h"

/*
 * unnest() in the select list, not in FROM: set-returning functions there
 * run in step and stream their rows, where a function in FROM stores all
 * of them first (on disk past work_mem: 20k allocations are 5 MB).  Its
 * jobs are named in tide.job_changes by the UPDATE that moved them, so its
 * own logging trigger names none again (changed.c).
 */
static const char *const W_ALLOCS =
"INSERT INTO tide.allocations (job_id, role, replica, node, resources, gpus, gpu_milli, cycle_id)"
" SELECT pg_catalog.unnest($1), pg_catalog.unnest($2), pg_catalog.unnest($3), pg_catalog.unnest($4),"
"        pg_catalog.unnest($5), pg_catalog.unnest($6), pg_catalog.unnest($7), $8";

/*
 * Job states, unschedulable marks and pending reasons, and the placed
 * jobs' history rows, in one statement (tide._cycle_place_jobs,
 * 60_cycle.sql), found by the ctid each job row had at the load: a job
 * whose row changed since (cancelled, moved on, or any other update) is
 * skipped, and only the placed jobs returned get allocation rows.  The
 * second form skips the job rows another transaction holds (they stay as
 * they are this cycle): what the first falls back to when it could not get
 * its row locks within tide.cycle_lock_timeout.  Locking first costs a lock
 * record per row, so it is not the usual path.
 */
static const char *const W_JOBS = "SELECT tide._cycle_place_jobs($1, $2, $3, $4, $5, $6, false)";
static const char *const W_JOBS_SKIP_LOCKED = "SELECT tide._cycle_place_jobs($1, $2, $3, $4, $5, $6, true)";

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

/*
 * Every cycle replaces the backlog of reasons not yet in job rows: the
 * whole-cluster cycle ($G NULL) all of it; a resource group's cycle the rows
 * of its group's last complete cycle and of the last whole-cluster cycle
 * (whose rows may name the group's jobs), leaving other groups' rows.
 */
#define BACKLOG_GONE(G) \
"DELETE FROM tide.reason_backlog b" \
" WHERE " G "::text IS NULL" \
"    OR b.cycle_id IN (SELECT c.cycle_id FROM tide.cycle_state c WHERE c.resource_group IN (" G ", ''))"
static const char *const W_BACKLOG =
"WITH gone AS (" BACKLOG_GONE("$6") ")"
" INSERT INTO tide.reason_backlog (cycle_id, reason, job_ids)"
" SELECT $1, g.reason, $2[g.lo:g.hi]"
"   FROM unnest($3, $4, $5) AS g(reason, lo, hi)";

static const char *const W_BACKLOG_CLEAR = BACKLOG_GONE("$1");

/*
 * "placed on n1, n2, n3 and more", as text: built in one buffer, not a
 * StringInfo (a cycle renders thousands; node names are short).
 */
static Datum
placed_reason(const TideSnapshot *s, const TideResult *r, int j)
{
	const TideOutcome *o = &r->outcomes[j];
	char		small[256];
	char	   *buf = small;
	size_t		cap = sizeof(small);
	size_t		len = strlen("placed on ");
	int			shown = 0;
	Datum		d;

	memcpy(buf, "placed on ", len);
	for (int i = 0; i < o->nplacements; i++)
	{
		int			node = r->placements[o->first_placement + i].node;
		const char *name = s->nodes[node].name;
		const char *sep = shown == 3 ? " and more" : shown ? ", " : "";
		size_t		need;
		bool		seen = false;

		for (int k = 0; k < i && !seen; k++)
			seen = r->placements[o->first_placement + k].node == node;
		if (seen)
			continue;
		need = len + strlen(sep) + (shown == 3 ? 0 : strlen(name));
		if (need > cap)
		{
			char	   *bigger = palloc(need * 2);

			memcpy(bigger, buf, len);
			if (buf != small)
				pfree(buf);
			buf = bigger;
			cap = need * 2;
		}
		memcpy(buf + len, sep, strlen(sep));
		len += strlen(sep);
		if (shown == 3)
			break;
		memcpy(buf + len, name, strlen(name));
		len += strlen(name);
		shown++;
	}
	d = PointerGetDatum(cstring_to_text_with_len(buf, (int) len));
	if (buf != small)
		pfree(buf);
	return d;
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
		int			j = tide_job_index(s, DatumGetInt64(ids[i]));

		if (j >= 0 && confirmed[j] != value)
		{
			confirmed[j] = value;
			*count += value ? 1 : -1;
		}
	}
}

/*
 * Replace tide.reason_backlog with this cycle's deferred reasons, one row
 * per distinct reason: defer_tid[j] is the text id (tide_reason_memo_text)
 * of job j's deferred reason, or -1; tid_text[t] the text of id t; n jobs
 * deferred.  A counting sort by text id over the jobs in snapshot order
 * (ascending ids) gives each reason a slice of one bigint[] of job ids.
 */
static void
write_reason_backlog(const TideSnapshot *s, const int32 *defer_tid, const char *const *tid_text, int n,
					 int64 cycle_id, const char *group)
{
	Datum		group_arg = group ? CStringGetTextDatum(group) : (Datum) 0;
	Oid			group_type = TEXTOID;
	int			ntid = s->njobs + 1;
	int		   *start;
	Datum	   *ids;
	Datum	   *texts;
	Datum	   *lo;
	Datum	   *hi;
	int			ngroups = 0;
	Datum		args[6];
	Oid			types[6] = {INT8OID, INT8ARRAYOID, TEXTARRAYOID, INT4ARRAYOID, INT4ARRAYOID, TEXTOID};
	int			ret;

	if (n == 0)
	{
		ret = SPI_execute_with_args(W_BACKLOG_CLEAR, 1, &group_type, &group_arg, group ? NULL : "n", false, 0);
		if (ret != SPI_OK_DELETE)
			elog(ERROR, "tide.run_cycle: clearing tide.reason_backlog failed: %s", SPI_result_code_string(ret));
		return;
	}
	start = palloc0(sizeof(int) * (ntid + 1));
	for (int j = 0; j < s->njobs; j++)
		if (defer_tid[j] >= 0)
			start[defer_tid[j] + 1]++;
	texts = palloc(sizeof(Datum) * n);
	lo = palloc(sizeof(Datum) * n);
	hi = palloc(sizeof(Datum) * n);
	for (int t = 0; t < ntid; t++)
	{
		if (start[t + 1] > 0)
		{
			texts[ngroups] = CStringGetTextDatum(tid_text[t]);
			lo[ngroups] = Int32GetDatum(start[t] + 1);
			hi[ngroups] = Int32GetDatum(start[t] + start[t + 1]);
			ngroups++;
		}
		start[t + 1] += start[t];
	}
	ids = palloc(sizeof(Datum) * n);
	for (int j = 0; j < s->njobs; j++)
		if (defer_tid[j] >= 0)
			ids[start[defer_tid[j]]++] = Int64GetDatum(s->jobs[j].id);
	args[0] = Int64GetDatum(cycle_id);
	args[1] = PointerGetDatum(tide_array_of(ids, NULL, n, INT8OID));
	args[2] = PointerGetDatum(tide_array_of(texts, NULL, ngroups, TEXTOID));
	args[3] = PointerGetDatum(tide_array_of(lo, NULL, ngroups, INT4OID));
	args[4] = PointerGetDatum(tide_array_of(hi, NULL, ngroups, INT4OID));
	args[5] = group_arg;
	ret = SPI_execute_with_args(W_BACKLOG, 6, types, args, group ? NULL : "     n", false, 0);
	if (ret != SPI_OK_INSERT)
		elog(ERROR, "tide.run_cycle: writing tide.reason_backlog failed: %s", SPI_result_code_string(ret));
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
give_up_changed_tasks(const CycleLoad *l, bool *confirmed, int *jobs_placed)
{
	TideSnapshot *s = l->s;
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
		int			first = l->role_base[j];

		if (!confirmed[j])
			continue;
		jobs[nj++] = Int64GetDatum(job->id);
		for (int k = 0; k < job->nroles; k++)
		{
			role_jobs[nr] = Int64GetDatum(job->id);
			tids[nr] = PointerGetDatum(&l->role_tid[first + k]);
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

	ret = cycle_execute(W_GIVE_UP, 1, &types[2], &d, CYCLE_WRITING);
	if (ret != SPI_OK_UPDATE)
		elog(ERROR, "tide.run_cycle: giving up changed jobs failed: %s", SPI_result_code_string(ret));
	before = *jobs_placed;
	set_confirmed(s, d, false, confirmed, false, jobs_placed);
	ereport(LOG,
			(errmsg("tide.run_cycle: %d placed jobs left pending: their tasks changed while the cycle placed them",
					before - *jobs_placed)));
}

/*
 * Job states and reasons: placed jobs to allocated, unschedulable marks,
 * changed pending reasons within tide.reason_updates_per_cycle, the rest to
 * tide.reason_backlog.  Sets confirmed[j] for the jobs the UPDATE did
 * place (not cancelled meanwhile, tasks unchanged); jobs dropped[] stay as
 * they are.  Placed jobs count against the reason budget: it bounds the
 * job rows a cycle rewrites, and a placement rewrites its job's row.
 */
static void
write_jobs(const CycleLoad *l, const TideResult *r, int64 cycle_id, const bool *dropped,
		   bool *confirmed, CyclePlaced *out)
{
	TideSnapshot *s = l->s;
	int			ret;
	instr_time	t0;
	int			n = 0;
	Datum	   *ids = palloc(sizeof(Datum) * (s->njobs + 1));
	Datum	   *tids = palloc(sizeof(Datum) * (s->njobs + 1));
	Datum	   *placed = palloc(sizeof(Datum) * (s->njobs + 1));
	Datum	   *reasons = palloc(sizeof(Datum) * (s->njobs + 1));
	Datum	   *unsched = palloc(sizeof(Datum) * (s->njobs + 1));
	const char **fresh = palloc0(sizeof(char *) * (s->njobs + 1));
	int32	   *text_id = palloc(sizeof(int32) * (s->njobs + 1));
	Datum	   *text_datum = palloc0(sizeof(Datum) * (s->njobs + 1));
	uint64	   *walked_fresh = palloc0(sizeof(uint64) * (s->njobs / 64 + 1));
	int		   *unwalked_fresh = palloc(sizeof(int) * (s->njobs + 1));
	int			nunwalked = 0;
	int			nfresh = 0;
	int			budget = tide_reason_updates_per_cycle < 0 ? INT_MAX : tide_reason_updates_per_cycle;
	int32	   *defer_tid = palloc(sizeof(int32) * (s->njobs + 1));
	const char **tid_text = palloc0(sizeof(char *) * (s->njobs + 1));
	int			ndeferred = 0;
	double		c0 = cycle_cpu_ms();
	TideReasonMemo *memo = tide_reason_memo_create(s, r);

#define REASON_DATUM(j) \
	(text_datum[text_id[j]] ? text_datum[text_id[j]] \
	 : (text_datum[text_id[j]] = CStringGetTextDatum(fresh[j])))

	INSTR_TIME_SET_CURRENT(t0);
	for (int j = 0; j < s->njobs; j++)
	{
		const TideOutcome *o = &r->outcomes[j];

		defer_tid[j] = -1;
		if (o->status == TIDE_PLACED)
		{
			if (dropped[j])
				continue;
			if (budget != INT_MAX)
				budget = Max(budget - 1, 0);
			ids[n] = Int64GetDatum(s->jobs[j].id);
			tids[n] = PointerGetDatum(&l->job_tid[j]);
			placed[n] = BoolGetDatum(true);
			reasons[n] = placed_reason(s, r, j);
			unsched[n] = BoolGetDatum(false);
			n++;
			continue;
		}
		fresh[j] = tide_reason_memo_text(memo, j, &text_id[j]);
		if (o->status == TIDE_UNSCHEDULABLE)
		{
			/* always written: the mark keeps the job out of later loads */
			ids[n] = Int64GetDatum(s->jobs[j].id);
			tids[n] = PointerGetDatum(&l->job_tid[j]);
			placed[n] = BoolGetDatum(false);
			reasons[n] = REASON_DATUM(j);
			unsched[n] = BoolGetDatum(true);
			n++;
			fresh[j] = NULL;
			continue;
		}
		if (l->job_reason[j] != NULL && strcmp(l->job_reason[j], fresh[j]) == 0)
		{
			fresh[j] = NULL;	/* nothing new to say */
			continue;
		}
		nfresh++;
		if (o->walk_pos >= 0)
			walked_fresh[j / 64] |= UINT64CONST(1) << (j % 64);
		else
			unwalked_fresh[nunwalked++] = j;
	}
	elog(DEBUG1, "tide.run_cycle: %d reasons rendered in %.1f ms (cpu %.1f)", s->njobs, cycle_elapsed_ms(t0),
		 cycle_cpu_ms() - c0);

	/*
	 * Changed reasons within the budget (tide.reason_updates_per_cycle):
	 * jobs no cycle has explained yet first, then the others, each in
	 * walk order (the jobs nearest to running first), then the jobs the
	 * walk did not reach in snapshot order; the rest go to
	 * tide.reason_backlog.  A busy cycle has a few changed reasons among
	 * 78k jobs at 100k pending: the walk is tested against a bitmap of them
	 * (walked_fresh, 10 kB), not against fresh[] in walk order, a cache miss
	 * a job.
	 */
	for (int pass = 0; pass < 2 && nfresh > 0; pass++)
	{
		for (int i = 0; i < r->nwalk + nunwalked && nfresh > 0; i++)
		{
			int			j = i < r->nwalk ? r->walk[i] : unwalked_fresh[i - r->nwalk];

			if (i < r->nwalk && (walked_fresh[j / 64] & (UINT64CONST(1) << (j % 64))) == 0)
				continue;
			if (fresh[j] == NULL || (pass == 0) != (l->job_reason[j] == NULL))
				continue;
			if (budget > 0)
			{
				ids[n] = Int64GetDatum(s->jobs[j].id);
				tids[n] = PointerGetDatum(&l->job_tid[j]);
				placed[n] = BoolGetDatum(false);
				reasons[n] = REASON_DATUM(j);
				unsched[n] = BoolGetDatum(false);
				n++;
				budget--;
			}
			else
			{
				defer_tid[j] = text_id[j];
				tid_text[text_id[j]] = fresh[j];
				ndeferred++;
			}
			fresh[j] = NULL;
			nfresh--;
		}
	}
#undef REASON_DATUM
	if (n > 0)
	{
		Datum		args[6];
		Oid			argtypes[6] = {INT8ARRAYOID, TIDARRAYOID, BOOLARRAYOID, TEXTARRAYOID, BOOLARRAYOID, INT8OID};
		Datum		moved;
		bool		isnull;

		args[0] = PointerGetDatum(tide_array_of(ids, NULL, n, INT8OID));
		args[1] = PointerGetDatum(tide_array_of(tids, NULL, n, TIDOID));
		args[2] = PointerGetDatum(tide_array_of(placed, NULL, n, BOOLOID));
		args[3] = PointerGetDatum(tide_array_of(reasons, NULL, n, TEXTOID));
		args[4] = PointerGetDatum(tide_array_of(unsched, NULL, n, BOOLOID));
		args[5] = Int64GetDatum(cycle_id);
		INSTR_TIME_SET_CURRENT(t0);
		c0 = cycle_cpu_ms();
		ret = cycle_execute_waiting(W_JOBS, W_JOBS_SKIP_LOCKED, 6, argtypes, args, CYCLE_NO_TRIGGERS, "a job row");
		elog(DEBUG1, "tide.run_cycle: %d jobs updated, placements logged in %.1f ms (cpu %.1f)", n,
			 cycle_elapsed_ms(t0), cycle_cpu_ms() - c0);
		if (ret != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "tide.run_cycle: updating jobs failed: %s", SPI_result_code_string(ret));
		moved = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		set_confirmed(s, moved, isnull, confirmed, true, &out->jobs_placed);
		INSTR_TIME_SET_CURRENT(t0);
		c0 = cycle_cpu_ms();
		give_up_changed_tasks(l, confirmed, &out->jobs_placed);
		elog(DEBUG1, "tide.run_cycle: tasks of %d placed jobs checked in %.1f ms (cpu %.1f)", out->jobs_placed,
			 cycle_elapsed_ms(t0), cycle_cpu_ms() - c0);
	}
	INSTR_TIME_SET_CURRENT(t0);
	c0 = cycle_cpu_ms();
	write_reason_backlog(s, defer_tid, tid_text, ndeferred, cycle_id, l->group);
	elog(DEBUG1, "tide.run_cycle: %d reasons deferred in %.1f ms (cpu %.1f)", ndeferred, cycle_elapsed_ms(t0),
		 cycle_cpu_ms() - c0);
	out->reasons_deferred = ndeferred;
}

/*
 * The rows of the engine's placements of the jobs keep[] allows (every
 * placement when keep is NULL), into rows (placement_rows_init'ed here);
 * node_text (nnodes slots, zeroed by the caller) gets the name of each node
 * placed on, as text, once.
 */
static void
placement_rows_of(const CycleLoad *l, const TideResult *r, const bool *keep,
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

/*
 * Allocations of the jobs write_jobs confirmed placed (on nodes
 * cycle_lock_nodes locked and checked), and their launchers woken.
 */
static void
write_allocations(const CycleLoad *l, const TideResult *r, int64 cycle_id,
				  const CycleTypes *types, const bool *confirmed, CyclePlaced *out)
{
	TideSnapshot *s = l->s;
	int			ret;
	instr_time	t0;
	PlacementRows rows;
	Datum		args[PLACEMENT_ROWS_NARGS];
	Oid			argtypes[PLACEMENT_ROWS_NARGS];
	Datum	   *node_text = palloc0(sizeof(Datum) * (s->nnodes + 1));
	double		c0 = cycle_cpu_ms();

	INSTR_TIME_SET_CURRENT(t0);
	placement_rows_of(l, r, confirmed, &rows, node_text);
	out->allocs_made = rows.n;
	placement_rows_args(&rows, types, cycle_id, args, argtypes);
	ret = rows.n == 0 ? SPI_OK_INSERT
		: cycle_execute(W_ALLOCS, PLACEMENT_ROWS_NARGS, argtypes, args, CYCLE_NO_TRIGGERS);
	elog(DEBUG1, "tide.run_cycle: %d allocations inserted in %.1f ms (cpu %.1f)", rows.n, cycle_elapsed_ms(t0),
		 cycle_cpu_ms() - c0);
	if (ret != SPI_OK_INSERT)
		elog(ERROR, "tide.run_cycle: writing allocations failed: %s", SPI_result_code_string(ret));
	cycle_notify_nodes(node_text, s->nnodes);
}

void
tide_cycle_write_placements(const CycleLoad *l, const TideResult *r, int64 cycle_id,
							const CycleTypes *types, CyclePlaced *out)
{
	bool	   *confirmed = palloc0(sizeof(bool) * (l->s->njobs + 1));
	bool	   *dropped = palloc0(sizeof(bool) * (l->s->njobs + 1));
	instr_time	t0;
	double		c0 = cycle_cpu_ms();

	memset(out, 0, sizeof(CyclePlaced));
	INSTR_TIME_SET_CURRENT(t0);
	(void) cycle_lock_nodes(l, r, types, dropped);
	elog(DEBUG1, "tide.run_cycle: nodes locked and checked in %.1f ms (cpu %.1f)", cycle_elapsed_ms(t0),
		 cycle_cpu_ms() - c0);
	write_jobs(l, r, cycle_id, dropped, confirmed, out);
	write_allocations(l, r, cycle_id, types, confirmed, out);
}
