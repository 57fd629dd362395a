/*
 * philly_queues.c: the queues of a Philly replay (--queues) and how fairly
 * they were served (--fair), as docs/design/organisations.md section 9
 * defines it.
 *
 * The queue file is CSV name,parent,quota_gpus: a tree (parent empty at
 * the top) whose leaves are the trace's virtual clusters; a job goes to
 * the leaf its cluster column names.  Each queue is one engine queue with
 * a GPU quota and its parent's index (TideQueue.parent); the children's
 * quotas may not add up to more than their parent's.
 *
 * Accounting: between two events every queue's running and waiting GPUs
 * are constant, so at each event the interval since the last one is added
 * to each queue's GPU-seconds received and waiting, split at one-day
 * boundaries (days counted from the first arrival).  An inner queue's
 * figures are its subtree's.
 *
 * Fairness of day d among the n leaves that had work in it (received or
 * waited some GPU-seconds): the entitlement e_i = min(q_i / Q x C_d,
 * received_i + waiting_i) (q_i its quota, Q the leaves' quotas, C_d the
 * cluster's GPU-seconds in d), x_i = min(received_i / e_i, 1),
 * J_d = (sum x_i)^2 / (n sum x_i^2); capping at 1 keeps borrowing of idle
 * quota from counting as unfair.  A leaf that ran without waiting has
 * x_i = 1; it is counted, so that a day where one queue holds the cluster
 * while another waits scores 1/2, not 1 (counting only the queues that
 * waited would leave one queue, and J = 1).  The uncapped form uses
 * x_i = received_i / (q_i / Q x C_d).  A day without work, or where every
 * x_i is 0, has J_d = 1.  The same among the top queues when there is a
 * tree.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "philly.h"

#define DAY_US	(86400LL * 1000000)

static int
find_queue(const PhQueues *fq, const char *name)
{
	for (int i = 0; i < fq->n; i++)
		if (strcmp(fq->q[i].name, name) == 0)
			return i;
	return -1;
}

/* Read and check the queue file; dies with file:line on a bad one. */
PhQueues *
phq_read(const char *path)
{
	PhQueues   *fq = sim_alloc(sizeof(PhQueues));
	CsvFile		f;
	int			cname,
				cparent,
				cquota,
				cap = 16;
	int		   *line;

	fq->path = path;
	fq->q = sim_alloc(sizeof(PhQueue) * cap);
	line = sim_alloc(sizeof(int) * cap);
	csv_open(&f, path);
	cname = csv_column(&f, "name", true);
	cparent = csv_column(&f, "parent", true);
	cquota = csv_column(&f, "quota_gpus", true);
	while (csv_next(&f))
	{
		PhQueue    *q;

		if (csv_get(&f, cname)[0] == '\0')
			csv_fail(&f, cname, "a queue needs a name");
		if (find_queue(fq, csv_get(&f, cname)) >= 0)
			csv_fail(&f, cname, "queue \"%s\" is named twice", csv_get(&f, cname));
		if (fq->n == cap)
		{
			cap *= 2;
			fq->q = sim_realloc(fq->q, sizeof(PhQueue) * cap);
			line = sim_realloc(line, sizeof(int) * cap);
		}
		q = &fq->q[fq->n];
		memset(q, 0, sizeof(*q));
		q->name = sim_strdup(csv_get(&f, cname));
		q->parent_name = sim_strdup(csv_get(&f, cparent));
		q->quota = csv_int(&f, cquota, 0, 1000000);
		q->parent = -1;
		q->leaf = true;
		line[fq->n++] = f.lineno;
	}
	csv_close(&f);
	if (fq->n == 0)
		sim_die(SIM_EXIT_DATA, "%s: no queues", path);
	for (int i = 0; i < fq->n; i++)
	{
		PhQueue    *q = &fq->q[i];

		if (q->parent_name[0] == '\0')
			continue;
		q->parent = find_queue(fq, q->parent_name);
		if (q->parent < 0)
			sim_die(SIM_EXIT_DATA, "%s:%d: parent \"%s\" of queue \"%s\" is not a queue of the file",
					path, line[i], q->parent_name, q->name);
		fq->q[q->parent].leaf = false;
	}
	for (int i = 0; i < fq->n; i++)
	{
		int64_t		children = 0;
		int			steps = 0;

		/* no cycles: every chain of parents reaches the top */
		for (int p = fq->q[i].parent; p >= 0; p = fq->q[p].parent)
			if (++steps > fq->n)
				sim_die(SIM_EXIT_DATA, "%s:%d: queue \"%s\" is its own ancestor",
						path, line[i], fq->q[i].name);
		for (int c = 0; c < fq->n; c++)
			if (fq->q[c].parent == i)
				children += fq->q[c].quota;
		if (!fq->q[i].leaf && children > fq->q[i].quota)
			sim_die(SIM_EXIT_DATA, "%s:%d: the children of queue \"%s\" have %lld GPUs of quota, "
					"more than its %lld", path, line[i], fq->q[i].name,
					(long long) children, (long long) fq->q[i].quota);
		if (fq->q[i].leaf)
			fq->leaf_quota += fq->q[i].quota;
		if (fq->q[i].parent >= 0)
			fq->tree = true;
		else
			fq->top_quota += fq->q[i].quota;
	}
	free(line);
	return fq;
}

