/*
 * cut.h: a value as an error message shows it (cut.c): at most a readable
 * number of characters, a longer one cut and ended with "...".  One rule
 * for every message that echoes what a user gave, in C and, through
 * tide._cut(), in SQL.
 */
#ifndef TIDE_CUT_H
#define TIDE_CUT_H

/* the length (characters) a value is cut to by default */
#define TIDE_CUT_DEFAULT 60

/*
 * s as a message shows it: s itself when it has at most n characters,
 * else its first n - 3 characters (whole characters of the database
 * encoding) and "...", palloc'd.  NULL gives "NULL".
 */
extern const char *tide_cut(const char *s, int n);

#endif
