/*
 * evict.h: evictions after the walk (R-E1 to R-E5), evict.c.
 */
#ifndef TIDE_EVICT_H
#define TIDE_EVICT_H

#include "engine_int.h"

/* After the walk: a no-op unless the snapshot's evict is set. */
extern void tide_evict_pass(TideWork *w);

#endif							/* TIDE_EVICT_H */
