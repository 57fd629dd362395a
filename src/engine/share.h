/*
 * share.h: fair share over time (R-O4, R-O6), share.c.
 */
#ifndef TIDE_SHARE_H
#define TIDE_SHARE_H

#include "engine.h"

extern double tide_decay_factor(int64_t dt, int64_t half_life);
extern bool tide_decay_step(const TideSnapshot *s, int64_t *at, double *f);
extern double tide_share(const TideSnapshot *s, const TideQueue *q, const int64_t *base);

/*
 * R-O4 between queues a and b (siblings, in a tree, R-O5): the higher
 * priority first, then the lower share (share[], as tide_share() gives
 * it), then the name (rank[]: the names' order).
 */
static inline bool
tide_queue_before(const TideSnapshot *s, const int32_t *rank, const double *share, int a, int b)
{
	const TideQueue *x = &s->queues[a];
	const TideQueue *y = &s->queues[b];

	if (x->priority != y->priority)
		return x->priority > y->priority;
	if (share[a] != share[b])
		return share[a] < share[b];
	return rank[a] < rank[b];
}

#endif							/* TIDE_SHARE_H */
