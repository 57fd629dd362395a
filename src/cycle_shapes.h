/*
 * cycle_shapes.h: the typical workload of frag queues (R-L5), refreshed by
 * the cycle and loaded into its snapshot (cycle_shapes.c).
 */
#ifndef TIDE_CYCLE_SHAPES_H
#define TIDE_CYCLE_SHAPES_H

#include "postgres.h"

#include "engine.h"

/*
 * Remake tide.recent_shapes when some queue places by frag and they are
 * tide.frag_shapes_refresh old (a write: tide.run_cycle() only, inside
 * SPI_connect()).
 */
extern void tide_cycle_shapes_refresh(void);

/*
 * Set s->workload to the shapes of tide.workload_shapes that apply to the
 * group (NULL: all groups), else to those of tide.recent_shapes; none when
 * neither has any or no queue places by frag.  Inside SPI_connect(), after
 * the snapshot's resource names are fixed, read only in the active snapshot
 * (the load's); memory from mcxt.
 */
extern void tide_cycle_shapes_load(TideSnapshot *s, MemoryContext mcxt, const char *group);

#endif							/* TIDE_CYCLE_SHAPES_H */
