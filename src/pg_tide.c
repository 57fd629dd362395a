/*
 * pg_tide.c: module entry point.
 *
 * The SQL-callable functions live beside the concept they serve
 * (resvec.c, gpumask.c, cycle.c, ...); this file only marks the library
 * as a PostgreSQL module and defines its settings.
 */
#include "postgres.h"

#include "fmgr.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
}
