/*
 * tap_engine_tmp.h: a minimal TAP emitter for the engine tests, used until
 * the shared test/unit/tap.h lands in main.
 */
#ifndef TAP_ENGINE_TMP_H
#define TAP_ENGINE_TMP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int	tap_n = 0;
static int	tap_failed = 0;

static int
tap_ok(int cond, const char *fmt, ...)
{
	va_list		ap;

	tap_n++;
	printf("%sok %d - ", cond ? "" : "not ", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond)
		tap_failed++;
	fflush(stdout);
	return cond;
}

#define ok(cond, ...) tap_ok((cond) ? 1 : 0, __VA_ARGS__)

#define is_int(got, want, ...) do { \
	long long g_ = (long long) (got), w_ = (long long) (want); \
	if (!tap_ok(g_ == w_, __VA_ARGS__)) \
		printf("#   got: %lld\n#   expected: %lld\n", g_, w_); \
} while (0)

#define is_str(got, want, ...) do { \
	const char *g_ = (got), *w_ = (want); \
	if (!tap_ok(g_ && w_ && strcmp(g_, w_) == 0, __VA_ARGS__)) \
		printf("#   got: '%s'\n#   expected: '%s'\n", g_ ? g_ : "(null)", w_ ? w_ : "(null)"); \
} while (0)

static inline void
diag(const char *fmt, ...)
{
	va_list		ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static inline int
done_testing(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
