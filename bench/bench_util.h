/*
 * bench_util.h: what the engine benchmarks share: an allocator that counts
 * what it hands out (the engine's memory figure), a monotonic clock in
 * milliseconds, a fixed-seed xorshift generator so that every run
 * decides the same synthetic cluster, and qsort's order of doubles (the
 * repeated runs' minimum and median).
 */
#ifndef TIDE_BENCH_UTIL_H
#define TIDE_BENCH_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

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

#endif							/* TIDE_BENCH_UTIL_H */
