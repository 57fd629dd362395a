/*
 * sort.c: introsort (Musser): quicksort with a median-of-three pivot,
 * heapsort below a depth of 2 log2(n) so the worst case stays O(n log n),
 * and one insertion sort pass over the short runs quicksort leaves.  No
 * memory is allocated; the recursion goes into the smaller part only.
 */
#include <stdint.h>
#include <string.h>

#include "sort.h"

#define SMALL 16				/* runs this short are left to insertion sort */

typedef struct Sorter
{
	char	   *base;
	size_t		size;
	TideSortCmp cmp;
	void	   *ctx;
} Sorter;

static inline char *
at(const Sorter *st, size_t i)
{
	return st->base + i * st->size;
}

static inline int
cmp_at(const Sorter *st, size_t i, size_t j)
{
	return st->cmp(at(st, i), at(st, j), st->ctx);
}

static inline void
swap_at(const Sorter *st, size_t i, size_t j)
{
	char	   *a = at(st, i);
	char	   *b = at(st, j);
	size_t		size = st->size;

	if (i == j)
		return;
	if (size == sizeof(int32_t))
	{
		int32_t		t;

		memcpy(&t, a, sizeof(t));
		memcpy(a, b, sizeof(t));
		memcpy(b, &t, sizeof(t));
		return;
	}
	for (; size >= sizeof(uint64_t); size -= sizeof(uint64_t), a += sizeof(uint64_t), b += sizeof(uint64_t))
	{
		uint64_t	t;

		memcpy(&t, a, sizeof(t));
		memcpy(a, b, sizeof(t));
		memcpy(b, &t, sizeof(t));
	}
	for (; size > 0; size--, a++, b++)
	{
		char		t = *a;

		*a = *b;
		*b = t;
	}
}

/* Heap of [lo, lo + n): move element i down. */
static void
sift_down(const Sorter *st, size_t lo, size_t i, size_t n)
{
	for (;;)
	{
		size_t		c = 2 * i + 1;

		if (c >= n)
			return;
		if (c + 1 < n && cmp_at(st, lo + c, lo + c + 1) < 0)
			c++;
		if (cmp_at(st, lo + i, lo + c) >= 0)
			return;
		swap_at(st, lo + i, lo + c);
		i = c;
	}
}

static void
heap_sort(const Sorter *st, size_t lo, size_t hi)
{
	size_t		n = hi - lo;

	for (size_t i = n / 2; i-- > 0;)
		sift_down(st, lo, i, n);
	while (n > 1)
	{
		n--;
		swap_at(st, lo, lo + n);
		sift_down(st, lo, 0, n);
	}
}

/*
 * Partition [lo, hi) (hi - lo > SMALL) around the median of its first,
 * middle and last elements; returns the pivot's final index p: everything
 * before p compares <= the pivot, everything after >= it.
 */
static size_t
partition(const Sorter *st, size_t lo, size_t hi)
{
	size_t		mid = lo + (hi - lo) / 2;
	size_t		i = lo,
				j = hi;

	/* order lo, mid, hi - 1; the median goes to lo as the pivot */
	if (cmp_at(st, mid, lo) < 0)
		swap_at(st, mid, lo);
	if (cmp_at(st, hi - 1, mid) < 0)
	{
		swap_at(st, hi - 1, mid);
		if (cmp_at(st, mid, lo) < 0)
			swap_at(st, mid, lo);
	}
	swap_at(st, lo, mid);
	for (;;)
	{
		/* stops at hi - 1 at the latest: that element is >= the pivot */
		do
			i++;
		while (cmp_at(st, i, lo) < 0);
		/* stops at lo at the latest: the pivot itself */
		do
			j--;
		while (cmp_at(st, lo, j) < 0);
		if (i >= j)
			break;
		swap_at(st, i, j);
	}
	swap_at(st, lo, j);
	return j;
}

static void
intro_sort(const Sorter *st, size_t lo, size_t hi, int depth)
{
	while (hi - lo > SMALL)
	{
		size_t		p;

		if (depth-- == 0)
		{
			heap_sort(st, lo, hi);
			return;
		}
		p = partition(st, lo, hi);
		/* the smaller side by recursion, the larger by the loop */
		if (p - lo < hi - (p + 1))
		{
			intro_sort(st, lo, p, depth);
			lo = p + 1;
		}
		else
		{
			intro_sort(st, p + 1, hi, depth);
			hi = p;
		}
	}
}

void
tide_sort(void *base, size_t n, size_t size, TideSortCmp cmp, void *ctx)
{
	Sorter		st = {base, size, cmp, ctx};
	int			depth = 0;

	if (n < 2 || size == 0)
		return;
	for (size_t k = n; k > 1; k >>= 1)
		depth += 2;
	intro_sort(&st, 0, n, depth);
	/* every element is now within SMALL of its place */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && cmp_at(&st, j - 1, j) > 0; j--)
			swap_at(&st, j - 1, j);
}
