/*
 * reasons.h: the pending reasons (R-C2), made from the table in
 * reasons.def: their codes, one constructor each, and what the stages
 * record them with (reasons.c).
 */
#ifndef TIDE_REASONS_H
#define TIDE_REASONS_H

#include "engine_int.h"

/* The codes, R_CAPABILITY = 1 and on, in the table's order. */
enum
{
	R_NONE = 0,
#define TIDE_REASON(CODE, name, rule, params, fields, text) R_##CODE,
#include "reasons.def"
#undef TIDE_REASON
	R_COUNT
};

/*
 * Record reason code for the job of o, unless it has one of that code and
 * resource already or TIDE_MAX_REASONS: call the constructors below.
 */
extern void tide_reason_add(TideWork *w, TideOutcome *o, int code, int res, int role,
							int64_t a, int64_t b, int64_t c, int64_t ref);

/* The rule (docs/policy.md) a reason code reports, "?" for no code. */
extern const char *tide_reason_rule(int code);

/* One constructor per row: tide_reason_NAME(w, o, its parameters). */
#define TIDE_REASON_ARGS(...) __VA_ARGS__
#define TIDE_REASON_FIELDS(res, role, a, b, c, ref) res, role, a, b, c, ref
#define TIDE_REASON(CODE, name, rule, params, fields, text) \
	static inline void \
	tide_reason_##name(TideWork *w, TideOutcome *o TIDE_REASON_ARGS params) \
	{ \
		tide_reason_add(w, o, R_##CODE, TIDE_REASON_FIELDS fields); \
	}
#include "reasons.def"
#undef TIDE_REASON

#endif							/* TIDE_REASONS_H */
