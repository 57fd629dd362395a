/*
 * bench_util.h: what the engine benchmarks share: an allocator that counts
 * what it hands out (the engine's memory figure), a monotonic clock in
 * milliseconds, a fixed-seed xorshift generator so that every run
 * decides the same synthetic cluster, qsort's order of doubles (the
 * repeated runs' minimum and median), and the benches' GPU node.
 */
#ifndef TIDE_BENCH_UTIL_H
#define TIDE_BENCH_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "engine.h"

/* TideMem allocator; ctx, when not NULL, is a size_t that counts bytes. */
static void *
bench_alloc(void *ctx, size_t size)
{
	void	   *p = malloc(size);

	if (!p)
		abort();
	if (ctx)
		*(size_t *) ctx += size;
	return p;
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint64_t rng = 88172645463325252ULL;

/* A number in [0, n). */
static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t) (rng % n);
}

/* qsort comparator of doubles, ascending. */
static inline int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

/*
 * Node i of the benches' clusters: 8 GPUs of card type t_a (every fourth
 * t_b) in four pairs, 96 CPUs, memory without limit, named name.
 */
static inline void
bench_gpu_node(TideNode *n, int i, const char *name, int t_a, int t_b, int res_mem)
{
	n->name = name;
	n->ngpus = 8;
	n->gpu_type = i % 4 == 3 ? t_b : t_a;
	n->capacity[TIDE_RES_GPU] = 8000;
	n->capacity[TIDE_RES_CPU] = 96000;
	n->capacity[res_mem] = 1024LL * 1024 * 1024 * 1024 * 1000;
	for (int g = 0; g < 8; g++)
		n->gpu_domain[g] = (int16_t) (g / 2);
}

#endif							/* TIDE_BENCH_UTIL_H */
