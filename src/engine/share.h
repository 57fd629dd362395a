/*
 * share.h: fair share over time (R-O4, R-O6), share.c.
 */
#ifndef TIDE_SHARE_H
#define TIDE_SHARE_H

#include "engine.h"

extern double tide_decay_factor(int64_t dt, int64_t half_life);
extern bool tide_decay_step(const TideSnapshot *s, int64_t *at, double *f);
extern double tide_share(const TideSnapshot *s, const TideQueue *q, const int64_t *base);

#endif							/* TIDE_SHARE_H */
