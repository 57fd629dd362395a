/*
 * csv.c: reading the trace files.
 *
 * The traces are plain comma-separated files with a header line, no
 * quoting.  The whole file is read at once and split in place.  Every
 * error names the file, the line and the field, so a bad line in a trace
 * of 80,000 is found at once.  Blank lines are skipped; CRLF is accepted.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* Split the next non-blank line into fields; false at end of file. */
static bool
read_line(CsvFile *f)
{
	while (f->pos < f->len)
	{
		char	   *line = f->buf + f->pos;
		char	   *nl = memchr(line, '\n', f->len - f->pos);
		size_t		n = nl ? (size_t) (nl - line) : f->len - f->pos;
		char	   *p;

		f->pos += n + (nl ? 1 : 0);
		f->lineno++;
		line[n] = '\0';
		if (n > 0 && line[n - 1] == '\r')
			line[--n] = '\0';
		if (n == 0)
			continue;
		f->nfields = 0;
		p = line;
		for (;;)
		{
			char	   *comma = strchr(p, ',');

			if (f->nfields == CSV_MAX_FIELDS)
				sim_die(SIM_EXIT_DATA, "%s:%d: more than %d fields", f->path, f->lineno,
						CSV_MAX_FIELDS);
			if (*p == '"')
				sim_die(SIM_EXIT_DATA, "%s:%d: field %d: quoted fields are not supported",
						f->path, f->lineno, f->nfields + 1);
			f->field[f->nfields++] = p;
			if (!comma)
				break;
			*comma = '\0';
			p = comma + 1;
		}
		return true;
	}
	return false;
}

/* Open and read a trace; the first non-blank line is the header. */
void
csv_open(CsvFile *f, const char *path)
{
	FILE	   *fp = fopen(path, "rb");
	size_t		cap = 1 << 16;

	memset(f, 0, sizeof(*f));
	f->path = path;
	if (!fp)
		sim_die(SIM_EXIT_DATA, "cannot open %s: %s", path, strerror(errno));
	f->buf = sim_alloc(cap + 1);
	for (;;)
	{
		size_t		got = fread(f->buf + f->len, 1, cap - f->len, fp);

		f->len += got;
		if (f->len < cap)
		{
			if (ferror(fp))
				sim_die(SIM_EXIT_DATA, "cannot read %s: %s", path, strerror(errno));
			break;
		}
		cap *= 2;
		f->buf = sim_realloc(f->buf, cap + 1);
	}
	fclose(fp);
	f->buf[f->len] = '\0';
	if (memchr(f->buf, '\0', f->len))
		sim_die(SIM_EXIT_DATA, "%s: not a text file (contains NUL bytes)", path);
	if (!read_line(f))
		sim_die(SIM_EXIT_DATA, "%s: empty file (expected a CSV header line)", path);
	f->ncols = f->nfields;
	memcpy(f->col, f->field, sizeof(char *) * f->nfields);
}

/* Next data line; checks the field count against the header. */
bool
csv_next(CsvFile *f)
{
	if (!read_line(f))
		return false;
	if (f->nfields != f->ncols)
		sim_die(SIM_EXIT_DATA, "%s:%d: %d fields, the header has %d", f->path, f->lineno,
				f->nfields, f->ncols);
	return true;
}

/* Index of a header column, -1 if absent and optional. */
int
csv_column(CsvFile *f, const char *name, bool required)
{
	for (int i = 0; i < f->ncols; i++)
		if (strcmp(f->col[i], name) == 0)
			return i;
	if (required)
		sim_die(SIM_EXIT_DATA, "%s:1: no column \"%s\" in the header", f->path, name);
	return -1;
}

const char *
csv_get(CsvFile *f, int col)
{
	return col >= 0 && col < f->nfields ? f->field[col] : "";
}

/* Report a bad field: file:line, the column name, then the message. */
void
csv_fail(CsvFile *f, int col, const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "%s: %s:%d: field %s: ", sim_progname, f->path, f->lineno,
			col >= 0 && col < f->ncols ? f->col[col] : "?");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(SIM_EXIT_DATA);
}

/* An integer field in [lo, hi]. */
int64_t
csv_int(CsvFile *f, int col, int64_t lo, int64_t hi)
{
	const char *v = csv_get(f, col);
	char	   *end;
	long long	x;

	errno = 0;
	x = strtoll(v, &end, 10);
	if (*v == '\0' || *end != '\0' || errno != 0)
		csv_fail(f, col, "\"%s\" is not an integer", v);
	if (x < lo || x > hi)
		csv_fail(f, col, "%lld is out of range (%lld to %lld)", x, (long long) lo,
				 (long long) hi);
	return x;
}

/* A number field in [lo, hi]. */
double
csv_double(CsvFile *f, int col, double lo, double hi)
{
	const char *v = csv_get(f, col);
	char	   *end;
	double		x;

	errno = 0;
	x = strtod(v, &end);
	if (*v == '\0' || *end != '\0' || errno != 0 || !isfinite(x))
		csv_fail(f, col, "\"%s\" is not a number", v);
	if (x < lo || x > hi)
		csv_fail(f, col, "%g is out of range (%g to %g)", x, lo, hi);
	return x;
}

void
csv_close(CsvFile *f)
{
	free(f->buf);
	f->buf = NULL;
}
