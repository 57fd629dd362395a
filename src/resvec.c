/*
 * resvec.c: SQL functions of the tide.resvec type.
 *
 * Parsing, formatting and arithmetic live in core/resvec_core.c (plain C);
 * this file moves values between the core's RvItem views and the varlena
 * described in resvec.h, and turns the core's error records into ereports.
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/syscache.h"

#include "cut.h"
#include "resvec.h"

#define HINT_SYNTAX \
	"Write name=quantity pairs separated by commas, for example 'cpu=4, memory=16Gi, gpu=2'."
#define HINT_NAME \
	"Resource names consist of letters, digits, \".\", \"_\", \"/\" and \"-\", at most 63 bytes."
#define HINT_QUANTITY \
	"A quantity is a non-negative decimal number exact to 0.001, with an optional suffix: " \
	"m (milli), k, M, G, T, P (powers of 1000) or Ki, Mi, Gi, Ti, Pi (powers of 1024)."
#define LARGEST_QUANTITY "9223372036854775.807"

PG_FUNCTION_INFO_V1(resvec_in);
PG_FUNCTION_INFO_V1(resvec_out);
PG_FUNCTION_INFO_V1(resvec_recv);
PG_FUNCTION_INFO_V1(resvec_send);
PG_FUNCTION_INFO_V1(resvec_add);
PG_FUNCTION_INFO_V1(resvec_sub);
PG_FUNCTION_INFO_V1(resvec_mul_numeric);
PG_FUNCTION_INFO_V1(resvec_numeric_mul);
PG_FUNCTION_INFO_V1(resvec_mul_int4);
PG_FUNCTION_INFO_V1(resvec_int4_mul);
PG_FUNCTION_INFO_V1(resvec_eq);
PG_FUNCTION_INFO_V1(resvec_ne);
PG_FUNCTION_INFO_V1(resvec_lt);
PG_FUNCTION_INFO_V1(resvec_le);
PG_FUNCTION_INFO_V1(resvec_gt);
PG_FUNCTION_INFO_V1(resvec_ge);
PG_FUNCTION_INFO_V1(resvec_cmp);
PG_FUNCTION_INFO_V1(resvec_hash);
PG_FUNCTION_INFO_V1(resvec_hash_extended);
PG_FUNCTION_INFO_V1(resvec_contains);
PG_FUNCTION_INFO_V1(resvec_contained);
PG_FUNCTION_INFO_V1(resvec_get);
PG_FUNCTION_INFO_V1(resvec_names);
PG_FUNCTION_INFO_V1(resvec_each);
PG_FUNCTION_INFO_V1(resvec_to_jsonb);
PG_FUNCTION_INFO_V1(resvec_from_jsonb);

/* ---- layout helpers ---------------------------------------------------- */

int
resvec_count(const ResVec *rv)
{
	return rv->count;
}

const char *
resvec_name(const ResVec *rv, int i)
{
	Assert(i >= 0 && i < rv->count);
	return RESVEC_NAMES((ResVec *) rv) + rv->entries[i].name_off;
}

int64
resvec_milli(const ResVec *rv, int i)
{
	Assert(i >= 0 && i < rv->count);
	return rv->entries[i].milli;
}

/* Views of a stored vector's components, for the core (palloc'd). */
static RvItem *
resvec_items(const ResVec *rv)
{
	RvItem	   *items = palloc(sizeof(RvItem) * (rv->count > 0 ? rv->count : 1));
	const char *names = RESVEC_NAMES((ResVec *) rv);
	int			i;

	for (i = 0; i < rv->count; i++)
	{
		items[i].name = names + rv->entries[i].name_off;
		items[i].len = rv->entries[i].name_len;
		items[i].milli = rv->entries[i].milli;
	}
	return items;
}

