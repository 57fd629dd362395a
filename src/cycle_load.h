/*
 * cycle_load.h: the load phase of tide.run_cycle() (cycle_load.c): every
 * query the cycle reads with, turned into the engine's snapshot.
 */
#ifndef TIDE_CYCLE_LOAD_H
#define TIDE_CYCLE_LOAD_H

#include "cycle_snapshot.h"

/*
 * R-C3 (cycle_lost.c): mark down the nodes whose launcher went silent for longer than
 * tide.node_timeout (a write: before the load, so that it sees them down);
 * returns the jobs hit.
 */
extern int	tide_cycle_nodes_lost(void);

/*
 * The nodes tide_cycle_nodes_lost() would mark down now, and why, without
 * writing (for tide.dry_run()); returns how many.
 */
extern int	tide_cycle_nodes_to_lose(char ***names, char ***reasons);

/*
 * Load nodes, queues, pending jobs and their tasks, live allocations,
 * the resources held for preemptors (R-E6) and the typical workload of frag
 * queues (cycle_shapes.c) into a snapshot allocated in mcxt, evictions on.
 * Must run inside SPI_connect(); the loaded texts live until SPI_finish().
 */
extern void tide_cycle_load(CycleLoad *l, MemoryContext mcxt, const char *group);

#endif							/* TIDE_CYCLE_LOAD_H */
