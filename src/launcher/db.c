/*
 * db.c: tide-launcher's conversation with the database, through the
 * launcher functions of CONTRACT.md only (tide.node_channel, tide.claim,
 * tide.claim_evictions, tide.started, tide.exited, tide.evicted,
 * tide.heartbeat).
 *
 * Throughput comes from batching: one round trip claims both new work and
 * evictions, and each kind of report goes out as one statement whatever the
 * number of allocations: one call of the set-based functions
 * (tide.started(bigint[]) and the others) when the schema has them, else
 * the single-row functions over unnest() of an array.  If a batch is
 * refused (one allocation in a state the database rejects), the batch is
 * retried one allocation at a time so that one bad report never holds back
 * the others.  A lost connection leaves every report queued.
 */
#include "launcher.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

static PGconn *conn;

/*
 * Set-based report functions (tide.started(bigint[]), tide.exited(bigint[],
 * integer[]), tide.evicted(bigint[])), when the schema has them: one
 * statement, hence one run of the allocation triggers, per batch instead of
 * one per allocation.  Looked up at every connection.
 */
static bool have_array_call[3];

/* How a statement went. */
typedef enum
{
	Q_OK,						/* done */
	Q_REFUSED,					/* a SQL error: retrying the same will not help */
	Q_RETRY,					/* a transient error (serialization, lock...) */
	Q_LOST						/* the connection is gone (now disconnected) */
} QueryOutcome;

/* Largest number of allocations in one report statement. */
#define BATCH_MAX 4000

bool
db_connected(void)
{
	return conn != NULL;
}

int
db_socket(void)
{
	return conn ? PQsocket(conn) : -1;
}

/* Server NOTICEs (e.g. "already exited") become log lines. */
static void
notice_to_log(void *arg, const char *message)
{
	(void) arg;
	tl_log("notice", "%s", message);
}

void
db_disconnect(const char *why)
{
	if (conn == NULL)
		return;
	if (why)
		tl_log("disconnected", "%s (will reconnect; running work is kept)", why);
	PQfinish(conn);
	conn = NULL;
}

/* First line of libpq's current error message, for log lines. */
static const char *
conn_error(void)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf), "%s", conn ? PQerrorMessage(conn) : "no connection");
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

/* Run one statement with text parameters and classify the outcome. */
static PGresult *
run(const char *what, const char *sql, int nparams, const char *const *params,
	QueryOutcome *outcome)
{
	PGresult   *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
	ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	const char *state;

	if (res && (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK))
	{
		*outcome = Q_OK;
		return res;
	}
	if (res == NULL || PQstatus(conn) != CONNECTION_OK)
	{
		char		why[1100];

		snprintf(why, sizeof(why), "%s: %s", what, conn_error());
		PQclear(res);
		db_disconnect(why);
		*outcome = Q_LOST;
		return NULL;
	}
	state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	if (state && (strncmp(state, "08", 2) == 0 || strncmp(state, "53", 2) == 0 ||
				  strncmp(state, "57", 2) == 0 || strcmp(state, "40001") == 0 ||
				  strcmp(state, "40P01") == 0 || strcmp(state, "55P03") == 0))
		*outcome = Q_RETRY;
	else
		*outcome = Q_REFUSED;
	return res;
}

/* Log a refused or failed statement with the server's message. */
static void
log_sql_error(const char *event, const char *what, PGresult *res)
{
	const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *hint = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_HINT) : NULL;

	tl_log(event, "%s: %s (SQLSTATE %s)%s%s", what,
		   msg ? msg : conn_error(), state ? state : "?",
		   hint ? " hint: " : "", hint ? hint : "");
}

/*
 * Connect, check the node, LISTEN on its channel.  On the very first
 * attempt, errors that retrying cannot fix (bad credentials, unknown
 * database, node or extension) end the program with a clear message;
 * afterwards every failure is retried with backoff.
 */