/* Build a varlena from canonical items (the caller checked them). */
static ResVec *
resvec_build(const RvItem *items, int n)
{
	Size		names_size = 0,
				size;
	ResVec	   *rv;
	char	   *names;
	uint32		off = 0;
	int			i;

	for (i = 0; i < n; i++)
		names_size += items[i].len + 1;
	size = RESVEC_HDRSZ + sizeof(ResVecEntry) * (Size) n + names_size;
	rv = palloc0(size);
	SET_VARSIZE(rv, size);
	rv->count = n;
	rv->names_size = (int32) names_size;
	rv->reserved = 0;
	names = RESVEC_NAMES(rv);
	for (i = 0; i < n; i++)
	{
		rv->entries[i].milli = items[i].milli;
		rv->entries[i].name_off = off;
		rv->entries[i].name_len = items[i].len;
		memcpy(names + off, items[i].name, items[i].len);
		names[off + items[i].len] = '\0';
		off += items[i].len + 1;
	}
	return rv;
}

ResVec *
resvec_empty(void)
{
	return resvec_build(NULL, 0);
}

int64
resvec_get_milli(const ResVec *rv, const char *name)
{
	RvItem	   *items = resvec_items(rv);
	int64		m = rv_get(items, rv->count, name, strlen(name));

	pfree(items);
	return m;
}

Oid
resvec_type_oid(void)
{
	Oid			nsp = get_namespace_oid("tide", true);

	if (!OidIsValid(nsp))
		return InvalidOid;
	return GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
						   CStringGetDatum("resvec"), ObjectIdGetDatum(nsp));
}

/* ---- errors ------------------------------------------------------------ */

/* A palloc'd copy of a view, or "" for none. */
static char *
view_str(const char *p, size_t len)
{
	return p ? pnstrdup(p, len) : pstrdup("");
}

/* Quantity text of milli-units, palloc'd. */
static char *
quantity_str(int64 milli)
{
	char		buf[RV_QUANTITY_BUFSZ];

	rv_format_quantity(milli, buf);
	return pstrdup(buf);
}

/*
 * Raise the error a core status describes.  input is the whole text being
 * parsed (NULL when not parsing text); code is the errcode for statuses
 * that are about the value rather than the syntax.
 */
