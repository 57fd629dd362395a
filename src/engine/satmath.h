/*
 * satmath.h: saturating int64 arithmetic for the engine's milli quantities
 * and microsecond times.
 *
 * Resource vectors hold int64 milli-units and the resvec parser accepts any
 * value up to INT64_MAX, so sums over many nodes or allocations, replicas x
 * request, and now + time_limit can exceed int64: undefined behaviour in C,
 * and after a wrap-around a queue would look under quota.  These helpers
 * clamp to INT64_MAX / INT64_MIN instead.
 *
 * The engine reads INT64_MAX in an accumulated quantity (usage, held, a gang
 * minimum, a group's capacity) as "this much or more": the true value is
 * unknown but at least INT64_MAX.  Admission therefore never lets a queue's
 * accounted usage reach INT64_MAX (see tide_over() in fit.h), and a usage that
 * saturated while charging stays saturated when something is released
 * (tide_sat_release): subtracting from an unknown larger value would make
 * the queue or node look emptier than it is.  Saturation errs on the side of
 * "does not fit", never the other way.
 *
 * __builtin_add_overflow and friends compile to the plain instruction plus
 * a predictable branch, so they cost nothing measurable in the fit loop.
 */
#ifndef TIDE_SATMATH_H
#define TIDE_SATMATH_H

#include <stdint.h>

/* a + b, clamped to [INT64_MIN, INT64_MAX]. */
static inline int64_t
tide_sat_add(int64_t a, int64_t b)
{
	int64_t		s;

	if (__builtin_add_overflow(a, b, &s))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return s;
}

/* a - b, clamped to [INT64_MIN, INT64_MAX]. */
static inline int64_t
tide_sat_sub(int64_t a, int64_t b)
{
	int64_t		s;

	if (__builtin_sub_overflow(a, b, &s))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return s;
}

/* a * b, clamped to [INT64_MIN, INT64_MAX]. */
static inline int64_t
tide_sat_mul(int64_t a, int64_t b)
{
	int64_t		p;

	if (__builtin_mul_overflow(a, b, &p))
		return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
	return p;
}

/*
 * An accumulated quantity minus a release: a value that saturated at
 * INT64_MAX stays there (its true size is unknown, so what is left after the
 * release is unknown too, and must not look smaller than it is).
 */
static inline int64_t
tide_sat_release(int64_t v, int64_t d)
{
	return v == INT64_MAX ? INT64_MAX : tide_sat_sub(v, d);
}

/* Charge (sign > 0) or release (sign < 0) d on an accumulated quantity v. */
static inline int64_t
tide_sat_charge(int64_t v, int64_t d, int sign)
{
	if (sign > 0)
		return tide_sat_add(v, d);
	return sign < 0 ? tide_sat_release(v, d) : v;
}

/*
 * a * b / c for a >= 0, 0 <= b <= 1000 and c > 0 (a per-mille ratio),
 * without an intermediate overflow; exact when a * b fits, else close and
 * clamped to INT64_MAX.
 */
static inline int64_t
tide_sat_muldiv(int64_t a, int64_t b, int64_t c)
{
	int64_t		p;

	if (!__builtin_mul_overflow(a, b, &p))
		return p / c;
	return tide_sat_add(tide_sat_mul(a / c, b), (a % c) / (c / b > 0 ? c / b : 1));
}

/* a + b for int32 counts (replicas), clamped to [INT32_MIN, INT32_MAX]. */
static inline int32_t
tide_sat_add32(int32_t a, int32_t b)
{
	int32_t		s;

	if (__builtin_add_overflow(a, b, &s))
		return b > 0 ? INT32_MAX : INT32_MIN;
	return s;
}

#endif							/* TIDE_SATMATH_H */
