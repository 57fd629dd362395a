/*
 * gpumask_core.c: parse and format GPU masks, in plain C.
 *
 * No PostgreSQL headers here: the scheduler engine, the simulator and the
 * unit tests link this file, and src/gpumask.c turns its status codes into
 * ereport()s.  See gpumask_core.h for the text syntax.
 */
#include "gpumask_core.h"

#include <limits.h>

/* Numbers above this are reported as overflow rather than as an index. */
#define GPUMASK_NUMBER_MAX	INT_MAX

/* Whitespace as the C locale sees it, without depending on the locale. */
static int
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
		c == '\v';
}

static int
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * Read the digits at *p (there is at least one) into *value, advancing *p.
 * Returns 0 when the number exceeds GPUMASK_NUMBER_MAX; the digits are
 * still consumed so the caller can report the element.
 */
static int
read_number(const char **p, const char *end, long long *value)
{
	long long	v = 0;
	int			fits = 1;

	while (*p < end && is_digit(**p))
	{
		if (fits)
		{
			v = v * 10 + (**p - '0');
			if (v > GPUMASK_NUMBER_MAX)
				fits = 0;
		}
		(*p)++;
	}
	*value = fits ? v : -1;
	return fits;
}

static const char *
skip_spaces(const char *p, const char *end)
{
	while (p < end && is_space(*p))
		p++;
	return p;
}

/*
 * Fill *err (when given) and return the status, so that every failure path
 * is one statement.
 */
static GpuMaskStatus
fail(GpuMaskParseError *err, GpuMaskStatus status, const char *text,
	 const char *elem, const char *elem_end, int element,
	 long long index, long long index2)
{
	if (err)
	{
		err->status = status;
		err->elem_start = (size_t) (elem - text);
		err->elem_len = (size_t) (elem_end - elem);
		err->element = element;
		err->index = index;
		err->index2 = index2;
	}
	return status;
}

/*
 * After a minus sign where a number was expected: "-3" is a negative
 * index, anything else ("-", "-x") is plain bad syntax.
 */
static GpuMaskStatus
minus_status(const char *p, const char *end)
{
	p = skip_spaces(p + 1, end);
	return (p < end && is_digit(*p)) ? GPUMASK_ERR_NEGATIVE : GPUMASK_ERR_SYNTAX;
}

/*
 * Parse one element, already trimmed of surrounding whitespace and not
 * empty, into the bits it adds to *bits.
 */
static GpuMaskStatus
parse_element(const char *text, const char *s, const char *e, int element,
			  uint64_t *bits, GpuMaskParseError *err)
{
	const char *p = s;
	long long	lo,
				hi;

	if (*p == '-')
		return fail(err, minus_status(p, e), text, s, e, element, -1, -1);
	if (!is_digit(*p))
		return fail(err, GPUMASK_ERR_SYNTAX, text, s, e, element, -1, -1);
	if (!read_number(&p, e, &lo))
		return fail(err, GPUMASK_ERR_OVERFLOW, text, s, e, element, -1, -1);
	p = skip_spaces(p, e);
	hi = lo;
	if (p < e)
	{
		if (*p != '-')
			return fail(err, GPUMASK_ERR_SYNTAX, text, s, e, element, -1, -1);
		p = skip_spaces(p + 1, e);
		if (p == e)
			return fail(err, GPUMASK_ERR_INCOMPLETE_RANGE, text, s, e,
						element, -1, -1);
		if (*p == '-')
			return fail(err, minus_status(p, e), text, s, e, element, -1, -1);
		if (!is_digit(*p))
			return fail(err, GPUMASK_ERR_SYNTAX, text, s, e, element, -1, -1);
		if (!read_number(&p, e, &hi))
			return fail(err, GPUMASK_ERR_OVERFLOW, text, s, e, element, -1, -1);
		p = skip_spaces(p, e);
		if (p < e)
			return fail(err, GPUMASK_ERR_SYNTAX, text, s, e, element, -1, -1);
	}

	if (lo >= GPUMASK_MAX_GPUS)
		return fail(err, GPUMASK_ERR_INDEX_TOO_LARGE, text, s, e, element,
					lo, -1);
	if (hi >= GPUMASK_MAX_GPUS)
		return fail(err, GPUMASK_ERR_INDEX_TOO_LARGE, text, s, e, element,
					hi, -1);
	if (hi < lo)
		return fail(err, GPUMASK_ERR_REVERSED_RANGE, text, s, e, element,
					lo, hi);

	/* Bits lo..hi inclusive, without shifting by 64. */
	*bits |= (GPUMASK_ALL >> (GPUMASK_MAX_GPUS - 1 - (hi - lo))) << lo;
	return GPUMASK_OK;
}

/*
 * Split the text at commas and parse each element.  Only a text that is
 * empty or all whitespace is the empty set; an empty element anywhere else
 * ("1,,2", ",1", "1,") is an error, since it is most likely a typo.
 */
