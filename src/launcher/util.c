/*
 * util.c: the options, log lines, clock, memory and byte buffers that
 * every module of tide-launcher uses (see util.h).
 */
#include "util.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

LauncherOptions opt = {
	.poll_interval = 5.0,
	.heartbeat_interval = 5.0,
	.grace_period = 10.0,
	.warn_signal = SIGUSR1,
	.warn_signal_name = "USR1",
	.max_backoff = 1.5,
};

bool		tl_in_shepherd;

/* Monotonic seconds, for every deadline (wall clock may jump). */
double
now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void *
tl_realloc(void *p, size_t n)
{
	void	   *q = realloc(p, n);

	if (q == NULL)
	{
		fprintf(stderr, "tide-launcher: out of memory\n");
		/* the shepherd must not run the launcher's atexit work (libpq) */
		if (tl_in_shepherd)
			_exit(1);
		exit(1);
	}
	return q;
}

/* Write one log line: UTC timestamp, node, event, then the details. */
static void
tl_vlog(const char *event, const char *fmt, va_list ap)
{
	char		line[4096];
	struct timeval tv;
	struct tm	tm;
	int			n;

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	n = snprintf(line, sizeof(line),
				 "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ tide-launcher[%d] node=%s event=%s",
				 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
				 tm.tm_hour, tm.tm_min, tm.tm_sec, (int) (tv.tv_usec / 1000),
				 (int) getpid(), opt.node ? opt.node : "?", event);
	if (n < 0 || n >= (int) sizeof(line) - 2)
		n = (int) sizeof(line) - 2;
	if (fmt && *fmt)
	{
		int			m;

		line[n++] = ' ';
		m = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
		if (m > 0)
			n += (m < (int) (sizeof(line) - n - 1)) ? m : (int) (sizeof(line) - n - 2);
	}
	/* one event, one line: fold newlines of server messages */
	for (int i = 0; i < n; i++)
		if (line[i] == '\n' || line[i] == '\r')
			line[i] = ' ';
	line[n++] = '\n';
	/* a single write keeps lines whole when several launchers share a file */
	if (write(STDERR_FILENO, line, n) < 0)
	{
		/* nowhere to report it */
	}
}

/* A log line that is always written (lifecycle, errors). */
void
tl_log(const char *event, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	tl_vlog(event, fmt, ap);
	va_end(ap);
}

/* A per-allocation event line, silenced by --quiet. */
void
tl_event(const char *event, const char *fmt,...)
{
	va_list		ap;

	if (opt.quiet)
		return;
	va_start(ap, fmt);
	tl_vlog(event, fmt, ap);
	va_end(ap);
}

/* Append bytes to a growing buffer. */
void
buf_append(char **buf, size_t *len, size_t *cap, const void *p, size_t n)
{
	if (*len + n > *cap)
	{
		*cap = (*len + n) * 2 + 4096;
		*buf = tl_realloc(*buf, *cap);
	}
	memcpy(*buf + *len, p, n);
	*len += n;
}

/* Write what a non-blocking descriptor takes; false when the reader is gone. */
bool
buf_flush(int fd, char *buf, size_t *len)
{
	size_t		off = 0;

	while (off < *len)
	{
		ssize_t		w = write(fd, buf + off, *len - off);

		if (w > 0)
			off += w;
		else if (w < 0 && errno == EINTR)
			continue;
		else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		else
		{
			*len = 0;
			return false;
		}
	}
	if (off > 0)
	{
		memmove(buf, buf + off, *len - off);
		*len -= off;
	}
	return true;
}
