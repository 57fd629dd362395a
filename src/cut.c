/*
 * cut.c: a value as an error message shows it (cut.h), and tide._cut(),
 * the same for the messages of the SQL functions.  A 10 KB name echoed
 * whole makes an error unreadable (and fills the server log): every
 * message that echoes a user's value shows it through here.
 */
#include "postgres.h"

#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"

#include "cut.h"

PG_FUNCTION_INFO_V1(tide_cut_sql);

const char *
tide_cut(const char *s, int n)
{
	int			len;
	int			keep;
	char	   *out;

	if (s == NULL)
		return "NULL";
	if (n < 4)
		n = 4;
	len = strlen(s);
	/* at most n characters: the whole of it */
	if (pg_mbstrlen_with_len(s, len) <= n)
		return s;
	keep = pg_mbcharcliplen(s, len, n - 3);
	out = palloc(keep + 4);
	memcpy(out, s, keep);
	memcpy(out + keep, "...", 4);
	return out;
}

/* tide._cut(value text, n integer DEFAULT 60) RETURNS text */
Datum
tide_cut_sql(PG_FUNCTION_ARGS)
{
	char	   *s;
	int			n = PG_ARGISNULL(1) ? TIDE_CUT_DEFAULT : PG_GETARG_INT32(1);
	const char *cut;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	s = text_to_cstring(PG_GETARG_TEXT_PP(0));
	cut = tide_cut(s, n);
	if (cut == s)
		PG_RETURN_TEXT_P(PG_GETARG_TEXT_PP(0));
	PG_RETURN_TEXT_P(cstring_to_text(cut));
}
