/*
 * gpumask.c: SQL glue for tide.gpumask, a set of GPU indices 0..63.
 *
 * The value is a uint64 bitmap passed by value.  Parsing and formatting
 * live in core/gpumask_core.c (plain C, shared with the engine and the
 * simulator); this file turns the core's status codes into ereport()s and
 * defines the SQL-callable functions behind the type's operators.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "libpq/pqformat.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/sortsupport.h"

#include "cut.h"
#include "gpumask.h"

#if SIZEOF_DATUM < 8
#error "tide.gpumask is an 8-byte pass-by-value type and needs a 64-bit Datum"
#endif

/*
 * PostgreSQL 16 lets input functions report bad input softly (for
 * pg_input_is_valid and friends) through errsave(); before 16 it is a plain
 * error.
 */
#if PG_VERSION_NUM >= 160000
#include "nodes/miscnodes.h"
#define GPUMASK_ESCONTEXT(fcinfo)	((fcinfo)->context)
#else
#define errsave(context, ...)	ereport(ERROR, __VA_ARGS__)
#define GPUMASK_ESCONTEXT(fcinfo)	((Node *) NULL)
#endif

#define GPUMASK_SYNTAX_HINT \
	"A gpumask is a comma-separated list of GPU indices from 0 to 63 and " \
	"ranges of them, such as \"0-3,6\"; an empty string is the empty mask."
#define GPUMASK_LIMIT_HINT \
	"GPU indices go from 0 to 63: a gpumask holds at most 64 GPUs."

PG_FUNCTION_INFO_V1(gpumask_in);
PG_FUNCTION_INFO_V1(gpumask_out);
PG_FUNCTION_INFO_V1(gpumask_recv);
PG_FUNCTION_INFO_V1(gpumask_send);
PG_FUNCTION_INFO_V1(gpumask_or);
PG_FUNCTION_INFO_V1(gpumask_and);
PG_FUNCTION_INFO_V1(gpumask_minus);
PG_FUNCTION_INFO_V1(gpumask_eq);
PG_FUNCTION_INFO_V1(gpumask_ne);
PG_FUNCTION_INFO_V1(gpumask_lt);
PG_FUNCTION_INFO_V1(gpumask_le);
PG_FUNCTION_INFO_V1(gpumask_gt);
PG_FUNCTION_INFO_V1(gpumask_ge);
PG_FUNCTION_INFO_V1(gpumask_cmp);
PG_FUNCTION_INFO_V1(gpumask_sortsupport);
PG_FUNCTION_INFO_V1(gpumask_hash);
PG_FUNCTION_INFO_V1(gpumask_hash_extended);
PG_FUNCTION_INFO_V1(gpumask_contains);
PG_FUNCTION_INFO_V1(gpumask_contained);
PG_FUNCTION_INFO_V1(gpumask_overlaps);
PG_FUNCTION_INFO_V1(gpumask_gpu_count);
PG_FUNCTION_INFO_V1(gpumask_cuda_visible_devices);
PG_FUNCTION_INFO_V1(gpumask_from_int_array);
PG_FUNCTION_INFO_V1(gpumask_gpu_indices);

/*
 * Raise (or, with a soft-error context, save) the error for a failed parse.
 * The message names the whole input (or the offending index), the detail
 * names the element, the hint says what is accepted.
 */
static void
report_parse_error(const char *text, const GpuMaskParseError *err,
				   Node *escontext)
{
	/* as the messages show them: cut to a readable length (cut.h) */
	const char *elem = tide_cut(pnstrdup(text + err->elem_start, err->elem_len), TIDE_CUT_DEFAULT);

	text = tide_cut(text, TIDE_CUT_DEFAULT);

	switch (err->status)
	{
		case GPUMASK_ERR_SYNTAX:
			errsave(escontext,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid input syntax for type gpumask: \"%s\"", text),
					 errdetail("Element %d, \"%s\", is not a GPU index or a range of GPU indices.",
							   err->element, elem),
					 errhint(GPUMASK_SYNTAX_HINT)));
			break;
		case GPUMASK_ERR_EMPTY_ELEMENT:
			errsave(escontext,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid input syntax for type gpumask: \"%s\"", text),
					 errdetail("Element %d is empty.", err->element),
					 errhint(GPUMASK_SYNTAX_HINT)));
			break;
		case GPUMASK_ERR_NEGATIVE:
			errsave(escontext,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid input syntax for type gpumask: \"%s\"", text),
					 errdetail("Element %d, \"%s\", holds a negative GPU index.",
							   err->element, elem),
					 errhint(GPUMASK_SYNTAX_HINT)));
			break;
		case GPUMASK_ERR_INCOMPLETE_RANGE:
			errsave(escontext,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid input syntax for type gpumask: \"%s\"", text),
					 errdetail("Element %d, \"%s\", is a range without an end.",
							   err->element, elem),
					 errhint(GPUMASK_SYNTAX_HINT)));
			break;
		case GPUMASK_ERR_REVERSED_RANGE:
			errsave(escontext,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid input syntax for type gpumask: \"%s\"", text),
					 errdetail("Element %d, \"%s\", is a range whose end %lld is below its start %lld.",
							   err->element, elem, err->index2, err->index),
					 errhint("Write a range from its lowest to its highest GPU index, such as \"%lld-%lld\".",
							 err->index2, err->index)));
			break;
		case GPUMASK_ERR_INDEX_TOO_LARGE:
			errsave(escontext,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("GPU index %lld is out of range for type gpumask",
							err->index),
					 errdetail("Element %d of \"%s\" is \"%s\".",
							   err->element, text, elem),
					 errhint(GPUMASK_LIMIT_HINT)));
			break;
		case GPUMASK_ERR_OVERFLOW:
			errsave(escontext,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("value out of range for type gpumask: \"%s\"", text),
					 errdetail("Element %d, \"%s\", holds a number too large to be a GPU index.",
							   err->element, elem),
					 errhint(GPUMASK_LIMIT_HINT)));
			break;
		case GPUMASK_OK:
			elog(ERROR, "gpumask parse error reported without an error");
			break;
	}
}

