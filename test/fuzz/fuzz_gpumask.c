/*
 * fuzz_gpumask.c: libFuzzer target over the GPU mask parser.
 *
 * For any input: parsing must not crash; a failure must point inside the
 * input; a success must format to a canonical text that parses back to the
 * same set and formats to the same text, and its CUDA form must parse back
 * to the same set too.  Build and run (test/evidence/fuzz.sh does both):
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc/core \
 *       test/fuzz/fuzz_gpumask.c src/core/gpumask_core.c -o fuzz_gpumask
 *   ./fuzz_gpumask -max_total_time=60
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpumask_core.h"

#define CHECK(cond) do { if (!(cond)) abort(); } while (0)

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *s = malloc(size + 1);
	char		text[GPUMASK_TEXT_MAX],
				text2[GPUMASK_TEXT_MAX],
				cuda[GPUMASK_TEXT_MAX];
	uint64_t	mask = 0x5a5a,
				back = 0;
	GpuMaskParseError err;
	int			idx[GPUMASK_MAX_GPUS];
	size_t		len;

	CHECK(s != NULL);
	memcpy(s, data, size);
	s[size] = '\0';
	if (gpumask_parse(s, &mask, &err) != GPUMASK_OK)
	{
		/* the mask is untouched, and the error names a part of the input */
		CHECK(mask == 0x5a5a);
		CHECK(err.status != GPUMASK_OK);
		CHECK(err.elem_start <= strlen(s));
		CHECK(err.elem_start + err.elem_len <= strlen(s));
		CHECK(gpumask_status_text(err.status) != NULL);
		free(s);
		return 0;
	}
	len = gpumask_format(mask, text, sizeof(text));
	CHECK(len < sizeof(text) && strlen(text) == len);
	CHECK(gpumask_parse(text, &back, NULL) == GPUMASK_OK && back == mask);
	CHECK(gpumask_format(back, text2, sizeof(text2)) == len && strcmp(text, text2) == 0);
	CHECK(gpumask_format_cuda(mask, cuda, sizeof(cuda)) < sizeof(cuda));
	back = 0;
	CHECK(gpumask_parse(cuda, &back, NULL) == GPUMASK_OK && back == mask);
	CHECK(gpumask_to_indices(mask, idx) == gpumask_popcount(mask));
	/* a truncating buffer still reports the full length, NUL-terminated */
	CHECK(gpumask_format(mask, text2, 4) == len && strlen(text2) < 4);
	free(s);
	return 0;
}