bool
db_connect(bool first)
{
	const char *keys[12];
	const char *vals[12];
	char		appname[64];
	int			k = 0;
	PGresult   *res;
	QueryOutcome q;
	const char *params[1] = {opt.node};
	char	   *channel;
	char	   *quoted;
	char		sql[1024];

	snprintf(appname, sizeof(appname), "tide-launcher %s", opt.node);
	keys[k] = "connect_timeout";
	vals[k++] = "10";
	keys[k] = "fallback_application_name";
	vals[k++] = appname;
	/*
	 * A server that vanishes (host down, network cut) must not leave the
	 * launcher waiting for hours on a dead socket: TCP keepalives and a
	 * user timeout, unless the connection string sets its own (its values
	 * come later and win).
	 */
	keys[k] = "keepalives";
	vals[k++] = "1";
	keys[k] = "keepalives_idle";
	vals[k++] = "30";
	keys[k] = "keepalives_interval";
	vals[k++] = "10";
	keys[k] = "keepalives_count";
	vals[k++] = "3";
	keys[k] = "tcp_user_timeout";
	vals[k++] = "60000";
	if (opt.dsn)
	{
		keys[k] = "dbname";
		vals[k++] = opt.dsn;
	}
	keys[k] = NULL;
	vals[k] = NULL;

	conn = PQconnectdbParams(keys, vals, 1);
	if (conn == NULL)
	{
		tl_log("error", "cannot connect: out of memory");
		return false;
	}
	if (PQstatus(conn) != CONNECTION_OK)
	{
		const char *msg = conn_error();
		bool		permanent = PQconnectionNeedsPassword(conn) ||
			strstr(msg, "authentication failed") || strstr(msg, "does not exist") ||
			strstr(msg, "no pg_hba.conf entry") || strstr(msg, "password") ||
			strstr(msg, "invalid connection option") || strstr(msg, "missing \"=\"") ||
			strstr(msg, "invalid URI") || strstr(msg, "invalid integer value") ||
			strstr(msg, "permission denied for database");

		if (first && permanent)
		{
			tl_log("fatal", "cannot connect: %s", msg);
			fprintf(stderr, "tide-launcher: hint: check --dsn or the PG* variables (PGHOST, PGPORT, PGDATABASE, PGUSER; a password in ~/.pgpass or PGPASSFILE)\n");
			PQfinish(conn);
			conn = NULL;
			exit(1);
		}
		tl_log("connect_failed", "%s (retrying)", msg);
		PQfinish(conn);
		conn = NULL;
		return false;
	}
	PQsetNoticeProcessor(conn, notice_to_log, NULL);

	/* the channel: this also proves that pg_tide is installed and callable */
	res = run("tide.node_channel", "SELECT tide.node_channel($1)", 1, params, &q);
	if (q == Q_LOST)
		return false;
	if (q != Q_OK || PQntuples(res) != 1 || PQgetisnull(res, 0, 0))
	{
		log_sql_error(first ? "fatal" : "error", "tide.node_channel", res);
		if (first && q == Q_REFUSED)
		{
			fprintf(stderr, "tide-launcher: hint: is pg_tide installed in database \"%s\" (CREATE EXTENSION pg_tide), and may role \"%s\" call the launcher functions?\n",
					PQdb(conn), PQuser(conn));
			PQclear(res);
			db_disconnect(NULL);
			exit(1);
		}
		PQclear(res);
		db_disconnect("setup failed");
		return false;
	}
	channel = strdup(PQgetvalue(res, 0, 0));
	PQclear(res);

	/*
	 * A first heartbeat: it proves the node exists and that this role may
	 * act for it.  Wrong at start-up is a mistake to say out loud; later
	 * (a node deleted while we run) it is logged and retried.
	 */
	res = run("tide.heartbeat", "SELECT tide.heartbeat($1)", 1, params, &q);
	if (q == Q_LOST)
	{
		free(channel);
		return false;
	}
	if (q != Q_OK)
	{
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		bool		unknown = state && strcmp(state, "42704") == 0;

		if (first && q == Q_REFUSED)
		{
			char		what[300];

			snprintf(what, sizeof(what), unknown ? "unknown node \"%s\"" : "node \"%s\"", opt.node);
			log_sql_error("fatal", what, res);
			if (unknown)
				fprintf(stderr, "tide-launcher: hint: register it in database \"%s\" first, e.g. SELECT tide.register_node('%s', 'cpu=64, memory=512Gi, gpu=8');\n",
						PQdb(conn), opt.node);
			PQclear(res);
			free(channel);
			db_disconnect(NULL);
			exit(1);
		}
		log_sql_error("error", "tide.heartbeat", res);
	}
	PQclear(res);

	quoted = PQescapeIdentifier(conn, channel, strlen(channel));
	if (quoted == NULL)
	{
		tl_log("error", "cannot quote channel name: %s", conn_error());
		free(channel);
		db_disconnect("setup failed");
		return false;
	}
	snprintf(sql, sizeof(sql), "LISTEN %s", quoted);
	PQfreemem(quoted);
	res = run("LISTEN", sql, 0, NULL, &q);
	if (q != Q_OK)
	{
		if (q != Q_LOST)
		{
			log_sql_error("error", "LISTEN", res);
			PQclear(res);
			db_disconnect("setup failed");
		}
		free(channel);
		return false;
	}
	PQclear(res);

	res = run("lookup", "SELECT to_regprocedure('tide.started(bigint[])') IS NOT NULL,"
			  " to_regprocedure('tide.exited(bigint[], integer[])') IS NOT NULL,"
			  " to_regprocedure('tide.evicted(bigint[])') IS NOT NULL", 0, NULL, &q);
	if (q == Q_LOST)
	{
		free(channel);
		return false;
	}
	for (int i = 0; i < 3; i++)
		have_array_call[i] = q == Q_OK && strcmp(PQgetvalue(res, 0, i), "t") == 0;
	PQclear(res);
	tl_log("connected", "database=%s user=%s channel=%s batch_calls=%s", PQdb(conn), PQuser(conn), channel,
		   have_array_call[0] && have_array_call[1] && have_array_call[2] ? "array" : "unnest");
	free(channel);
	return true;
}

