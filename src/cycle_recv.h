/*
 * cycle_recv.h: a load query's rows handed one at a time to a callback,
 * straight from the executor (cycle_recv.c).
 */
#ifndef TIDE_CYCLE_RECV_H
#define TIDE_CYCLE_RECV_H

#include "postgres.h"

#include "access/htup.h"
#include "access/tupdesc.h"
#include "executor/spi.h"

/*
 * Called once a row: its columns (values[0] is column 1), valid only during
 * the call; what the callback allocates in CurrentMemoryContext is freed
 * after it, so it keeps what it needs in a context of its own.
 */
typedef void (*CycleRowFn) (void *arg, const Datum *values, const bool *nulls);

/*
 * Run a SELECT with nargs parameters ($1 ..; nulls[i] for SQL NULL) read
 * only, under the active snapshot (inside SPI_connect()), passing each row
 * to fn: no row is copied into an SPI tuple table.  Returns the rows.
 */
extern uint64 cycle_stream(const char *sql, int nargs, const Oid *argtypes, const Datum *args,
						   const bool *nulls, CycleRowFn fn, void *arg);

/*
 * A query's rows kept as minimal tuples, in the order they are kept, each
 * with its first column (a bigint key) and the bigint column job_col (the
 * job it belongs to): what an incremental load keeps between cycles
 * (cycle_cache.c) and streams again (cycle_rows_replay).  The tuples may
 * hold TOAST pointers: valid while their row versions live, which a row's
 * change ends, and a change names its job in tide.job_changes.
 */
typedef struct CycleRow
{
	int64		key;
	int64		job_id;
	MinimalTuple tup;
} CycleRow;

typedef struct CycleRowSet
{
	MemoryContext cxt;			/* where the tuples (streamed ones in a child
								 * context), desc and rows live */
	TupleDesc	desc;			/* the query's result */
	int			job_col;		/* 1-based */
	int64		n,
				cap;
	CycleRow   *rows;
	Size		bytes;			/* the tuples' */
} CycleRowSet;

/* An empty set in cxt, rows keyed by column 1 and belonging to job_col. */
extern void cycle_rowset_init(CycleRowSet *set, MemoryContext cxt, int job_col);

/* Append a row (a copy of the tuple in set->cxt). */
extern void cycle_rowset_add(CycleRowSet *set, int64 key, int64 job_id, MinimalTuple tup);

/*
 * cycle_stream, also keeping every row in keep (NULL: none): keep's desc is
 * set from the first query if it has none.
 */
extern uint64 cycle_stream_keep(const char *sql, int nargs, const Oid *argtypes, const Datum *args,
								const bool *nulls, CycleRowFn fn, void *arg, CycleRowSet *keep);

/*
 * The plan of a load query (SPI_prepare_cursor with options, e.g.
 * CURSOR_OPT_GENERIC_PLAN), made on its first use and kept for the
 * backend's life (SPI_keepplan): one per query text, parameter types and
 * options.  Inside SPI_connect().
 */
extern SPIPlanPtr cycle_kept_plan(const char *sql, int nargs, const Oid *argtypes, int options);

/* cycle_stream_keep over a plan (cycle_kept_plan), with its parameters. */
extern uint64 cycle_stream_plan(SPIPlanPtr plan, const Datum *args, const bool *nulls,
								CycleRowFn fn, void *arg, CycleRowSet *keep);

/* Each kept row to fn (NULL fn: nothing), in the set's order, as the query gave it. */
/* Row i of set taken apart into values and nulls (desc: set->desc or its first columns). */
extern void cycle_row_deform(const CycleRowSet *set, TupleDesc desc, int64 i, Datum *values, bool *nulls);

extern void cycle_rows_replay(const CycleRowSet *set, CycleRowFn fn, void *arg);

/* The same, fn given only the first ncols columns (the rest not read). */
extern void cycle_rows_replay_cols(const CycleRowSet *set, int ncols, CycleRowFn fn, void *arg);

#endif							/* TIDE_CYCLE_RECV_H */
