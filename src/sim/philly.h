/*
 * philly.h: the queues of a Philly replay and their fairness accounting
 * (philly_queues.c), used by philly.c.
 */
#ifndef TIDE_SIM_PHILLY_H
#define TIDE_SIM_PHILLY_H

#include "sim.h"

/* A job of the trace. */
typedef struct PJob
{
	int64_t		arrival;		/* microseconds since the first arrival */
	int64_t		duration;		/* microseconds */
	int			gpus;
	int			line;
	int			replicas;
	int			per_replica;	/* GPUs per replica */
	int			state;			/* 0 waiting, 1 running, 2 done, 3 unschedulable */
	int			queue;			/* the engine queue (a leaf of --queues), else 0 */
	int64_t		start;
	int			pl_first;		/* into placement pool */
	int			npl;
} PJob;

typedef struct PPlace
{
	int32_t		node;
	uint64_t	gpus;
} PPlace;


/* Ends of running jobs, earliest first (ties: job number). */
typedef struct HeapItem
{
	int64_t		end;
	int			job;
} HeapItem;

typedef struct Heap
{
	HeapItem   *a;
	int			n,
				cap;
} Heap;

/* FIFO of waiting jobs of one size in one queue. */
typedef struct PQueue
{
	int			leaf;			/* the engine queue */
	int			gpus;
	int		   *job;
	int			head,
				tail,
				cap;
	int			taken;			/* passed to the current decide */
} PQueue;

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

/* philly_jobs.c */
extern PJob *ph_read_jobs(const char *path, const char *cluster, int64_t limit,
						  const PhQueues *fq, int *njobs);
extern void ph_heap_push(Heap *h, int64_t end, int job);
extern HeapItem ph_heap_pop(Heap *h);
extern void ph_fill_job(TideSnapshot *s, int k, const PJob *jb, int jn, int64_t time_limit,
						bool reserve);
extern int64_t ph_limit_of(const PJob *jb, double factor);
extern void ph_fill_nodes(TideSnapshot *s, int per_node);
extern void ph_fill_cluster(TideSnapshot *s, int nnodes, int per_node, const PhQueues *fq,
							int policy);

/*
 * philly_forecast.c: the forecast at each arrival (--forecast), and how
 * far it was from the real starts.
 */
typedef struct PhForecast
{
	double		factor;			/* time limit = duration x factor */
	int64_t		from,
				until;			/* forecast the arrivals in [from, until), us */
	int64_t    *start;			/* [job] the forecast start */
	int8_t	   *how;			/* [job] TideForecastHow */
	int8_t	   *asked;			/* [job] forecast at its arrival */
	int		   *waiting;		/* scratch */
	SimPool		pool;
	int64_t		calls,
				steps;			/* tide_forecast calls, their decides */
	double		seconds;
} PhForecast;

extern PhForecast *phf_new(int njobs, double factor, int64_t from, int64_t until);
extern void phf_step(PhForecast *pf, const TideSnapshot *live, int nnodes, int per_node,
					 const PhQueues *fq, int policy, const PJob *jobs, const Heap *running,
					 const PPlace *pool, const PQueue *lines, int nlines, int64_t t);
extern void phf_report(const PhForecast *pf, const PJob *jobs, int njobs, const char *path);

#endif							/* TIDE_SIM_PHILLY_H */
