/*
 * test_resvec_core.c: unit tests of the plain-C resource vector core.
 *
 * Tables of valid literals with their canonical text, tables of invalid
 * literals with the status they must give, the arithmetic, and a
 * randomized format -> parse round trip.
 */
#include <stdlib.h>
#include <string.h>

#include "resvec_core.h"
#include "tap.h"

#define MAXITEMS 64

/* Input text made printable for a TAP description (blanks escaped). */
static const char *
esc(const char *s)
{
	static char bufs[2][256];
	static int	which = 0;
	char	   *b = bufs[which ^= 1];
	size_t		o = 0;

	for (; *s && o < sizeof(bufs[0]) - 3; s++)
	{
		if (*s == '\n' || *s == '\t')
		{
			b[o++] = '\\';
			b[o++] = *s == '\n' ? 'n' : 't';
		}
		else
			b[o++] = *s;
	}
	b[o] = '\0';
	return b;
}

/* Parse text and format it back; returns the status, text in out. */
static RvStatus
roundtrip(const char *in, char *out, size_t cap, RvError *err)
{
	RvItem		items[MAXITEMS];
	int			n;
	RvStatus	st;

	if (rv_parse_max_items(in, strlen(in)) > MAXITEMS)
		return RV_ERR_QUANTITY;
	st = rv_parse(in, strlen(in), items, &n, err);
	if (st == RV_OK)
		rv_format(items, n, out, cap);
	else
		out[0] = '\0';
	return st;
}

/* Parse text into items (must succeed). */
static int
parse(const char *in, RvItem *items)
{
	int			n = -1;
	RvError		err;

	if (rv_parse(in, strlen(in), items, &n, &err) != RV_OK)
	{
		diag("parse of \"%s\" failed: %s", in, rv_status_name(err.status));
		return -1;
	}
	return n;
}

static const struct
{
	const char *in;
	const char *out;
}			valid[] = {
	{"", ""},
	{"   ", ""},
	{"\t\n ", ""},
	{"cpu=4", "cpu=4"},
	{" cpu = 4 ", "cpu=4"},
	{"cpu=4,gpu=2", "cpu=4, gpu=2"},
	{"gpu=2, cpu=4", "cpu=4, gpu=2"},
	{"cpu=4, memory=16Gi, gpu=2, NVIDIA-H200=2", "NVIDIA-H200=2, cpu=4, gpu=2, memory=17179869184"},
	{"cpu=0", ""},
	{"cpu=0, gpu=1", "gpu=1"},
	{"cpu=0.000", ""},
	{"cpu=0m", ""},
	{"cpu=500m", "cpu=0.5"},
	{"cpu=1m", "cpu=0.001"},
	{"cpu=1000m", "cpu=1"},
	{"cpu=1500m", "cpu=1.5"},
	{"cpu=0.5", "cpu=0.5"},
	{"cpu=0.25", "cpu=0.25"},
	{"cpu=0.125", "cpu=0.125"},
	{"cpu=1.5000", "cpu=1.5"},
	{"cpu=1.000000", "cpu=1"},
	{"cpu=007", "cpu=7"},
	{"cpu=0.001", "cpu=0.001"},
	{"x=1k", "x=1000"},
	{"x=1M", "x=1000000"},
	{"x=1G", "x=1000000000"},
	{"x=1T", "x=1000000000000"},
	{"x=1P", "x=1000000000000000"},
	{"x=1Ki", "x=1024"},
	{"x=1Mi", "x=1048576"},
	{"x=1Gi", "x=1073741824"},
	{"x=1Ti", "x=1099511627776"},
	{"x=1Pi", "x=1125899906842624"},
	{"x=0.5Ki", "x=512"},
	{"x=0.5Gi", "x=536870912"},
	{"x=1.5Gi", "x=1610612736"},
	{"x=0.001Ki", "x=1.024"},
	{"x=0.0005Ki", "x=0.512"},
	{"x=0.000001k", "x=0.001"},
	{"x=1.5k", "x=1500"},
	{"x=0.000000000000000001P", "x=0.001"},
	{"x=9223372036854775.807", "x=9223372036854775.807"},
	{"x=9223372036854775807m", "x=9223372036854775.807"},
	{"x=9223372036854775", "x=9223372036854775"},
	{"x=8Pi", "x=9007199254740992"},
	{"x=9.223372036854775807P", "x=9223372036854775.807"},
	{"nvidia.com/gpu=1", "nvidia.com/gpu=1"},
	{"a_b=1", "a_b=1"},
	{"a-b=1", "a-b=1"},
	{"A=1, a=2", "A=1, a=2"},
	{"b=1, a=1, c=1, B=1", "B=1, a=1, b=1, c=1"},
	{"a=1,b=2,c=3,d=4,e=5", "a=1, b=2, c=3, d=4, e=5"},
	{"0=1", "0=1"},
	{"-=1", "-=1"},
	{"ab=1, a=1", "a=1, ab=1"},
	{"cpu=\t4\t,\tgpu=1", "cpu=4, gpu=1"},
	{"cpu\n=\n4", "cpu=4"},
	{"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk=1",
	"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk=1"},
	{"m=1m", "m=0.001"},
	{"Gi=1Gi", "Gi=1073741824"},
};

