/*
 * fuzz_resvec.c: libFuzzer target over the resvec core parser.
 *
 * For any input: parsing must not crash; when it succeeds, the canonical
 * text must parse back to an equal vector and format to the same text, the
 * result must validate, and the arithmetic on it must keep its invariants
 * (a + b - b = a, a + b @> a, a - a is empty).  Not run in CI; build with
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc/core \
 *       test/fuzz/fuzz_resvec.c src/core/resvec_core.c -o fuzz_resvec
 *   ./fuzz_resvec -max_total_time=60
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "resvec_core.h"

#define CHECK(cond) do { if (!(cond)) abort(); } while (0)

/* Parse s[0..len) into a malloc'd array; NULL on a parse error. */
static RvItem *
parse(const char *s, size_t len, int *n)
{
	RvItem	   *items = malloc(sizeof(RvItem) * rv_parse_max_items(s, len));
	RvError		err;

	CHECK(items != NULL);
	if (rv_parse(s, len, items, n, &err) != RV_OK)
	{
		CHECK(err.status != RV_OK);
		/* views in an error always lie inside the input */
		if (err.token)
			CHECK(err.token >= s && err.token + err.token_len <= s + len);
		if (err.name)
			CHECK(err.name >= s && err.name + err.name_len <= s + len);
		free(items);
		return NULL;
	}
	return items;
}

/* Format into a malloc'd NUL-terminated string. */
static char *
format(const RvItem *items, int n, size_t *len)
{
	size_t		need = rv_format(items, n, NULL, 0);
	char	   *buf = malloc(need + 1);

	CHECK(buf != NULL);
	CHECK(rv_format(items, n, buf, need + 1) == need);
	CHECK(strlen(buf) == need);
	*len = need;
	return buf;
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *) data;
	int			n,
				n2,
				nsum,
				nback;
	RvItem	   *items,
			   *again,
			   *sum,
			   *back;
	char	   *text,
			   *text2;
	size_t		len,
				len2;
	RvError		err;
	int64_t		m;

	/* the quantity parser alone, on the raw bytes */
	(void) rv_parse_quantity(s, size, &m, &err);

	items = parse(s, size, &n);
	if (items == NULL)
		return 0;
	CHECK(rv_validate(items, n, &err) == RV_OK);

	text = format(items, n, &len);
	again = parse(text, len, &n2);
	CHECK(again != NULL);
	CHECK(rv_equal(items, n, again, n2));
	text2 = format(again, n2, &len2);
	CHECK(len == len2 && memcmp(text, text2, len) == 0);

	/* arithmetic invariants with itself and its first half */
	sum = malloc(sizeof(RvItem) * (2 * (size_t) n + 1));
	back = malloc(sizeof(RvItem) * (2 * (size_t) n + 1));
	CHECK(sum && back);
	if (rv_add(items, n, items, n / 2, sum, &nsum, &err) == RV_OK)
	{
		CHECK(rv_validate(sum, nsum, &err) == RV_OK);
		CHECK(rv_contains(sum, nsum, items, n));
		CHECK(rv_sub(sum, nsum, items, n / 2, back, &nback, &err) == RV_OK);
		CHECK(rv_equal(back, nback, items, n));
	}
	else
		CHECK(err.status == RV_ERR_OVERFLOW);
	CHECK(rv_sub(items, n, items, n, back, &nback, &err) == RV_OK && nback == 0);
	CHECK(rv_contains(items, n, items, n));

	free(sum);
	free(back);
	free(text);
	free(text2);
	free(again);
	free(items);
	return 0;
}
