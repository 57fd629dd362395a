/*
 * cycle_rows.h: the arrays tide.run_cycle() writes with (cycle_rows.c).
 *
 * The cycle writes set-based: each statement takes one array per column
 * and unnests them.  Allocations (cycle_place.c) and eviction holds
 * (cycle_evict.c) are both rows of placed replicas with the same columns,
 * so they are built the same way.
 */
#ifndef TIDE_CYCLE_ROWS_H
#define TIDE_CYCLE_ROWS_H

#include "utils/array.h"

#include "engine.h"

/* OIDs of the extension's types the writes need (looked up once a cycle). */
typedef struct CycleTypes
{
	Oid			resvec,
				gpumask,
				resvec_array,
				gpumask_array;
} CycleTypes;

/* Look them up (inside SPI_connect()). */
extern void cycle_types_lookup(CycleTypes *types);

/* A snapshot vector (milli per resource) as a tide.resvec: its non-zero entries. */
extern Datum cycle_vec_resvec(const TideSnapshot *s, const int64 *v);

/* A one-dimensional array of n elements of elemtype (nulls may be NULL). */
extern ArrayType *tide_array_of(Datum *elems, bool *nulls, int n, Oid elemtype);

/*
 * Placed replicas, one element per row in each column: job id, role (text),
 * replica, node (text), resources (resvec), GPU mask, GPU share (NULL for
 * whole GPUs).
 */
typedef struct PlacementRows
{
	int			n;
	Datum	   *job_id;
	Datum	   *role;
	Datum	   *replica;
	Datum	   *node;
	Datum	   *resources;
	Datum	   *gpus;
	Datum	   *gpu_milli;
	bool	   *milli_null;
} PlacementRows;

extern void placement_rows_init(PlacementRows *rows, int capacity);
extern void placement_rows_add(PlacementRows *rows, int64 job_id, Datum role, int replica,
							   Datum node, Datum resources, uint64 gpus, int gpu_milli);

/*
 * The eight arguments of a statement that unnests ($1 .. $7) the columns in
 * that order and takes the cycle id as $8.
 */
#define PLACEMENT_ROWS_NARGS 8
extern void placement_rows_args(const PlacementRows *rows, const CycleTypes *types, int64 cycle_id,
								Datum *args, Oid *argtypes);

#endif							/* TIDE_CYCLE_ROWS_H */