static const struct
{
	const char *in;
	RvStatus	st;
	const char *token;			/* expected offending text, or NULL */
	const char *name;			/* expected resource, or NULL */
}			invalid[] = {
	{",", RV_ERR_EMPTY_ENTRY, NULL, NULL},
	{",cpu=1", RV_ERR_EMPTY_ENTRY, NULL, NULL},
	{"cpu=1,", RV_ERR_EMPTY_ENTRY, NULL, NULL},
	{"cpu=1, ", RV_ERR_EMPTY_ENTRY, NULL, NULL},
	{"cpu=1,,gpu=1", RV_ERR_EMPTY_ENTRY, NULL, NULL},
	{"cpu=1, ,gpu=1", RV_ERR_EMPTY_ENTRY, NULL, NULL},
	{"=4", RV_ERR_EMPTY_NAME, "=4", NULL},
	{"cpu=1, =4", RV_ERR_EMPTY_NAME, "=4", NULL},
	{"cp*u=4", RV_ERR_NAME_CHAR, "cp*u", "cp*u"},
	{"cpu!=4", RV_ERR_NAME_CHAR, "cpu!", "cpu!"},
	{"\"cpu\"=4", RV_ERR_NAME_CHAR, "\"cpu\"", NULL},
	{"c:pu=4", RV_ERR_NAME_CHAR, "c:pu", NULL},
	{"c\xc3\xa9=4", RV_ERR_NAME_CHAR, "c\xc3\xa9", NULL},
	{"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl=1", RV_ERR_NAME_TOO_LONG, NULL, NULL},
	{"cpu", RV_ERR_MISSING_EQUALS, NULL, "cpu"},
	{"cpu ", RV_ERR_MISSING_EQUALS, NULL, "cpu"},
	{"cpu 4", RV_ERR_MISSING_EQUALS, "4", "cpu"},
	{"cpu:4", RV_ERR_NAME_CHAR, NULL, NULL},
	{"cpu=", RV_ERR_MISSING_QUANTITY, NULL, "cpu"},
	{"cpu= ", RV_ERR_MISSING_QUANTITY, NULL, "cpu"},
	{"cpu=,gpu=1", RV_ERR_MISSING_QUANTITY, NULL, "cpu"},
	{"cpu=4 gpu=2", RV_ERR_MISSING_COMMA, "gpu=2", "cpu"},
	{"cpu=4 Gi", RV_ERR_MISSING_COMMA, "Gi", "cpu"},
	{"cpu=4;gpu=2", RV_ERR_QUANTITY, "4;gpu=2", "cpu"},
	{"cpu=abc", RV_ERR_QUANTITY, "abc", "cpu"},
	{"cpu=.5", RV_ERR_QUANTITY, ".5", "cpu"},
	{"cpu=4.", RV_ERR_QUANTITY, "4.", "cpu"},
	{"cpu=+4", RV_ERR_QUANTITY, "+4", "cpu"},
	{"cpu=1.5.5", RV_ERR_QUANTITY, "1.5.5", "cpu"},
	{"cpu==4", RV_ERR_QUANTITY, "=4", "cpu"},
	{"cpu=4=5", RV_ERR_QUANTITY, "4=5", "cpu"},
	{"cpu=1_000", RV_ERR_QUANTITY, "1_000", "cpu"},
	{"cpu=4Qi", RV_ERR_SUFFIX, "4Qi", "cpu"},
	{"cpu=4K", RV_ERR_SUFFIX, "4K", "cpu"},
	{"cpu=4ki", RV_ERR_SUFFIX, "4ki", "cpu"},
	{"cpu=4mi", RV_ERR_SUFFIX, "4mi", "cpu"},
	{"cpu=4Gib", RV_ERR_SUFFIX, "4Gib", "cpu"},
	{"cpu=4GB", RV_ERR_SUFFIX, "4GB", "cpu"},
	{"cpu=1e3", RV_ERR_SUFFIX, "1e3", "cpu"},
	{"cpu=0x10", RV_ERR_SUFFIX, "0x10", "cpu"},
	{"cpu=4u", RV_ERR_SUFFIX, "4u", "cpu"},
	{"cpu=NaN", RV_ERR_QUANTITY, "NaN", "cpu"},
	{"cpu=Infinity", RV_ERR_QUANTITY, "Infinity", "cpu"},
	{"cpu=-1", RV_ERR_NEGATIVE, "-1", "cpu"},
	{"cpu=-0", RV_ERR_NEGATIVE, "-0", "cpu"},
	{"cpu=-1Gi", RV_ERR_NEGATIVE, "-1Gi", "cpu"},
	{"cpu=1.0005", RV_ERR_PRECISION, "1.0005", "cpu"},
	{"cpu=0.0001", RV_ERR_PRECISION, "0.0001", "cpu"},
	{"cpu=0.5m", RV_ERR_PRECISION, "0.5m", "cpu"},
	{"cpu=1.1m", RV_ERR_PRECISION, "1.1m", "cpu"},
	{"cpu=0.0000001k", RV_ERR_PRECISION, "0.0000001k", "cpu"},
	{"cpu=0.0001Ki", RV_ERR_PRECISION, "0.0001Ki", "cpu"},
	{"cpu=0.1234567890123456789", RV_ERR_TOO_MANY_DIGITS, NULL, "cpu"},
	{"cpu=9223372036854775.808", RV_ERR_OVERFLOW, NULL, "cpu"},
	{"cpu=9223372036854776", RV_ERR_OVERFLOW, NULL, "cpu"},
	{"cpu=9223372036854775808m", RV_ERR_OVERFLOW, NULL, "cpu"},
	{"cpu=99999999999999999999999", RV_ERR_OVERFLOW, NULL, "cpu"},
	{"cpu=9224P", RV_ERR_OVERFLOW, NULL, "cpu"},
	{"cpu=8192Pi", RV_ERR_OVERFLOW, NULL, "cpu"},
	{"cpu=9Pi", RV_ERR_OVERFLOW, NULL, "cpu"},
	{"cpu=9.223372036854775808P", RV_ERR_OVERFLOW, NULL, "cpu"},
	{"cpu=9223372036854776k", RV_ERR_OVERFLOW, NULL, "cpu"},
	{"cpu=1, cpu=2", RV_ERR_DUPLICATE, NULL, "cpu"},
	{"cpu=0, cpu=0", RV_ERR_DUPLICATE, NULL, "cpu"},
	{"a=1, b=1, a=1", RV_ERR_DUPLICATE, NULL, "a"},
};

