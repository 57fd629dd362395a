/*
 * dry_run.c: tide.dry_run(), the decisions the next cycle would make now.
 *
 * The same load (cycle_load.c) and the same engine call as tide.run_cycle()
 * (cycle.c), then rows instead of writes: nothing is inserted, updated or
 * notified, no tide.cycles row is made and no cycle id is consumed, and
 * nodes the cycle would mark lost (R-C3) are only listed.
 *
 * It takes the cycle lock (R-C1) in try mode, at session level, and
 * releases it before returning, error or not: while it loads no cycle
 * commits under it, and it never holds cycles off past its own call (the
 * transaction-level lock of tide.run_cycle() would last until the
 * caller's transaction ends).  When a cycle is running it raises an error
 * (55P03) rather than answer for a state that is about to change.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "cycle_evict.h"
#include "cycle_load.h"
#include "cycle_lost.h"
#include "cycle_rows.h"
#include "gpumask.h"

PG_FUNCTION_INFO_V1(tide_dry_run);

/* The OUT columns of tide.dry_run() (extension/61_dry_run.sql), 0-based. */
enum
{
	DR_KIND,
	DR_JOB_ID,
	DR_ROLE,
	DR_REPLICA,
	DR_NODE,
	DR_GPUS,
	DR_GPU_MILLI,
	DR_RESOURCES,
	DR_PREEMPTOR_JOB_ID,
	DR_RULE,
	DR_REASON,
	DR_NCOLS
};

/* One output row being filled: every column NULL until set. */
typedef struct DryRow
{
	Datum		v[DR_NCOLS];
	bool		null[DR_NCOLS];
} DryRow;

typedef struct DryRun
{
	ReturnSetInfo *rsinfo;
	const CycleLoad *l;
	const TideResult *r;
} DryRun;

static void
row_start(DryRow *row, const char *kind, int64 job_id)
{
	for (int i = 0; i < DR_NCOLS; i++)
		row->null[i] = true;
	row->v[DR_KIND] = CStringGetTextDatum(kind);
	row->null[DR_KIND] = false;
	if (job_id != 0)
	{
		row->v[DR_JOB_ID] = Int64GetDatum(job_id);
		row->null[DR_JOB_ID] = false;
	}
}

static void
row_set(DryRow *row, int colno, Datum d)
{
	row->v[colno] = d;
	row->null[colno] = false;
}

static void
row_text(DryRow *row, int colno, const char *text)
{
	if (text)
		row_set(row, colno, CStringGetTextDatum(text));
}

static void
row_emit(DryRun *dr, DryRow *row)
{
	tuplestore_putvalues(dr->rsinfo->setResult, dr->rsinfo->setDesc, row->v, row->null);
}

/* Role, replica, node, GPUs and resources of a placed (or held) replica. */
static void
row_replica(DryRow *row, const CycleLoad *l, int job, int role, int replica, int node,
			uint64 gpus, int gpu_milli)
{
	int			ri = l->role_base[job] + role;

	row_text(row, DR_ROLE, l->role_name[ri]);
	row_set(row, DR_REPLICA, Int32GetDatum(replica));
	row_text(row, DR_NODE, l->s->nodes[node].name);
	row_set(row, DR_GPUS, GpuMaskGetDatum(gpus));
	if (gpu_milli > 0)
		row_set(row, DR_GPU_MILLI, Int32GetDatum(gpu_milli));
	row_set(row, DR_RESOURCES, l->role_request[ri]);
}

static void
emit_lost_nodes(DryRun *dr)
{
	char	  **names,
			  **reasons;
	int			n = tide_cycle_nodes_to_lose(&names, &reasons);

	for (int i = 0; i < n; i++)
	{
		DryRow		row;

		row_start(&row, "lost", 0);
		row_text(&row, DR_NODE, names[i]);
		row_text(&row, DR_RULE, "R-C3");
		row_text(&row, DR_REASON, reasons[i]);
		row_emit(dr, &row);
	}
}

/* Replicas placed, in walk order (what tide.allocations would get). */
static void
emit_placements(DryRun *dr)
{
	const TideSnapshot *s = dr->l->s;

	for (int i = 0; i < dr->r->nplacements; i++)
	{
		const TidePlacement *p = &dr->r->placements[i];
		DryRow		row;

		row_start(&row, "place", s->jobs[p->job].id);
		row_replica(&row, dr->l, p->job, p->role, p->replica, p->node, p->gpus, p->gpu_milli);
		row_emit(dr, &row);
	}
}

