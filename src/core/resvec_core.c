/*
 * resvec_core.c: parse, format and combine resource vectors (plain C).
 *
 * See resvec_core.h for the model.  Quantities are exact: every value is a
 * whole number of milli-units in an int64, and any operation whose result
 * would not fit is refused with RV_ERR_OVERFLOW instead of wrapping.
 */
#include "resvec_core.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Suffixes and the milli-units one unit with that suffix is worth. */
typedef struct RvSuffix
{
	const char *text;
	int64_t		milli;
} RvSuffix;

static const RvSuffix rv_suffixes[] = {
	{"m", 1},
	{"k", INT64_C(1000) * 1000},
	{"M", INT64_C(1000) * 1000 * 1000},
	{"G", INT64_C(1000) * 1000 * 1000 * 1000},
	{"T", INT64_C(1000) * 1000 * 1000 * 1000 * 1000},
	{"P", INT64_C(1000) * 1000 * 1000 * 1000 * 1000 * 1000},
	{"Ki", INT64_C(1024) * 1000},
	{"Mi", INT64_C(1024) * 1024 * 1000},
	{"Gi", INT64_C(1024) * 1024 * 1024 * 1000},
	{"Ti", INT64_C(1024) * 1024 * 1024 * 1024 * 1000},
	{"Pi", INT64_C(1024) * 1024 * 1024 * 1024 * 1024 * 1000},
};

#define RV_NSUFFIXES (sizeof(rv_suffixes) / sizeof(rv_suffixes[0]))

const char *
rv_status_name(RvStatus status)
{
	switch (status)
	{
		case RV_OK:
			return "RV_OK";
		case RV_ERR_EMPTY_ENTRY:
			return "RV_ERR_EMPTY_ENTRY";
		case RV_ERR_EMPTY_NAME:
			return "RV_ERR_EMPTY_NAME";
		case RV_ERR_NAME_CHAR:
			return "RV_ERR_NAME_CHAR";
		case RV_ERR_NAME_TOO_LONG:
			return "RV_ERR_NAME_TOO_LONG";
		case RV_ERR_MISSING_EQUALS:
			return "RV_ERR_MISSING_EQUALS";
		case RV_ERR_MISSING_QUANTITY:
			return "RV_ERR_MISSING_QUANTITY";
		case RV_ERR_MISSING_COMMA:
			return "RV_ERR_MISSING_COMMA";
		case RV_ERR_QUANTITY:
			return "RV_ERR_QUANTITY";
		case RV_ERR_SUFFIX:
			return "RV_ERR_SUFFIX";
		case RV_ERR_NEGATIVE:
			return "RV_ERR_NEGATIVE";
		case RV_ERR_PRECISION:
			return "RV_ERR_PRECISION";
		case RV_ERR_TOO_MANY_DIGITS:
			return "RV_ERR_TOO_MANY_DIGITS";
		case RV_ERR_OVERFLOW:
			return "RV_ERR_OVERFLOW";
		case RV_ERR_DUPLICATE:
			return "RV_ERR_DUPLICATE";
		case RV_ERR_UNSORTED:
			return "RV_ERR_UNSORTED";
		case RV_ERR_ZERO:
			return "RV_ERR_ZERO";
		case RV_ERR_BELOW_ZERO:
			return "RV_ERR_BELOW_ZERO";
	}
	return "RV_ERR_UNKNOWN";
}

/* Clear an error record and set its status; returns the status. */
static RvStatus
rv_fail(RvError *err, RvStatus status)
{
	if (err)
	{
		memset(err, 0, sizeof(*err));
		err->status = status;
	}
	return status;
}