static void pg_attribute_noreturn()
resvec_report(const RvError *err, const char *input, int code)
{
	/* as the messages show them: cut to a readable length (cut.h) */
	const char *name = tide_cut(view_str(err->name, err->name_len), TIDE_CUT_DEFAULT);
	const char *token = tide_cut(view_str(err->token, err->token_len), TIDE_CUT_DEFAULT);

	switch (err->status)
	{
		case RV_OK:
			break;
		case RV_ERR_EMPTY_ENTRY:
			{
				size_t		len = input ? strlen(input) : 0;
				const char *detail;

				if (input == NULL)
					detail = "An entry is empty.";
				else if (err->position >= len)
					detail = "The text ends with a comma.";
				else if (input[err->position] == ',' && strspn(input, " \t\n\r\f\v,") > err->position)
					detail = "The text starts with a comma.";
				else
					detail = "Two commas follow each other.";
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
						 errmsg("invalid input syntax for type resvec: \"%s\"",
								input ? tide_cut(input, TIDE_CUT_DEFAULT) : ""),
						 errdetail("%s", detail),
						 errhint(HINT_SYNTAX)));
			}
			break;
		case RV_ERR_EMPTY_NAME:
			if (input == NULL)
				ereport(ERROR,
						(errcode(code),
						 errmsg("empty resource name"),
						 errhint(HINT_NAME)));
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("missing resource name before \"%s\"", token),
					 errhint(HINT_SYNTAX)));
			break;
		case RV_ERR_NAME_CHAR:
			if (err->bad_char >= 0x20 && err->bad_char < 0x7f)
				ereport(ERROR,
						(errcode(code),
						 errmsg("invalid resource name \"%s\"", token),
						 errdetail("The character \"%c\" is not allowed in a resource name.", err->bad_char),
						 errhint(HINT_NAME)));
			else if (err->bad_char >= 0x80)
				ereport(ERROR,
						(errcode(code),
						 errmsg("invalid resource name \"%s\"", token),
						 errdetail("Non-ASCII characters are not allowed in a resource name."),
						 errhint(HINT_NAME)));
			else
				ereport(ERROR,
						(errcode(code),
						 errmsg("invalid resource name \"%s\"", token),
						 errdetail("The byte 0x%02x is not allowed in a resource name.", err->bad_char),
						 errhint(HINT_NAME)));
			break;
		case RV_ERR_NAME_TOO_LONG:
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("resource name \"%s\" is too long", token),
					 errdetail("The name has %zu bytes; the limit is %d.", err->token_len, RV_NAME_MAX),
					 errhint(HINT_NAME)));
			break;
		case RV_ERR_MISSING_EQUALS:
			if (err->token)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
						 errmsg("missing \"=\" after resource name \"%s\"", name),
						 errdetail("Found \"%s\" instead.", token),
						 errhint(HINT_SYNTAX)));
			else
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
						 errmsg("missing \"=\" after resource name \"%s\"", name),
						 errdetail("The text ends after the name."),
						 errhint(HINT_SYNTAX)));
			break;
		case RV_ERR_MISSING_QUANTITY:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("missing quantity for resource \"%s\"", name),
					 errhint(HINT_QUANTITY)));
			break;
		case RV_ERR_MISSING_COMMA:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("missing \",\" after the quantity of resource \"%s\"", name),
					 errdetail("Found \"%s\" instead.", token),
					 errhint(HINT_SYNTAX)));
			break;
		case RV_ERR_QUANTITY:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid quantity \"%s\" for resource \"%s\"", token, name),
					 errdetail("A quantity is a decimal number such as 4, 0.5 or 16Gi."),
					 errhint(HINT_QUANTITY)));
			break;
		case RV_ERR_SUFFIX:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid quantity \"%s\" for resource \"%s\"", token, name),
					 errdetail("The suffix \"%s\" is unknown (suffixes are case-sensitive).",
							   view_str(err->suffix, err->suffix_len)),
					 errhint(HINT_QUANTITY)));
			break;
		case RV_ERR_NEGATIVE:
			if (err->token)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
						 errmsg("invalid quantity \"%s\" for resource \"%s\"", token, name),
						 errdetail("Quantities cannot be negative."),
						 errhint(HINT_QUANTITY)));
			else
				ereport(ERROR,
						(errcode(code),
						 errmsg("negative quantity for resource \"%s\"", name),
						 errdetail("Quantities cannot be negative.")));
			break;
		case RV_ERR_PRECISION:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid quantity \"%s\" for resource \"%s\"", token, name),
					 errdetail("The value is finer than one milli-unit (0.001) once its suffix is applied."),
					 errhint(HINT_QUANTITY)));
			break;
		case RV_ERR_TOO_MANY_DIGITS:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid quantity \"%s\" for resource \"%s\"", token, name),
					 errdetail("A quantity may have at most %d significant fractional digits.",
							   RV_MAX_FRAC_DIGITS),
					 errhint(HINT_QUANTITY)));
			break;
		case RV_ERR_OVERFLOW:
			if (err->token)
				ereport(ERROR,
						(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("quantity \"%s\" for resource \"%s\" is out of range", token, name),
						 errdetail("The largest quantity is " LARGEST_QUANTITY ".")));
			else
				ereport(ERROR,
						(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("quantity of resource \"%s\" is out of range", name),
						 errdetail("The largest quantity is " LARGEST_QUANTITY ".")));
			break;
		case RV_ERR_DUPLICATE:
			ereport(ERROR,
					(errcode(input ? ERRCODE_INVALID_TEXT_REPRESENTATION : code),
					 errmsg("duplicate resource name \"%s\"", name),
					 errdetail("Each resource may appear once.")));
			break;
		case RV_ERR_UNSORTED:
		case RV_ERR_ZERO:
			ereport(ERROR,
					(errcode(code),
					 errmsg("invalid resvec: resource \"%s\" is %s", name,
							err->status == RV_ERR_ZERO ? "zero" : "out of order"),
					 errdetail("Components must be sorted by name, unique and non-zero.")));
			break;
		case RV_ERR_BELOW_ZERO:
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("resource \"%s\" would go below zero", name),
					 errdetail("%s - %s is negative.", quantity_str(err->left), quantity_str(err->right))));
			break;
	}
	elog(ERROR, "unexpected resvec status %d", (int) err->status);
}

