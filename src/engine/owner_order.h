/*
 * owner_order.h: owners within a queue (R-O7), owner_order.c.
 *
 * The walk (engine.c) takes a queue's next job with tide_leaf_next() and
 * reports what became of it with tide_leaf_done(); for a queue without
 * owner_fair both are the queue's list in R-O3 then R-O1 order, as before,
 * and a snapshot without such a queue builds nothing.
 */
#ifndef TIDE_OWNER_ORDER_H
#define TIDE_OWNER_ORDER_H

#include "engine_int.h"

/*
 * An owner in the heap with its key, read from the leaf's own arrays,
 * never from the head job: its lane (R-O3 then priority, as a rank among
 * the queue's lanes), its share, and its head job's place in the queue's
 * list (which is R-O1's created_at, id within a lane), packed into two
 * words that compare as the three do in turn: hi the lane then the
 * share's upper half, lo the share's lower half then the place.  A share
 * is never below zero, and the bits of such doubles are in their order.
 */
typedef struct TideOwnerHead
{
	uint64_t	hi;
	uint64_t	lo;
	int32_t		owner;
} TideOwnerHead;

/* One queue with owner_fair during the walk: its jobs per owner, the owners in a heap. */
typedef struct TideLeafOwners
{
	const int32_t *list;		/* the queue's jobs in R-O3 then R-O1 order */
	int32_t    *at;				/* [n] places in list grouped by owner, each
								 * owner's in list order */
	int32_t    *bound;			/* [nlanes + 1] where each lane of the list
								 * starts, then the list's length */
	int32_t		nown;
	int32_t    *start;			/* [nown + 1] each owner's range in at */
	int32_t    *next;			/* [nown] its next job there */
	double	   *used;			/* [nown * ncounted] average + placed this
								 * walk, of the counted resources */
	TideOwnerHead *heap;		/* owners with jobs left, the next one first */
	int32_t		nheap;
	int32_t		ncounted;		/* resources a share counts: what it divides
								 * by is above zero */
	int32_t    *counted;		/* [ncounted] those resources, in order */
	const double *denom;		/* [ncounted] what a share divides them by */
	int32_t    *slot;			/* [nres] a resource's place in counted, or -1 */
	int32_t    *shape_of;		/* [SHAPE_SLOTS] 1 + the shape (prep.c) of
								 * one task whose request is in shape_add, or 0 */
	double	   *shape_add;		/* [SHAPE_SLOTS * ncounted] its request of
								 * the counted resources */
} TideLeafOwners;

/* Shapes whose requests a leaf keeps (a power of two). */
#define SHAPE_SLOTS 64

/* The owner_fair queues of one walk. */
typedef struct TideLeaves
{
	TideLeafOwners **leaf;		/* [nqueues], NULL entry: R-O3, R-O1 only;
								 * NULL: no queue has owner_fair */
} TideLeaves;

extern void tide_leaf_begin(TideWork *w, TideLeaves *L, const int32_t *qlist,
							const int32_t *qstart);
extern void tide_leaf_after(TideWork *w, TideLeafOwners *lo, int j, bool placed);

/* Does queue q take its jobs in owner order? */
static inline bool
tide_leaf_owned(const TideLeaves *L, int q)
{
	return __builtin_expect(L->leaf != NULL, 0) && L->leaf[q];
}

/*
 * Queue q's next job: the next of its list, or with owner_fair the head
 * job of the owner that goes first.  qnext[q] counts the jobs taken either
 * way, so the walk's "queue done" test stays the same.
 */
static inline int
tide_leaf_next(const TideLeaves *L, int q, const int32_t *qlist, int32_t *qnext)
{
	if (tide_leaf_owned(L, q))
	{
		const TideLeafOwners *lo = L->leaf[q];

		qnext[q]++;
		return lo->list[lo->at[lo->next[lo->heap[0].owner]]];
	}
	return qlist[qnext[q]++];
}

/* After job j of queue q (from tide_leaf_next) was placed or not. */
static inline void
tide_leaf_done(TideWork *w, const TideLeaves *L, int q, int j, bool placed)
{
	if (tide_leaf_owned(L, q))
		tide_leaf_after(w, L->leaf[q], j, placed);
}

#endif							/* TIDE_OWNER_ORDER_H */
