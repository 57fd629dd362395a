/*
 * report.c: the queue of reports (see report.h).  Each kind goes out as
 * one statement per batch (up to BATCH_MAX allocations), and the database
 * answers for each allocation: changed and already done both complete the
 * report; a refused one (e.g. the allocation was released meanwhile) is
 * logged and dropped, since sending it again cannot help.  A statement
 * that fails as a whole, or a lost connection, leaves the batch queued.
 */
#include "report.h"
#include "alloc.h"
#include "db.h"
#include "statedir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest number of allocations in one report statement. */
#define BATCH_MAX 4000

/* Is this allocation waiting for a report of this kind? */
static bool
wants(const Alloc *a, ReportKind kind)
{
	switch (kind)
	{
		case R_STARTED:
			return a->started_owed;
		case R_EXITED:
			return a->state == AS_EXITED && !a->started_owed;
		case R_EVICTED:
			return a->state == AS_STOPPED;
	}
	return false;
}

/* The report went through (or was refused for good): update the table. */
static void
report_done(int64_t id, ReportKind kind)
{
	Alloc	   *a = alloc_find(id);

	if (a == NULL)
		return;
	if (kind == R_STARTED)
		a->started_owed = false;
	else
	{
		/*
		 * An ALLOC.exit is only left by earlier launchers (or by a failed
		 * append, removed at the next start).
		 */
		statedir_forget(a->id, a->adopted);
		alloc_remove(a);
	}
}

/* A report refused for good: logged and dropped. */
static void
report_refused(ReportKind kind, int64_t id, const char *reason)
{
	tl_log("report_refused", "%s(%lld) refused; dropping this report: %s",
		   db_report_name(kind), (long long) id, reason);
	report_done(id, kind);
}

/*
 * Send every queued report of one kind, in batches.  False when the
 * connection is lost or a statement fails as a whole (the reports stay
 * queued; the event loop tries again soon).
 */
static bool
flush_kind(ReportKind kind)
{
	int64_t    *ids = NULL;
	const char **tokens = NULL;
	char		(*tokcopy)[sizeof(allocs[0].token)] = NULL;
	int		   *codes = NULL;
	const char **reasons = NULL;
	double	   *agos = NULL;
	double		now = now_mono();
	int			n = 0;
	bool		ok = true;

	for (int i = 0; i < nallocs; i++)
		if (wants(&allocs[i], kind))
			n++;
	if (n == 0)
		return true;
	ids = tl_realloc(NULL, n * sizeof(int64_t));
	tokens = tl_realloc(NULL, n * sizeof(char *));
	tokcopy = tl_realloc(NULL, n * sizeof(*tokcopy));
	codes = tl_realloc(NULL, n * sizeof(int));
	reasons = tl_realloc(NULL, n * sizeof(char *));
	agos = tl_realloc(NULL, n * sizeof(double));
	n = 0;
	for (int i = 0; i < nallocs; i++)
		if (wants(&allocs[i], kind))
		{
			ids[n] = allocs[i].id;
			/* R-C7: a report naming a lost allocation is refused, not
			 * taken for the one that has its id now (copied: entries
			 * move as reports of earlier batches are done) */
			memcpy(tokcopy[n], allocs[i].token, sizeof(tokcopy[n]));
			tokens[n] = tokcopy[n];
			codes[n] = allocs[i].exit_code;
			/* the database takes a reason only with a failure */
			reasons[n] = allocs[i].exit_code != 0 ? allocs[i].reason : NULL;

			/*
			 * When it exited, as "so long ago" by this machine's monotonic
			 * clock: the database subtracts it from its own now(), so the
			 * two clocks need not agree, and the time the report spent on
			 * the way only makes the exit look later (R-T6).
			 */
			agos[n] = allocs[i].exited_at > 0 ? (now > allocs[i].exited_at ? now - allocs[i].exited_at : 0) : -1;
			n++;
		}

	for (int off = 0; off < n && ok; off += BATCH_MAX)
	{
		int			m = n - off < BATCH_MAX ? n - off : BATCH_MAX;
		ReportResult *res;
		QueryOutcome q = db_report(kind, ids + off, tokens + off, kind == R_EXITED ? codes + off : NULL,
								   kind == R_EXITED ? reasons + off : NULL,
								   kind == R_EXITED ? agos + off : NULL, m, &res);

		if (q != Q_OK)
		{
			if (q == Q_RETRY)
				tl_log("report_retry", "%s: %s", db_report_name(kind), db_error());
			else if (q == Q_REFUSED)
				tl_log("error", "%s of %d allocations failed as a whole (kept, sent again soon): %s",
					   db_report_name(kind), m, db_error());
			ok = false;
			continue;
		}
		for (int i = 0; i < m; i++)
		{
			if (res[i].outcome == REPORT_REFUSED)
				report_refused(kind, res[i].id, res[i].reason);
			else
				report_done(res[i].id, kind);
		}
	}
	free(ids);
	free(tokens);
	free(tokcopy);
	free(codes);
	free(reasons);
	free(agos);
	return ok;
}

/*
 * Reports go out at most every REPORT_INTERVAL seconds, or at once when
 * REPORT_EARLY are waiting: under a stream of starts and exits that makes
 * batches of hundreds (each statement has a fixed cost in the database:
 * the triggers and the job roll-up run once per call), and when work is
 * rare the first report of a quiet spell is sent immediately.
 */
#define REPORT_INTERVAL 0.2
#define REPORT_EARLY	1000

static double last_report;
static double next_due = 1e18;

/* When deferred reports are due (for the event loop's sleep), else 1e18. */
double
report_due(void)
{
	return next_due;
}

/*
 * Started before exited (an allocation must be running to exit), then
 * evicted.  force: now, whatever the interval.  False when the
 * connection is lost or the server asks to retry.
 */
bool
report_flush(bool force)
{
	double		now = now_mono();
	int			n = 0;

	if (!db_connected())
		return false;
	for (int i = 0; i < nallocs && (force || n < REPORT_EARLY); i++)
		if (wants(&allocs[i], R_STARTED) || wants(&allocs[i], R_EXITED) ||
			wants(&allocs[i], R_EVICTED))
			n++;
	if (n == 0)
	{
		next_due = 1e18;
		return true;
	}
	if (!force && n < REPORT_EARLY && now < last_report + REPORT_INTERVAL)
	{
		next_due = last_report + REPORT_INTERVAL;
		return true;
	}
	next_due = 1e18;
	last_report = now;
	if (!flush_kind(R_STARTED))
		return false;
	if (!flush_kind(R_EXITED))
		return false;
	return flush_kind(R_EVICTED);
}
