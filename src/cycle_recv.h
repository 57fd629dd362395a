/*
 * cycle_recv.h: a load query's rows handed one at a time to a callback,
 * straight from the executor (cycle_recv.c).
 */
#ifndef TIDE_CYCLE_RECV_H
#define TIDE_CYCLE_RECV_H

#include "postgres.h"

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

#endif							/* TIDE_CYCLE_RECV_H */