/* ---- building and text ------------------------------------------------- */

ResVec *
resvec_from_pairs(int n, const char *const *names, const int64 *milli)
{
	RvItem	   *items = palloc(sizeof(RvItem) * (n > 0 ? n : 1));
	RvError		err;
	int			i;
	ResVec	   *rv;

	for (i = 0; i < n; i++)
	{
		size_t		len = strlen(names[i]);

		items[i].name = names[i];
		items[i].len = len > PG_UINT32_MAX ? PG_UINT32_MAX : (uint32) len;
		items[i].milli = milli[i];
	}
	if (rv_canonicalize(items, &n, &err) != RV_OK)
		resvec_report(&err, NULL, ERRCODE_INVALID_PARAMETER_VALUE);
	rv = resvec_build(items, n);
	pfree(items);
	return rv;
}

ResVec *
resvec_from_cstring(const char *str)
{
	size_t		len = strlen(str);
	RvItem	   *items = palloc(sizeof(RvItem) * rv_parse_max_items(str, len));
	RvError		err;
	int			n;
	ResVec	   *rv;

	if (rv_parse(str, len, items, &n, &err) != RV_OK)
		resvec_report(&err, str, ERRCODE_INVALID_TEXT_REPRESENTATION);
	rv = resvec_build(items, n);
	pfree(items);
	return rv;
}

char *
resvec_to_cstring(const ResVec *rv)
{
	RvItem	   *items = resvec_items(rv);
	size_t		need = rv_format(items, rv->count, NULL, 0);
	char	   *out = palloc(need + 1);

	rv_format(items, rv->count, out, need + 1);
	pfree(items);
	return out;
}

/*
 * Text input: 'cpu=4, memory=16Gi'.  Every mistake gets a message naming
 * the part at fault.
 */
Datum
resvec_in(PG_FUNCTION_ARGS)
{
	PG_RETURN_RESVEC_P(resvec_from_cstring(PG_GETARG_CSTRING(0)));
}

/* Text output: canonical, sorted, plain decimal units. */
Datum
resvec_out(PG_FUNCTION_ARGS)
{
	PG_RETURN_CSTRING(resvec_to_cstring(PG_GETARG_RESVEC_P(0)));
}

/*
 * Binary output: int32 count, int32 reserved (0), then per component an
 * int32 name length, the name bytes, and the int64 milli-quantity.
 */
Datum
resvec_send(PG_FUNCTION_ARGS)
{
	ResVec	   *rv = PG_GETARG_RESVEC_P(0);
	StringInfoData buf;
	int			i;

	pq_begintypsend(&buf);
	pq_sendint32(&buf, rv->count);
	pq_sendint32(&buf, 0);
	for (i = 0; i < rv->count; i++)
	{
		pq_sendint32(&buf, rv->entries[i].name_len);
		pq_sendbytes(&buf, resvec_name(rv, i), rv->entries[i].name_len);
		pq_sendint64(&buf, rv->entries[i].milli);
	}
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/* Binary input: checks everything text input checks. */
Datum
resvec_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	int32		count = pq_getmsgint(buf, 4);
	int32		reserved = pq_getmsgint(buf, 4);
	RvItem	   *items;
	RvError		err;
	int			i;

	if (reserved != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid binary resvec: reserved field is %d, not 0", reserved)));
	/* each component takes at least 4 + 1 + 8 bytes */
	if (count < 0 || count > (buf->len - buf->cursor) / 13)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid binary resvec: bad component count %d", count)));
	items = palloc(sizeof(RvItem) * (count > 0 ? count : 1));
	for (i = 0; i < count; i++)
	{
		int32		len = pq_getmsgint(buf, 4);

		if (len < 0 || len > buf->len - buf->cursor)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("invalid binary resvec: bad name length %d", len)));
		items[i].name = pq_getmsgbytes(buf, len);
		items[i].len = (uint32) len;
		items[i].milli = pq_getmsgint64(buf);
	}
	if (rv_validate(items, count, &err) != RV_OK)
		resvec_report(&err, NULL, ERRCODE_INVALID_BINARY_REPRESENTATION);
	PG_RETURN_RESVEC_P(resvec_build(items, count));
}

