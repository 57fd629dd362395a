/*
 * order.h: which job first (R-O1 to R-O4), order.c.
 */
#ifndef TIDE_ORDER_H
#define TIDE_ORDER_H

#include "engine_int.h"

/* R-O4 heap of queues: the queue at q[0] goes next. */
typedef struct TideQueueHeap
{
	int32_t    *q;
	int			n;
	double	   *share;
	int64_t    *base;			/* [nqueues * nres] usage at the walk's start
								 * (R-O6), NULL with no half-life */
	const TideSnapshot *s;
	const int32_t *rank;
} TideQueueHeap;

extern int32_t *tide_order_queue_jobs(TideWork *w, int32_t *starts);
extern void tide_queue_heap_init(TideWork *w, TideQueueHeap *h, const int32_t *starts);
extern void tide_queue_heap_pop(TideQueueHeap *h);
extern void tide_queue_heap_update(TideQueueHeap *h);
extern int32_t *tide_order_idle_jobs(TideWork *w, int32_t *nidle);

/* Jobs whose place the decide that made memo m took from the memo before it. */
extern int32_t tide_order_memo_kept(const TideOrderMemo *m);

#endif							/* TIDE_ORDER_H */
