/*
 * gpumask.h: the tide.gpumask SQL type, for other C files of the server
 * module (the scheduler's SPI adapter reads and writes masks as uint64).
 *
 * tide.gpumask is a fixed-length, pass-by-value 8-byte type whose Datum is
 * the uint64 bitmap itself (bit i = GPU index i).  Plain C helpers (parse,
 * format, popcount, set algebra) are in core/gpumask_core.h.
 */
#ifndef TIDE_GPUMASK_H
#define TIDE_GPUMASK_H

/* Include postgres.h first, as every backend source file does. */
#include "fmgr.h"

#include "gpumask_core.h"

typedef uint64 GpuMask;

#define DatumGetGpuMask(X)		((GpuMask) DatumGetInt64(X))
#define GpuMaskGetDatum(X)		Int64GetDatum((int64) (X))
#define PG_GETARG_GPUMASK(n)	DatumGetGpuMask(PG_GETARG_DATUM(n))
#define PG_RETURN_GPUMASK(x)	return GpuMaskGetDatum(x)

/*
 * Parse text into a mask, raising the same errors as the type's input
 * function (for callers that take masks as text, e.g. from JSON).
 */
extern GpuMask gpumask_from_cstring(const char *text);

/* Canonical text of a mask, palloc'd. */
extern char *gpumask_to_cstring(GpuMask mask);

#endif							/* TIDE_GPUMASK_H */
