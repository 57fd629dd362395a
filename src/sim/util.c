/*
 * util.c: errors, memory and option parsing shared by tide-sim's commands.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"

const char *sim_progname = "tide-sim";

/* Print "tide-sim: message" to stderr and exit with code. */
void
sim_die(int code, const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "%s: ", sim_progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

/* Zeroed memory; running out of memory ends the program with a message. */
void *
sim_alloc(size_t size)
{
	void	   *p = calloc(1, size ? size : 1);

	if (!p)
		sim_die(SIM_EXIT_DATA, "out of memory (asked %zu bytes)", size);
	return p;
}

void *
sim_realloc(void *p, size_t size)
{
	void	   *q = realloc(p, size ? size : 1);

	if (!q)
		sim_die(SIM_EXIT_DATA, "out of memory (asked %zu bytes)", size);
	return q;
}

char *
sim_strdup(const char *s)
{
	size_t		n = strlen(s) + 1;
	char	   *p = sim_alloc(n);

	memcpy(p, s, n);
	return p;
}

/* The engine's allocator: malloc and free (the engine frees scratch per call). */
static void *
mem_alloc(void *ctx, size_t size)
{
	(void) ctx;
	return sim_alloc(size);
}

static void
mem_free(void *ctx, void *p)
{
	(void) ctx;
	free(p);
}

TideMem
sim_mem(void)
{
	TideMem		m = {mem_alloc, mem_free, NULL};

	return m;
}

/*
 * An allocator that remembers its blocks, for a snapshot made and thrown
 * away many times (tide_snapshot_destroy frees only the struct): the
 * engine's frees work as usual, sim_pool_reset frees what is left.
 */
typedef struct PoolBlock
{
	struct PoolBlock *prev,
			   *next;
	max_align_t pad[];
} PoolBlock;

static void *
pool_alloc(void *ctx, size_t size)
{
	SimPool    *pool = ctx;
	PoolBlock  *b = sim_alloc(sizeof(PoolBlock) + size);

	b->next = pool->head;
	if (b->next)
		b->next->prev = b;
	pool->head = b;
	return b->pad;
}

static void
pool_free(void *ctx, void *p)
{
	SimPool    *pool = ctx;
	PoolBlock  *b = (PoolBlock *) ((char *) p - offsetof(PoolBlock, pad));

	if (b->prev)
		b->prev->next = b->next;
	else
		pool->head = b->next;
	if (b->next)
		b->next->prev = b->prev;
	free(b);
}

TideMem
sim_pool_mem(SimPool *pool)
{
	TideMem		m = {pool_alloc, pool_free, pool};

	return m;
}

void
sim_pool_reset(SimPool *pool)
{
	while (pool->head)
	{
		struct PoolBlock *b = pool->head;

		pool->head = b->next;
		free(b);
	}
}

double
sim_percentile(const double *x, int64_t n, double p)
{
	int64_t		r = (int64_t) ceil(p * n);

	return n > 0 ? x[(r > 0 ? r : 1) - 1] : 0;
}

double
sim_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* An integer option value in [lo, hi], or a usage error naming the option. */
int64_t
sim_parse_int(const char *opt, const char *v, int64_t lo, int64_t hi)
{
	char	   *end;
	long long	x;

	errno = 0;
	x = strtoll(v, &end, 10);
	if (*v == '\0' || *end != '\0' || errno != 0)
		sim_die(SIM_EXIT_USAGE, "option %s: \"%s\" is not an integer", opt, v);
	if (x < lo || x > hi)
		sim_die(SIM_EXIT_USAGE, "option %s: %lld is out of range (%lld to %lld)",
				opt, x, (long long) lo, (long long) hi);
	return x;
}

/* A number option value in [lo, hi], or a usage error naming the option. */
double
sim_parse_double(const char *opt, const char *v, double lo, double hi)
{
	char	   *end;
	double		x;

	errno = 0;
	x = strtod(v, &end);
	if (*v == '\0' || *end != '\0' || errno != 0 || !isfinite(x))
		sim_die(SIM_EXIT_USAGE, "option %s: \"%s\" is not a number", opt, v);
	if (x < lo || x > hi)
		sim_die(SIM_EXIT_USAGE, "option %s: %g is out of range (%g to %g)", opt, x, lo, hi);
	return x;
}

/*
 * Placement policy names: the engine's R-L5 orders, and (openb only) the
 * simulator's reference FGD scorer.
 */
int
sim_parse_policy(const char *v, bool allow_sim_policies)
{
	if (strcmp(v, "pack") == 0)
		return TIDE_PLACE_PACK;
	if (strcmp(v, "spread") == 0)
		return TIDE_PLACE_SPREAD;
	if (strcmp(v, "frag") == 0)
		return TIDE_PLACE_FRAG;
	if (allow_sim_policies && strcmp(v, "fgd") == 0)
		return SIM_POLICY_FGD;
	sim_die(SIM_EXIT_USAGE, "option --policy: unknown policy \"%s\" (known: pack, spread, frag%s)",
			v, allow_sim_policies ? ", fgd" : "");
}

/*
 * Does argv[*i] name option `name` (as "--name VALUE" or "--name=VALUE")?
 * Sets *val and advances *i past a separate value.
 */
bool
sim_opt(int argc, char **argv, int *i, const char *name, const char **val)
{
	const char *a = argv[*i];
	size_t		n = strlen(name);

	if (strncmp(a, name, n) != 0)
		return false;
	if (a[n] == '=')
	{
		*val = a + n + 1;
		return true;
	}
	if (a[n] != '\0')
		return false;
	if (*i + 1 >= argc)
		sim_die(SIM_EXIT_USAGE, "option %s needs a value", name);
	*val = argv[++*i];
	return true;
}

/* qsort order of doubles, ascending. */
int
sim_cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}