/* Compare a (name, len) view with a C string. */
static int
view_is(const char *p, size_t len, const char *want)
{
	return p != NULL && strlen(want) == len && memcmp(p, want, len) == 0;
}

static void
test_literals(void)
{
	size_t		i;
	char		buf[512],
				buf2[512];
	RvError		err;

	for (i = 0; i < sizeof(valid) / sizeof(valid[0]); i++)
	{
		RvStatus	st = roundtrip(valid[i].in, buf, sizeof(buf), &err);

		if (!ok(st == RV_OK, "valid \"%s\" parses", esc(valid[i].in)))
			diag("  status %s", rv_status_name(err.status));
		is_str(buf, valid[i].out, "\"%s\" formats canonically", esc(valid[i].in));
		st = roundtrip(buf, buf2, sizeof(buf2), &err);
		ok(st == RV_OK && strcmp(buf, buf2) == 0, "\"%s\" reads back equal", buf);
	}
	for (i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++)
	{
		RvStatus	st = roundtrip(invalid[i].in, buf, sizeof(buf), &err);

		is_str(rv_status_name(st), rv_status_name(invalid[i].st),
			   "invalid \"%s\" gives %s", invalid[i].in, rv_status_name(invalid[i].st));
		if (invalid[i].token)
			ok(view_is(err.token, err.token_len, invalid[i].token),
			   "\"%s\": error names \"%s\"", invalid[i].in, invalid[i].token);
		if (invalid[i].name)
			ok(view_is(err.name, err.name_len, invalid[i].name),
			   "\"%s\": error names resource \"%s\"", invalid[i].in, invalid[i].name);
	}

	/* details */
	roundtrip("cpu=4Qi", buf, sizeof(buf), &err);
	ok(view_is(err.suffix, err.suffix_len, "Qi"), "unknown suffix is reported");
	is_int((int64_t) err.position, 5, "position of the unknown suffix");
	roundtrip("cp*u=4", buf, sizeof(buf), &err);
	is_int(err.bad_char, '*', "refused name byte is reported");
	roundtrip("cpu=1,  ,", buf, sizeof(buf), &err);
	is_int((int64_t) err.position, 8, "position of the empty entry");
}

