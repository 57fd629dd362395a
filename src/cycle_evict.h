/*
 * cycle_evict.h: the eviction half of tide.run_cycle() (cycle_evict.c).
 */
#ifndef TIDE_CYCLE_EVICT_H
#define TIDE_CYCLE_EVICT_H

#include "cycle_rows.h"
#include "engine.h"

extern int	tide_node_timeout;	/* GUC tide.node_timeout, seconds (pg_tide.c) */

extern int	tide_cycle_nodes_lost(void);
extern void tide_cycle_load_claims(TideSnapshot *s);
extern int	tide_cycle_write_evictions(TideSnapshot *s, const TideResult *r, int64 cycle_id,
									   const Datum *role_request, const CycleTypes *types,
									   int lost);

#endif							/* TIDE_CYCLE_EVICT_H */
