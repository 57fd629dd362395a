/*
 * tap_gpumask_tmp.h: a stand-in for test/unit/tap.h (being written by
 * another helper) so that test_gpumask_core.c builds today.  Same calls:
 * ok(cond, fmt, ...), is_int(got, want, fmt, ...), is_str(got, want, fmt,
 * ...), done_testing().  Delete once tap.h is in main.
 */
#ifndef TAP_GPUMASK_TMP_H
#define TAP_GPUMASK_TMP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int	tap_run = 0;
static int	tap_failed = 0;

static void
tap_vreport(int pass, const char *fmt, va_list ap)
{
	tap_run++;
	if (!pass)
		tap_failed++;
	printf("%sok %d - ", pass ? "" : "not ", tap_run);
	vprintf(fmt, ap);
	printf("\n");
}

static int __attribute__((format(printf, 2, 3)))
ok(int pass, const char *fmt, ...)
{
	va_list		ap;

	va_start(ap, fmt);
	tap_vreport(pass, fmt, ap);
	va_end(ap);
	return pass;
}

static int __attribute__((format(printf, 3, 4)))
is_int(long long got, long long want, const char *fmt, ...)
{
	va_list		ap;
	int			pass = got == want;

	va_start(ap, fmt);
	tap_vreport(pass, fmt, ap);
	va_end(ap);
	if (!pass)
		printf("#   got: %lld\n#   expected: %lld\n", got, want);
	return pass;
}

static int __attribute__((format(printf, 3, 4)))
is_str(const char *got, const char *want, const char *fmt, ...)
{
	va_list		ap;
	int			pass = got && want ? strcmp(got, want) == 0 : got == want;

	va_start(ap, fmt);
	tap_vreport(pass, fmt, ap);
	va_end(ap);
	if (!pass)
		printf("#   got: \"%s\"\n#   expected: \"%s\"\n",
			   got ? got : "(null)", want ? want : "(null)");
	return pass;
}

static int
done_testing(void)
{
	printf("1..%d\n", tap_run);
	if (tap_failed)
		printf("# failed %d of %d tests\n", tap_failed, tap_run);
	return tap_failed ? 1 : 0;
}

#endif							/* TAP_GPUMASK_TMP_H */
