/*
 * frag.h: the fragmentation-aware node choice (TIDE_PLACE_FRAG), frag.c.
 */
#ifndef TIDE_FRAG_H
#define TIDE_FRAG_H

#include "engine_int.h"

/* Once per decide, before the walk: the typical workload (no-op without a frag queue). */
extern void tide_frag_begin(TideWork *w);

/* The node for one replica of req among the allowed partitions, or -1. */
extern int	tide_frag_search(TideWork *w, int j, const int32_t *parts, int nparts,
							 const int64_t *req);

/*
 * The fragmentation of node n for the current workload (weights scaled to
 * TIDE_FRAG_ONE in sum, lost GPU milli counted 16 times, milli short of
 * room once), and its growth if req went there; exposed for
 * the unit tests.  INT64_MAX when req does not fit on n.
 */
#define TIDE_FRAG_ONE	(INT64_C(1) << 30)
extern int64_t tide_frag_node(TideWork *w, const TideNode *n);
extern int64_t tide_frag_delta(TideWork *w, const TideNode *n, const int64_t *req,
							   bool use_held);

#endif							/* TIDE_FRAG_H */
