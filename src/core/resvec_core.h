/*
 * resvec_core.h: resource vectors in plain C (no PostgreSQL headers).
 *
 * A resource vector maps names ("cpu", "memory", "NVIDIA-H200") to exact
 * non-negative quantities held as int64 milli-units (1 unit = 1000 milli),
 * like Ray's fixed-point FractionalResourceQuantity and Kubernetes' "500m".
 *
 * The core works on arrays of RvItem, views of (name, length, milli) that
 * point into someone else's memory (the input text, or a stored vector).
 * A canonical array is sorted by name in byte order, has unique names, and
 * no zero quantities.  Every function reports failure by returning an
 * RvStatus and filling an RvError with enough detail (offsets into the
 * input, the resource concerned) for a caller to write a good message; the
 * core never allocates and never aborts.  The PostgreSQL glue (resvec.c),
 * the simulator, the unit tests and the fuzzer all link this file.
 */
#ifndef TIDE_RESVEC_CORE_H
#define TIDE_RESVEC_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

/* Longest resource name in bytes (names are ASCII, so also characters). */
#define RV_NAME_MAX			63
/* Milli-units per unit. */
#define RV_MILLI			1000
/* Most significant fractional digits a literal may carry. */
#define RV_MAX_FRAC_DIGITS	18
/* Longest text rv_format_quantity writes, NUL included. */
#define RV_QUANTITY_BUFSZ	32

typedef enum RvStatus
{
	RV_OK = 0,
	RV_ERR_EMPTY_ENTRY,			/* ",cpu=1", "cpu=1,", "cpu=1,,gpu=1" */
	RV_ERR_EMPTY_NAME,			/* "=4" */
	RV_ERR_NAME_CHAR,			/* "cp*u=4": bad_char holds the byte */
	RV_ERR_NAME_TOO_LONG,		/* more than RV_NAME_MAX bytes */
	RV_ERR_MISSING_EQUALS,		/* "cpu", "cpu 4" */
	RV_ERR_MISSING_QUANTITY,	/* "cpu=", "cpu= ,gpu=1" */
	RV_ERR_MISSING_COMMA,		/* "cpu=4 gpu=2": token is what follows */
	RV_ERR_QUANTITY,			/* malformed number: "abc", "4.", ".5" */
	RV_ERR_SUFFIX,				/* unknown suffix: "4Qi" (suffix in detail) */
	RV_ERR_NEGATIVE,			/* "-1" */
	RV_ERR_PRECISION,			/* finer than one milli-unit: "1.0005" */
	RV_ERR_TOO_MANY_DIGITS,		/* more than RV_MAX_FRAC_DIGITS */
	RV_ERR_OVERFLOW,			/* beyond INT64_MAX milli-units */
	RV_ERR_DUPLICATE,			/* a name given twice */
	RV_ERR_UNSORTED,			/* validation: names out of order */
	RV_ERR_ZERO,				/* validation: a zero component */
	RV_ERR_BELOW_ZERO			/* subtraction would go below zero */
} RvStatus;

/*
 * Where and what went wrong.  Offsets are into the text given to the
 * parser (or, for arithmetic, unused); name/name_len point at the resource
 * concerned (into the input or into an operand), token/token_len at the
 * offending text (a quantity, a name, a suffix, what follows a quantity).
 */
typedef struct RvError
{
	RvStatus	status;
	const char *name;			/* resource concerned, or NULL */
	size_t		name_len;
	const char *token;			/* offending text, or NULL */
	size_t		token_len;
	const char *suffix;			/* RV_ERR_SUFFIX: the unknown suffix */
	size_t		suffix_len;
	size_t		position;		/* byte offset of token in the input */
	unsigned char bad_char;		/* RV_ERR_NAME_CHAR: the byte refused */
	int64_t		left;			/* RV_ERR_BELOW_ZERO: minuend */
	int64_t		right;			/* RV_ERR_BELOW_ZERO: subtrahend */
} RvError;

