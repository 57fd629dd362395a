/*
 * philly.h: the queues of a Philly replay and their fairness accounting
 * (philly_queues.c), used by philly.c.
 */
#ifndef TIDE_SIM_PHILLY_H
#define TIDE_SIM_PHILLY_H

#include "sim.h"

/* One queue of the --queues file: a node of the tree. */
typedef struct PhQueue
{
	char	   *name;
	char	   *parent_name;	/* "" at the top */
	int			parent;			/* index, -1 at the top */
	int64_t		quota;			/* GPUs */
	bool		leaf;			/* no children: jobs live here */
	int64_t		run_gpus;		/* now, its subtree's */
	int64_t		wait_gpus;
	double	   *recv;			/* [day] GPU-seconds received */
	double	   *waitd;			/* [day] GPU-seconds waited */
} PhQueue;

typedef struct PhQueues
{
	const char *path;
	int			n;
	PhQueue    *q;
	bool		tree;			/* some queue has a parent */
	int64_t		leaf_quota;		/* the leaves' quotas, GPUs */
	int64_t		top_quota;		/* the top queues' quotas, GPUs */
	int64_t		last;			/* accounted up to (microseconds) */
	int			ndays,
				capdays;
} PhQueues;

extern PhQueues *phq_read(const char *path);
extern int	phq_leaf(const PhQueues *fq, CsvFile *f, int col);
extern void phq_fill_snapshot(const PhQueues *fq, TideSnapshot *s, int policy);
extern void phq_add(PhQueues *fq, int leaf, int64_t run_delta, int64_t wait_delta);
extern void phq_advance(PhQueues *fq, int64_t t);
extern void phq_report(PhQueues *fq, const char *fair_path, int64_t total_gpus,
					   int64_t span_us, const int *wq, const double *waits, int64_t nw);

#endif							/* TIDE_SIM_PHILLY_H */