/*
 * Parse text into *mask; false (after errsave) when the text is bad and
 * escontext asks for soft errors.  With escontext NULL it never returns
 * false: the error is raised.
 */
static bool
parse_or_report(const char *text, GpuMask *mask, Node *escontext)
{
	uint64_t	bits = 0;
	GpuMaskParseError err;

	if (gpumask_parse(text, &bits, &err) != GPUMASK_OK)
	{
		report_parse_error(text, &err, escontext);
		return false;
	}
	*mask = (GpuMask) bits;
	return true;
}

GpuMask
gpumask_from_cstring(const char *text)
{
	GpuMask		mask = 0;

	(void) parse_or_report(text, &mask, NULL);
	return mask;
}

char *
gpumask_to_cstring(GpuMask mask)
{
	char	   *buf = palloc(GPUMASK_TEXT_MAX);

	if (gpumask_format(mask, buf, GPUMASK_TEXT_MAX) >= GPUMASK_TEXT_MAX)
		elog(ERROR, "gpumask text longer than %d bytes", GPUMASK_TEXT_MAX);
	return buf;
}

/* Text input: '0-3,6'. */
Datum
gpumask_in(PG_FUNCTION_ARGS)
{
	GpuMask		mask = 0;

	if (!parse_or_report(PG_GETARG_CSTRING(0), &mask, GPUMASK_ESCONTEXT(fcinfo)))
		PG_RETURN_NULL();
	PG_RETURN_GPUMASK(mask);
}

/* Canonical text output, which reads back equal. */
Datum
gpumask_out(PG_FUNCTION_ARGS)
{
	PG_RETURN_CSTRING(gpumask_to_cstring(PG_GETARG_GPUMASK(0)));
}

/*
 * Binary input: the bitmap as a network-order int8.  Every bit pattern is a
 * valid set of indices 0..63, so there is nothing to reject.
 */
Datum
gpumask_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);

	PG_RETURN_GPUMASK((GpuMask) pq_getmsgint64(buf));
}

