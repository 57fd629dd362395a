/*
 * db.c: tide-launcher's conversation with the database, through the
 * public launcher functions only (tide.node_channel, tide.claim,
 * tide.claim_evictions, tide.report_started, tide.report_exited,
 * tide.report_evicted, tide.heartbeat).  SQL only: the callers decide what
 * to send and what the answers mean.
 *
 * Throughput comes from batching: one round trip claims both new work and
 * evictions, and each kind of report goes out as one call of its
 * set-based function whatever the number of allocations; the answer says,
 * per allocation, whether it changed, had changed already, or was refused
 * (and why), so one bad report never holds back the others.
 */
#include "db.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

static PGconn *conn;

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

/*
 * libpq's current error message on one line, for log lines.  A connection
 * string with several hosts gets one line per host that failed
 * ("connection to server at ... failed: ..."): all of them are kept,
 * joined with "; ", so the log says why each host was refused (a standby
 * that is read-only, a host that is down).
 */
static const char *
conn_error(void)
{
	static char buf[2048];
	const char *msg = conn ? PQerrorMessage(conn) : "no connection";
	size_t		o = 0;

	for (const char *p = msg; *p && o + 3 < sizeof(buf); p++)
	{
		if (*p == '\n')
		{
			/* a line break between two messages: "; "; trailing: nothing */
			if (p[1] == '\0')
				break;
			buf[o++] = ';';
			buf[o++] = ' ';
			while (p[1] == ' ' || p[1] == '\t' || p[1] == '\n')
				p++;
			continue;
		}
		buf[o++] = *p;
	}
	buf[o] = '\0';
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

/* The server's message of a refused or failed statement, for log lines. */
static char last_error[2048];

static const char *
sql_error_text(PGresult *res)
{
	const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *hint = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_HINT) : NULL;

	snprintf(last_error, sizeof(last_error), "%s (SQLSTATE %s)%s%s",
			 msg ? msg : conn_error(), state ? state : "?",
			 hint ? " hint: " : "", hint ? hint : "");
	return last_error;
}

/* The message of the last refused statement (db_claim, db_report). */
const char *
db_error(void)
{
	return last_error;
}

/* Log a refused or failed statement with the server's message. */
static void
log_sql_error(const char *event, const char *what, PGresult *res)
{
	tl_log(event, "%s: %s", what, sql_error_text(res));
}

/*
 * The node's state as the last heartbeat answered it (ready, draining,
 * down): a change is logged once.
 */
static char node_state[32];

static void
note_node_state(PGresult *res)
{
	const char *st;

	if (PQntuples(res) != 1 || PQgetisnull(res, 0, 0))
		return;
	st = PQgetvalue(res, 0, 0);
	if (strcmp(st, node_state) == 0)
		return;
	if (node_state[0] == '\0')
		tl_log("node_state", "state=%s", st);
	else
		tl_log("node_state", "state=%s (was %s)%s", st, node_state,
			   strcmp(st, "draining") == 0 ? ": running work is kept, no new work comes" :
			   strcmp(st, "down") == 0 ? ": the database gave up this node's work" : "");
	snprintf(node_state, sizeof(node_state), "%s", st);
}

/*
 * Connect, check the node, LISTEN on its channel (unless --no-listen).
 * On the very first attempt, errors that retrying cannot fix (bad
 * credentials, unknown database, node or extension) end the program with a
 * clear message; afterwards every failure is retried with backoff.
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
	else
		note_node_state(res);
	PQclear(res);

	if (opt.no_listen)
	{
		tl_log("connected", "database=%s user=%s channel=none (--no-listen: claiming every %g s)",
			   PQdb(conn), PQuser(conn), opt.poll_interval);
		free(channel);
		return true;
	}
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

	tl_log("connected", "database=%s user=%s channel=%s", PQdb(conn), PQuser(conn), channel);
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
	else
		note_node_state(res);
	PQclear(res);
	return true;
}

/*
 * Claim new allocations and evictions in one round trip, and ask which of
 * the running ones the database released behind our back (a node marked
 * down while its launcher was away, an allocation given up: its GPUs may
 * already be someone else's, R-C4).  *rows stay valid until the next call.
 */
