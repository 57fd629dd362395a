/*
 * place.h: a job's replicas on nodes (R-L3 to R-L6) and why not, place.c.
 */
#ifndef TIDE_PLACE_H
#define TIDE_PLACE_H

#include "fit.h"

/* How far placing one job got. */
typedef struct TidePlaceResult
{
	bool		placed;			/* at least its gang minimum landed */
	int32_t		fail_role;		/* the first role short of a node, -1 none */
	int32_t		placed_count;	/* replicas placed before giving up */
	TideCardBlock card;			/* a card key that blocked a partition */
} TidePlaceResult;

extern TidePlaceResult tide_place_job(TideWork *w, int j, int mode);
extern void tide_rollback(TideWork *w, int start);
extern void tide_diagnose(TideWork *w, int j, int mode, TideOutcome *o, TidePlaceResult *pr);
extern void tide_diagnose_status(TideWork *w, int j, TideOutcome *o, const TidePlaceResult *pr);
extern bool tide_diagnose_avoider(TideWork *w, int j, int mode, TideOutcome *o,
								  const TidePlaceResult *pr);
extern bool tide_diagnose_quiet(TideWork *w, int j, int mode, TideOutcome *o, TidePlaceResult *pr);

#endif							/* TIDE_PLACE_H */
