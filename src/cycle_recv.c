/*
 * cycle_recv.c: a load query's rows handed one at a time to a callback
 * (see cycle_recv.h).
 *
 * SPI's own receiver copies every row into its tuple table before the
 * caller reads any, and the caller then takes the copy apart again; for the
 * cycle's biggest query (the pending jobs with their tasks) that copy cost
 * more than the scan.  This receiver gives the callback the executor's
 * slot, its columns already separated.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "nodes/params.h"
#include "tcop/dest.h"
#include "utils/memutils.h"

#include "cycle_recv.h"

typedef struct RowReceiver
{
	DestReceiver pub;
	CycleRowFn	fn;
	void	   *arg;
	MemoryContext rowcxt;		/* the callback's scratch, reset each row */
	CycleRowSet *keep;			/* NULL: keep nothing */
	MemoryContext tupcxt;		/* where keep's tuples go */
} RowReceiver;

/*
 * The tuples a query streams into a set are allocated in a generation
 * context under the set's context (made on first use, found again among
 * the context's children by name): each one the size it is, where an
 * allocation set rounds each of these (a few hundred bytes) up to a power
 * of two, nearly twice the memory the first load of a big backlog faults
 * in page by page.  They are still freed one by one (pfree), a block going
 * back once all its tuples have; the few rows an incremental load adds
 * later (cycle_rowset_add) go in the set's own context, whose free chunks
 * are reused, so that the kept memory never grows past the first load's
 * bulk and what lives after it.
 */
static const char kept_rows_name[] = "tide kept rows";

#define KEPT_ROWS_INIT_BLOCK (8 * 1024)
#define KEPT_ROWS_MAX_BLOCK (1024 * 1024)

static MemoryContext
rows_cxt(const CycleRowSet *set)
{
	for (MemoryContext c = set->cxt->firstchild; c != NULL; c = c->nextchild)
		if (c->name == kept_rows_name)
			return c;
	return GenerationContextCreate(set->cxt, kept_rows_name, 0,
								   KEPT_ROWS_INIT_BLOCK, KEPT_ROWS_MAX_BLOCK);
}

void
cycle_rowset_init(CycleRowSet *set, MemoryContext cxt, int job_col)
{
	memset(set, 0, sizeof(CycleRowSet));
	set->cxt = cxt;
	set->job_col = job_col;
}

/* Append a row whose tuple is set's already (allocated in set->cxt). */
static void
rowset_adopt(CycleRowSet *set, int64 key, int64 job_id, MinimalTuple tup)
{
	if (set->n == set->cap)
	{
		set->cap = set->cap ? set->cap * 2 : 1024;
		set->rows = set->rows == NULL
			? MemoryContextAllocHuge(set->cxt, sizeof(CycleRow) * set->cap)
			: repalloc_huge(set->rows, sizeof(CycleRow) * set->cap);
	}
	set->rows[set->n].key = key;
	set->rows[set->n].job_id = job_id;
	set->rows[set->n].tup = tup;
	set->bytes += tup->t_len;
	set->n++;
}

void
cycle_rowset_add(CycleRowSet *set, int64 key, int64 job_id, MinimalTuple tup)
{
	MinimalTuple copy = MemoryContextAlloc(set->cxt, tup->t_len);

	memcpy(copy, tup, tup->t_len);
	rowset_adopt(set, key, job_id, copy);
}

/* The bigint column of a row as received (never NULL: ids). */
static int64
int8_col(TupleTableSlot *slot, int col)
{
	return slot->tts_isnull[col - 1] ? 0 : DatumGetInt64(slot->tts_values[col - 1]);
}

static bool
row_receive(TupleTableSlot *slot, DestReceiver *self)
{
	RowReceiver *r = (RowReceiver *) self;
	MemoryContext old;

	slot_getallattrs(slot);
	old = MemoryContextSwitchTo(r->rowcxt);
	if (r->keep)
	{
		/* one copy, made where the set keeps it */
		MemoryContextSwitchTo(r->tupcxt);
		rowset_adopt(r->keep, int8_col(slot, 1), int8_col(slot, r->keep->job_col),
					 ExecCopySlotMinimalTuple(slot));
		MemoryContextSwitchTo(r->rowcxt);
	}
	if (r->fn)
		r->fn(r->arg, slot->tts_values, slot->tts_isnull);
	MemoryContextSwitchTo(old);
	MemoryContextReset(r->rowcxt);
	return true;
}

static void
row_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	RowReceiver *r = (RowReceiver *) self;

	if (r->keep && r->keep->desc == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(r->keep->cxt);

		r->keep->desc = CreateTupleDescCopy(typeinfo);
		MemoryContextSwitchTo(old);
	}
}

static void
row_shutdown(DestReceiver *self)
{
}

static void
row_destroy(DestReceiver *self)
{
}

/*
 * Plans kept for the backend's life, one per query text, parameter types and
 * options: the load's queries are the same every cycle, and at one cycle a
 * second parsing and planning them again cost a tenth of a busy cycle's
 * load.  The plan cache (plancache.c) replans a kept plan when what it
 * depends on changes (DDL, statistics, search_path, the user).
 */
#define KEPT_PLANS 32
#define KEPT_MAXARGS 8

typedef struct KeptPlan
{
	char	   *sql;			/* a copy, in TopMemoryContext */
	int			nargs;
	Oid			argtypes[KEPT_MAXARGS];
	int			options;
	SPIPlanPtr	plan;
} KeptPlan;

static KeptPlan kept_plans[KEPT_PLANS];
static int	nkept_plans = 0;