/*
 * The three bigint[], bigint[] and uuid[] literals of a list of
 * allocation names (R-C7): ids, jobs, tokens (NULL where not known).
 * bufs[3] and caps[3] are the caller's, reused from call to call.
 */
static void
append_names(char **bufs, size_t *caps, const AllocName *names, int n)
{
	size_t		len[3] = {0, 0, 0};

	for (int k = 0; k < 3; k++)
		buf_append(&bufs[k], &len[k], &caps[k], "{", 1);
	for (int i = 0; i < n; i++)
	{
		char		num[64];
		int			m = snprintf(num, sizeof(num), i ? ",%lld" : "%lld", (long long) names[i].id);

		buf_append(&bufs[0], &len[0], &caps[0], num, m);
		m = snprintf(num, sizeof(num), i ? ",%lld" : "%lld", (long long) names[i].job_id);
		buf_append(&bufs[1], &len[1], &caps[1], num, m);
		m = snprintf(num, sizeof(num), "%s%s", i ? "," : "",
					 names[i].token && names[i].token[0] ? names[i].token : "NULL");
		buf_append(&bufs[2], &len[2], &caps[2], num, m);
	}
	for (int k = 0; k < 3; k++)
		buf_append(&bufs[k], &len[k], &caps[k], "}", 2);
}

/*
 * Run a statement that answers rows (the claim, the reconcile).  On
 * failure: logged (unless the connection is lost), -1, and *q says how.
 * Else the number of rows, *out grown to hold as many entries of size
 * bytes.  *res is the caller's result of the previous call, cleared first.
 */
static int
run_rows(const char *what, const char *sql, int nparams, const char *const *params,
		 PGresult **res, QueryOutcome *q, void **out, int *out_cap, size_t size)
{
	double		t0 = now_mono();
	int			n;

	PQclear(*res);
	*res = run(what, sql, nparams, params, q);
	if (opt.verbose)
		tl_log("batch", "call=%s n=%d ms=%.1f", what, *q == Q_OK ? PQntuples(*res) : -1,
			   (now_mono() - t0) * 1000);
	if (*q != Q_OK)
	{
		if (*q != Q_LOST)
			log_sql_error("error", what, *res);
		PQclear(*res);
		*res = NULL;
		return -1;
	}
	n = PQntuples(*res);
	if (n > *out_cap)
	{
		*out_cap = n * 2;
		*out = tl_realloc(*out, *out_cap * size);
	}
	return n;
}

