/*
 * test_gpumask_core.c: unit tests of the plain-C GPU mask core
 * (src/core/gpumask_core.c), without a server.  Prints TAP.
 *
 * Tables of valid and invalid texts, the canonical and CUDA formats, the
 * snprintf-like buffer contract, and randomized round trips: random masks
 * through format/parse, random texts through parse (never a crash; what
 * parses formats and reparses to the same set).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpumask_core.h"
#include "tap.h"

/* xorshift64*: a fixed-seed generator, so a failure reproduces. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

static uint64_t
rng_next(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

static uint64_t
bit(int i)
{
	return GPUMASK_BIT(i);
}

/* Bits lo..hi inclusive, the slow obvious way. */
static uint64_t
bits(int lo, int hi)
{
	uint64_t	m = 0;

	for (int i = lo; i <= hi; i++)
		m |= bit(i);
	return m;
}

/*
 * The text with control characters escaped, for test names (a raw newline
 * would break the TAP line).  Rotating buffers: several per printf.
 */
static const char *
show(const char *s)
{
	static char bufs[4][128];
	static int	next = 0;
	char	   *out = bufs[next++ % 4];
	size_t		n = 0;

	for (; *s && n + 3 < sizeof(bufs[0]); s++)
	{
		const char *esc = NULL;

		switch (*s)
		{
			case '\t': esc = "\\t"; break;
			case '\n': esc = "\\n"; break;
			case '\r': esc = "\\r"; break;
			case '\f': esc = "\\f"; break;
			case '\v': esc = "\\v"; break;
		}
		if (esc)
		{
			out[n++] = esc[0];
			out[n++] = esc[1];
		}
		else
			out[n++] = *s;
	}
	out[n] = '\0';
	return out;
}

