/*
 * cycle_fair.h: the decayed usage of fair share over time (R-O6) read
 * into the snapshot and written back by the cycle (cycle_fair.c).
 */
#ifndef TIDE_CYCLE_FAIR_H
#define TIDE_CYCLE_FAIR_H

#include "postgres.h"

#include "cycle_loader.h"

extern void tide_cycle_fair_load(TideSnapshot *s, const NameMap *names, Datum group);
extern void tide_cycle_fair_write(const TideSnapshot *s);
extern Datum tide_cycle_fair_json(const TideSnapshot *s, const int64 *quota, const double *decayed);

#endif							/* TIDE_CYCLE_FAIR_H */
