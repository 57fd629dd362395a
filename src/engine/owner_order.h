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

/* An owner's key in the heap: its head job's order fields and its share. */
typedef struct TideOwnerHead
{
	bool		retry;
	int32_t		priority;
	double		share;
	int64_t		created_at;
	int64_t		id;
} TideOwnerHead;

/* One queue with owner_fair during the walk: its jobs per owner, the owners in a heap. */
typedef struct TideLeafOwners
{
	int32_t    *jobs;			/* the queue's jobs grouped by owner, each
								 * owner's in R-O3 then R-O1 order */
	int32_t		nown;
	int32_t    *start;			/* [nown + 1] each owner's range in jobs */
	int32_t    *next;			/* [nown] its next job there */
	double	   *used;			/* [nown * ncounted] average + placed this
								 * walk, of the counted resources */
	TideOwnerHead *head;		/* [nown] each owner's key now */
	int32_t    *heap;			/* owners with jobs left, the next one first */
	int32_t		nheap;
	int32_t		ncounted;		/* resources a share counts: what it divides
								 * by is above zero */
	int32_t    *counted;		/* [ncounted] those resources, in order */
	const double *denom;		/* [ncounted] what a share divides them by */
	int32_t    *slot;			/* [nres] a resource's place in counted, or -1 */
} TideLeafOwners;

/* The owner_fair queues of one walk. */
typedef struct TideLeaves
{
	TideLeafOwners **leaf;		/* [nqueues], NULL entry: R-O3, R-O1 only;
								 * NULL: no queue has owner_fair */
} TideLeaves;

extern void tide_leaf_begin(TideWork *w, TideLeaves *L, const int32_t *qlist,
							const int32_t *qstart);
extern int	tide_leaf_pick(const TideLeafOwners *lo);
extern void tide_leaf_after(TideWork *w, TideLeafOwners *lo, int j, bool placed);

/*
 * Queue q's next job: the next of its list, or with owner_fair the head
 * job of the owner that goes first.  qnext[q] counts the jobs taken either
 * way, so the walk's "queue done" test stays the same.
 */
static inline int
tide_leaf_next(const TideLeaves *L, int q, const int32_t *qlist, int32_t *qnext)
{
	int			j = qlist[qnext[q]++];

	if (__builtin_expect(L->leaf != NULL, 0) && L->leaf[q])
		return tide_leaf_pick(L->leaf[q]);
	return j;
}

/* After job j of queue q (from tide_leaf_next) was placed or not. */
static inline void
tide_leaf_done(TideWork *w, const TideLeaves *L, int q, int j, bool placed)
{
	if (__builtin_expect(L->leaf != NULL, 0) && L->leaf[q])
		tide_leaf_after(w, L->leaf[q], j, placed);
}

#endif							/* TIDE_OWNER_ORDER_H */