/* Read whatever the server sent; true when a notification woke us. */
bool
db_consume_input(void)
{
	PGnotify   *n;
	bool		woke = false;

	if (conn == NULL)
		return false;
	if (!PQconsumeInput(conn))
	{
		char		why[1100];

		snprintf(why, sizeof(why), "connection lost: %s", conn_error());
		db_disconnect(why);
		return false;
	}
	while ((n = PQnotifies(conn)) != NULL)
	{
		woke = true;
		PQfreemem(n);
	}
	return woke;
}

bool
db_heartbeat(void)
{
	const char *params[1] = {opt.node};
	QueryOutcome q;
	PGresult   *res = run("tide.heartbeat", "SELECT tide.heartbeat($1)", 1, params, &q);

	if (q == Q_LOST)
		return false;
	if (q != Q_OK)
		log_sql_error("error", "tide.heartbeat", res);
	PQclear(res);
	return true;
}

/*
 * Claim new allocations and evictions in one round trip, start the new
 * work and stop the evicted.  Idempotent: what is already known is not
 * started twice.
 */
bool
db_sync(void)
{
	static const char *sql =
		"SELECT 'run' AS what, a.id, a.job_id, a.replica,"
		"       coalesce(tide.cuda_visible_devices(a.gpus), '') AS cvd,"
		"       j.command, a.role, a.gpu_milli"
		"  FROM tide.claim($1) AS a LEFT JOIN tide.jobs AS j ON j.id = a.job_id "
		"UNION ALL "
		"SELECT 'stop', e.id, e.job_id, e.replica, NULL, NULL, NULL, NULL"
		"  FROM tide.claim_evictions($1) AS e "
		"UNION ALL "
		"SELECT 'gone', g.id, g.job_id, g.replica, NULL, NULL, NULL, NULL"
		"  FROM tide.allocations AS g"
		" WHERE g.id = ANY ($2::bigint[]) AND g.state = 'released'";
	static char *running;
	static size_t cap;
	size_t		len = 0;
	const char *params[2];
	QueryOutcome q;
	double		t0;
	PGresult   *res;
	int			n;
	int			started = 0;
	bool		can_start = state_dir_can_start();

	/*
	 * Work we run that the database has released without us (a node
	 * marked down while its launcher was away, an allocation given up) must
	 * stop: its GPUs may already be someone else's (R-C4).
	 */
	if (cap == 0)
	{
		cap = 1024;
		running = tl_realloc(NULL, cap);
	}
	running[len++] = '{';
	for (int i = 0; i < nallocs; i++)
	{
		char		num[32];
		int			m;

		if (allocs[i].ended || allocs[i].evicting || allocs[i].pid <= 0)
			continue;
		m = snprintf(num, sizeof(num), len > 1 ? ",%lld" : "%lld", (long long) allocs[i].id);
		if (len + m + 2 > cap)
		{
			cap = (len + m + 2) * 2;
			running = tl_realloc(running, cap);
		}
		memcpy(running + len, num, m);
		len += m;
	}
	running[len++] = '}';
	running[len] = '\0';
	params[0] = opt.node;
	params[1] = running;
	t0 = now_mono();
	res = run("claim", sql, 2, params, &q);
	if (opt.verbose)
		tl_log("batch", "call=claim n=%d ms=%.1f", q == Q_OK ? PQntuples(res) : -1,
			   (now_mono() - t0) * 1000);
	t0 = now_mono();

	if (q == Q_LOST)
		return false;
	if (q != Q_OK)
	{
		log_sql_error("error", "claim", res);
		PQclear(res);
		return q == Q_REFUSED;	/* try again at the next poll */
	}
	n = PQntuples(res);
	for (int i = 0; i < n; i++)
	{
		bool		run_it = strcmp(PQgetvalue(res, i, 0), "run") == 0;
		int64_t		id = strtoll(PQgetvalue(res, i, 1), NULL, 10);
		int64_t		job = strtoll(PQgetvalue(res, i, 2), NULL, 10);
		int			replica = atoi(PQgetvalue(res, i, 3));
		Alloc	   *a = alloc_find(id);

		/*
		 * Unknown here: a shepherd of an earlier launcher may have started
		 * it (or be starting it) after this launcher read the state
		 * directory.  Adopt it, or wait while it is being recorded.
		 */
		if (a == NULL)
		{
			int			r = state_record_take(id, job, replica, &a);

			if (r == RECORD_BUSY)
			{
				sync_again_at = now_mono() + 0.2;
				continue;
			}
			if (r == RECORD_ADOPTED && run_it)
				continue;
		}
		if (!run_it)
		{
			if (strcmp(PQgetvalue(res, i, 0), "gone") == 0 && a != NULL && !a->evicting)
				tl_log("gone", "alloc=%lld job=%lld replica=%d was released by the database while it ran here (node marked down?); stopping it",
					   (long long) id, (long long) job, replica);
			if (a == NULL)
				a = alloc_add(id, job, replica);
			stop_allocation(a);
			continue;
		}
		if (a != NULL)
		{
			/* still assigned in the database: our started report is missing */
			if (!a->evicting && !a->spawning)
				a->need_started = true;
			continue;
		}
		/* the state directory refuses writes: start nothing (retried) */
		if (!can_start)
			continue;
		if (PQgetisnull(res, i, 5) || PQgetvalue(res, i, 5)[strspn(PQgetvalue(res, i, 5), " \t\n")] == '\0')
		{
			a = alloc_add(id, job, replica);
			a->need_started = true;
			a->ended = true;
			a->need_final = true;
			a->exit_code = TL_EXIT_NO_COMMAND;
			tl_log("no_command", "alloc=%lld job=%lld replica=%d: the job has no command; reporting exit code %d",
				   (long long) id, (long long) job, replica, TL_EXIT_NO_COMMAND);
			continue;
		}
		{
			SpawnSpec	spec = {
				.id = id,
				.job_id = job,
				.replica = replica,
				.command = PQgetvalue(res, i, 5),
				.cuda_visible_devices = PQgetvalue(res, i, 4),
				.role = PQgetisnull(res, i, 6) ? NULL : PQgetvalue(res, i, 6),
				.gpu_milli = PQgetisnull(res, i, 7) ? NULL : PQgetvalue(res, i, 7),
			};
			pid_t		pid = spawn_allocation(&spec);

			if (pid < 0)
				continue;		/* still assigned: the next claim retries */
			a = alloc_add(id, job, replica);
			started++;
			if (pid == 0)
			{
				/* asked the shepherd: the pid (and the report) follow */
				a->spawning = true;
				if (!opt.quiet)
					a->cvd = strdup(spec.cuda_visible_devices);
				/* keep it busy on the other core while we go on */
				if (started % 16 == 0)
					shepherd_pump();
			}
			else
			{
				a->pid = pid;
				a->need_started = true;
				tl_event("started", "alloc=%lld job=%lld replica=%d pid=%d CUDA_VISIBLE_DEVICES=%s",
						 (long long) id, (long long) job, replica, (int) pid,
						 spec.cuda_visible_devices);
			}
		}

		/*
		 * A large claim takes seconds to start: every so often, reap what
		 * already ended and report, so that the database hears of the
		 * first starts without waiting for the last.
		 */
		if (started > 0 && started % 1000 == 0 && conn != NULL)
		{
			shepherd_pump();
			if (got_child)
			{
				got_child = 0;
				reap_children();
			}
			db_flush_reports(true);
		}
	}
	PQclear(res);
	shepherd_pump();
	if (opt.verbose && started > 0)
		tl_log("batch", "spawned n=%d ms=%.1f", started, (now_mono() - t0) * 1000);
	return true;
}