/* ---- arithmetic -------------------------------------------------------- */

/* a + b, componentwise; the transition and combine function of sum(). */
Datum
resvec_add(PG_FUNCTION_ARGS)
{
	ResVec	   *a = PG_GETARG_RESVEC_P(0);
	ResVec	   *b = PG_GETARG_RESVEC_P(1);
	RvItem	   *ia = resvec_items(a),
			   *ib = resvec_items(b),
			   *out = palloc(sizeof(RvItem) * (a->count + b->count + 1));
	RvError		err;
	int			n;

	if (rv_add(ia, a->count, ib, b->count, out, &n, &err) != RV_OK)
		resvec_report(&err, NULL, ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE);
	PG_RETURN_RESVEC_P(resvec_build(out, n));
}

/* a - b, an error naming the first resource that would go below zero. */
Datum
resvec_sub(PG_FUNCTION_ARGS)
{
	ResVec	   *a = PG_GETARG_RESVEC_P(0);
	ResVec	   *b = PG_GETARG_RESVEC_P(1);
	RvItem	   *ia = resvec_items(a),
			   *ib = resvec_items(b),
			   *out = palloc(sizeof(RvItem) * (a->count + 1));
	RvError		err;
	int			n;

	if (rv_sub(ia, a->count, ib, b->count, out, &n, &err) != RV_OK)
		resvec_report(&err, NULL, ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE);
	PG_RETURN_RESVEC_P(resvec_build(out, n));
}

/*
 * rv * factor for a numeric factor: each component is multiplied exactly
 * and rounded to the nearest milli-unit, halves away from zero (numeric's
 * round()).  Components that round to zero vanish.
 */
static ResVec *
resvec_scale_numeric(ResVec *rv, Numeric factor)
{
	RvItem	   *items = resvec_items(rv);
	Datum		zero = DirectFunctionCall1(int8_numeric, Int64GetDatum(0));
	Datum		maxv = DirectFunctionCall1(int8_numeric, Int64GetDatum(PG_INT64_MAX));
	int			i,
				n = 0;

	if (numeric_is_nan(factor))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot multiply a resvec by NaN")));
	if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(factor), zero)) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot multiply a resvec by a negative number"),
				 errdetail("Quantities cannot be negative.")));
	for (i = 0; i < rv->count; i++)
	{
		Datum		m = DirectFunctionCall1(int8_numeric, Int64GetDatum(items[i].milli));
		Datum		p = DirectFunctionCall2(numeric_mul, m, NumericGetDatum(factor));

		p = DirectFunctionCall2(numeric_round, p, Int32GetDatum(0));
		if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, p, maxv)) > 0)
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("quantity of resource \"%s\" is out of range", resvec_name(rv, i)),
					 errdetail("The largest quantity is " LARGEST_QUANTITY ".")));
		items[n] = items[i];
		items[n].milli = DatumGetInt64(DirectFunctionCall1(numeric_int8, p));
		if (items[n].milli != 0)
			n++;
	}
	return resvec_build(items, n);
}

/* resvec * numeric */
Datum
resvec_mul_numeric(PG_FUNCTION_ARGS)
{
	PG_RETURN_RESVEC_P(resvec_scale_numeric(PG_GETARG_RESVEC_P(0), PG_GETARG_NUMERIC(1)));
}

/* numeric * resvec */
Datum
resvec_numeric_mul(PG_FUNCTION_ARGS)
{
	PG_RETURN_RESVEC_P(resvec_scale_numeric(PG_GETARG_RESVEC_P(1), PG_GETARG_NUMERIC(0)));
}

