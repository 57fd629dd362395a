/*
 * order_engine_bench.c: the walk's job order (order.c) in busy cycles,
 * sorted afresh and taken from the order memo of the cycle before.
 *
 *   cc -O2 -Isrc/engine bench/order_engine_bench.c src/engine/[a-z]*.c -lm -o /tmp/oeb
 *   /tmp/oeb [JOBS [QUEUES [ROUNDS [CHANGES]]]]
 *
 * JOBS pending jobs (default 100,000) in id order as the load gives them,
 * in QUEUES queues (10), priorities 0..9, created_at at random over a day,
 * one in twenty idle: the jobs of cycle_cluster.psql.  Each of ROUNDS
 * rounds (30) is a busy cycle: CHANGES jobs (10) leave at random and as
 * many arrive with new ids, then the queues' lists and the idle list are
 * made twice, without a memo (as every cycle did before the memo) and
 * with the last round's (leaving this round's), and must be equal.
 * Prints the minimum and median CPU time of both, and how many jobs the
 * memo placed.  The allocator keeps freed memory as the looping backend's
 * does from its second cycle (src/cycle.c): the arrays' pages are not
 * faulted in afresh each round.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "bench_util.h"
#include "engine.h"
#include "order.h"
#include "work.h"

/* CPU time of the process so far, ms (clock(): microseconds on Linux). */
#define CPU_MS() ((double) clock() * 1e3 / CLOCKS_PER_SEC)

static void
bench_free(void *ctx, void *p)
{
	(void) ctx;
	free(p);
}

static void
new_job(TideJob *job, int64_t id, int nqueues)
{
	memset(job, 0, sizeof(*job));
	job->id = id;
	job->queue = (int) rnd(nqueues);
	job->priority = (int) rnd(10);
	job->created_at = (int64_t) rnd(86400) * 1000000 + rnd(1000000);
	job->idle = rnd(20) == 0;
}

/*
 * The lists of jobs[0..n) with memo (NULL: none, and none left); their
 * CPU time in *ms, the lists (queues' then idle) copied to out.
 */
static TideOrderMemo *
make_order(TideSnapshot *s, const TideOrderMemo *memo, bool keep, int32_t *out, double *ms)
{
	TideMem		memo_mem = {bench_alloc, bench_free, NULL};
	TideMem		none = {NULL, NULL, NULL};
	TideWork	w;
	int32_t    *starts = malloc(sizeof(int32_t) * (s->nqueues + 2));
	int32_t    *list,
			   *idle,
				nidle;
	double		c0 = CPU_MS();
	TideOrderMemo *left;

	s->order_memo = memo;
	s->order_mem = keep ? memo_mem : none;
	tide_work_begin(&w, s);
	list = tide_order_queue_jobs(&w, starts);
	idle = tide_order_idle_jobs(&w, &nidle);
	*ms = CPU_MS() - c0;
	left = w.r->order_memo;
	memcpy(out, list, sizeof(int32_t) * starts[s->nqueues]);
	memcpy(out + starts[s->nqueues], idle, sizeof(int32_t) * nidle);
	free(starts);
	return left;
}

int
main(int argc, char **argv)
{
	int			njobs = argc > 1 ? atoi(argv[1]) : 100000;
	int			nqueues = argc > 2 ? atoi(argv[2]) : 10;
	int			rounds = argc > 3 ? atoi(argv[3]) : 30;
	int			changes = argc > 4 ? atoi(argv[4]) : 10;
	TideMem		mem = {bench_alloc, bench_free, NULL};
	TideSnapshot *s = tide_snapshot_create(&mem);
	TideJob    *jobs = malloc(sizeof(TideJob) * (njobs + changes + 1));
	int32_t    *a = malloc(sizeof(int32_t) * (njobs + 1));
	int32_t    *b = malloc(sizeof(int32_t) * (njobs + 1));
	double	   *t_sort = malloc(sizeof(double) * rounds);
	double	   *t_memo = malloc(sizeof(double) * rounds);
	TideOrderMemo *memo = NULL;
	int64_t		next_id = njobs + 1;
	int64_t		kept = 0;
	int			differ = 0;

#if defined(__GLIBC__) && defined(M_TRIM_THRESHOLD)
	mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
	mallopt(M_TRIM_THRESHOLD, 256 * 1024 * 1024);
#endif
	for (int j = 0; j < njobs; j++)
		new_job(&jobs[j], j + 1, nqueues);
	s->jobs = jobs;
	s->njobs = njobs;
	s->nqueues = nqueues;
	/* round 0 leaves the first memo */
	memo = make_order(s, NULL, true, a, &t_sort[0]);
	for (int r = 0; r < rounds; r++)
	{
		TideOrderMemo *next;

		for (int c = 0; c < changes; c++)
		{
			int			at = (int) rnd(njobs);

			memmove(&jobs[at], &jobs[at + 1], sizeof(TideJob) * (njobs - at - 1));
			new_job(&jobs[njobs - 1], next_id++, nqueues);
		}
		tide_order_memo_free(make_order(s, NULL, false, a, &t_sort[r]));
		next = make_order(s, memo, true, b, &t_memo[r]);
		if (memcmp(a, b, sizeof(int32_t) * njobs) != 0)
			differ++;
		kept += tide_order_memo_kept(next);
		tide_order_memo_free(memo);
		memo = next;
	}
	qsort(t_sort, rounds, sizeof(double), cmp_double);
	qsort(t_memo, rounds, sizeof(double), cmp_double);
	printf("jobs=%d queues=%d rounds=%d changes=%d: sorted min_cpu_ms=%.3f median_cpu_ms=%.3f, "
		   "memo min_cpu_ms=%.3f median_cpu_ms=%.3f, memo placed %.1f%% of jobs, orders differ in %d rounds\n",
		   njobs, nqueues, rounds, changes, t_sort[0], t_sort[rounds / 2], t_memo[0], t_memo[rounds / 2],
		   100.0 * kept / ((double) njobs * rounds), differ);
	tide_order_memo_free(memo);
	return differ != 0;
}
