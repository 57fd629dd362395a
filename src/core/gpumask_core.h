/*
 * gpumask_core.h: the GPU mask as plain C, without PostgreSQL headers.
 *
 * A GPU mask is a set of GPU indices on one node, held as a uint64_t
 * bitmap: bit i set means GPU i is in the set.  Indices go from 0 to 63
 * (GPUMASK_MAX_GPUS - 1).  Every uint64_t is a valid set.
 *
 * Text form: a comma-separated list of indices and ranges, "0-3,6"; the
 * empty string (or only whitespace) is the empty set.  Whitespace around
 * numbers, commas and dashes is ignored; elements may come in any order and
 * may repeat or overlap (it is a set).  Canonical output lists indices in
 * ascending order, writes runs of three or more consecutive indices as a
 * range "a-b", and writes a run of two as "a,b".
 *
 * The scheduler engine, the simulator, the launcher and the unit tests link
 * this file directly; src/gpumask.c wraps it for SQL and turns the error
 * codes below into ereport()s.
 */
#ifndef TIDE_GPUMASK_CORE_H
#define TIDE_GPUMASK_CORE_H

#include <stddef.h>
#include <stdint.h>

/* Number of GPU indices a mask can hold: 0 .. GPUMASK_MAX_GPUS - 1. */
#define GPUMASK_MAX_GPUS	64

/*
 * Buffer size that always suffices for gpumask_format() and
 * gpumask_format_cuda(), terminating NUL included.  Worst case: 64 indices
 * written one by one, at most two digits and one comma each.
 */
#define GPUMASK_TEXT_MAX	(GPUMASK_MAX_GPUS * 3 + 1)

/* The empty set and the set of every index. */
#define GPUMASK_EMPTY		((uint64_t) 0)
#define GPUMASK_ALL			(~(uint64_t) 0)

/* Bit of one index; the caller guarantees 0 <= i < GPUMASK_MAX_GPUS. */
#define GPUMASK_BIT(i)		(((uint64_t) 1) << (i))

/* Outcome of gpumask_parse(). */
typedef enum GpuMaskStatus
{
	GPUMASK_OK = 0,
	GPUMASK_ERR_SYNTAX,			/* a character that is not a digit, comma,
								 * dash or whitespace, or two numbers with
								 * only a space between them */
	GPUMASK_ERR_EMPTY_ELEMENT,	/* nothing between two commas, or a leading
								 * or trailing comma */
	GPUMASK_ERR_NEGATIVE,		/* an index written with a minus sign */
	GPUMASK_ERR_INCOMPLETE_RANGE,	/* "3-" */
	GPUMASK_ERR_REVERSED_RANGE, /* "3-1": the range's end is below its
								 * start */
	GPUMASK_ERR_INDEX_TOO_LARGE,	/* an index of GPUMASK_MAX_GPUS or more */
	GPUMASK_ERR_OVERFLOW		/* a number too long to read at all */
} GpuMaskStatus;

/*
 * Where and why parsing failed, for a message that names the bad part.
 * elem_start/elem_len delimit the offending element in the input (trimmed
 * of surrounding whitespace; for GPUMASK_ERR_EMPTY_ELEMENT elem_len is 0
 * and elem_start is where the element should have been).  index is the
 * offending number for GPUMASK_ERR_INDEX_TOO_LARGE and the range's start
 * for GPUMASK_ERR_REVERSED_RANGE (then index2 is its end); otherwise -1.
 * element is the 1-based position of the element in the list.
 */
typedef struct GpuMaskParseError
{
	GpuMaskStatus status;
	size_t		elem_start;
	size_t		elem_len;
	int			element;
	long long	index;
	long long	index2;
} GpuMaskParseError;

/*
 * Parse a NUL-terminated text into *mask.  On failure *mask is untouched,
 * *err (if not NULL) says what and where, and the status is returned.
 */
extern GpuMaskStatus gpumask_parse(const char *text, uint64_t *mask,
								   GpuMaskParseError *err);

/*
 * Write the canonical text of mask into buf (size bufsize, NUL-terminated
 * when bufsize > 0, truncated if too small).  Returns the length of the full
 * text without the NUL, like snprintf, so a result >= bufsize means
 * truncation.  A buffer of GPUMASK_TEXT_MAX bytes always suffices.
 */
extern size_t gpumask_format(uint64_t mask, char *buf, size_t bufsize);

/*
 * Write the CUDA_VISIBLE_DEVICES value of mask: every index in ascending
 * order, comma-separated, no ranges ("0,1,2,3"); "" for the empty set.
 * Same buffer contract as gpumask_format().
 */
extern size_t gpumask_format_cuda(uint64_t mask, char *buf, size_t bufsize);

/* Number of GPUs in the set. */
extern int	gpumask_popcount(uint64_t mask);

/*
 * Write the indices of the set in ascending order into out (room for
 * GPUMASK_MAX_GPUS ints suffices); returns how many were written.
 */
extern int	gpumask_to_indices(uint64_t mask, int *out);

/*
 * A short English description of a status ("reversed range", ...), for
 * programs outside the server; never NULL.
 */
extern const char *gpumask_status_text(GpuMaskStatus status);

/* Set algebra, for readability at call sites. */
static inline uint64_t
gpumask_union(uint64_t a, uint64_t b)
{
	return a | b;
}

static inline uint64_t
gpumask_intersect(uint64_t a, uint64_t b)
{
	return a & b;
}

static inline uint64_t
gpumask_difference(uint64_t a, uint64_t b)
{
	return a & ~b;
}

/* Does a hold every index of b? */
static inline int
gpumask_is_superset(uint64_t a, uint64_t b)
{
	return (b & ~a) == 0;
}

/* Do a and b share an index? */
static inline int
gpumask_intersects(uint64_t a, uint64_t b)
{
	return (a & b) != 0;
}

#endif							/* TIDE_GPUMASK_CORE_H */
