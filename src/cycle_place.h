/*
 * cycle_place.h: the placement writes of tide.run_cycle() (cycle_place.c).
 */
#ifndef TIDE_CYCLE_PLACE_H
#define TIDE_CYCLE_PLACE_H

#include "cycle_snapshot.h"
#include "cycle_rows.h"

/* What the placement writes did, for the cycle row. */
typedef struct CyclePlaced
{
	int			jobs_placed;	/* jobs moved to allocated */
	int			allocs_made;	/* tide.allocations rows inserted */
	int			reasons_deferred;	/* reasons left in tide.reason_backlog */
} CyclePlaced;

/*
 * Write the engine's placements and pending reasons (write phase): the jobs
 * UPDATE first, then the allocations of the jobs it confirmed placed.
 */
extern void tide_cycle_write_placements(const CycleLoad *l, const TideResult *r, int64 cycle_id,
										const CycleTypes *types, CyclePlaced *out);

#endif							/* TIDE_CYCLE_PLACE_H */
