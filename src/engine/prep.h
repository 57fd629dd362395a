/*
 * prep.h: job preparation and the shape cache (prep.c).
 */
#ifndef TIDE_PREP_H
#define TIDE_PREP_H

#include "engine_int.h"

typedef struct TideShape
{
	uint64_t	hash;
	int32_t		job;			/* the job that failed: its outcome answers */
	int32_t		mode;
} TideShape;

/*
 * Once per decide, before the walk: w->info (the shape classes too),
 * w->minreq and w->queue_cards.
 */
extern void tide_prepare_jobs(TideWork *w);

/* Where a failed shape goes in the cache, from tide_shape_find(). */
typedef struct TideShapeProbe
{
	uint64_t	hash;
	int32_t		mode;
	uint64_t	slot;
} TideShapeProbe;

extern int	tide_shape_find(TideWork *w, int j, int mode, TideShapeProbe *probe);
extern void tide_shape_remember(TideWork *w, const TideShapeProbe *probe, int j);

#endif							/* TIDE_PREP_H */