GpuMaskStatus
gpumask_parse(const char *text, uint64_t *mask, GpuMaskParseError *err)
{
	const char *end = text;
	const char *p;
	uint64_t	bits = 0;
	int			element = 0;

	while (*end)
		end++;

	p = skip_spaces(text, end);
	if (p == end)
	{
		*mask = GPUMASK_EMPTY;
		return GPUMASK_OK;
	}

	p = text;
	for (;;)
	{
		const char *s,
				   *e,
				   *comma;
		GpuMaskStatus st;

		element++;
		comma = p;
		while (comma < end && *comma != ',')
			comma++;

		/* Trim the element [p, comma). */
		s = skip_spaces(p, comma);
		e = comma;
		while (e > s && is_space(e[-1]))
			e--;

		if (s == e)
			return fail(err, GPUMASK_ERR_EMPTY_ELEMENT, text, s, s, element,
						-1, -1);

		st = parse_element(text, s, e, element, &bits, err);
		if (st != GPUMASK_OK)
			return st;

		if (comma == end)
			break;
		p = comma + 1;
	}

	*mask = bits;
	return GPUMASK_OK;
}

/*
 * Append text to buf as snprintf would: count every character, store only
 * those that fit (leaving room for the NUL).
 */
static void
put_str(char *buf, size_t bufsize, size_t *len, const char *s)
{
	for (; *s; s++)
	{
		if (*len + 1 < bufsize)
			buf[*len] = *s;
		(*len)++;
	}
}

static void
put_index(char *buf, size_t bufsize, size_t *len, int i)
{
	char		digits[3];

	if (i >= 10)
	{
		digits[0] = (char) ('0' + i / 10);
		digits[1] = (char) ('0' + i % 10);
		digits[2] = '\0';
	}
	else
	{
		digits[0] = (char) ('0' + i);
		digits[1] = '\0';
	}
	put_str(buf, bufsize, len, digits);
}

static void
terminate(char *buf, size_t bufsize, size_t len)
{
	if (bufsize > 0)
		buf[len < bufsize ? len : bufsize - 1] = '\0';
}

/*
 * Canonical text: ascending; a run of three or more consecutive indices is
 * written "a-b", a run of two "a,b" (a range saves nothing there, and the
 * list form reads as two GPUs at a glance).
 */
size_t
gpumask_format(uint64_t mask, char *buf, size_t bufsize)
{
	size_t		len = 0;
	int			i = 0;

	while (i < GPUMASK_MAX_GPUS)
	{
		int			j;

		if (!(mask & GPUMASK_BIT(i)))
		{
			i++;
			continue;
		}
		j = i;
		while (j + 1 < GPUMASK_MAX_GPUS && (mask & GPUMASK_BIT(j + 1)))
			j++;

		if (len > 0)
			put_str(buf, bufsize, &len, ",");
		put_index(buf, bufsize, &len, i);
		if (j - i >= 2)
		{
			put_str(buf, bufsize, &len, "-");
			put_index(buf, bufsize, &len, j);
		}
		else if (j == i + 1)
		{
			put_str(buf, bufsize, &len, ",");
			put_index(buf, bufsize, &len, j);
		}
		i = j + 1;
	}
	terminate(buf, bufsize, len);
	return len;
}

/* "0,1,2,3": what a launcher exports as CUDA_VISIBLE_DEVICES. */
size_t
gpumask_format_cuda(uint64_t mask, char *buf, size_t bufsize)
{
	size_t		len = 0;
	int			i;

	for (i = 0; i < GPUMASK_MAX_GPUS; i++)
	{
		if (!(mask & GPUMASK_BIT(i)))
			continue;
		if (len > 0)
			put_str(buf, bufsize, &len, ",");
		put_index(buf, bufsize, &len, i);
	}
	terminate(buf, bufsize, len);
	return len;
}

/* Portable popcount (Kernighan): at most 64 rounds, no builtins needed. */
int
gpumask_popcount(uint64_t mask)
{
	int			n = 0;

	while (mask)
	{
		mask &= mask - 1;
		n++;
	}
	return n;
}

int
gpumask_to_indices(uint64_t mask, int *out)
{
	int			n = 0;
	int			i;

	for (i = 0; i < GPUMASK_MAX_GPUS; i++)
		if (mask & GPUMASK_BIT(i))
			out[n++] = i;
	return n;
}

const char *
gpumask_status_text(GpuMaskStatus status)
{
	switch (status)
	{
		case GPUMASK_OK:
			return "ok";
		case GPUMASK_ERR_SYNTAX:
			return "not a GPU index or a range of GPU indices";
		case GPUMASK_ERR_EMPTY_ELEMENT:
			return "empty element";
		case GPUMASK_ERR_NEGATIVE:
			return "negative GPU index";
		case GPUMASK_ERR_INCOMPLETE_RANGE:
			return "range without an end";
		case GPUMASK_ERR_REVERSED_RANGE:
			return "range end below its start";
		case GPUMASK_ERR_INDEX_TOO_LARGE:
			return "GPU index above 63";
		case GPUMASK_ERR_OVERFLOW:
			return "number too large";
	}
	return "unknown error";
}
