/*
 * cycle_evict.h: the eviction writes of tide.run_cycle() (cycle_evict.c).
 */
#ifndef TIDE_CYCLE_EVICT_H
#define TIDE_CYCLE_EVICT_H

#include "cycle_snapshot.h"
#include "cycle_rows.h"

/*
 * Write the eviction decisions (after the placements); returns the number
 * of jobs evicted, lost ones (tide_cycle_nodes_lost, counted by the
 * caller as lost) included.
 */
extern int	tide_cycle_write_evictions(const CycleLoad *l, const TideResult *r, int64 cycle_id,
									   const CycleTypes *types, int lost);

/* A victim's reason: which rule, for which job (tide.evictions.reason). */
extern char *tide_cycle_victim_reason(const TideSnapshot *s, const TideEviction *e);

#endif							/* TIDE_CYCLE_EVICT_H */