SPIPlanPtr
cycle_kept_plan(const char *sql, int nargs, const Oid *argtypes, int options)
{
	SPIPlanPtr	plan;
	KeptPlan   *k;

	for (int i = 0; i < nkept_plans; i++)
	{
		k = &kept_plans[i];
		if (k->nargs == nargs && k->options == options &&
			memcmp(k->argtypes, argtypes, sizeof(Oid) * nargs) == 0 && strcmp(k->sql, sql) == 0)
			return k->plan;
	}
	plan = SPI_prepare_cursor(sql, nargs, (Oid *) argtypes, options);
	if (plan == NULL)
		elog(ERROR, "tide.run_cycle: query failed (%s): %s", SPI_result_code_string(SPI_result), sql);
	/* more queries than expected: this one lives until SPI_finish() */
	if (nkept_plans == KEPT_PLANS || nargs > KEPT_MAXARGS)
		return plan;
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "tide.run_cycle: cannot keep the plan of: %s", sql);
	k = &kept_plans[nkept_plans];
	k->sql = MemoryContextStrdup(TopMemoryContext, sql);
	k->nargs = nargs;
	memset(k->argtypes, 0, sizeof(k->argtypes));
	memcpy(k->argtypes, argtypes, sizeof(Oid) * nargs);
	k->options = options;
	k->plan = plan;
	nkept_plans++;
	return plan;
}

uint64
cycle_stream(const char *sql, int nargs, const Oid *argtypes, const Datum *args,
			 const bool *nulls, CycleRowFn fn, void *arg)
{
	return cycle_stream_keep(sql, nargs, argtypes, args, nulls, fn, arg, NULL);
}

uint64
cycle_stream_keep(const char *sql, int nargs, const Oid *argtypes, const Datum *args,
				  const bool *nulls, CycleRowFn fn, void *arg, CycleRowSet *keep)
{
	/*
	 * custom plans: the arrays of a resource group's names, thousands long,
	 * are hashed when they are constants and searched row by row when
	 * they are a generic plan's parameters
	 */
	return cycle_stream_plan(cycle_kept_plan(sql, nargs, argtypes, CURSOR_OPT_CUSTOM_PLAN),
							 args, nulls, fn, arg, keep);
}

uint64
cycle_stream_plan(SPIPlanPtr plan, const Datum *args, const bool *nulls,
				  CycleRowFn fn, void *arg, CycleRowSet *keep)
{
	int			nargs = SPI_getargcount(plan);
	ParamListInfo params = makeParamList(nargs);
	SPIExecuteOptions opts;
	RowReceiver r;
	int			ret;

	for (int i = 0; i < nargs; i++)
	{
		params->params[i].value = args[i];
		params->params[i].isnull = nulls[i];
		params->params[i].pflags = PARAM_FLAG_CONST;
		params->params[i].ptype = SPI_getargtypeid(plan, i);
	}
	memset(&r, 0, sizeof(r));
	r.pub.receiveSlot = row_receive;
	r.pub.rStartup = row_startup;
	r.pub.rShutdown = row_shutdown;
	r.pub.rDestroy = row_destroy;
	/* neither DestSPI (no tuple table) nor DestNone (not a SELECT then) */
	r.pub.mydest = DestTuplestore;
	r.fn = fn;
	r.arg = arg;
	r.keep = keep;
	r.tupcxt = keep ? rows_cxt(keep) : NULL;
	r.rowcxt = AllocSetContextCreate(CurrentMemoryContext, "tide load row", ALLOCSET_SMALL_SIZES);
	memset(&opts, 0, sizeof(opts));
	opts.params = params;
	opts.read_only = true;
	opts.dest = &r.pub;
	ret = SPI_execute_plan_extended(plan, &opts);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "tide.run_cycle: query failed (%s)", SPI_result_code_string(ret));
	MemoryContextDelete(r.rowcxt);
	return SPI_processed;
}

void
cycle_row_deform(const CycleRowSet *set, TupleDesc desc, int64 i, Datum *values, bool *nulls)
{
	MinimalTuple mt = set->rows[i].tup;
	HeapTupleData htup;

	/* a minimal tuple read as a heap tuple (as the executor does) */
	htup.t_len = mt->t_len + MINIMAL_TUPLE_OFFSET;
	htup.t_data = (HeapTupleHeader) ((char *) mt - MINIMAL_TUPLE_OFFSET);
	heap_deform_tuple(&htup, desc, values, nulls);
}

void
cycle_rows_replay(const CycleRowSet *set, CycleRowFn fn, void *arg)
{
	cycle_rows_replay_cols(set, set->desc ? set->desc->natts : 0, fn, arg);
}

void
cycle_rows_replay_cols(const CycleRowSet *set, int ncols, CycleRowFn fn, void *arg)
{
	TupleDesc	desc;
	Datum	   *values;
	bool	   *nulls;
	MemoryContext rowcxt,
				old;

	if (set->n == 0 || fn == NULL)
		return;
	Assert(ncols >= 1 && ncols <= set->desc->natts);
	desc = set->desc;
	if (ncols < desc->natts)
	{
		/* heap_deform_tuple stops at the descriptor's last column */
		desc = CreateTupleDescCopy(set->desc);
		desc->natts = ncols;
	}
	values = palloc(sizeof(Datum) * ncols);
	nulls = palloc(sizeof(bool) * ncols);
	rowcxt = AllocSetContextCreate(CurrentMemoryContext, "tide load row", ALLOCSET_SMALL_SIZES);
	for (int64 i = 0; i < set->n; i++)
	{
		cycle_row_deform(set, desc, i, values, nulls);
		old = MemoryContextSwitchTo(rowcxt);
		fn(arg, values, nulls);
		MemoryContextSwitchTo(old);
		MemoryContextReset(rowcxt);
	}
	MemoryContextDelete(rowcxt);
	pfree(values);
	pfree(nulls);
	if (desc != set->desc)
		FreeTupleDesc(desc);
}