static bool
rv_is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static bool
rv_is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static bool
rv_is_alpha(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

bool
rv_name_char_ok(unsigned char c)
{
	return rv_is_alpha(c) || rv_is_digit(c) ||
		c == '.' || c == '_' || c == '/' || c == '-';
}

RvStatus
rv_check_name(const char *name, size_t len, RvError *err)
{
	size_t		i;

	if (len == 0)
		return rv_fail(err, RV_ERR_EMPTY_NAME);
	for (i = 0; i < len; i++)
	{
		if (!rv_name_char_ok((unsigned char) name[i]))
		{
			rv_fail(err, RV_ERR_NAME_CHAR);
			if (err)
			{
				err->name = name;
				err->name_len = len;
				err->token = name;
				err->token_len = len;
				err->bad_char = (unsigned char) name[i];
			}
			return RV_ERR_NAME_CHAR;
		}
	}
	if (len > RV_NAME_MAX)
	{
		rv_fail(err, RV_ERR_NAME_TOO_LONG);
		if (err)
		{
			err->name = name;
			err->name_len = len;
			err->token = name;
			err->token_len = len;
		}
		return RV_ERR_NAME_TOO_LONG;
	}
	return RV_OK;
}

/* Greatest common divisor of two positive numbers. */
static int64_t
rv_gcd(int64_t a, int64_t b)
{
	while (b != 0)
	{
		int64_t		t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* Fill the token part of an error for a quantity. */
static RvStatus
rv_quantity_fail(RvError *err, RvStatus status, const char *s, size_t len)
{
	rv_fail(err, status);
	if (err)
	{
		err->token = s;
		err->token_len = len;
	}
	return status;
}

RvStatus
rv_parse_quantity(const char *s, size_t len, int64_t *milli, RvError *err)
{
	size_t		i = 0,
				int_start,
				int_end,
				frac_start,
				frac_end,
				k;
	const RvSuffix *suffix = NULL;
	int64_t		mult = RV_MILLI;
	int64_t		ipart = 0,
				fpart = 0,
				pow10 = 1,
				whole,
				frac_milli,
				g;
	int			nfrac;

	if (len == 0)
		return rv_quantity_fail(err, RV_ERR_MISSING_QUANTITY, s, len);
	if (s[0] == '-')
		return rv_quantity_fail(err, RV_ERR_NEGATIVE, s, len);

	/* Syntax first: digits [. digits] [suffix]. */
	int_start = i;
	while (i < len && rv_is_digit((unsigned char) s[i]))
		i++;
	int_end = i;
	if (int_end == int_start)
		return rv_quantity_fail(err, RV_ERR_QUANTITY, s, len);
	frac_start = frac_end = i;
	if (i < len && s[i] == '.')
	{
		i++;
		frac_start = i;
		while (i < len && rv_is_digit((unsigned char) s[i]))
			i++;
		frac_end = i;
		if (frac_end == frac_start)
			return rv_quantity_fail(err, RV_ERR_QUANTITY, s, len);
	}
	if (i < len)
	{
		for (k = 0; k < RV_NSUFFIXES; k++)
		{
			size_t		sl = strlen(rv_suffixes[k].text);

			if (sl == len - i && memcmp(s + i, rv_suffixes[k].text, sl) == 0)
			{
				suffix = &rv_suffixes[k];
				break;
			}
		}
		if (suffix == NULL)
		{
			if (!rv_is_alpha((unsigned char) s[i]))
				return rv_quantity_fail(err, RV_ERR_QUANTITY, s, len);
			rv_quantity_fail(err, RV_ERR_SUFFIX, s, len);
			if (err)
			{
				err->suffix = s + i;
				err->suffix_len = len - i;
			}
			return RV_ERR_SUFFIX;
		}
		mult = suffix->milli;
	}

	/* Trailing fractional zeros say nothing: 1.5000 is 1.5. */
	while (frac_end > frac_start && s[frac_end - 1] == '0')
		frac_end--;
	nfrac = (int) (frac_end - frac_start);
	if (nfrac > RV_MAX_FRAC_DIGITS)
		return rv_quantity_fail(err, RV_ERR_TOO_MANY_DIGITS, s, len);

	for (k = int_start; k < int_end; k++)
	{
		int			d = s[k] - '0';

		if (ipart > (INT64_MAX - d) / 10)
			return rv_quantity_fail(err, RV_ERR_OVERFLOW, s, len);
		ipart = ipart * 10 + d;
	}
	for (k = frac_start; k < frac_end; k++)
	{
		fpart = fpart * 10 + (s[k] - '0');
		pow10 *= 10;
	}

	if (ipart != 0 && ipart > INT64_MAX / mult)
		return rv_quantity_fail(err, RV_ERR_OVERFLOW, s, len);
	whole = ipart * mult;

	/*
	 * fpart / pow10 * mult must be whole: with g = gcd(mult, pow10), that
	 * holds exactly when pow10 / g divides fpart.  The result is below
	 * mult, so it cannot overflow.
	 */
	g = rv_gcd(mult, pow10);
	if (fpart % (pow10 / g) != 0)
		return rv_quantity_fail(err, RV_ERR_PRECISION, s, len);
	frac_milli = (fpart / (pow10 / g)) * (mult / g);

	if (whole > INT64_MAX - frac_milli)
		return rv_quantity_fail(err, RV_ERR_OVERFLOW, s, len);
	*milli = whole + frac_milli;
	return RV_OK;
}

size_t
rv_parse_max_items(const char *str, size_t len)
{
	size_t		n = 1,
				i;

	for (i = 0; i < len; i++)
		if (str[i] == ',')
			n++;
	return n;
}

/* qsort comparator for items by name. */
static int
rv_item_cmp(const void *a, const void *b)
{
	const RvItem *x = (const RvItem *) a;
	const RvItem *y = (const RvItem *) b;

	return rv_name_cmp(x->name, x->len, y->name, y->len);
}

/* Length of the run of bytes from s[p] that are not blank and not ','. */
static size_t
rv_token_len(const char *s, size_t len, size_t p)
{
	size_t		q = p;

	while (q < len && !rv_is_space((unsigned char) s[q]) && s[q] != ',')
		q++;
	return q - p;
}

RvStatus
rv_parse(const char *s, size_t len, RvItem *out, int *nout, RvError *err)
{
	size_t		p = 0;
	int			n = 0;
	RvStatus	st;

	*nout = 0;
	while (p < len && rv_is_space((unsigned char) s[p]))
		p++;
	if (p == len)
		return RV_OK;

	for (;;)
	{
		size_t		ns = p,
					nl,
					qs,
					ql;
		int64_t		milli;

		/* name */
		while (p < len && !rv_is_space((unsigned char) s[p]) &&
			   s[p] != '=' && s[p] != ',')
			p++;
		nl = p - ns;
		if (nl == 0)
		{
			if (s[p] == ',')
			{
				rv_fail(err, RV_ERR_EMPTY_ENTRY);
				if (err)
					err->position = p;
				return RV_ERR_EMPTY_ENTRY;
			}
			/* s[p] is '=' */
			rv_fail(err, RV_ERR_EMPTY_NAME);
			if (err)
			{
				err->token = s + p;
				err->token_len = 1 + rv_token_len(s, len, p + 1);
				err->position = p;
			}
			return RV_ERR_EMPTY_NAME;
		}
		st = rv_check_name(s + ns, nl, err);
		if (st != RV_OK)
		{
			if (err)
				err->position = ns;
			return st;
		}

		/* '=' */
		while (p < len && rv_is_space((unsigned char) s[p]))
			p++;
		if (p == len || s[p] != '=')
		{
			rv_fail(err, RV_ERR_MISSING_EQUALS);
			if (err)
			{
				err->name = s + ns;
				err->name_len = nl;
				err->position = p;
				if (p < len)
				{
					err->token = s + p;
					err->token_len = rv_token_len(s, len, p);
				}
			}
			return RV_ERR_MISSING_EQUALS;
		}
		p++;
		while (p < len && rv_is_space((unsigned char) s[p]))
			p++;

		/* quantity */
		qs = p;
		ql = rv_token_len(s, len, p);
		p += ql;
		st = rv_parse_quantity(s + qs, ql, &milli, err);
		if (st != RV_OK)
		{
			if (err)
			{
				err->name = s + ns;
				err->name_len = nl;
				err->position = qs;
				if (err->suffix)
					err->position = (size_t) (err->suffix - s);
			}
			return st;
		}
		out[n].name = s + ns;
		out[n].len = (uint32_t) nl;
		out[n].milli = milli;
		n++;

		/* ',' or the end */
		while (p < len && rv_is_space((unsigned char) s[p]))
			p++;
		if (p == len)
			break;
		if (s[p] != ',')
		{
			rv_fail(err, RV_ERR_MISSING_COMMA);
			if (err)
			{
				err->name = s + ns;
				err->name_len = nl;
				err->token = s + p;
				err->token_len = rv_token_len(s, len, p);
				if (err->token_len == 0)
					err->token_len = 1;
				err->position = p;
			}
			return RV_ERR_MISSING_COMMA;
		}
		p++;
		while (p < len && rv_is_space((unsigned char) s[p]))
			p++;
		if (p == len || s[p] == ',')
		{
			rv_fail(err, RV_ERR_EMPTY_ENTRY);
			if (err)
				err->position = p;
			return RV_ERR_EMPTY_ENTRY;
		}
	}

	*nout = n;
	return rv_canonicalize(out, nout, err);
}

RvStatus
rv_canonicalize(RvItem *items, int *n, RvError *err)
{
	int			i,
				m = 0;
	RvStatus	st;

	for (i = 0; i < *n; i++)
	{
		st = rv_check_name(items[i].name, items[i].len, err);
		if (st != RV_OK)
			return st;
		if (items[i].milli < 0)
		{
			rv_fail(err, RV_ERR_NEGATIVE);
			if (err)
			{
				err->name = items[i].name;
				err->name_len = items[i].len;
			}
			return RV_ERR_NEGATIVE;
		}
	}
	if (*n > 1)
		qsort(items, (size_t) *n, sizeof(RvItem), rv_item_cmp);
	for (i = 0; i < *n; i++)
	{
		if (i > 0 && rv_item_cmp(&items[i - 1], &items[i]) == 0)
		{
			rv_fail(err, RV_ERR_DUPLICATE);
			if (err)
			{
				err->name = items[i].name;
				err->name_len = items[i].len;
			}
			return RV_ERR_DUPLICATE;
		}
	}
	for (i = 0; i < *n; i++)
		if (items[i].milli != 0)
			items[m++] = items[i];
	*n = m;
	return RV_OK;
}

RvStatus
rv_validate(const RvItem *items, int n, RvError *err)
{
	int			i;
	RvStatus	st;

	if (n < 0)
		return rv_fail(err, RV_ERR_QUANTITY);
	for (i = 0; i < n; i++)
	{
		st = rv_check_name(items[i].name, items[i].len, err);
		if (st != RV_OK)
			return st;
		if (items[i].milli <= 0)
		{
			rv_fail(err, items[i].milli == 0 ? RV_ERR_ZERO : RV_ERR_NEGATIVE);
			if (err)
			{
				err->name = items[i].name;
				err->name_len = items[i].len;
			}
			return items[i].milli == 0 ? RV_ERR_ZERO : RV_ERR_NEGATIVE;
		}
		if (i > 0)
		{
			int			c = rv_item_cmp(&items[i - 1], &items[i]);

			if (c >= 0)
			{
				rv_fail(err, c == 0 ? RV_ERR_DUPLICATE : RV_ERR_UNSORTED);
				if (err)
				{
					err->name = items[i].name;
					err->name_len = items[i].len;
				}
				return c == 0 ? RV_ERR_DUPLICATE : RV_ERR_UNSORTED;
			}
		}
	}
	return RV_OK;
}

size_t
rv_format_quantity(int64_t milli, char *buf)
{
	uint64_t	u;
	const char *sign = "";
	unsigned	frac;
	int			len;

	if (milli < 0)
	{
		sign = "-";
		u = (uint64_t) 0 - (uint64_t) milli;
	}
	else
		u = (uint64_t) milli;
	frac = (unsigned) (u % RV_MILLI);
	if (frac == 0)
		len = snprintf(buf, RV_QUANTITY_BUFSZ, "%s%" PRIu64, sign, u / RV_MILLI);
	else
	{
		len = snprintf(buf, RV_QUANTITY_BUFSZ, "%s%" PRIu64 ".%03u", sign, u / RV_MILLI, frac);
		while (buf[len - 1] == '0')
			buf[--len] = '\0';
	}
	return (size_t) len;
}

size_t
rv_format(const RvItem *items, int n, char *buf, size_t cap)
{
	size_t		need = 0;
	int			i;
	char		q[RV_QUANTITY_BUFSZ];

#define RV_PUT(src, l) \
	do { \
		size_t _l = (l); \
		if (need + _l < cap) \
			memcpy(buf + need, (src), _l); \
		else if (need < cap) \
			memcpy(buf + need, (src), cap - 1 - need); \
		need += _l; \
	} while (0)

	for (i = 0; i < n; i++)
	{
		size_t		ql = rv_format_quantity(items[i].milli, q);

		if (i > 0)
			RV_PUT(", ", 2);
		RV_PUT(items[i].name, items[i].len);
		RV_PUT("=", 1);
		RV_PUT(q, ql);
	}
#undef RV_PUT
	if (cap > 0)
		buf[need < cap ? need : cap - 1] = '\0';
	return need;
}

int
rv_name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t		l = alen < blen ? alen : blen;
	int			c = l > 0 ? memcmp(a, b, l) : 0;

	if (c != 0)
		return c < 0 ? -1 : 1;
	if (alen == blen)
		return 0;
	return alen < blen ? -1 : 1;
}

int
rv_cmp(const RvItem *a, int na, const RvItem *b, int nb)
{
	int			i;

	for (i = 0; i < na && i < nb; i++)
	{
		int			c = rv_name_cmp(a[i].name, a[i].len, b[i].name, b[i].len);

		if (c != 0)
			return c;
		if (a[i].milli != b[i].milli)
			return a[i].milli < b[i].milli ? -1 : 1;
	}
	if (na == nb)
		return 0;
	return na < nb ? -1 : 1;
}

bool
rv_equal(const RvItem *a, int na, const RvItem *b, int nb)
{
	return na == nb && rv_cmp(a, na, b, nb) == 0;
}

bool
rv_contains(const RvItem *a, int na, const RvItem *b, int nb)
{
	int			i = 0,
				j = 0;

	while (j < nb)
	{
		int			c;

		if (i == na)
			return false;		/* b has a positive component a lacks */
		c = rv_name_cmp(a[i].name, a[i].len, b[j].name, b[j].len);
		if (c < 0)
			i++;
		else if (c > 0)
			return false;
		else
		{
			if (a[i].milli < b[j].milli)
				return false;
			i++;
			j++;
		}
	}
	return true;
}

int64_t
rv_get(const RvItem *items, int n, const char *name, size_t len)
{
	int			lo = 0,
				hi = n - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int			c = rv_name_cmp(items[mid].name, items[mid].len, name, len);

		if (c == 0)
			return items[mid].milli;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return 0;
}

RvStatus
rv_add(const RvItem *a, int na, const RvItem *b, int nb,
	   RvItem *out, int *nout, RvError *err)
{
	int			i = 0,
				j = 0,
				n = 0;

	while (i < na || j < nb)
	{
		int			c;

		if (i == na)
			c = 1;
		else if (j == nb)
			c = -1;
		else
			c = rv_name_cmp(a[i].name, a[i].len, b[j].name, b[j].len);
		if (c < 0)
			out[n++] = a[i++];
		else if (c > 0)
			out[n++] = b[j++];
		else
		{
			int64_t		sum;

			/*
			 * The builtin also catches operands a caller did not validate
			 * (INT64_MAX - b itself overflows for a negative b).
			 */
			if (__builtin_add_overflow(a[i].milli, b[j].milli, &sum))
			{
				rv_fail(err, RV_ERR_OVERFLOW);
				if (err)
				{
					err->name = a[i].name;
					err->name_len = a[i].len;
					err->left = a[i].milli;
					err->right = b[j].milli;
				}
				return RV_ERR_OVERFLOW;
			}
			out[n] = a[i];
			out[n].milli = sum;
			n++;
			i++;
			j++;
		}
	}
	*nout = n;
	return RV_OK;
}

/* Record a component that would go below zero. */
static RvStatus
rv_below_zero(RvError *err, const RvItem *it, int64_t left, int64_t right)
{
	rv_fail(err, RV_ERR_BELOW_ZERO);
	if (err)
	{
		err->name = it->name;
		err->name_len = it->len;
		err->left = left;
		err->right = right;
	}
	return RV_ERR_BELOW_ZERO;
}

RvStatus
rv_sub(const RvItem *a, int na, const RvItem *b, int nb,
	   RvItem *out, int *nout, RvError *err)
{
	int			i = 0,
				j = 0,
				n = 0;

	while (i < na || j < nb)
	{
		int			c;

		if (i == na)
			c = 1;
		else if (j == nb)
			c = -1;
		else
			c = rv_name_cmp(a[i].name, a[i].len, b[j].name, b[j].len);
		if (c < 0)
			out[n++] = a[i++];
		else if (c > 0)
			return rv_below_zero(err, &b[j], 0, b[j].milli);
		else
		{
			int64_t		diff;

			if (a[i].milli < b[j].milli)
				return rv_below_zero(err, &a[i], a[i].milli, b[j].milli);
			/* only a negative (unvalidated) b can overflow here */
			if (__builtin_sub_overflow(a[i].milli, b[j].milli, &diff))
			{
				rv_fail(err, RV_ERR_OVERFLOW);
				if (err)
				{
					err->name = a[i].name;
					err->name_len = a[i].len;
					err->left = a[i].milli;
					err->right = b[j].milli;
				}
				return RV_ERR_OVERFLOW;
			}
			if (diff != 0)
			{
				out[n] = a[i];
				out[n].milli = diff;
				n++;
			}
			i++;
			j++;
		}
	}
	*nout = n;
	return RV_OK;
}

RvStatus
rv_scale_int(const RvItem *items, int n, int64_t factor,
			 RvItem *out, int *nout, RvError *err)
{
	int			i;

	*nout = 0;
	if (factor < 0)
		return rv_fail(err, RV_ERR_NEGATIVE);
	if (factor == 0)
		return RV_OK;
	for (i = 0; i < n; i++)
	{
		int64_t		prod;

		/* both directions: a negative (unvalidated) item can underflow */
		if (__builtin_mul_overflow(items[i].milli, factor, &prod))
		{
			rv_fail(err, RV_ERR_OVERFLOW);
			if (err)
			{
				err->name = items[i].name;
				err->name_len = items[i].len;
				err->left = items[i].milli;
				err->right = factor;
			}
			return RV_ERR_OVERFLOW;
		}
		out[i] = items[i];
		out[i].milli = prod;
	}
	*nout = n;
	return RV_OK;
}