/* rv * an integer factor, exact, without a trip through numeric. */
static ResVec *
resvec_scale_int(ResVec *rv, int32 factor)
{
	RvItem	   *items = resvec_items(rv),
			   *out = palloc(sizeof(RvItem) * (rv->count + 1));
	RvError		err;
	int			n;

	if (factor < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot multiply a resvec by a negative number"),
				 errdetail("Quantities cannot be negative.")));
	if (rv_scale_int(items, rv->count, factor, out, &n, &err) != RV_OK)
		resvec_report(&err, NULL, ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE);
	return resvec_build(out, n);
}

/* resvec * int4 */
Datum
resvec_mul_int4(PG_FUNCTION_ARGS)
{
	PG_RETURN_RESVEC_P(resvec_scale_int(PG_GETARG_RESVEC_P(0), PG_GETARG_INT32(1)));
}

/* int4 * resvec */
Datum
resvec_int4_mul(PG_FUNCTION_ARGS)
{
	PG_RETURN_RESVEC_P(resvec_scale_int(PG_GETARG_RESVEC_P(1), PG_GETARG_INT32(0)));
}

/* ---- comparison -------------------------------------------------------- */

/* Total order for btree: names, then quantities, then length. */
static int
resvec_compare(FunctionCallInfo fcinfo)
{
	ResVec	   *a = PG_GETARG_RESVEC_P(0);
	ResVec	   *b = PG_GETARG_RESVEC_P(1);
	RvItem	   *ia = resvec_items(a),
			   *ib = resvec_items(b);
	int			c = rv_cmp(ia, a->count, ib, b->count);

	/* sorts and index builds call this a lot: leave no garbage behind */
	pfree(ia);
	pfree(ib);
	PG_FREE_IF_COPY(a, 0);
	PG_FREE_IF_COPY(b, 1);
	return c;
}

Datum
resvec_cmp(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(resvec_compare(fcinfo));
}

Datum
resvec_eq(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(resvec_compare(fcinfo) == 0);
}

Datum
resvec_ne(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(resvec_compare(fcinfo) != 0);
}

Datum
resvec_lt(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(resvec_compare(fcinfo) < 0);
}

Datum
resvec_le(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(resvec_compare(fcinfo) <= 0);
}

Datum
resvec_gt(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(resvec_compare(fcinfo) > 0);
}

Datum
resvec_ge(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(resvec_compare(fcinfo) >= 0);
}

/* Hash of the components (equal vectors are stored identically). */
Datum
resvec_hash(PG_FUNCTION_ARGS)
{
	ResVec	   *rv = PG_GETARG_RESVEC_P(0);
	uint32		h = DatumGetUInt32(hash_uint32((uint32) rv->count));
	int			i;

	for (i = 0; i < rv->count; i++)
	{
		uint64		m = (uint64) rv->entries[i].milli;

		h = hash_combine(h, DatumGetUInt32(hash_any((const unsigned char *) resvec_name(rv, i),
													rv->entries[i].name_len)));
		h = hash_combine(h, DatumGetUInt32(hash_uint32((uint32) m)) ^
						 DatumGetUInt32(hash_uint32((uint32) (m >> 32))));
	}
	PG_FREE_IF_COPY(rv, 0);
	PG_RETURN_UINT32(h);
}

/* 64-bit seeded hash (hash partitioning). */
Datum
resvec_hash_extended(PG_FUNCTION_ARGS)
{
	ResVec	   *rv = PG_GETARG_RESVEC_P(0);
	uint64		seed = PG_GETARG_INT64(1);
	uint64		h = DatumGetUInt64(hash_uint32_extended((uint32) rv->count, seed));
	int			i;

	for (i = 0; i < rv->count; i++)
	{
		uint64		m = (uint64) rv->entries[i].milli;

		h = hash_combine64(h, DatumGetUInt64(hash_any_extended((const unsigned char *) resvec_name(rv, i),
															   rv->entries[i].name_len, seed)));
		h = hash_combine64(h, DatumGetUInt64(hash_uint32_extended((uint32) m, seed)) ^
						   DatumGetUInt64(hash_uint32_extended((uint32) (m >> 32), seed + 1)));
	}
	PG_FREE_IF_COPY(rv, 0);
	PG_RETURN_UINT64(h);
}