/* One component: a view of a name (not NUL-terminated) and its quantity. */
typedef struct RvItem
{
	const char *name;
	uint32_t	len;
	int64_t		milli;
} RvItem;

/* Short stable name of a status, for tests and logs ("RV_ERR_SUFFIX"). */
extern const char *rv_status_name(RvStatus status);

/* Is c allowed in a resource name?  Letters, digits, '.', '_', '/', '-'. */
extern bool rv_name_char_ok(unsigned char c);

/* Check one name: non-empty, at most RV_NAME_MAX bytes, allowed bytes. */
extern RvStatus rv_check_name(const char *name, size_t len, RvError *err);

/*
 * Parse one quantity ("4", "0.5", "250m", "16Gi") into milli-units.  The
 * whole of s[0..len) must be the quantity.  The value after the suffix is
 * applied must be a whole number of milli-units.
 */
extern RvStatus rv_parse_quantity(const char *s, size_t len, int64_t *milli,
								  RvError *err);

/* Upper bound of the number of items rv_parse may produce for str. */
extern size_t rv_parse_max_items(const char *str, size_t len);

/*
 * Parse "name=qty, name=qty" (whitespace allowed around tokens; "" and
 * blanks give the empty vector).  out must hold rv_parse_max_items()
 * items; on success *nout canonical items point into str.
 */
extern RvStatus rv_parse(const char *str, size_t len, RvItem *out, int *nout,
						 RvError *err);

/*
 * Sort items by name, reject duplicates, drop zeros, and check names and
 * signs: makes a canonical array from pairs in any order.
 */
extern RvStatus rv_canonicalize(RvItem *items, int *n, RvError *err);

/* Check that items are canonical (what binary input must satisfy). */
extern RvStatus rv_validate(const RvItem *items, int n, RvError *err);

/* Write a quantity as plain decimal units, up to 3 fractional digits. */
extern size_t rv_format_quantity(int64_t milli, char *buf);

/*
 * Write "a=1, b=2.5" into buf (cap bytes, NUL-terminated when cap > 0).
 * Returns the length the full text needs, without the NUL.
 */
extern size_t rv_format(const RvItem *items, int n, char *buf, size_t cap);

/* Compare names in byte order (as strcmp would on NUL-terminated copies). */
extern int	rv_name_cmp(const char *a, size_t alen, const char *b, size_t blen);

/* Total order over canonical vectors (names, then quantities, then length). */
extern int	rv_cmp(const RvItem *a, int na, const RvItem *b, int nb);

/* Equality of canonical vectors. */
extern bool rv_equal(const RvItem *a, int na, const RvItem *b, int nb);

/* a @> b: every component of b is at most the same component of a. */
extern bool rv_contains(const RvItem *a, int na, const RvItem *b, int nb);

/* Quantity of a name (0 when absent), by binary search. */
extern int64_t rv_get(const RvItem *items, int n, const char *name, size_t len);

/*
 * out (room for na + nb) = a + b; RV_ERR_OVERFLOW names the resource.  Never
 * wraps, even for operands that are not canonical (negative items).
 */
extern RvStatus rv_add(const RvItem *a, int na, const RvItem *b, int nb,
					   RvItem *out, int *nout, RvError *err);

/*
 * out (room for na) = a - b; RV_ERR_BELOW_ZERO names the resource
 * (RV_ERR_OVERFLOW only for a b that is not canonical: a negative item).
 */
extern RvStatus rv_sub(const RvItem *a, int na, const RvItem *b, int nb,
					   RvItem *out, int *nout, RvError *err);

/*
 * out (room for n) = items * factor, factor >= 0 (RV_ERR_NEGATIVE
 * otherwise); RV_ERR_OVERFLOW names the resource.
 */
extern RvStatus rv_scale_int(const RvItem *items, int n, int64_t factor,
							 RvItem *out, int *nout, RvError *err);

#endif							/* TIDE_RESVEC_CORE_H */