QueryOutcome
db_claim(const AllocName *running, int nrunning, const AllocName *asking, int nasking,
		 ClaimRow **rows, int *nrows)
{
	static const char *sql =
		"SELECT 'run' AS what, a.id, a.job_id, a.replica,"
		"       coalesce(tide.cuda_visible_devices(a.gpus), '') AS cvd,"
		"       j.command, a.role, a.gpu_milli,"
		"       (SELECT pg_catalog.string_agg(e.key || '=' ||"
		"               pg_catalog.encode(pg_catalog.convert_to(e.value, 'UTF8'), 'hex'), ' ')"
		"          FROM pg_catalog.jsonb_each_text(j.env) AS e) AS env,"
		"       j.workdir, j.array_id, j.array_index,"
		"       pg_catalog.date_part('epoch', j.grace_period) AS grace,"
		"       CASE WHEN j.time_limit IS NOT NULL AND j.warn_before IS NOT NULL THEN 0 END AS warn,"
		"       a.token::text"
		"  FROM tide.claim($1) AS a LEFT JOIN tide.jobs AS j ON j.id = a.job_id "
		"UNION ALL "
		"SELECT 'stop', e.id, e.job_id, e.replica, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
		"       pg_catalog.date_part('epoch', j.grace_period), NULL, e.token::text"
		"  FROM tide.claim_evictions($1) AS e LEFT JOIN tide.jobs AS j ON j.id = e.job_id "
		/*
		 * What runs here that has no live allocation of this node behind
		 * it (R-C3, R-C7): released meanwhile (the node was marked down
		 * while its launcher was away), gone or given to another job by a
		 * failover.  Named by id, job and token, so a reused id does not
		 * hide the loss.
		 */
		"UNION ALL "
		"SELECT 'gone', g.id, g.job, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
		"       (SELECT pg_catalog.date_part('epoch', j.grace_period) FROM tide.jobs AS j WHERE j.id = g.job),"
		"       NULL, NULL"
		"  FROM unnest($2::bigint[], $4::bigint[], $5::uuid[]) AS g(id, job, token)"
		" WHERE NOT EXISTS (SELECT 1 FROM tide.allocations AS l"
		"                    WHERE l.id = g.id AND l.job_id = g.job AND l.node = $1 AND l.state <> 'released'"
		"                      AND (g.token IS NULL OR l.token = g.token)) "
		/*
		 * R-T2: when the warning of each job asked about is due, in seconds
		 * from the database's now() (NULL while the job has not started:
		 * the limit counts from the job's started_at, as the database
		 * enforces it).  Relative, so the two clocks need not agree.
		 */
		"UNION ALL "
		"SELECT 'warn', w.id, w.job_id, w.replica, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
		"       NULL, CASE WHEN j.state = 'running' THEN pg_catalog.date_part('epoch',"
		"                  (j.started_at + j.time_limit - j.warn_before) - pg_catalog.now()) END, NULL"
		"  FROM unnest($3::bigint[], $6::uuid[]) AS k(id, token)"
		"  JOIN tide.allocations AS w ON w.id = k.id AND (k.token IS NULL OR w.token = k.token)"
		"  JOIN tide.jobs AS j ON j.id = w.job_id"
		" WHERE w.state IN ('assigned', 'running')"
		"   AND j.time_limit IS NOT NULL AND j.warn_before IS NOT NULL";
	static PGresult *res;
	static ClaimRow *out;
	static int	out_cap;
	static char *run_arr[3],
			   *ask_arr[3];
	static size_t run_cap[3],
				ask_cap[3];
	const char *params[6];
	QueryOutcome q;
	int			n;

	*rows = NULL;
	*nrows = 0;
	append_names(run_arr, run_cap, running, nrunning);
	append_names(ask_arr, ask_cap, asking, nasking);
	params[0] = opt.node;
	params[1] = run_arr[0];
	params[2] = ask_arr[0];
	params[3] = run_arr[1];
	params[4] = run_arr[2];
	params[5] = ask_arr[2];
	n = run_rows("claim", sql, 6, params, &res, &q, (void **) &out, &out_cap, sizeof(ClaimRow));
	if (n < 0)
		return q;
	for (int i = 0; i < n; i++)
	{
		const char *what = PQgetvalue(res, i, 0);
		ClaimRow   *r = &out[i];

		r->kind = strcmp(what, "run") == 0 ? CLAIM_RUN :
			strcmp(what, "gone") == 0 ? CLAIM_GONE :
			strcmp(what, "warn") == 0 ? CLAIM_WARN : CLAIM_STOP;
		r->id = strtoll(PQgetvalue(res, i, 1), NULL, 10);
		r->job_id = strtoll(PQgetvalue(res, i, 2), NULL, 10);
		r->replica = atoi(PQgetvalue(res, i, 3));
		r->cvd = PQgetvalue(res, i, 4);
		r->command = PQgetisnull(res, i, 5) ? NULL : PQgetvalue(res, i, 5);
		r->role = PQgetisnull(res, i, 6) ? NULL : PQgetvalue(res, i, 6);
		r->gpu_milli = PQgetisnull(res, i, 7) ? NULL : PQgetvalue(res, i, 7);
		r->env = PQgetisnull(res, i, 8) ? NULL : PQgetvalue(res, i, 8);
		r->workdir = PQgetisnull(res, i, 9) ? NULL : PQgetvalue(res, i, 9);
		r->array_id = PQgetisnull(res, i, 10) ? NULL : PQgetvalue(res, i, 10);
		r->array_index = PQgetisnull(res, i, 11) ? NULL : PQgetvalue(res, i, 11);
		r->grace = PQgetisnull(res, i, 12) ? -1 : strtod(PQgetvalue(res, i, 12), NULL);
		r->warns = r->kind == CLAIM_RUN && !PQgetisnull(res, i, 13);
		r->warn_known = r->kind == CLAIM_WARN && !PQgetisnull(res, i, 13);
		r->warn_in = r->warn_known ? strtod(PQgetvalue(res, i, 13), NULL) : 0;
		r->token = PQgetvalue(res, i, 14);
	}
	*rows = out;
	*nrows = n;
	return Q_OK;
}

