/*
 * tree.h: queue trees (R-O5, R-A3, R-E7), tree.c.
 */
#ifndef TIDE_TREE_H
#define TIDE_TREE_H

#include "engine_int.h"

/*
 * The R-O5 walk over a queue tree: at every inner queue (and at the root,
 * index nqueues) a heap of its children with pending non-idle work, ordered
 * as R-O4 orders siblings.  The leaf to take the next job from is found by
 * descending the heaps' tops.
 */
typedef struct TideTreeHeap
{
	const TideSnapshot *s;
	const TideIndex *ix;
	int32_t    *heap;			/* children's slots: node x's heap is
								 * heap[ix->child_start[x]...] */
	int32_t    *n;				/* [nqueues + 1] entries in node x's heap */
	double	   *share;			/* [nqueues] R-O4 share now */
	int64_t    *base;			/* [nqueues * nres] usage at the walk's start
								 * (R-O6), NULL with no half-life */
} TideTreeHeap;

extern void tide_tree_prepare(TideWork *w);
extern bool tide_tree_admit(TideWork *w, int j, const int64_t *need, bool *quota_ok,
							TideOutcome *o);
extern int	tide_tree_card_block(const TideWork *w, const TideQueue *leaf, int t, int64_t add,
								 int mode, int *why);
extern bool tide_tree_extra_ok(const TideWork *w, const TideQueue *leaf, const TideNode *n,
							   const int64_t *req);
extern int	tide_tree_parting(const TideSnapshot *s, int a, int b, int *below_a, int *below_b);
extern bool tide_queue_over_quota(const TideWork *w, const TideQueue *q);
extern bool tide_tree_reclaimable(const TideWork *w, int leaf, int upto, bool borrowed);
extern void tide_tree_order_lenders(TideWork *w, int32_t *deferred, int ndeferred);

extern void tide_tree_heap_init(TideWork *w, TideTreeHeap *h, const int32_t *starts);
extern int	tide_tree_heap_top(const TideTreeHeap *h);
extern void tide_tree_heap_pop(TideTreeHeap *h, int leaf, bool placed);
extern void tide_tree_heap_update(TideTreeHeap *h, int q);

#endif							/* TIDE_TREE_H */
