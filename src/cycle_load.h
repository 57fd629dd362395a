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

#endif							/* TIDE_CYCLE_LOAD_H */
