/*
 * util.h: what every module of tide-launcher shares: the options (filled
 * once by main.c before anything runs, read-only afterwards), log lines,
 * the monotonic clock, memory and byte buffers.  The bottom of the
 * launcher's call tree: it calls no other module.
 */
#ifndef TIDE_LAUNCHER_UTIL_H
#define TIDE_LAUNCHER_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Exit code reported for a job that has no command (like sh's "not found"). */
#define TL_EXIT_NO_COMMAND	127
/* Exit code reported when the command's program is not there (sh's too). */
#define TL_EXIT_NOT_FOUND	127
/* Exit code reported when the work could not be started at all. */
#define TL_EXIT_CANNOT_START 126
/* Exit code reported for work whose shepherd vanished without a trace. */
#define TL_EXIT_LOST		137

/* Options, from the command line (main.c). */
typedef struct LauncherOptions
{
	const char *node;
	const char *dsn;			/* NULL: libpq's PG* variables */
	double		poll_interval;	/* seconds between fallback claims */
	double		heartbeat_interval;
	double		grace_period;	/* SIGTERM to SIGKILL, for jobs without
								 * their own grace_period (R-T3) */
	int			warn_signal;	/* sent warn_before a job's time limit (R-T2) */
	const char *warn_signal_name;	/* its name, for log lines ("USR1") */
	double		max_backoff;	/* reconnect backoff ceiling */
	const char *state_dir;
	const char *output_dir;		/* NULL: children inherit stdout/stderr */
	bool		quiet;			/* no per-allocation event lines */
	bool		verbose;		/* also a line per round trip (timings) */
	bool		no_shepherd;	/* spawn commands directly, from the launcher
								 * (no faster on two cores; see docs) */
	bool		no_listen;		/* never LISTEN: behind a transaction pooler,
								 * claim every poll_interval only */
} LauncherOptions;

extern LauncherOptions opt;

/* True in the shepherd process: out of memory there is _exit, not exit. */
extern bool tl_in_shepherd;

double		now_mono(void);
void		tl_log(const char *event, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));
void		tl_event(const char *event, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));
void	   *tl_realloc(void *p, size_t n);

/* A growing byte buffer, and writing it to a non-blocking descriptor. */
void		buf_append(char **buf, size_t *len, size_t *cap, const void *p, size_t n);
bool		buf_flush(int fd, char *buf, size_t *len);

#endif							/* TIDE_LAUNCHER_UTIL_H */