/* Victims (whole jobs, R-E5), and what is held for their preemptors (R-E6). */
static void
emit_evictions(DryRun *dr)
{
	const TideSnapshot *s = dr->l->s;
	const TideResult *r = dr->r;

	for (int i = 0; i < r->nevictions; i++)
	{
		const TideEviction *e = &r->evictions[i];
		DryRow		row;

		row_start(&row, "evict", e->job_id);
		row_set(&row, DR_PREEMPTOR_JOB_ID, Int64GetDatum(s->jobs[e->preemptor].id));
		row_text(&row, DR_RULE, tide_rule_name(e->rule));
		row_text(&row, DR_REASON, tide_cycle_victim_reason(s, e));
		row_emit(dr, &row);
	}
	for (int i = 0; i < r->nnew_claims; i++)
	{
		const TideClaim *cl = &r->new_claims[i];
		DryRow		row;

		row_start(&row, "hold", s->jobs[cl->job].id);
		row_replica(&row, dr->l, cl->job, cl->role, cl->replica, cl->node, cl->gpus, cl->gpu_milli);
		row_text(&row, DR_RULE, "R-E6");
		row_text(&row, DR_REASON, "held for it while its victims stop");
		row_emit(dr, &row);
	}
}

/* Reservations (R-L2): on a node, or queue headroom (node NULL). */
static void
emit_reservations(DryRun *dr)
{
	const TideSnapshot *s = dr->l->s;

	for (int i = 0; i < dr->r->nholds; i++)
	{
		const TideHold *h = &dr->r->holds[i];
		DryRow		row;

		row_start(&row, "hold", s->jobs[h->job].id);
		if (h->node >= 0)
		{
			row_text(&row, DR_NODE, s->nodes[h->node].name);
			row_set(&row, DR_GPUS, GpuMaskGetDatum(h->gpus));
		}
		row_set(&row, DR_RESOURCES, cycle_vec_resvec(s, h->res));
		row_text(&row, DR_RULE, "R-L2");
		if (h->shadow != TIDE_TIME_UNKNOWN)
			row_text(&row, DR_REASON,
					 psprintf("reserved for it, expected to start at %s",
							  timestamptz_to_str((TimestampTz) h->shadow)));
		else
			row_text(&row, DR_REASON, "reserved for it, start unknown");
		row_emit(dr, &row);
	}
}

/* Every job left pending or found unschedulable, with its reasons (R-C2). */
static void
emit_unplaced(DryRun *dr)
{
	const TideSnapshot *s = dr->l->s;
	TideReasonMemo *memo = tide_reason_memo_create((TideSnapshot *) s, dr->r);

	for (int j = 0; j < s->njobs; j++)
	{
		const TideOutcome *o = &dr->r->outcomes[j];
		DryRow		row;
		int32		text_id;

		if (o->status == TIDE_PLACED)
			continue;
		row_start(&row, o->status == TIDE_UNSCHEDULABLE ? "unschedulable" : "pending", s->jobs[j].id);
		row_text(&row, DR_REASON, tide_reason_memo_text(memo, j, &text_id));
		row_emit(dr, &row);
	}
}

/* tide._cycle_lock_key(): the advisory lock key of the cycle (R-C1). */
static int64
cycle_lock_key(void)
{
	bool		isnull;
	int			ret = SPI_execute("SELECT tide._cycle_lock_key()", true, 1);

	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "tide.dry_run: cycle lock key query failed: %s", SPI_result_code_string(ret));
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * tide.dry_run() returns setof record: one row per decision the next
 * cycle would make now (see extension/61_dry_run.sql for the columns).
 */
Datum
tide_dry_run(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext caller;
	MemoryContext mcxt;
	LOCKTAG		tag;
	int64		key;
	int			ret;

	InitMaterializedSRF(fcinfo, 0);
	caller = CurrentMemoryContext;
	if ((ret = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "tide.dry_run: SPI_connect failed: %s", SPI_result_code_string(ret));

	/* as pg_try_advisory_lock(bigint) takes it, held for this call only */
	key = cycle_lock_key();
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) (key >> 32), (uint32) key, 1);
	if (LockAcquire(&tag, ExclusiveLock, true, true) == LOCKACQUIRE_NOT_AVAIL)
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("a scheduling cycle is running"),
				 errhint("Call tide.dry_run() again once it has finished.")));
	mcxt = AllocSetContextCreate(caller, "tide dry run", ALLOCSET_DEFAULT_SIZES);
	PG_TRY();
	{
		CycleLoad	l;
		DryRun		dr;

		dr.rsinfo = rsinfo;
		emit_lost_nodes(&dr);
		tide_cycle_load(&l, mcxt, NULL);
		dr.l = &l;
		dr.r = tide_decide(l.s);
		emit_placements(&dr);
		emit_evictions(&dr);
		emit_reservations(&dr);
		emit_unplaced(&dr);
	}
	PG_FINALLY();
	{
		LockRelease(&tag, ExclusiveLock, true);
	}
	PG_END_TRY();

	MemoryContextDelete(mcxt);
	SPI_finish();
	return (Datum) 0;
}