/* The leaf a job's cluster names; dies with file:line when there is none. */
int
phq_leaf(const PhQueues *fq, CsvFile *f, int col)
{
	const char *v = csv_get(f, col);
	int			i = find_queue(fq, v);

	if (i < 0)
		csv_fail(f, col, "\"%s\" is not a queue of %s", v, fq->path);
	if (!fq->q[i].leaf)
		csv_fail(f, col, "\"%s\" is not a leaf queue of %s (it has children)", v,
				 fq->path);
	return i;
}

/* The snapshot's queues: names, parents, GPU quotas (nothing else limited). */
void
phq_fill_snapshot(const PhQueues *fq, TideSnapshot *s, int policy)
{
	for (int i = 0; i < fq->n; i++)
	{
		TideQueue  *q = &s->queues[i];

		q->name = fq->q[i].name;
		q->parent = fq->q[i].parent;
		q->placement = policy;
		q->has_quota = true;
		q->quota[TIDE_RES_GPU] = fq->q[i].quota * TIDE_MILLI;
	}
}

/* A leaf's running or waiting GPUs change by delta (its ancestors' too). */
void
phq_add(PhQueues *fq, int leaf, int64_t run_delta, int64_t wait_delta)
{
	for (int i = leaf; i >= 0; i = fq->q[i].parent)
	{
		fq->q[i].run_gpus += run_delta;
		fq->q[i].wait_gpus += wait_delta;
	}
}

static void
grow_days(PhQueues *fq, int day)
{
	int			cap = fq->capdays;

	if (day < cap)
		return;
	while (cap <= day)
		cap = cap ? cap * 2 : 128;
	for (int i = 0; i < fq->n; i++)
	{
		fq->q[i].recv = sim_realloc(fq->q[i].recv, sizeof(double) * cap);
		fq->q[i].waitd = sim_realloc(fq->q[i].waitd, sizeof(double) * cap);
		memset(fq->q[i].recv + fq->capdays, 0, sizeof(double) * (cap - fq->capdays));
		memset(fq->q[i].waitd + fq->capdays, 0, sizeof(double) * (cap - fq->capdays));
	}
	fq->capdays = cap;
}

/* Account the time from the last event to t (microseconds). */
void
phq_advance(PhQueues *fq, int64_t t)
{
	while (fq->last < t)
	{
		int			day = (int) (fq->last / DAY_US);
		int64_t		end = (day + 1) * DAY_US;
		double		dt;

		if (end > t)
			end = t;
		dt = (end - fq->last) / 1e6;
		grow_days(fq, day);
		if (day + 1 > fq->ndays)
			fq->ndays = day + 1;
		for (int i = 0; i < fq->n; i++)
		{
			fq->q[i].recv[day] += fq->q[i].run_gpus * dt;
			fq->q[i].waitd[day] += fq->q[i].wait_gpus * dt;
		}
		fq->last = end;
	}
}

/*
 * Jain's index of day d among the queues with parent `parent` (-2: the
 * leaves) that had work in it, capped (entitlement) or not.
 */
static double
jain(const PhQueues *fq, int d, int parent, double quota_sum, double cluster_s, bool capped)
{
	double		sx = 0,
				sxx = 0;
	int			n = 0;

	for (int i = 0; i < fq->n; i++)
	{
		const PhQueue *q = &fq->q[i];
		double		fairshare,
					e,
					x;

		if ((parent == -2 ? !q->leaf : q->parent != parent) || q->recv[d] + q->waitd[d] <= 0)
			continue;
		fairshare = quota_sum > 0 ? q->quota / quota_sum * cluster_s : 0;
		if (capped)
		{
			e = fmin(fairshare, q->recv[d] + q->waitd[d]);
			x = e > 0 ? fmin(q->recv[d] / e, 1.0) : 1.0;
		}
		else
			x = fairshare > 0 ? q->recv[d] / fairshare : 0;
		sx += x;
		sxx += x * x;
		n++;
	}
	if (n == 0)
		return 1.0;
	return sxx > 0 ? sx * sx / (n * sxx) : 1.0;
}