/*
 * R-C7: tell the database every allocation known here (after each
 * connect), and read its answer: for each, keep or stop; then what it
 * released because we do not run it.  *rows stay valid until the next
 * call.
 */
QueryOutcome
db_reconcile(const AllocName *known, int nknown, ReconcileRow **rows, int *nrows)
{
	static const char *sql =
		"SELECT allocation_id, job_id, action, reason, token::text, gpus, gpu_milli"
		"  FROM tide.reconcile($1, $2::bigint[], $3::bigint[], $4::uuid[])";
	static PGresult *res;
	static ReconcileRow *out;
	static int	out_cap;
	static char *arr[3];
	static size_t cap[3];
	const char *params[4];
	QueryOutcome q;
	int			n;

	*rows = NULL;
	*nrows = 0;
	append_names(arr, cap, known, nknown);
	params[0] = opt.node;
	params[1] = arr[0];
	params[2] = arr[1];
	params[3] = arr[2];
	n = run_rows("tide.reconcile", sql, 4, params, &res, &q, (void **) &out, &out_cap,
				 sizeof(ReconcileRow));
	if (n < 0)
		return q;
	for (int i = 0; i < n; i++)
	{
		const char *action = PQgetvalue(res, i, 2);
		ReconcileRow *r = &out[i];

		r->id = strtoll(PQgetvalue(res, i, 0), NULL, 10);
		r->job_id = strtoll(PQgetvalue(res, i, 1), NULL, 10);
		r->action = strcmp(action, "keep") == 0 ? RECON_KEEP :
			strcmp(action, "released") == 0 ? RECON_RELEASED : RECON_STOP;
		r->reason = PQgetvalue(res, i, 3);
		r->token = PQgetvalue(res, i, 4);
		r->gpus = PQgetisnull(res, i, 5) ? NULL : PQgetvalue(res, i, 5);
		r->gpu_milli = PQgetisnull(res, i, 6) ? 0 : atoi(PQgetvalue(res, i, 6));
	}
	*rows = out;
	*nrows = n;
	return Q_OK;
}

/* ---- reports ---- */

static const char *const report_name[] = {"tide.started", "tide.exited", "tide.evicted"};

const char *
db_report_name(ReportKind kind)
{
	return report_name[kind];
}

/* Append one element of a text[] literal: NULL, or the text quoted. */
static void
append_array_text(char **buf, size_t *len, size_t *cap, const char *text, bool first)
{
	if (!first)
		buf_append(buf, len, cap, ",", 1);
	if (text == NULL)
	{
		buf_append(buf, len, cap, "NULL", 4);
		return;
	}
	buf_append(buf, len, cap, "\"", 1);
	for (const char *p = text; *p; p++)
	{
		if (*p == '"' || *p == '\\')
			buf_append(buf, len, cap, "\\", 1);
		buf_append(buf, len, cap, p, 1);
	}
	buf_append(buf, len, cap, "\"", 1);
}

/*
 * Send one report for ids[0..n-1] (codes and the launcher's reasons, each
 * NULL or a text, for exited): one call of the report's set-based function.  Q_OK: *results holds one outcome per id,
 * in order (valid until the next call).  Otherwise the statement failed as
 * a whole, and db_error() says why.
 */