/* a @> b: a holds at least b of every resource (missing = 0). */
Datum
resvec_contains(PG_FUNCTION_ARGS)
{
	ResVec	   *a = PG_GETARG_RESVEC_P(0);
	ResVec	   *b = PG_GETARG_RESVEC_P(1);
	RvItem	   *ia = resvec_items(a),
			   *ib = resvec_items(b);

	PG_RETURN_BOOL(rv_contains(ia, a->count, ib, b->count));
}

/* a <@ b: b @> a. */
Datum
resvec_contained(PG_FUNCTION_ARGS)
{
	ResVec	   *a = PG_GETARG_RESVEC_P(0);
	ResVec	   *b = PG_GETARG_RESVEC_P(1);
	RvItem	   *ia = resvec_items(a),
			   *ib = resvec_items(b);

	PG_RETURN_BOOL(rv_contains(ib, b->count, ia, a->count));
}

/* ---- access ------------------------------------------------------------ */

/* A milli-quantity as numeric with up to 3 decimals (4, 0.5, 1.024). */
static Datum
milli_numeric(int64 milli)
{
	char		buf[RV_QUANTITY_BUFSZ];

	rv_format_quantity(milli, buf);
	return DirectFunctionCall3(numeric_in, CStringGetDatum(buf),
							   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
}

/* tide.get(rv, name): the quantity of a resource, 0 when absent. */
Datum
resvec_get(PG_FUNCTION_ARGS)
{
	ResVec	   *rv = PG_GETARG_RESVEC_P(0);
	text	   *name = PG_GETARG_TEXT_PP(1);
	RvItem	   *items = resvec_items(rv);

	PG_RETURN_DATUM(milli_numeric(rv_get(items, rv->count, VARDATA_ANY(name),
										 VARSIZE_ANY_EXHDR(name))));
}

/* tide.resvec_names(rv): the names in sorted order. */
Datum
resvec_names(PG_FUNCTION_ARGS)
{
	ResVec	   *rv = PG_GETARG_RESVEC_P(0);
	Datum	   *elems = palloc(sizeof(Datum) * (rv->count + 1));
	int			i;

	for (i = 0; i < rv->count; i++)
		elems[i] = PointerGetDatum(cstring_to_text(resvec_name(rv, i)));
	PG_RETURN_ARRAYTYPE_P(construct_array(elems, rv->count, TEXTOID, -1, false, TYPALIGN_INT));
}

/* tide.each(rv): one row (name, quantity) per component, sorted. */
Datum
resvec_each(PG_FUNCTION_ARGS)
{
	FuncCallContext *funcctx;
	ResVec	   *rv;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext old;
		TupleDesc	tupdesc;

		funcctx = SRF_FIRSTCALL_INIT();
		old = MemoryContextSwitchTo(funcctx->multi_call_memory_ctx);
		if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "tide.each must return a composite type");
		funcctx->tuple_desc = BlessTupleDesc(tupdesc);
		funcctx->user_fctx = DatumGetResVecP(PG_DETOAST_DATUM_COPY(PG_GETARG_DATUM(0)));
		funcctx->max_calls = ((ResVec *) funcctx->user_fctx)->count;
		MemoryContextSwitchTo(old);
	}
	funcctx = SRF_PERCALL_SETUP();
	rv = (ResVec *) funcctx->user_fctx;
	if (funcctx->call_cntr < funcctx->max_calls)
	{
		int			i = (int) funcctx->call_cntr;
		Datum		values[2];
		bool		nulls[2] = {false, false};
		HeapTuple	tuple;

		values[0] = PointerGetDatum(cstring_to_text(resvec_name(rv, i)));
		values[1] = milli_numeric(resvec_milli(rv, i));
		tuple = heap_form_tuple(funcctx->tuple_desc, values, nulls);
		SRF_RETURN_NEXT(funcctx, HeapTupleGetDatum(tuple));
	}
	SRF_RETURN_DONE(funcctx);
}

