/*
 * cycle_load.h: the load phase of tide.run_cycle() (cycle_load.c): every
 * query the cycle reads with, turned into the engine's snapshot.
 */
#ifndef TIDE_CYCLE_LOAD_H
#define TIDE_CYCLE_LOAD_H

#include "cycle_snapshot.h"

/*
 * Load nodes, queues, pending jobs and their tasks, live allocations,
 * the resources held for preemptors (R-E6) and the typical workload of frag
 * queues (cycle_shapes.c) into a snapshot allocated in mcxt, evictions on.
 * Must run inside SPI_connect(); the loaded texts live until SPI_finish().
 */
extern void tide_cycle_load(CycleLoad *l, MemoryContext mcxt, const char *group);

/*
 * The same for tide.run_cycle() (cycle): a whole-cluster cycle's load is
 * made, under tide.incremental_load, from the rows the last such load kept
 * in this backend and what changed since, when that is exact
 * (cycle_cache.c), and keeps its rows for the next; l->xmin is then set
 * for cycle_cache_prune().
 */
extern void tide_cycle_load_kept(CycleLoad *l, MemoryContext mcxt, const char *group, bool cycle);

#endif							/* TIDE_CYCLE_LOAD_H */