/* ---- batched reports ---- */

typedef enum
{
	R_STARTED,
	R_EXITED,
	R_EVICTED
} ReportKind;

static const char *const report_name[] = {"tide.started", "tide.exited", "tide.evicted"};

/* Is this allocation waiting for a report of this kind? */
static bool
wants(const Alloc *a, ReportKind kind)
{
	switch (kind)
	{
		case R_STARTED:
			return a->need_started;
		case R_EXITED:
			return a->need_final && a->ended && !a->evicting && !a->need_started;
		case R_EVICTED:
			return a->need_final && a->ended && a->evicting;
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
		a->need_started = false;
	else
	{
		/*
		 * An ALLOC.exit is only left by earlier launchers (or by a failed
		 * append, removed at the next start).
		 */
		forget_allocation_files(a->id, a->adopted);
		alloc_remove(a);
	}
}

/* Append a number to a growing text buffer. */
static void
append(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t		n = strlen(s);

	if (*len + n + 2 > *cap)
	{
		*cap = (*len + n + 2) * 2;
		*buf = tl_realloc(*buf, *cap);
	}
	memcpy(*buf + *len, s, n + 1);
	*len += n;
}

/* Send one statement for ids[0..n-1] (codes for exited); outcome. */
static QueryOutcome
send_reports(ReportKind kind, const int64_t *ids, const int *codes, int n, PGresult **resp)
{
	static char *idbuf,
			   *codebuf;
	static size_t idcap,
				codecap;
	size_t		idlen = 0,
				codelen = 0;
	const char *params[2];
	char		num[32];
	QueryOutcome q;
	static const char *sql[] = {
		"SELECT tide.started(x) FROM unnest($1::bigint[]) AS x",
		"SELECT tide.exited(u.id, u.code) FROM unnest($1::bigint[], $2::int[]) AS u(id, code)",
		"SELECT tide.evicted(x) FROM unnest($1::bigint[]) AS x",
	};
	static const char *array_sql[] = {
		"SELECT tide.started($1::bigint[])",
		"SELECT tide.exited($1::bigint[], $2::integer[])",
		"SELECT tide.evicted($1::bigint[])",
	};
	bool		use_array = n > 1 && have_array_call[kind];

	append(&idbuf, &idlen, &idcap, "{");
	append(&codebuf, &codelen, &codecap, "{");
	for (int i = 0; i < n; i++)
	{
		snprintf(num, sizeof(num), i ? ",%lld" : "%lld", (long long) ids[i]);
		append(&idbuf, &idlen, &idcap, num);
		if (codes)
		{
			snprintf(num, sizeof(num), i ? ",%d" : "%d", codes[i]);
			append(&codebuf, &codelen, &codecap, num);
		}
	}
	append(&idbuf, &idlen, &idcap, "}");
	append(&codebuf, &codelen, &codecap, "}");
	params[0] = idbuf;
	params[1] = codebuf;
	{
		double		t0 = now_mono();

		*resp = run(report_name[kind], use_array ? array_sql[kind] : sql[kind],
					kind == R_EXITED ? 2 : 1, params, &q);
		if (opt.verbose)
			tl_log("batch", "call=%s%s n=%d ms=%.1f ok=%d", report_name[kind],
				   use_array ? "[]" : "", n, (now_mono() - t0) * 1000, q == Q_OK);
	}
	return q;
}

/*
 * Send every queued report of one kind: in batches, and one by one when
 * a batch is refused.  False when the connection is lost or the server
 * asks us to retry later (the reports stay queued).
 */
static bool
flush_kind(ReportKind kind)
{
	int64_t    *ids = NULL;
	int		   *codes = NULL;
	int			n = 0;
	bool		ok = true;

	for (int i = 0; i < nallocs; i++)
		if (wants(&allocs[i], kind))
			n++;
	if (n == 0)
		return true;
	ids = tl_realloc(NULL, n * sizeof(int64_t));
	codes = tl_realloc(NULL, n * sizeof(int));
	n = 0;
	for (int i = 0; i < nallocs; i++)
		if (wants(&allocs[i], kind))
		{
			ids[n] = allocs[i].id;
			codes[n] = allocs[i].exit_code;
			n++;
		}

	for (int off = 0; off < n && ok; off += BATCH_MAX)
	{
		int			m = n - off < BATCH_MAX ? n - off : BATCH_MAX;
		PGresult   *res;
		QueryOutcome q = send_reports(kind, ids + off, codes + off, m, &res);

		if (q == Q_OK)
		{
			for (int i = 0; i < m; i++)
				report_done(ids[off + i], kind);
			PQclear(res);
			continue;
		}
		if (q != Q_REFUSED || m == 1)
		{
			if (q == Q_REFUSED)
			{
				char		what[128];

				snprintf(what, sizeof(what), "%s(%lld) refused; dropping this report",
						 report_name[kind], (long long) ids[off]);
				log_sql_error("report_refused", what, res);
				report_done(ids[off], kind);
			}
			else if (q == Q_RETRY)
			{
				log_sql_error("report_retry", report_name[kind], res);
				ok = false;
			}
			else
				ok = false;
			PQclear(res);
			continue;
		}
		PQclear(res);
		/* a refused batch: find the bad one(s) by sending each alone */
		for (int i = 0; i < m && ok; i++)
		{
			QueryOutcome q1 = send_reports(kind, ids + off + i, codes + off + i, 1, &res);

			if (q1 == Q_OK)
				report_done(ids[off + i], kind);
			else if (q1 == Q_REFUSED)
			{
				char		what[128];

				snprintf(what, sizeof(what), "%s(%lld) refused; dropping this report",
						 report_name[kind], (long long) ids[off + i]);
				log_sql_error("report_refused", what, res);
				report_done(ids[off + i], kind);
			}
			else
			{
				if (q1 == Q_RETRY)
					log_sql_error("report_retry", report_name[kind], res);
				ok = false;
			}
			PQclear(res);
		}
	}
	free(ids);
	free(codes);
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
static double report_due = 1e18;

/* When deferred reports are due (for the event loop's sleep), else 1e18. */
double
db_report_due(void)
{
	return report_due;
}

/*
 * Started before exited (an allocation must be running to exit), then
 * evicted.  force: now, whatever the interval.
 */
bool
db_flush_reports(bool force)
{
	double		now = now_mono();
	int			n = 0;

	if (conn == NULL)
		return false;
	for (int i = 0; i < nallocs && (force || n < REPORT_EARLY); i++)
		if (wants(&allocs[i], R_STARTED) || wants(&allocs[i], R_EXITED) ||
			wants(&allocs[i], R_EVICTED))
			n++;
	if (n == 0)
	{
		report_due = 1e18;
		return true;
	}
	if (!force && n < REPORT_EARLY && now < last_report + REPORT_INTERVAL)
	{
		report_due = last_report + REPORT_INTERVAL;
		return true;
	}
	report_due = 1e18;
	last_report = now;
	if (!flush_kind(R_STARTED))
		return false;
	if (!flush_kind(R_EXITED))
		return false;
	return flush_kind(R_EVICTED);
}
