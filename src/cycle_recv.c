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
} RowReceiver;

static bool
row_receive(TupleTableSlot *slot, DestReceiver *self)
{
	RowReceiver *r = (RowReceiver *) self;
	MemoryContext old;

	slot_getallattrs(slot);
	old = MemoryContextSwitchTo(r->rowcxt);
	r->fn(r->arg, slot->tts_values, slot->tts_isnull);
	MemoryContextSwitchTo(old);
	MemoryContextReset(r->rowcxt);
	return true;
}

static void
row_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
}

static void
row_shutdown(DestReceiver *self)
{
}

static void
row_destroy(DestReceiver *self)
{
}

uint64
cycle_stream(const char *sql, int nargs, const Oid *argtypes, const Datum *args,
			 const bool *nulls, CycleRowFn fn, void *arg)
{
	SPIPlanPtr	plan;
	ParamListInfo params = makeParamList(nargs);
	SPIExecuteOptions opts;
	RowReceiver r;
	int			ret;

	plan = SPI_prepare(sql, nargs, (Oid *) argtypes);
	if (plan == NULL)
		elog(ERROR, "tide.run_cycle: query failed (%s): %s", SPI_result_code_string(SPI_result), sql);
	for (int i = 0; i < nargs; i++)
	{
		params->params[i].value = args[i];
		params->params[i].isnull = nulls[i];
		params->params[i].pflags = PARAM_FLAG_CONST;
		params->params[i].ptype = argtypes[i];
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
	r.rowcxt = AllocSetContextCreate(CurrentMemoryContext, "tide load row", ALLOCSET_SMALL_SIZES);
	memset(&opts, 0, sizeof(opts));
	opts.params = params;
	opts.read_only = true;
	opts.dest = &r.pub;
	ret = SPI_execute_plan_extended(plan, &opts);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "tide.run_cycle: query failed (%s): %s", SPI_result_code_string(ret), sql);
	SPI_freeplan(plan);
	MemoryContextDelete(r.rowcxt);
	return SPI_processed;
}