static void
test_quantity(void)
{
	int64_t		m = -1;
	RvError		err;
	char		buf[RV_QUANTITY_BUFSZ];

	is_int(rv_parse_quantity("16Gi", 4, &m, &err), RV_OK, "16Gi parses");
	is_int(m, INT64_C(17179869184000), "16Gi in milli");
	is_int(rv_parse_quantity("250m", 4, &m, &err), RV_OK, "250m parses");
	is_int(m, 250, "250m in milli");
	is_int(rv_parse_quantity("4", 1, &m, &err), RV_OK, "4 parses");
	is_int(m, 4000, "4 in milli");
	is_int(rv_parse_quantity("", 0, &m, &err), RV_ERR_MISSING_QUANTITY, "empty quantity");
	is_int(rv_parse_quantity("4Qi", 3, &m, &err), RV_ERR_SUFFIX, "bad suffix");

	rv_format_quantity(0, buf);
	is_str(buf, "0", "format 0");
	rv_format_quantity(1, buf);
	is_str(buf, "0.001", "format 1m");
	rv_format_quantity(10, buf);
	is_str(buf, "0.01", "format 10m");
	rv_format_quantity(100, buf);
	is_str(buf, "0.1", "format 100m");
	rv_format_quantity(1500, buf);
	is_str(buf, "1.5", "format 1.5");
	rv_format_quantity(INT64_MAX, buf);
	is_str(buf, "9223372036854775.807", "format the largest");
	rv_format_quantity(-1500, buf);
	is_str(buf, "-1.5", "format a negative (never stored, but defined)");
	rv_format_quantity(INT64_MIN, buf);
	is_str(buf, "-9223372036854775.808", "format INT64_MIN without overflow");
}