/* ---- jsonb ------------------------------------------------------------- */

/* resvec -> jsonb: {"cpu": 4, "memory": 17179869184}. */
Datum
resvec_to_jsonb(PG_FUNCTION_ARGS)
{
	ResVec	   *rv = PG_GETARG_RESVEC_P(0);
	StringInfoData buf;
	char		q[RV_QUANTITY_BUFSZ];
	int			i;

	/* names hold no quote or backslash, so they need no escaping */
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	for (i = 0; i < rv->count; i++)
	{
		rv_format_quantity(resvec_milli(rv, i), q);
		appendStringInfo(&buf, "%s\"%s\": %s", i > 0 ? ", " : "", resvec_name(rv, i), q);
	}
	appendStringInfoChar(&buf, '}');
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data)));
}

/* Name of a jsonb value's type, for messages. */
static const char *
jsonb_value_type(const JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			return "null";
		case jbvString:
			return "a string";
		case jbvNumeric:
			return "a number";
		case jbvBool:
			return "a boolean";
		case jbvArray:
			return "an array";
		case jbvObject:
			return "an object";
		case jbvBinary:
			return (v->val.binary.data->header & JB_FARRAY) ? "an array" : "an object";
		default:
			return "an unsupported value";
	}
}

/*
 * jsonb -> resvec: an object whose values are numbers (units) or strings
 * with the text syntax ("16Gi", "500m").
 */
Datum
resvec_from_jsonb(PG_FUNCTION_ARGS)
{
	Jsonb	   *jb = PG_GETARG_JSONB_P(0);
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	RvItem	   *items;
	int			n = 0,
				cap;
	char	   *key = NULL;
	RvError		err;

	if (!JB_ROOT_IS_OBJECT(jb))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot cast jsonb %s to type resvec",
						JB_ROOT_IS_SCALAR(jb) ? "scalar" : "array"),
				 errhint("Use an object such as {\"cpu\": 4, \"memory\": \"16Gi\"}.")));
	cap = JB_ROOT_COUNT(jb);
	items = palloc(sizeof(RvItem) * (cap > 0 ? cap : 1));
	it = JsonbIteratorInit(&jb->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			key = pnstrdup(v.val.string.val, v.val.string.len);
			if (rv_check_name(key, v.val.string.len, &err) != RV_OK)
			{
				if (err.status == RV_ERR_EMPTY_NAME)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("empty resource name in jsonb"),
							 errhint(HINT_NAME)));
				resvec_report(&err, NULL, ERRCODE_INVALID_PARAMETER_VALUE);
			}
		}
		else if (tok == WJB_VALUE)
		{
			const char *s;
			size_t		len;
			int64		milli;

			if (v.type == jbvNumeric)
			{
				s = DatumGetCString(DirectFunctionCall1(numeric_out,
														NumericGetDatum(v.val.numeric)));
				len = strlen(s);
			}
			else if (v.type == jbvString)
			{
				s = v.val.string.val;
				len = v.val.string.len;
			}
			else
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("invalid value for resource \"%s\" in jsonb", key),
						 errdetail("Expected a number or a string such as \"16Gi\", found %s.",
								   jsonb_value_type(&v))));
			if (rv_parse_quantity(s, len, &milli, &err) != RV_OK)
			{
				err.name = key;
				err.name_len = strlen(key);
				if (err.status == RV_ERR_MISSING_QUANTITY)
				{
					err.status = RV_ERR_QUANTITY;
					err.token = s;
					err.token_len = 0;
				}
				resvec_report(&err, NULL, ERRCODE_INVALID_PARAMETER_VALUE);
			}
			Assert(n < cap);
			items[n].name = key;
			items[n].len = (uint32) strlen(key);
			items[n].milli = milli;
			n++;
		}
	}
	if (rv_canonicalize(items, &n, &err) != RV_OK)
		resvec_report(&err, NULL, ERRCODE_INVALID_PARAMETER_VALUE);
	PG_RETURN_RESVEC_P(resvec_build(items, n));
}
