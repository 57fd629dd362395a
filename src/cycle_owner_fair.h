/*
 * cycle_owner_fair.h: the owners' decayed usage within a queue (R-O7) read
 * into the snapshot and written back by the cycle (cycle_owner_fair.c).
 */
#ifndef TIDE_CYCLE_OWNER_FAIR_H
#define TIDE_CYCLE_OWNER_FAIR_H

#include "postgres.h"

#include "cycle_loader.h"

extern void tide_cycle_owner_fair_load(Loader *ld);
extern void tide_cycle_owner_fair_write(const TideSnapshot *s);

#endif							/* TIDE_CYCLE_OWNER_FAIR_H */