static void
test_names(void)
{
	char		name[RV_NAME_MAX + 2];
	RvError		err;

	memset(name, 'a', sizeof(name));
	is_int(rv_check_name(name, RV_NAME_MAX, &err), RV_OK, "63-byte name is fine");
	is_int(rv_check_name(name, RV_NAME_MAX + 1, &err), RV_ERR_NAME_TOO_LONG, "64-byte name is too long");
	is_int(rv_check_name("", 0, &err), RV_ERR_EMPTY_NAME, "empty name");
	is_int(rv_check_name("a b", 3, &err), RV_ERR_NAME_CHAR, "blank in name");
	is_int(rv_check_name("a\0b", 3, &err), RV_ERR_NAME_CHAR, "NUL in name");
	ok(rv_name_char_ok('/') && rv_name_char_ok('.') && rv_name_char_ok('_') &&
	   rv_name_char_ok('-') && rv_name_char_ok('Z') && rv_name_char_ok('9'),
	   "allowed name characters");
	ok(!rv_name_char_ok('=') && !rv_name_char_ok(',') && !rv_name_char_ok(' ') &&
	   !rv_name_char_ok(0x80) && !rv_name_char_ok('"'), "refused name characters");
	is_int(rv_name_cmp("a", 1, "ab", 2), -1, "prefix sorts first");
	is_int(rv_name_cmp("B", 1, "a", 1), -1, "byte order: upper case first");
	is_int(rv_name_cmp("ab", 2, "ab", 2), 0, "equal names");
}

static void
test_arith(void)
{
	RvItem		a[MAXITEMS],
				b[MAXITEMS],
				r[2 * MAXITEMS];
	int			na,
				nb,
				nr;
	RvError		err;
	char		buf[512];

	na = parse("cpu=4, memory=16Gi, gpu=2", a);
	nb = parse("cpu=1.5, rdma=1", b);
	is_int(rv_add(a, na, b, nb, r, &nr, &err), RV_OK, "add");
	rv_format(r, nr, buf, sizeof(buf));
	is_str(buf, "cpu=5.5, gpu=2, memory=17179869184, rdma=1", "add result");
	is_int(rv_add(a, na, a, 0, r, &nr, &err), RV_OK, "add empty");
	is_int(nr, na, "adding empty keeps size");
	is_int(rv_sub(a, na, b, nb, r, &nr, &err), RV_ERR_BELOW_ZERO, "sub below zero (missing name)");
	ok(view_is(err.name, err.name_len, "rdma"), "below zero names rdma");
	is_int(err.left, 0, "left is 0");
	is_int(err.right, 1000, "right is 1");
	nb = parse("cpu=4.5", b);
	is_int(rv_sub(a, na, b, nb, r, &nr, &err), RV_ERR_BELOW_ZERO, "sub below zero (cpu)");
	ok(view_is(err.name, err.name_len, "cpu"), "below zero names cpu");
	nb = parse("cpu=4, gpu=1", b);
	is_int(rv_sub(a, na, b, nb, r, &nr, &err), RV_OK, "sub");
	rv_format(r, nr, buf, sizeof(buf));
	is_str(buf, "gpu=1, memory=17179869184", "sub drops zeros");
	is_int(rv_sub(a, na, a, na, r, &nr, &err), RV_OK, "a - a");
	is_int(nr, 0, "a - a is empty");

	na = parse("x=9223372036854775.807", a);
	nb = parse("x=0.001", b);
	is_int(rv_add(a, na, b, nb, r, &nr, &err), RV_ERR_OVERFLOW, "add overflow");
	ok(view_is(err.name, err.name_len, "x"), "overflow names x");
	is_int(rv_scale_int(b, nb, INT64_MAX, r, &nr, &err), RV_OK, "scale to the max");
	is_int(r[0].milli, INT64_MAX, "scaled value");
	is_int(rv_scale_int(a, na, 2, r, &nr, &err), RV_ERR_OVERFLOW, "scale overflow");
	is_int(rv_scale_int(a, na, -1, r, &nr, &err), RV_ERR_NEGATIVE, "scale negative");
	is_int(rv_scale_int(a, na, 0, r, &nr, &err), RV_OK, "scale by zero");
	is_int(nr, 0, "scale by zero is empty");
	na = parse("cpu=1.5, gpu=2", a);
	is_int(rv_scale_int(a, na, 3, r, &nr, &err), RV_OK, "scale by 3");
	rv_format(r, nr, buf, sizeof(buf));
	is_str(buf, "cpu=4.5, gpu=6", "scale result");

	na = parse("cpu=4, gpu=2, memory=8Gi", a);
	nb = parse("cpu=4, gpu=1", b);
	ok(rv_contains(a, na, b, nb), "a @> b");
	ok(!rv_contains(b, nb, a, na), "not b @> a");
	ok(rv_contains(a, na, a, 0), "a @> empty");
	ok(rv_contains(a, 0, a, 0), "empty @> empty");
	ok(!rv_contains(a, 0, b, nb), "not empty @> b");
	nb = parse("rdma=1", b);
	ok(!rv_contains(a, na, b, nb), "missing name means zero");
	nb = parse("cpu=4.001", b);
	ok(!rv_contains(a, na, b, nb), "one milli too many");
	nb = parse("zzz=1", b);
	ok(!rv_contains(a, na, b, nb), "name after all of a's");

	is_int(rv_get(a, na, "gpu", 3), 2000, "get gpu");
	is_int(rv_get(a, na, "memory", 6), INT64_C(8589934592000), "get memory");
	is_int(rv_get(a, na, "rdma", 4), 0, "get missing");
	is_int(rv_get(a, 0, "cpu", 3), 0, "get from empty");

	nb = parse("memory=8Gi, gpu=2, cpu=4", b);
	ok(rv_equal(a, na, b, nb), "equal regardless of input order");
	is_int(rv_cmp(a, na, b, nb), 0, "cmp equal");
	nb = parse("cpu=4, gpu=2", b);
	is_int(rv_cmp(b, nb, a, na), -1, "prefix sorts first");
	nb = parse("cpu=4, gpu=3", b);
	is_int(rv_cmp(a, na, b, nb), -1, "smaller quantity first");
	ok(!rv_equal(a, na, b, nb), "not equal");
}

