/*
 * tap.h: a tiny TAP producer for the C unit tests (header only).
 *
 *     ok(cond, "what %d", x);        one test; returns cond
 *     is_int(got, want, "what");     integers (int64) compared, diag on failure
 *     is_str(got, want, "what");     strings compared (NULL allowed)
 *     diag("note %s", s);            a "# " comment line
 *     return done_testing();         prints the plan; 0 if all passed
 *
 * Each test program includes it once (all state is static).
 */
#ifndef TIDE_TAP_H
#define TIDE_TAP_H

#include <stdarg.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int	tap_run_ = 0;
static int	tap_failed_ = 0;

/* Print one "# ..." diagnostic line. */
static inline void
diag(const char *fmt, ...)
{
	va_list		ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

/* Record one test result with a printf-style description. */
static inline int
tap_vok_(int cond, const char *fmt, va_list ap)
{
	tap_run_++;
	if (!cond)
		tap_failed_++;
	printf("%sok %d - ", cond ? "" : "not ", tap_run_);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	fflush(stdout);
	return cond;
}

static inline int
ok(int cond, const char *fmt, ...)
{
	va_list		ap;
	int			r;

	va_start(ap, fmt);
	r = tap_vok_(cond, fmt, ap);
	va_end(ap);
	return r;
}

static inline int
is_int(int64_t got, int64_t want, const char *fmt, ...)
{
	va_list		ap;
	int			r;

	va_start(ap, fmt);
	r = tap_vok_(got == want, fmt, ap);
	va_end(ap);
	if (!r)
		diag("  got: %" PRId64 ", expected: %" PRId64, got, want);
	return r;
}

static inline int
is_str(const char *got, const char *want, const char *fmt, ...)
{
	va_list		ap;
	int			same;
	int			r;

	same = (got == NULL || want == NULL) ? got == want : strcmp(got, want) == 0;
	va_start(ap, fmt);
	r = tap_vok_(same, fmt, ap);
	va_end(ap);
	if (!r)
		diag("  got: \"%s\", expected: \"%s\"", got ? got : "(null)", want ? want : "(null)");
	return r;
}

/* Print the plan; the exit status for main: 0 when every test passed. */
static inline int
done_testing(void)
{
	printf("1..%d\n", tap_run_);
	if (tap_failed_)
		diag("failed %d of %d tests", tap_failed_, tap_run_);
	fflush(stdout);
	return tap_failed_ ? 1 : 0;
}

#endif							/* TIDE_TAP_H */