static void
test_valid(void)
{
	static const struct
	{
		const char *text;
		uint64_t	mask;
		const char *canonical;
	}			cases[] = {
		{"", 0, ""},
		{" ", 0, ""},
		{"\t\n \r\f\v", 0, ""},
		{"0", 1, "0"},
		{"63", 1ULL << 63, "63"},
		{"0,1", 3, "0,1"},
		{"0-1", 3, "0,1"},
		{"1,0", 3, "0,1"},
		{"0-2", 7, "0-2"},
		{"2,0,1", 7, "0-2"},
		{"0-3,6", 0x4f, "0-3,6"},
		{"6,0-3", 0x4f, "0-3,6"},
		{"3,1,2", 0xe, "1-3"},
		{"1,1,1", 2, "1"},
		{"0-5,2-3", 0x3f, "0-5"},
		{"0-3,4-7", 0xff, "0-7"},
		{"0-63", UINT64_MAX, "0-63"},
		{"5-5", 1u << 5, "5"},
		{" 0 - 3 , 6 ", 0x4f, "0-3,6"},
		{"1,\t2", 6, "1,2"},
		{"007", 1u << 7, "7"},
		{"000000000000000000000000000063", 1ULL << 63, "63"},
		{"0-1,3-4,6-8", 0x1db, "0,1,3,4,6-8"},
		{"62,63", 3ULL << 62, "62,63"},
		{"61-63", 7ULL << 61, "61-63"},
		{"0,2,4,6", 0x55, "0,2,4,6"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		uint64_t	m = 0xdeadbeef;
		char		buf[GPUMASK_TEXT_MAX];
		GpuMaskStatus st = gpumask_parse(cases[i].text, &m, NULL);

		is_int(st, GPUMASK_OK, "parse \"%s\": ok", show(cases[i].text));
		ok(m == cases[i].mask, "parse \"%s\": mask %#llx", show(cases[i].text),
		   (unsigned long long) cases[i].mask);
		gpumask_format(m, buf, sizeof(buf));
		is_str(buf, cases[i].canonical, "format of \"%s\"", show(cases[i].text));
	}
}

static void
test_invalid(void)
{
	static const struct
	{
		const char *text;
		GpuMaskStatus status;
		int			element;
		const char *elem;
		long long	index;
	}			cases[] = {
		{"3-1", GPUMASK_ERR_REVERSED_RANGE, 1, "3-1", 3},
		{"0, 63-62 ", GPUMASK_ERR_REVERSED_RANGE, 2, "63-62", 63},
		{"-1", GPUMASK_ERR_NEGATIVE, 1, "-1", -1},
		{"1,-2", GPUMASK_ERR_NEGATIVE, 2, "-2", -1},
		{"1--2", GPUMASK_ERR_NEGATIVE, 1, "1--2", -1},
		{"- 3", GPUMASK_ERR_NEGATIVE, 1, "- 3", -1},
		{"3-", GPUMASK_ERR_INCOMPLETE_RANGE, 1, "3-", -1},
		{" 3 - ,4", GPUMASK_ERR_INCOMPLETE_RANGE, 1, "3 -", -1},
		{"-", GPUMASK_ERR_SYNTAX, 1, "-", -1},
		{"1-x", GPUMASK_ERR_SYNTAX, 1, "1-x", -1},
		{"a", GPUMASK_ERR_SYNTAX, 1, "a", -1},
		{"1x", GPUMASK_ERR_SYNTAX, 1, "1x", -1},
		{"0x1", GPUMASK_ERR_SYNTAX, 1, "0x1", -1},
		{"+1", GPUMASK_ERR_SYNTAX, 1, "+1", -1},
		{"1.5", GPUMASK_ERR_SYNTAX, 1, "1.5", -1},
		{"1 2", GPUMASK_ERR_SYNTAX, 1, "1 2", -1},
		{"1-2-3", GPUMASK_ERR_SYNTAX, 1, "1-2-3", -1},
		{"1;2", GPUMASK_ERR_SYNTAX, 1, "1;2", -1},
		{"\xef\xbc\x91", GPUMASK_ERR_SYNTAX, 1, "\xef\xbc\x91", -1},
		{",", GPUMASK_ERR_EMPTY_ELEMENT, 1, "", -1},
		{"1,,2", GPUMASK_ERR_EMPTY_ELEMENT, 2, "", -1},
		{"1,", GPUMASK_ERR_EMPTY_ELEMENT, 2, "", -1},
		{",1", GPUMASK_ERR_EMPTY_ELEMENT, 1, "", -1},
		{"1, ,2", GPUMASK_ERR_EMPTY_ELEMENT, 2, "", -1},
		{"64", GPUMASK_ERR_INDEX_TOO_LARGE, 1, "64", 64},
		{"0-64", GPUMASK_ERR_INDEX_TOO_LARGE, 1, "0-64", 64},
		{"1,2,100", GPUMASK_ERR_INDEX_TOO_LARGE, 3, "100", 100},
		{"70-3", GPUMASK_ERR_INDEX_TOO_LARGE, 1, "70-3", 70},
		{"2147483647", GPUMASK_ERR_INDEX_TOO_LARGE, 1, "2147483647", 2147483647LL},
		{"2147483648", GPUMASK_ERR_OVERFLOW, 1, "2147483648", -1},
		{"99999999999999999999999", GPUMASK_ERR_OVERFLOW, 1, "99999999999999999999999", -1},
		{"1-99999999999999999999999", GPUMASK_ERR_OVERFLOW, 1, "1-99999999999999999999999", -1},
		{"1,x,-1,99", GPUMASK_ERR_SYNTAX, 2, "x", -1},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		uint64_t	m = 42;
		GpuMaskParseError err;
		char		elem[64];
		GpuMaskStatus st;

		memset(&err, 0xff, sizeof(err));
		st = gpumask_parse(cases[i].text, &m, &err);
		is_int(st, cases[i].status, "\"%s\" is rejected: %s", show(cases[i].text),
			   gpumask_status_text(cases[i].status));
		is_int(err.status, st, "\"%s\": err.status matches", show(cases[i].text));
		ok(m == 42, "\"%s\": mask untouched on error", show(cases[i].text));
		is_int(err.element, cases[i].element, "\"%s\": element number",
			   show(cases[i].text));
		if (err.elem_start + err.elem_len <= strlen(cases[i].text) &&
			err.elem_len < sizeof(elem))
		{
			memcpy(elem, cases[i].text + err.elem_start, err.elem_len);
			elem[err.elem_len] = '\0';
		}
		else
			strcpy(elem, "(out of bounds)");
		is_str(elem, cases[i].elem, "\"%s\": element text", show(cases[i].text));
		if (cases[i].index >= 0)
			is_int(err.index, cases[i].index, "\"%s\": offending index",
				   show(cases[i].text));
	}

	{
		GpuMaskParseError err;
		uint64_t	m = 0;

		gpumask_parse("5-2", &m, &err);
		ok(err.index == 5 && err.index2 == 2,
		   "reversed range reports start 5 and end 2");
		ok(gpumask_parse("x", &m, NULL) == GPUMASK_ERR_SYNTAX,
		   "a NULL error pointer is allowed");
	}
}

static void
test_format(void)
{
	char		buf[GPUMASK_TEXT_MAX];
	char		small[4];
	size_t		n;

	n = gpumask_format(0, buf, sizeof(buf));
	ok(n == 0 && buf[0] == '\0', "empty mask formats as \"\"");

	n = gpumask_format(UINT64_MAX, buf, sizeof(buf));
	is_str(buf, "0-63", "full mask formats as 0-63");
	is_int((long long) n, 4, "full mask length");

	gpumask_format(bits(10, 12) | bit(20) | bit(21) | bits(30, 39), buf, sizeof(buf));
	is_str(buf, "10-12,20,21,30-39", "two-digit indices and ranges");

	/* Every other GPU: no ranges, the longest kind of canonical text. */
	{
		uint64_t	odd = 0,
					pairs = 0;

		for (int i = 1; i < 64; i += 2)
			odd |= bit(i);
		n = gpumask_format(odd, buf, sizeof(buf));
		ok(n < GPUMASK_TEXT_MAX, "odd GPUs fit GPUMASK_TEXT_MAX (%zu)", n);
		for (int i = 0; i < 64; i += 3)
			pairs |= bit(i) | (i + 1 < 64 ? bit(i + 1) : 0);
		n = gpumask_format(pairs, buf, sizeof(buf));
		ok(n < GPUMASK_TEXT_MAX, "pairs of GPUs fit GPUMASK_TEXT_MAX (%zu)", n);
		ok(strstr(buf, "-") == NULL, "runs of two are written without a dash: %s", buf);
	}

	/* The snprintf contract: full length returned, output truncated. */
	n = gpumask_format(0x4f, small, sizeof(small));
	is_int((long long) n, 5, "truncated format still returns the full length");
	is_str(small, "0-3", "truncated format is NUL-terminated");
	n = gpumask_format(0x4f, NULL, 0);
	is_int((long long) n, 5, "a zero-sized buffer only measures");
	n = gpumask_format_cuda(0xf, small, sizeof(small));
	is_int((long long) n, 7, "truncated CUDA format returns the full length");
	is_str(small, "0,1", "truncated CUDA format is NUL-terminated");

	gpumask_format_cuda(0, buf, sizeof(buf));
	is_str(buf, "", "CUDA list of the empty mask is \"\"");
	gpumask_format_cuda(0xf, buf, sizeof(buf));
	is_str(buf, "0,1,2,3", "CUDA list of 0-3");
	gpumask_format_cuda(bit(0) | bit(9) | bit(10) | bit(63), buf, sizeof(buf));
	is_str(buf, "0,9,10,63", "CUDA list with two-digit indices");
	n = gpumask_format_cuda(UINT64_MAX, buf, sizeof(buf));
	ok(n < GPUMASK_TEXT_MAX && n == strlen(buf),
	   "CUDA list of all 64 GPUs fits GPUMASK_TEXT_MAX (%zu)", n);
	is_int((long long) n, 10 * 2 + 54 * 3 - 1, "CUDA list of all 64 GPUs length");
}

static void
test_counts_and_algebra(void)
{
	int			idx[GPUMASK_MAX_GPUS];
	int			n;

	is_int(gpumask_popcount(0), 0, "popcount of empty");
	is_int(gpumask_popcount(UINT64_MAX), 64, "popcount of full");
	is_int(gpumask_popcount(0x4f), 5, "popcount of 0-3,6");
	is_int(gpumask_popcount(1ULL << 63), 1, "popcount of 63");

	n = gpumask_to_indices(bit(0) | bit(5) | bit(63), idx);
	ok(n == 3 && idx[0] == 0 && idx[1] == 5 && idx[2] == 63,
	   "indices of 0,5,63 in ascending order");
	is_int(gpumask_to_indices(0, idx), 0, "no indices in the empty mask");
	is_int(gpumask_to_indices(UINT64_MAX, idx), 64, "64 indices in the full mask");

	ok(gpumask_union(0x3, 0xc) == 0xf, "union");
	ok(gpumask_intersect(0x7, 0xe) == 0x6, "intersection");
	ok(gpumask_difference(0xf, 0x6) == 0x9, "difference");
	ok(gpumask_is_superset(0xf, 0x6), "0-3 holds 1,2");
	ok(!gpumask_is_superset(0x6, 0xf), "1,2 does not hold 0-3");
	ok(gpumask_is_superset(0x6, 0), "every mask holds the empty mask");
	ok(gpumask_intersects(0x3, 0x2), "0,1 and 1 overlap");
	ok(!gpumask_intersects(0x3, 0xc), "0,1 and 2,3 do not overlap");
	ok(!gpumask_intersects(0, 0), "the empty mask overlaps nothing");

	for (int s = GPUMASK_OK; s <= GPUMASK_ERR_OVERFLOW; s++)
		ok(gpumask_status_text((GpuMaskStatus) s) != NULL &&
		   gpumask_status_text((GpuMaskStatus) s)[0] != '\0',
		   "status %d has a text", s);
}

/* Random masks of varied density: sparse, dense, runs, single bits. */
static uint64_t
random_mask(int kind)
{
	switch (kind % 6)
	{
		case 0:
			return rng_next();
		case 1:
			return rng_next() & rng_next() & rng_next();
		case 2:
			return rng_next() | rng_next() | rng_next();
		case 3:
			{
				int			lo = (int) (rng_next() % 64);
				int			hi = lo + (int) (rng_next() % (uint64_t) (64 - lo));

				return bits(lo, hi) | (rng_next() & rng_next() & rng_next() & rng_next());
			}
		case 4:
			return bit((int) (rng_next() % 64));
		default:
			return ~bit((int) (rng_next() % 64)) & ~bit((int) (rng_next() % 64));
	}
}

static void
test_random_round_trip(void)
{
	const int	rounds = 200000;
	int			bad_canon = 0,
				bad_cuda = 0,
				bad_len = 0,
				bad_count = 0,
				bad_idem = 0;

	for (int r = 0; r < rounds; r++)
	{
		uint64_t	m = random_mask(r);
		uint64_t	back = ~m;
		char		buf[GPUMASK_TEXT_MAX];
		char		buf2[GPUMASK_TEXT_MAX];
		size_t		n = gpumask_format(m, buf, sizeof(buf));

		if (n >= sizeof(buf) || n != strlen(buf))
			bad_len++;
		if (gpumask_parse(buf, &back, NULL) != GPUMASK_OK || back != m)
		{
			if (bad_canon++ < 5)
				printf("# canonical round trip failed for %#llx: \"%s\"\n",
					   (unsigned long long) m, buf);
		}
		gpumask_format(back, buf2, sizeof(buf2));
		if (strcmp(buf, buf2) != 0)
			bad_idem++;

		n = gpumask_format_cuda(m, buf, sizeof(buf));
		back = ~m;
		if (n >= sizeof(buf) || gpumask_parse(buf, &back, NULL) != GPUMASK_OK ||
			back != m)
		{
			if (bad_cuda++ < 5)
				printf("# CUDA list round trip failed for %#llx: \"%s\"\n",
					   (unsigned long long) m, buf);
		}
		if (gpumask_popcount(m) != __builtin_popcountll(m))
			bad_count++;
	}
	is_int(bad_canon, 0, "%d random masks: format then parse gives the mask", rounds);
	is_int(bad_idem, 0, "%d random masks: canonical text is a fixed point", rounds);
	is_int(bad_cuda, 0, "%d random masks: the CUDA list parses back to the mask", rounds);
	is_int(bad_len, 0, "%d random masks: text fits GPUMASK_TEXT_MAX", rounds);
	is_int(bad_count, 0, "%d random masks: popcount agrees with the builtin", rounds);
}

/*
 * Random texts over the grammar's alphabet and a few intruders: parsing
 * never reads outside the text, errors point inside it, and what parses
 * formats to a text that parses to the same set.
 */
static void
test_random_texts(void)
{
	static const char alphabet[] = "0123456789012345,,--  \t6x+";
	const int	rounds = 200000;
	int			bad_bounds = 0,
				bad_reparse = 0,
				parsed = 0;

	for (int r = 0; r < rounds; r++)
	{
		char		text[24];
		int			len = (int) (rng_next() % (sizeof(text) - 1));
		uint64_t	m = 0,
					back = 0;
		GpuMaskParseError err;
		GpuMaskStatus st;

		for (int i = 0; i < len; i++)
			text[i] = alphabet[rng_next() % (sizeof(alphabet) - 1)];
		text[len] = '\0';

		st = gpumask_parse(text, &m, &err);
		if (st != GPUMASK_OK)
		{
			if (err.status != st || err.element < 1 ||
				err.elem_start + err.elem_len > (size_t) len)
				bad_bounds++;
		}
		else
		{
			char		buf[GPUMASK_TEXT_MAX];

			parsed++;
			gpumask_format(m, buf, sizeof(buf));
			if (gpumask_parse(buf, &back, NULL) != GPUMASK_OK || back != m)
				bad_reparse++;
		}
	}
	is_int(bad_bounds, 0, "%d random texts: every error points inside the text", rounds);
	is_int(bad_reparse, 0, "%d random texts: every accepted text reformats and reparses", rounds);
	ok(parsed > 1000, "random texts include many valid ones (%d)", parsed);
}

int
main(void)
{
	test_valid();
	test_invalid();
	test_format();
	test_counts_and_algebra();
	test_random_round_trip();
	test_random_texts();
	return done_testing();
}