QueryOutcome
db_report(ReportKind kind, const int64_t *ids, const char *const *tokens, const int *codes,
		  const char *const *reasons, const double *agos, int n, ReportResult **results)
{
	static char *idbuf,
			   *codebuf,
			   *whybuf,
			   *agobuf,
			   *tokbuf;
	static size_t idcap,
				codecap,
				whycap,
				agocap,
				tokcap;
	static PGresult *res;
	static ReportResult *out;
	static int	out_cap;
	size_t		idlen = 0,
				codelen = 0,
				whylen = 0,
				agolen = 0,
				toklen = 0;
	const char *params[5];
	char		num[64];
	QueryOutcome q;
	static const char *sql[] = {
		"SELECT allocation_id, outcome, reason FROM tide.report_started($1::bigint[], $2::uuid[])",
		"SELECT allocation_id, outcome, reason FROM tide.report_exited($1::bigint[], $2::integer[], $3::text[], $4::interval[], $5::uuid[])",
		"SELECT allocation_id, outcome, reason FROM tide.report_evicted($1::bigint[], $2::uuid[])",
	};
	double		t0 = now_mono();
	int			nchanged = 0;

	PQclear(res);
	res = NULL;
	*results = NULL;
	buf_append(&idbuf, &idlen, &idcap, "{", 1);
	buf_append(&codebuf, &codelen, &codecap, "{", 1);
	buf_append(&whybuf, &whylen, &whycap, "{", 1);
	buf_append(&agobuf, &agolen, &agocap, "{", 1);
	buf_append(&tokbuf, &toklen, &tokcap, "{", 1);
	for (int i = 0; i < n; i++)
	{
		int			m = snprintf(num, sizeof(num), i ? ",%lld" : "%lld", (long long) ids[i]);

		buf_append(&idbuf, &idlen, &idcap, num, m);
		/* R-C7: the token as claimed, NULL where not known */
		m = snprintf(num, sizeof(num), "%s%s", i ? "," : "",
					 tokens && tokens[i] && tokens[i][0] ? tokens[i] : "NULL");
		buf_append(&tokbuf, &toklen, &tokcap, num, m);
		if (codes)
		{
			m = snprintf(num, sizeof(num), i ? ",%d" : "%d", codes[i]);
			buf_append(&codebuf, &codelen, &codecap, num, m);
			append_array_text(&whybuf, &whylen, &whycap, reasons ? reasons[i] : NULL, i == 0);
			/* how long ago it exited, in seconds (a plain number is seconds
			 * to interval input); NULL: not known */
			if (agos && agos[i] >= 0)
				m = snprintf(num, sizeof(num), i ? ",%.6f" : "%.6f", agos[i]);
			else
				m = snprintf(num, sizeof(num), i ? ",NULL" : "NULL");
			buf_append(&agobuf, &agolen, &agocap, num, m);
		}
	}
	buf_append(&idbuf, &idlen, &idcap, "}", 2);
	buf_append(&codebuf, &codelen, &codecap, "}", 2);
	buf_append(&whybuf, &whylen, &whycap, "}", 2);
	buf_append(&agobuf, &agolen, &agocap, "}", 2);
	buf_append(&tokbuf, &toklen, &tokcap, "}", 2);
	params[0] = idbuf;
	if (kind == R_EXITED)
	{
		params[1] = codebuf;
		params[2] = whybuf;
		params[3] = agobuf;
		params[4] = tokbuf;
	}
	else
		params[1] = tokbuf;
	res = run(report_name[kind], sql[kind], kind == R_EXITED ? 5 : 2, params, &q);
	if (q == Q_REFUSED || q == Q_RETRY)
		(void) sql_error_text(res);
	else if (q == Q_OK && PQntuples(res) != n)
	{
		snprintf(last_error, sizeof(last_error), "%d answers for %d allocations",
				 PQntuples(res), n);
		q = Q_REFUSED;
	}
	if (q != Q_OK)
	{
		PQclear(res);
		res = NULL;
		if (opt.verbose)
			tl_log("batch", "call=%s n=%d ms=%.1f ok=0", report_name[kind], n,
				   (now_mono() - t0) * 1000);
		return q;
	}
	if (n > out_cap)
	{
		out_cap = n * 2;
		out = tl_realloc(out, out_cap * sizeof(ReportResult));
	}
	for (int i = 0; i < n; i++)
	{
		const char *outcome = PQgetvalue(res, i, 1);

		out[i].id = strtoll(PQgetvalue(res, i, 0), NULL, 10);
		out[i].outcome = strcmp(outcome, "changed") == 0 ? REPORT_CHANGED :
			strcmp(outcome, "already") == 0 ? REPORT_ALREADY : REPORT_REFUSED;
		out[i].reason = PQgetisnull(res, i, 2) ? "" : PQgetvalue(res, i, 2);
		nchanged += out[i].outcome == REPORT_CHANGED;
	}
	if (opt.verbose)
		tl_log("batch", "call=%s n=%d changed=%d ms=%.1f ok=1", report_name[kind], n, nchanged,
			   (now_mono() - t0) * 1000);
	*results = out;
	return Q_OK;
}