Datum
gpumask_send(PG_FUNCTION_ARGS)
{
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendint64(&buf, (int64) PG_GETARG_GPUMASK(0));
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/* Set algebra: union, intersection, difference. */
Datum
gpumask_or(PG_FUNCTION_ARGS)
{
	PG_RETURN_GPUMASK(gpumask_union(PG_GETARG_GPUMASK(0), PG_GETARG_GPUMASK(1)));
}

Datum
gpumask_and(PG_FUNCTION_ARGS)
{
	PG_RETURN_GPUMASK(gpumask_intersect(PG_GETARG_GPUMASK(0), PG_GETARG_GPUMASK(1)));
}

Datum
gpumask_minus(PG_FUNCTION_ARGS)
{
	PG_RETURN_GPUMASK(gpumask_difference(PG_GETARG_GPUMASK(0), PG_GETARG_GPUMASK(1)));
}

/*
 * Total order for btree: the unsigned value of the bitmap.  Arbitrary as a
 * set order, but consistent with equality, which is all that sorting,
 * grouping and indexes need.
 */
static int
gpumask_compare(GpuMask a, GpuMask b)
{
	if (a < b)
		return -1;
	if (a > b)
		return 1;
	return 0;
}

Datum
gpumask_eq(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(PG_GETARG_GPUMASK(0) == PG_GETARG_GPUMASK(1));
}

Datum
gpumask_ne(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(PG_GETARG_GPUMASK(0) != PG_GETARG_GPUMASK(1));
}

Datum
gpumask_lt(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(gpumask_compare(PG_GETARG_GPUMASK(0), PG_GETARG_GPUMASK(1)) < 0);
}

Datum
gpumask_le(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(gpumask_compare(PG_GETARG_GPUMASK(0), PG_GETARG_GPUMASK(1)) <= 0);
}

Datum
gpumask_gt(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(gpumask_compare(PG_GETARG_GPUMASK(0), PG_GETARG_GPUMASK(1)) > 0);
}

Datum
gpumask_ge(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(gpumask_compare(PG_GETARG_GPUMASK(0), PG_GETARG_GPUMASK(1)) >= 0);
}

Datum
gpumask_cmp(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(gpumask_compare(PG_GETARG_GPUMASK(0), PG_GETARG_GPUMASK(1)));
}

/* Sort comparator on raw Datums: no fmgr call per comparison. */
static int
gpumask_fastcmp(Datum x, Datum y, SortSupport ssup)
{
	return gpumask_compare(DatumGetGpuMask(x), DatumGetGpuMask(y));
}

/* btree support function 2: lets sorts and index builds skip fmgr. */
Datum
gpumask_sortsupport(PG_FUNCTION_ARGS)
{
	SortSupport ssup = (SortSupport) PG_GETARG_POINTER(0);

	ssup->comparator = gpumask_fastcmp;
	PG_RETURN_VOID();
}

/* Hash opclass support: hash the bitmap as int8 hashes its value. */
Datum
gpumask_hash(PG_FUNCTION_ARGS)
{
	return DirectFunctionCall1(hashint8,
							   Int64GetDatum((int64) PG_GETARG_GPUMASK(0)));
}

Datum
gpumask_hash_extended(PG_FUNCTION_ARGS)
{
	return DirectFunctionCall2(hashint8extended,
							   Int64GetDatum((int64) PG_GETARG_GPUMASK(0)),
							   PG_GETARG_DATUM(1));
}

/* a @> b: a holds every GPU of b. */
Datum
gpumask_contains(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(gpumask_is_superset(PG_GETARG_GPUMASK(0), PG_GETARG_GPUMASK(1)));
}

/* a <@ b: every GPU of a is in b. */
Datum
gpumask_contained(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(gpumask_is_superset(PG_GETARG_GPUMASK(1), PG_GETARG_GPUMASK(0)));
}

/* a && b: a and b share a GPU. */
Datum
gpumask_overlaps(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(gpumask_intersects(PG_GETARG_GPUMASK(0), PG_GETARG_GPUMASK(1)));
}

Datum
gpumask_gpu_count(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(gpumask_popcount(PG_GETARG_GPUMASK(0)));
}

/* The value a launcher exports as CUDA_VISIBLE_DEVICES: "0,1,2,3". */
Datum
gpumask_cuda_visible_devices(PG_FUNCTION_ARGS)
{
	char		buf[GPUMASK_TEXT_MAX];

	if (gpumask_format_cuda(PG_GETARG_GPUMASK(0), buf, sizeof(buf)) >= sizeof(buf))
		elog(ERROR, "CUDA_VISIBLE_DEVICES text longer than %d bytes",
			 GPUMASK_TEXT_MAX);
	PG_RETURN_TEXT_P(cstring_to_text(buf));
}

/*
 * tide.gpumask(int[]): the set of the array's elements.  Duplicates are
 * fine (it is a set); NULLs, negative indices and indices above 63 are
 * errors, as is an array of more than one dimension.
 */
Datum
gpumask_from_int_array(PG_FUNCTION_ARGS)
{
	ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(0);
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i;
	GpuMask		mask = 0;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("array of GPU indices must be one-dimensional"),
				 errdetail("The array has %d dimensions.", ARR_NDIM(arr))));

	deconstruct_array(arr, INT4OID, sizeof(int32), true, TYPALIGN_INT,
					  &elems, &nulls, &n);
	for (i = 0; i < n; i++)
	{
		int32		idx;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("array of GPU indices must not contain nulls"),
					 errdetail("Element %d is null.", i + 1)));
		idx = DatumGetInt32(elems[i]);
		if (idx < 0)
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("GPU index %d is out of range for type gpumask", idx),
					 errdetail("Element %d of the array is negative.", i + 1),
					 errhint(GPUMASK_LIMIT_HINT)));
		if (idx >= GPUMASK_MAX_GPUS)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("GPU index %d is out of range for type gpumask", idx),
					 errdetail("Element %d of the array is above 63.", i + 1),
					 errhint(GPUMASK_LIMIT_HINT)));
		mask |= GPUMASK_BIT(idx);
	}
	PG_RETURN_GPUMASK(mask);
}

/* tide.gpu_indices(gpumask): the indices in ascending order, as int[]. */
Datum
gpumask_gpu_indices(PG_FUNCTION_ARGS)
{
	int			idx[GPUMASK_MAX_GPUS];
	Datum		elems[GPUMASK_MAX_GPUS];
	int			n = gpumask_to_indices(PG_GETARG_GPUMASK(0), idx);
	int			i;

	if (n == 0)
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(INT4OID));
	for (i = 0; i < n; i++)
		elems[i] = Int32GetDatum(idx[i]);
	PG_RETURN_ARRAYTYPE_P(construct_array(elems, n, INT4OID, sizeof(int32),
										  true, TYPALIGN_INT));
}