/* Mean and 10th percentile (nearest rank) of v[0..n), sorting it. */
static void
mean_p10(double *v, int n, double *mean, double *p10)
{
	double		sum = 0;
	int			rank = (int) ceil(0.10 * n);

	for (int i = 0; i < n; i++)
		sum += v[i];
	qsort(v, n, sizeof(double), sim_cmp_double);
	*mean = n ? sum / n : 0;
	*p10 = n ? v[(rank > 0 ? rank : 1) - 1] : 0;
}

/*
 * Print the fairness summary (name: value lines) and, when fair_path is
 * given, the per day and queue CSV.  span_us is the makespan; waits[k]
 * (seconds) is the wait of a completed job of leaf wq[k].
 */
void
phq_report(PhQueues *fq, const char *fair_path, int64_t total_gpus, int64_t span_us,
		   const int *wq, const double *waits, int64_t nw)
{
	double	   *jd = sim_alloc(sizeof(double) * (fq->ndays + 1));
	double	   *ju = sim_alloc(sizeof(double) * (fq->ndays + 1));
	double	   *jt = sim_alloc(sizeof(double) * (fq->ndays + 1));
	double	   *w = sim_alloc(sizeof(double) * (nw + 1));
	FILE	   *ff = NULL;
	double		mean,
				p10,
				worst = -1;
	const char *worst_name = "";

	grow_days(fq, fq->ndays);
	if (fair_path)
	{
		ff = fopen(fair_path, "w");
		if (!ff)
			sim_die(SIM_EXIT_DATA, "cannot write %s: %s", fair_path, strerror(errno));
		fprintf(ff, "day,queue,parent,quota_gpus,received_gpu_s,waiting_gpu_s,jain,jain_uncapped\n");
	}
	for (int d = 0; d < fq->ndays; d++)
	{
		int64_t		end = (d + 1) * DAY_US < span_us ? (d + 1) * DAY_US : span_us;
		double		cluster_s = (double) total_gpus * (end - d * DAY_US) / 1e6;

		jd[d] = jain(fq, d, -2, (double) fq->leaf_quota, cluster_s, true);
		ju[d] = jain(fq, d, -2, (double) fq->leaf_quota, cluster_s, false);
		jt[d] = jain(fq, d, -1, (double) fq->top_quota, cluster_s, true);
		for (int i = 0; ff && i < fq->n; i++)
			fprintf(ff, "%d,%s,%s,%lld,%.0f,%.0f,%.4f,%.4f\n", d, fq->q[i].name,
					fq->q[i].parent_name, (long long) fq->q[i].quota, fq->q[i].recv[d],
					fq->q[i].waitd[d], jd[d], ju[d]);
	}
	if (ff && fclose(ff) != 0)
		sim_die(SIM_EXIT_DATA, "cannot write %s: %s", fair_path, strerror(errno));

	printf("queues: %d\n", fq->n);
	printf("fair_days: %d\n", fq->ndays);
	mean_p10(jd, fq->ndays, &mean, &p10);
	printf("jain_mean: %.4f\njain_p10: %.4f\n", mean, p10);
	mean_p10(ju, fq->ndays, &mean, &p10);
	printf("jain_uncapped_mean: %.4f\njain_uncapped_p10: %.4f\n", mean, p10);
	if (fq->tree)
	{
		mean_p10(jt, fq->ndays, &mean, &p10);
		printf("jain_top_mean: %.4f\njain_top_p10: %.4f\n", mean, p10);
	}
	/* per leaf: jobs, mean and p99 wait (nearest rank) */
	for (int i = 0; i < fq->n; i++)
	{
		int64_t		n = 0;
		double		sum = 0,
					p99 = 0;

		if (!fq->q[i].leaf)
			continue;
		for (int64_t k = 0; k < nw; k++)
			if (wq[k] == i)
			{
				w[n++] = waits[k];
				sum += waits[k];
			}
		if (n > 0)
		{
			int64_t		rank = (int64_t) ceil(0.99 * n);

			qsort(w, n, sizeof(double), sim_cmp_double);
			p99 = w[(rank > 0 ? rank : 1) - 1];
			if (p99 > worst)
			{
				worst = p99;
				worst_name = fq->q[i].name;
			}
		}
		printf("queue.%s: jobs %lld, mean_wait_s %.1f, p99_wait_s %.1f\n", fq->q[i].name,
			   (long long) n, n ? sum / n : 0.0, p99);
	}
	printf("worst_p99_wait_s: %.1f\n", worst > 0 ? worst : 0.0);
	printf("worst_p99_queue: %s\n", worst_name);
	free(jd);
	free(ju);
	free(jt);
	free(w);
}