static void
test_canonicalize_validate(void)
{
	RvItem		it[4];
	int			n;
	RvError		err;

	it[0] = (RvItem) {"gpu", 3, 1000};
	it[1] = (RvItem) {"cpu", 3, 0};
	it[2] = (RvItem) {"a", 1, 5};
	n = 3;
	is_int(rv_canonicalize(it, &n, &err), RV_OK, "canonicalize");
	is_int(n, 2, "zero dropped");
	ok(view_is(it[0].name, it[0].len, "a") && view_is(it[1].name, it[1].len, "gpu"), "sorted");
	is_int(rv_validate(it, n, &err), RV_OK, "canonical validates");

	it[0] = (RvItem) {"gpu", 3, 1000};
	it[1] = (RvItem) {"cpu", 3, 1000};
	is_int(rv_validate(it, 2, &err), RV_ERR_UNSORTED, "unsorted refused");
	it[1] = (RvItem) {"gpu", 3, 1000};
	is_int(rv_validate(it, 2, &err), RV_ERR_DUPLICATE, "duplicate refused");
	it[1] = (RvItem) {"hpu", 3, 0};
	is_int(rv_validate(it, 2, &err), RV_ERR_ZERO, "zero refused");
	it[1] = (RvItem) {"hpu", 3, -1};
	is_int(rv_validate(it, 2, &err), RV_ERR_NEGATIVE, "negative refused");
	it[1] = (RvItem) {"h u", 3, 1};
	is_int(rv_validate(it, 2, &err), RV_ERR_NAME_CHAR, "bad name refused");
	it[1] = (RvItem) {"", 0, 1};
	is_int(rv_validate(it, 2, &err), RV_ERR_EMPTY_NAME, "empty name refused");

	it[0] = (RvItem) {"gpu", 3, 1000};
	it[1] = (RvItem) {"gpu", 3, 1000};
	n = 2;
	is_int(rv_canonicalize(it, &n, &err), RV_ERR_DUPLICATE, "canonicalize refuses duplicates");
	it[1] = (RvItem) {"cpu", 3, -5};
	n = 2;
	is_int(rv_canonicalize(it, &n, &err), RV_ERR_NEGATIVE, "canonicalize refuses negatives");
	ok(view_is(err.name, err.name_len, "cpu"), "negative names cpu");
}

