/*
 * cycle_evict.h: the eviction half of tide.run_cycle() (cycle_evict.c).
 */
#ifndef TIDE_CYCLE_EVICT_H
#define TIDE_CYCLE_EVICT_H

#include "engine.h"

/* OIDs of the extension's types the writes need. */
typedef struct CycleEvictTypes
{
	Oid			resvec,
				gpumask,
				resvec_array,
				gpumask_array;
} CycleEvictTypes;

extern int	tide_node_timeout;	/* GUC tide.node_timeout, seconds (pg_tide.c) */

extern int	tide_cycle_nodes_lost(void);
extern void tide_cycle_load_claims(TideSnapshot *s);
extern int	tide_cycle_write_evictions(TideSnapshot *s, const TideResult *r, int64 cycle_id,
									   const Datum *role_request, const CycleEvictTypes *types,
									   int lost);

#endif							/* TIDE_CYCLE_EVICT_H */
