/*
 * prep.h: job preparation and the shape cache (prep.c).
 */
#ifndef TIDE_PREP_H
#define TIDE_PREP_H

#include "engine_int.h"

typedef struct TideShape
{
	uint64_t	hash;
	int32_t		job;			/* representative job + 1, 0 = empty */
	int32_t		mode;
} TideShape;

/* Once per decide, before the walk: w->info, w->minreq and w->queue_cards. */
extern void tide_prepare_jobs(TideWork *w);

extern TideShape *tide_shape_find(TideWork *w, int j, int mode, bool *found);
extern void tide_shape_remember(TideWork *w, TideShape *slot, int j);

#endif							/* TIDE_PREP_H */
