/*
 * test_sort.c: tide_sort (src/engine/sort.c) against the C library's qsort.
 *
 * With a total order every correct sort gives the same array, so each case
 * sorts a copy with qsort and one with tide_sort and compares them byte
 * for byte: random arrays of sizes 0 to 10,000, few distinct keys (many
 * ties broken by the original position), presorted, reversed and
 * organ-pipe inputs, elements of 4, 8 and 24 bytes.  Comparisons are
 * counted to check the O(n log n) bound, and the context must reach the
 * comparator.
 */
#include <stdlib.h>

#include "tap.h"
#include "sort.h"

typedef struct Rec
{
	int32_t		key;
	int32_t		pos;			/* original position: the tie-break */
	char		pad[16];		/* a 24-byte element */
} Rec;

typedef struct Ctx
{
	const int32_t *keys;		/* for index arrays: the sort key of an index */
	long		calls;
} Ctx;

static const int32_t *qsort_keys;	/* the reference needs a global; tide_sort does not */

/* int32 indexes by keys[index], then index: a total order. */
static int
cmp_idx_ref(const void *a, const void *b)
{
	int32_t		x = *(const int32_t *) a,
				y = *(const int32_t *) b;

	if (qsort_keys[x] != qsort_keys[y])
		return qsort_keys[x] < qsort_keys[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int
cmp_idx(const void *a, const void *b, void *ctx)
{
	Ctx		   *c = ctx;
	int32_t		x = *(const int32_t *) a,
				y = *(const int32_t *) b;

	c->calls++;
	if (c->keys[x] != c->keys[y])
		return c->keys[x] < c->keys[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int
cmp_i64_ref(const void *a, const void *b)
{
	int64_t		x = *(const int64_t *) a,
				y = *(const int64_t *) b;

	return x < y ? -1 : x > y;
}

static int
cmp_i64(const void *a, const void *b, void *ctx)
{
	((Ctx *) ctx)->calls++;
	return cmp_i64_ref(a, b);
}

static int
cmp_rec_ref(const void *a, const void *b)
{
	const Rec  *x = a,
			   *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int
cmp_rec(const void *a, const void *b, void *ctx)
{
	((Ctx *) ctx)->calls++;
	return cmp_rec_ref(a, b);
}

static uint64_t rng = 88172645463325252ULL;

static uint32_t
next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t) (rng >> 16);
}

/* keys for n elements in one of several patterns */
static void
fill_keys(int32_t *k, int n, int pattern, int range)
{
	for (int i = 0; i < n; i++)
		switch (pattern)
		{
			case 0:				/* random, range distinct values */
				k[i] = (int32_t) (next_rand() % (uint32_t) range);
				break;
			case 1:				/* sorted */
				k[i] = i;
				break;
			case 2:				/* reversed */
				k[i] = n - i;
				break;
			case 3:				/* organ pipe */
				k[i] = i < n / 2 ? i : n - i;
				break;
			default:			/* all equal */
				k[i] = 7;
		}
}

/* n log2 n, at least n */
static double
nlogn(int n)
{
	double		l = 0;

	for (int k = n; k > 1; k >>= 1)
		l++;
	return (double) n * (l > 1 ? l : 1);
}

/*
 * McIlroy's adversary ("A killer adversary for quicksort", 1999): values
 * are decided lazily, as the sort compares, so that every pivot it picks
 * is as bad as can be.  A plain quicksort needs about n^2/4 comparisons
 * against it; introsort must fall back to heapsort and stay O(n log n).
 */
typedef struct Adversary
{
	int32_t    *val;
	int32_t		gas;			/* "not decided yet", above every decided value */
	int32_t		nsolid;
	int32_t		candidate;
	long		calls;
} Adversary;

static int
cmp_adversary(const void *a, const void *b, void *ctx)
{
	Adversary  *v = ctx;
	int32_t		x = *(const int32_t *) a,
				y = *(const int32_t *) b;

	v->calls++;
	if (v->val[x] == v->gas && v->val[y] == v->gas)
		v->val[x == v->candidate ? x : y] = v->nsolid++;
	if (v->val[x] == v->gas)
		v->candidate = x;
	else if (v->val[y] == v->gas)
		v->candidate = y;
	return v->val[x] < v->val[y] ? -1 : v->val[x] > v->val[y];
}

typedef struct Tally
{
	int			bad_idx,
				bad_i64,
				bad_rec,
				slow,
				cases;
	double		worst;
} Tally;

/* One input: n keys of a pattern, sorted three ways by qsort and by tide_sort. */
static void
one_case(Tally *t, int n, int pattern, int range)
{
	int32_t    *keys = malloc(sizeof(int32_t) * (n + 1));
	int32_t    *a = malloc(sizeof(int32_t) * (n + 1));
	int32_t    *b = malloc(sizeof(int32_t) * (n + 1));
	int64_t    *c = malloc(sizeof(int64_t) * (n + 1));
	int64_t    *d = malloc(sizeof(int64_t) * (n + 1));
	Rec		   *e = calloc(n + 1, sizeof(Rec));
	Rec		   *f = calloc(n + 1, sizeof(Rec));
	Ctx			ctx = {keys, 0};
	double		ratio;

	t->cases++;
	fill_keys(keys, n, pattern, range);
	for (int i = 0; i < n; i++)
	{
		a[i] = b[i] = i;
		c[i] = d[i] = ((int64_t) keys[i] << 32) - i;
		e[i].key = f[i].key = keys[i];
		e[i].pos = f[i].pos = n - i;
		e[i].pad[0] = f[i].pad[0] = (char) i;
	}
	qsort_keys = keys;
	qsort(a, n, sizeof(int32_t), cmp_idx_ref);
	tide_sort(b, n, sizeof(int32_t), cmp_idx, &ctx);
	t->bad_idx += n > 0 && memcmp(a, b, sizeof(int32_t) * n) != 0;
	ratio = ctx.calls / nlogn(n);
	if (ratio > t->worst)
		t->worst = ratio;
	t->slow += n > 16 && ratio > 4.0;

	qsort(c, n, sizeof(int64_t), cmp_i64_ref);
	tide_sort(d, n, sizeof(int64_t), cmp_i64, &ctx);
	t->bad_i64 += n > 0 && memcmp(c, d, sizeof(int64_t) * n) != 0;

	qsort(e, n, sizeof(Rec), cmp_rec_ref);
	tide_sort(f, n, sizeof(Rec), cmp_rec, &ctx);
	t->bad_rec += n > 0 && memcmp(e, f, sizeof(Rec) * n) != 0;

	free(keys);
	free(a);
	free(b);
	free(c);
	free(d);
	free(e);
	free(f);
}

int
main(void)
{
	static const int sizes[] = {0, 1, 2, 3, 5, 16, 17, 31, 100, 257, 1000, 4096, 10000};
	Tally		t = {0};

	for (int si = 0; si < (int) (sizeof(sizes) / sizeof(sizes[0])); si++)
	{
		for (int range = 2; range <= 1 << 20; range *= 64)
			one_case(&t, sizes[si], 0, range);
		for (int pattern = 1; pattern < 5; pattern++)
			one_case(&t, sizes[si], pattern, 0);
	}
	diag("%d cases, worst comparisons / (n log2 n) = %.2f", t.cases, t.worst);
	is_int(t.bad_idx, 0, "int32 index arrays (keys through the context) sort as qsort does");
	is_int(t.bad_i64, 0, "int64 arrays sort as qsort does");
	is_int(t.bad_rec, 0, "24-byte records, ties broken by position, sort as qsort does");
	is_int(t.slow, 0, "never more than 4 n log2 n comparisons (sorted, reversed, organ pipe, all equal)");

	/* a random array of every size 0..300: the small-run and partition edges */
	{
		int			bad = 0;

		for (int n = 0; n <= 300; n++)
		{
			int32_t		keys[301],
						a[301],
						b[301];
			Ctx			ctx = {keys, 0};

			fill_keys(keys, n, 0, 1 + n / 3);
			for (int i = 0; i < n; i++)
				a[i] = b[i] = (int32_t) (n - 1 - i);
			qsort_keys = keys;
			qsort(a, n, sizeof(int32_t), cmp_idx_ref);
			tide_sort(b, n, sizeof(int32_t), cmp_idx, &ctx);
			bad += n > 0 && memcmp(a, b, sizeof(int32_t) * n) != 0;
		}
		is_int(bad, 0, "every size from 0 to 300 sorts as qsort does");
	}

	/* the adversary: still O(n log n), and its input then sorts as qsort does */
	{
		int			n = 10000;
		int32_t    *val = malloc(sizeof(int32_t) * n);
		int32_t    *ptr = malloc(sizeof(int32_t) * n);
		int32_t    *a = malloc(sizeof(int32_t) * n);
		Adversary	v = {val, n - 1, 0, -1, 0};
		Ctx			ctx = {val, 0};

		for (int i = 0; i < n; i++)
		{
			ptr[i] = i;
			val[i] = v.gas;
		}
		tide_sort(ptr, n, sizeof(int32_t), cmp_adversary, &v);
		diag("adversary: %ld comparisons for n = %d (n log2 n = %.0f)", v.calls, n, nlogn(n));
		ok(v.calls < 6 * nlogn(n), "the quicksort adversary gets O(n log n) comparisons (heapsort fallback)");
		for (int i = 0; i < n; i++)
			ptr[i] = a[i] = i;
		qsort_keys = val;
		qsort(a, n, sizeof(int32_t), cmp_idx_ref);
		tide_sort(ptr, n, sizeof(int32_t), cmp_idx, &ctx);
		ok(memcmp(a, ptr, sizeof(int32_t) * n) == 0, "the adversary's input sorts as qsort does");
		free(val);
		free(ptr);
		free(a);
	}

	/* n = 0 and 1 call nothing; NULL base with n = 0 is fine */
	{
		Ctx			ctx = {NULL, 0};
		int32_t		one = 5;

		tide_sort(NULL, 0, sizeof(int32_t), cmp_idx, &ctx);
		tide_sort(&one, 1, sizeof(int32_t), cmp_idx, &ctx);
		is_int(ctx.calls, 0, "empty and one-element arrays need no comparison");
		is_int(one, 5, "a one-element array is left as it is");
	}
	return done_testing();
}