/* Random canonical vectors: format, parse back, compare. */
static void
test_random_roundtrip(void)
{
	static const char alphabet[] = "abcXYZ019._/-";
	static const char *suffixes[] = {"", "m", "k", "M", "G", "Ki", "Mi", "Gi"};
	int			iter,
				bad = 0,
				badsum = 0;
	char		names[MAXITEMS][RV_NAME_MAX + 1];
	RvItem		it[MAXITEMS],
				back[MAXITEMS];
	char		buf[MAXITEMS * 100];

	srand(20261122);
	for (iter = 0; iter < 2000; iter++)
	{
		int			n = rand() % 12,
					i,
					nb;
		size_t		len;
		RvError		err;

		for (i = 0; i < n; i++)
		{
			int			l = 1 + rand() % (i % 3 == 0 ? RV_NAME_MAX : 6),
						k;

			for (k = 0; k < l; k++)
				names[i][k] = alphabet[rand() % (sizeof(alphabet) - 1)];
			names[i][l] = '\0';
			it[i].name = names[i];
			it[i].len = (uint32_t) l;
			switch (rand() % 4)
			{
				case 0:
					it[i].milli = rand() % 4000;
					break;
				case 1:
					it[i].milli = (int64_t) (rand() % 1000) * 1000;
					break;
				case 2:
					it[i].milli = ((int64_t) rand() << 31) ^ rand();
					break;
				default:
					it[i].milli = INT64_MAX - rand() % 1000;
					break;
			}
		}
		if (rv_canonicalize(it, &n, &err) != RV_OK)
			continue;			/* random duplicate name */
		len = rv_format(it, n, buf, sizeof(buf));
		if (len >= sizeof(buf) ||
			rv_parse(buf, len, back, &nb, &err) != RV_OK ||
			!rv_equal(it, n, back, nb) ||
			rv_validate(back, nb, &err) != RV_OK)
		{
			if (bad++ < 5)
				diag("round trip failed for \"%s\"", buf);
		}
	}
	is_int(bad, 0, "2000 random vectors round-trip through text");

	/* Random quantities with suffixes: parse, format, parse equal. */
	for (iter = 0; iter < 3000; iter++)
	{
		char		q[64],
					f[RV_QUANTITY_BUFSZ];
		int64_t		m1,
					m2;
		RvError		err;
		const char *suf = suffixes[rand() % 8];

		snprintf(q, sizeof(q), "%d.%03d%s", rand() % 100000, rand() % 1000, suf);
		if (rv_parse_quantity(q, strlen(q), &m1, &err) != RV_OK)
		{
			/* only "m" with a fraction can be finer than a milli */
			if (strcmp(suf, "m") != 0 || err.status != RV_ERR_PRECISION)
				badsum++;
			continue;
		}
		rv_format_quantity(m1, f);
		if (rv_parse_quantity(f, strlen(f), &m2, &err) != RV_OK || m1 != m2)
			badsum++;
	}
	is_int(badsum, 0, "3000 random suffixed quantities round-trip");
}

/* Truncated output buffers stay NUL-terminated and report the full size. */
static void
test_format_truncation(void)
{
	RvItem		it[4];
	int			n = parse("cpu=4, gpu=2", it);
	char		small[6];

	is_int((int64_t) rv_format(it, n, small, sizeof(small)), 12, "full length reported");
	is_str(small, "cpu=4", "truncated text is terminated");
	is_int((int64_t) rv_format(it, n, NULL, 0), 12, "length only");
	is_int((int64_t) rv_parse_max_items("a=1,b=2,,", 9), 4, "max items counts commas");
}

