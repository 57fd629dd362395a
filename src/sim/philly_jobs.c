/*
 * philly_jobs.c: the Philly trace's jobs (timestamp,duration,num_gpus,
 * gpu_time,cluster) read and sorted by arrival, the cluster they run on,
 * how a job becomes an engine pending job, and the heap of end times:
 * shared by the replay (philly.c), its forecast (philly_forecast.c) and
 * the tidal replay (tidal.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "philly.h"

static bool
heap_less(const HeapItem *x, const HeapItem *y)
{
	return x->end < y->end || (x->end == y->end && x->job < y->job);
}

void
ph_heap_push(Heap *h, int64_t end, int job)
{
	int			i;

	if (h->n == h->cap)
	{
		h->cap = h->cap ? h->cap * 2 : 1024;
		h->a = sim_realloc(h->a, sizeof(HeapItem) * h->cap);
	}
	i = h->n++;
	h->a[i].end = end;
	h->a[i].job = job;
	while (i > 0)
	{
		int			p = (i - 1) / 2;
		HeapItem	t;

		if (!heap_less(&h->a[i], &h->a[p]))
			break;
		t = h->a[i];
		h->a[i] = h->a[p];
		h->a[p] = t;
		i = p;
	}
}

HeapItem
ph_heap_pop(Heap *h)
{
	HeapItem	top = h->a[0];
	int			i = 0;

	h->a[0] = h->a[--h->n];
	for (;;)
	{
		int			l = 2 * i + 1,
					r = l + 1,
					m = i;
		HeapItem	t;

		if (l < h->n && heap_less(&h->a[l], &h->a[m]))
			m = l;
		if (r < h->n && heap_less(&h->a[r], &h->a[m]))
			m = r;
		if (m == i)
			break;
		t = h->a[i];
		h->a[i] = h->a[m];
		h->a[m] = t;
		i = m;
	}
	return top;
}

/* Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm). */
static int64_t
days_from_civil(int64_t y, int m, int d)
{
	int64_t		era,
				yoe,
				doy,
				doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* "YYYY-MM-DD HH:MM:SS" (or a plain number of seconds) to seconds. */
static int64_t
parse_timestamp(CsvFile *f, int col)
{
	const char *v = csv_get(f, col);
	int			y,
				mo,
				d,
				h,
				mi,
				sec,
				n = 0;

	if (sscanf(v, "%4d-%2d-%2d %2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) == 6 &&
		v[n] == '\0')
	{
		if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 ||
			h < 0 || mi < 0 || sec < 0)
			csv_fail(f, col, "\"%s\" is not a valid date and time", v);
		return days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
	}
	if (strchr(v, '-') == NULL || v[0] == '-')
		return (int64_t) csv_double(f, col, 0, 1e12);
	csv_fail(f, col, "\"%s\" is not a timestamp (expected YYYY-MM-DD HH:MM:SS)", v);
}

static int
cmp_arrival(const void *a, const void *b)
{
	const PJob *x = a;
	const PJob *y = b;

	if (x->arrival != y->arrival)
		return x->arrival < y->arrival ? -1 : 1;
	return x->line - y->line;
}

/*
 * Read the jobs, optionally one virtual cluster's; sorted by arrival.  With
 * queues, each goes to the leaf its cluster names.
 */
PJob *
ph_read_jobs(const char *path, const char *cluster, int64_t limit, const PhQueues *fq,
		  int *njobs)
{
	CsvFile		f;
	int			cts,
				cdur,
				cgpu,
				ccl;
	int			cap = 1024,
				n = 0;
	PJob	   *jobs = sim_alloc(sizeof(PJob) * cap);
	int64_t		t0 = INT64_MAX;

	csv_open(&f, path);
	cts = csv_column(&f, "timestamp", true);
	cdur = csv_column(&f, "duration", true);
	cgpu = csv_column(&f, "num_gpus", true);
	ccl = csv_column(&f, "cluster", cluster != NULL || fq != NULL);
	while (csv_next(&f))
	{
		PJob	   *j;

		if (cluster && strcmp(csv_get(&f, ccl), cluster) != 0)
			continue;
		if (n == cap)
		{
			cap *= 2;
			jobs = sim_realloc(jobs, sizeof(PJob) * cap);
		}
		j = &jobs[n++];
		memset(j, 0, sizeof(*j));
		j->line = f.lineno;
		j->arrival = parse_timestamp(&f, cts);
		j->duration = llround(csv_double(&f, cdur, 0, 1e9) * 1e6);
		j->gpus = (int) csv_int(&f, cgpu, 1, 1000000);
		j->queue = fq ? phq_leaf(fq, &f, ccl) : 0;
		if (j->arrival < t0)
			t0 = j->arrival;
	}
	csv_close(&f);
	for (int i = 0; i < n; i++)
		jobs[i].arrival = (jobs[i].arrival - t0) * 1000000;
	qsort(jobs, n, sizeof(PJob), cmp_arrival);
	if (limit > 0 && n > limit)
		n = (int) limit;
	*njobs = n;
	return jobs;
}

/* Pending job k of the next decide: job number jn of the trace. */
void
ph_fill_job(TideSnapshot *s, int k, const PJob *jb, int jn, int64_t time_limit, bool reserve)
{
	TideJob    *job = &s->jobs[k];
	TideRole   *role = &s->roles[k];

	memset(job, 0, sizeof(*job));
	job->id = jn + 1;
	job->queue = jb->queue;
	job->created_at = jb->arrival;
	job->gpu_type = -1;
	job->service = TIDE_SVC_TRAINING;
	job->time_limit = time_limit;
	job->reserve = reserve;
	job->roles = role;
	job->nroles = 1;
	role->name = "worker";
	role->replicas = jb->replicas;
	memset(role->request, 0, sizeof(int64_t) * s->nres);
	role->request[TIDE_RES_GPU] = (int64_t) jb->per_replica * TIDE_MILLI;
}

/* A job's declared time limit: its duration x the factor (users over-ask). */
int64_t
ph_limit_of(const PJob *jb, double factor)
{
	double		l = (double) jb->duration * factor;

	return l >= 9e18 ? INT64_MAX / 2 : (int64_t) l + 1;
}

/* The nodes of s (sized): ready, per_node whole GPUs each, one topology domain. */
void
ph_fill_nodes(TideSnapshot *s, int per_node)
{
	for (int i = 0; i < s->nnodes; i++)
	{
		TideNode   *n = &s->nodes[i];
		char		name[32];

		snprintf(name, sizeof(name), "node-%07d", i);
		n->name = tide_alloc(s, strlen(name) + 1);
		memcpy((char *) n->name, name, strlen(name) + 1);
		n->state = TIDE_NODE_READY;
		n->ngpus = per_node;
		n->capacity[TIDE_RES_GPU] = (int64_t) per_node * TIDE_MILLI;
	}
}

/*
 * The cluster of a replay on s (fresh from tide_snapshot_create): nnodes
 * nodes (ph_fill_nodes); with fq its queues, else one queue "philly" with
 * an unlimited quota.  Not finished: the caller may set more, then calls
 * tide_snapshot_finish.
 */
void
ph_fill_cluster(TideSnapshot *s, int nnodes, int per_node, const PhQueues *fq, int policy)
{
	tide_snapshot_alloc_cluster(s, nnodes, fq ? fq->n : 1, 0);
	ph_fill_nodes(s, per_node);
	if (fq)
		phq_fill_snapshot(fq, s, policy);
	else
	{
		s->queues[0].name = "philly";
		s->queues[0].placement = policy;
		s->queues[0].has_quota = true;
	}
}
