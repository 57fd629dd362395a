/*
 * evict_int.h: the eviction pass's own types, shared by evict.c and
 * evict_tree.c (R-E1 to R-E7).
 */
#ifndef TIDE_EVICT_INT_H
#define TIDE_EVICT_INT_H

#include "engine_int.h"

typedef struct Victim
{
	int64_t		job_id;
	int32_t		queue;
	int32_t		group;			/* group index, -1 none */
	int32_t		priority;
	int32_t		service;
	bool		idle;
	bool		preemptable;
	bool		blocked;		/* releasing, or on a node that is not ready */
	bool		gone;			/* evicted this cycle */
	int64_t		placed_at;		/* latest of its allocations */
	int64_t		gpu_milli;		/* GPUs held, in thousandths */
	int64_t		harm;			/* R-E4: GPU-time thrown away, milli-GPU ms */
	int32_t		first;			/* range in TideEvictWork.order */
	int32_t		count;
} Victim;

typedef struct Cand
{
	int32_t		v;				/* victim index */
	int32_t		rule;
} Cand;

typedef struct TideEvictWork
{
	/* victims */
	int32_t    *order;			/* running indexes by job id */
	Victim	   *victims;
	int32_t		nvictims;
	int32_t    *harm;			/* victim indexes, least harm first (R-E4),
								 * NULL until a preemptor needs it */
	Cand	   *chosen;			/* [nvictims] a preemptor's victims */
	int32_t    *tree_order;		/* R-E7: harm regrouped per preemptor by
								 * tree_pass(), NULL in a flat set of queues */
	int8_t	   *tree_pass;		/* [nvictims] scratch for it */
	int32_t		order_leaf;		/* the preemptor leaf tree_order is for, -1 */
	int32_t    *kept;			/* orders kept for their leaves, nvictims
								 * each, at most nkept_max of them */
	int32_t    *kept_at;		/* [nqueues] a leaf's order number + 1, 0 none */
	int32_t		nkept;
	int32_t		nkept_max;
	/* R-E7, per victim queue, for the preemptor leaf memo_leaf: */
	int32_t		memo_leaf;		/* -1: none yet */
	int8_t	   *qpass;			/* [nqueues] tree_pass() of its victims */
	int32_t    *qbelow_p;		/* [nqueues] where the paths part: the queue */
	int32_t    *qbelow_v;		/* just below it on each side */
	/* one_node(): candidates per node, in the preemptor's order */
	int32_t    *node_first;		/* [nnodes + 1] */
	int32_t    *node_victims;	/* [nrunning] */
	Cand	   *alt;			/* [nvictims] */
	/* preemptor shapes that found no eviction: they find none later either */
	int32_t    *failed;			/* their first jobs + 1, 0 = empty (hash.h) */
	uint64_t	failed_mask;
	int32_t		nfailed;
} TideEvictWork;

/* evict_fail.c: has a preemptor like j failed (or record that j did)? */
extern bool tide_evict_failed(TideWork *w, int j, bool insert);

#endif							/* TIDE_EVICT_INT_H */
