/*
 * resvec.h: the tide.resvec type (resource vector) for C code in the server.
 *
 * On disk and in memory a resvec is a varlena:
 *
 *     int32 vl_len_      varlena header
 *     int32 count        number of entries
 *     int32 names_size   bytes of the names area (NULs included)
 *     int32 reserved     always 0 (lets the format grow; checked on input)
 *     ResVecEntry entries[count]   sorted by name (byte order), unique,
 *                                  every milli > 0
 *     char  names[names_size]      the names, each NUL-terminated
 *
 * Read arguments with PG_GETARG_RESVEC_P (it detoasts), walk them with
 * resvec_count/resvec_name/resvec_milli, and build new values with
 * resvec_from_pairs.
 */
#ifndef TIDE_RESVEC_H
#define TIDE_RESVEC_H

#include "postgres.h"

#include "fmgr.h"

#include "resvec_core.h"

typedef struct ResVecEntry
{
	int64		milli;			/* quantity in milli-units, > 0 */
	uint32		name_off;		/* offset of the name in the names area */
	uint32		name_len;		/* length of the name, NUL not counted */
} ResVecEntry;

typedef struct ResVec
{
	int32		vl_len_;		/* varlena header (do not touch directly) */
	int32		count;			/* number of entries */
	int32		names_size;		/* bytes of the names area */
	int32		reserved;		/* always 0 */
	ResVecEntry entries[FLEXIBLE_ARRAY_MEMBER];
} ResVec;

#define RESVEC_HDRSZ		offsetof(ResVec, entries)
#define RESVEC_NAMES(rv)	((char *) &(rv)->entries[(rv)->count])

#define DatumGetResVecP(X)		((ResVec *) PG_DETOAST_DATUM(X))
#define ResVecPGetDatum(X)		PointerGetDatum(X)
#define PG_GETARG_RESVEC_P(n)	DatumGetResVecP(PG_GETARG_DATUM(n))
#define PG_RETURN_RESVEC_P(x)	PG_RETURN_POINTER(x)

/* Number of components (names with a non-zero quantity). */
extern int	resvec_count(const ResVec *rv);

/* Name of component i (0 <= i < count), NUL-terminated, in sorted order. */
extern const char *resvec_name(const ResVec *rv, int i);

/* Quantity of component i in milli-units (always > 0). */
extern int64 resvec_milli(const ResVec *rv, int i);

/* Quantity of a name in milli-units, 0 when absent. */
extern int64 resvec_get_milli(const ResVec *rv, const char *name);

/*
 * Build a resvec from n names and milli-quantities in any order: sorts,
 * drops zeros, and raises an error on a duplicate name, a bad name or a
 * negative quantity.  The result is palloc'd in the current context.
 */
extern ResVec *resvec_from_pairs(int n, const char *const *names,
								 const int64 *milli);

/* The empty vector. */
extern ResVec *resvec_empty(void);

/* Canonical text, palloc'd ("cpu=4, memory=17179869184"). */
extern char *resvec_to_cstring(const ResVec *rv);

/* Parse text as resvec_in does (raises errors with the same messages). */
extern ResVec *resvec_from_cstring(const char *str);

/* OID of the type tide.resvec (InvalidOid if the extension is absent). */
extern Oid	resvec_type_oid(void);

#endif							/* TIDE_RESVEC_H */
