/*
 * sort.h: an in-place O(n log n) sort with a context argument (sort.c).
 *
 * The engine sorts with comparators that need the snapshot; qsort() has
 * no context argument and qsort_r() is not portable, so this one takes
 * ctx, and the engine keeps no file-level state (it is reentrant).  Not
 * stable: every comparator the engine passes is a total order (ids, names
 * and finally the index break every tie), so the result does not depend
 * on the algorithm.
 */
#ifndef TIDE_SORT_H
#define TIDE_SORT_H

#include <stddef.h>

typedef int (*TideSortCmp) (const void *a, const void *b, void *ctx);

extern void tide_sort(void *base, size_t n, size_t size, TideSortCmp cmp, void *ctx);

#endif							/* TIDE_SORT_H */