/*
 * + and * at the int64 limits (the engine sums what these produce): exact
 * up to INT64_MAX, an error one milli past it, never a wrap; also for
 * operands that are not canonical (negative items a caller did not
 * validate), which used to overflow inside the overflow test itself.
 */
static void
test_arith_limits(void)
{
	RvItem		a[MAXITEMS],
				b[MAXITEMS],
				r[2 * MAXITEMS];
	int			na,
				nb,
				nr;
	RvError		err;
	RvItem		neg = {"x", 1, -1};
	RvItem		big = {"x", 1, INT64_MAX};
	RvItem		low = {"x", 1, INT64_MIN + 1};

	na = parse("x=9223372036854775.806", a);
	nb = parse("x=0.001", b);
	is_int(rv_add(a, na, b, nb, r, &nr, &err), RV_OK, "INT64_MAX - 1 + 1 milli");
	is_int(r[0].milli, INT64_MAX, "is exactly INT64_MAX");
	is_int(rv_add(r, nr, b, nb, a, &na, &err), RV_ERR_OVERFLOW, "one more milli overflows");
	is_int(err.left, INT64_MAX, "error keeps the left operand");
	is_int(err.right, 1, "and the right one");

	/* half the maximum twice fits; three times does not */
	na = parse("x=4611686018427387.903", a);
	is_int(rv_add(a, na, a, na, r, &nr, &err), RV_OK, "MAX/2 + MAX/2");
	is_int(r[0].milli, INT64_MAX - 1, "= INT64_MAX - 1");
	is_int(rv_add(r, nr, a, na, b, &nb, &err), RV_ERR_OVERFLOW, "+ MAX/2 again overflows");
	is_int(rv_scale_int(a, na, 2, r, &nr, &err), RV_OK, "MAX/2 x 2");
	is_int(rv_scale_int(a, na, 3, r, &nr, &err), RV_ERR_OVERFLOW, "MAX/2 x 3 overflows");

	/* 10000 replicas of a request near the maximum */
	na = parse("cpu=922337203685.477", a);
	is_int(rv_scale_int(a, na, 10000, r, &nr, &err), RV_OK, "MAX/10000 x 10000 fits");
	is_int(r[0].milli, INT64_C(9223372036854770000), "exactly");
	na = parse("cpu=922337203685.478", a);
	is_int(rv_scale_int(a, na, 10000, r, &nr, &err), RV_ERR_OVERFLOW, "one milli more x 10000 overflows");
	ok(view_is(err.name, err.name_len, "cpu"), "overflow names cpu");
	is_int(err.right, 10000, "and the factor");

	/* operands that are not canonical: reported, not wrapped */
	is_int(rv_add(&big, 1, &neg, 1, r, &nr, &err), RV_OK, "INT64_MAX + (-1): no false overflow");
	is_int(r[0].milli, INT64_MAX - 1, "= INT64_MAX - 1");
	is_int(rv_add(&low, 1, &low, 1, r, &nr, &err), RV_ERR_OVERFLOW, "two near-INT64_MIN items: overflow, no wrap");
	is_int(rv_sub(&big, 1, &neg, 1, r, &nr, &err), RV_ERR_OVERFLOW, "INT64_MAX - (-1): overflow, no wrap");
	is_int(rv_scale_int(&low, 1, 2, r, &nr, &err), RV_ERR_OVERFLOW, "near-INT64_MIN x 2: overflow, no wrap");
	is_int(rv_scale_int(&big, 1, 1, r, &nr, &err), RV_OK, "INT64_MAX x 1");
	is_int(r[0].milli, INT64_MAX, "unchanged");
}

int
main(void)
{
	test_literals();
	test_quantity();
	test_names();
	test_arith();
	test_arith_limits();
	test_canonicalize_validate();
	test_random_roundtrip();
	test_format_truncation();
	return done_testing();
}
