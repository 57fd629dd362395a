/*
 * listeners.c: N idle launcher connections, each LISTENing on its node's
 * channel (tide.node_channel), as N real launchers would hold them; then
 *
 *   - the server memory those backends take (Rss and Pss from
 *     /proc/PID/smaps_rollup: run as root on the server's machine);
 *   - how many of the N backends one NOTIFY to one node wakes (their
 *     context switches, /proc/PID/status, before and after K NOTIFYs);
 *   - NOTIFY-to-wakeup latency at both ends of the listener list (the
 *     first and the last connection opened), and how long the notifying
 *     commit itself takes;
 *   - with --cycle: a job pinned to the far node (label host=NODE), one
 *     real tide.run_cycle(), and the time from before that call to the
 *     far listener's tide.claim() returning the allocation, next to the
 *     cycle's own time in tide.cycles.
 *
 * Nodes are named PREFIX1 .. PREFIXN; with --cycle they must exist with
 * label host = their name, a queue "bench", and a pending backlog empty.
 * Build and run (bench/listeners.sh does it all on a throwaway server):
 *
 *   cc -O2 -I$(pg_config --includedir) bench/listeners.c -L$(pg_config --libdir) -lpq -o listeners
 *   ./listeners "dbname=tide_bench" 1000 20 [--cycle]
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#define PREFIX "ln-"

static PGconn **conns;
static int *pids;
static int nconn;

static void
die(const char *what, PGconn *c)
{
	fprintf(stderr, "listeners: %s: %s\n", what, c ? PQerrorMessage(c) : strerror(errno));
	exit(1);
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Run a statement that must succeed; returns its result (caller clears). */
static PGresult *
run(PGconn *c, const char *sql)
{
	PGresult   *r = PQexec(c, sql);

	if (PQresultStatus(r) != PGRES_TUPLES_OK && PQresultStatus(r) != PGRES_COMMAND_OK)
	{
		fprintf(stderr, "listeners: %s\n", sql);
		die("statement failed", c);
	}
	return r;
}

/* Sum a field ("Rss:", "Pss:") of /proc/PID/smaps_rollup, in kB. */
static long
smaps(int pid, const char *field)
{
	char		path[64],
				line[256];
	FILE	   *f;
	long		v = -1;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, strlen(field)) == 0)
			v = atol(line + strlen(field));
	fclose(f);
	return v;
}

/* Voluntary plus involuntary context switches of a process. */
static long
switches(int pid)
{
	char		path[64],
				line[256];
	FILE	   *f;
	long		v = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "ctxt_switches:"))
			v += atol(strchr(line, ':') + 1);
	fclose(f);
	return v;
}

/* Wait until connection i has a notification; returns the time it came. */
static double
await_notify(int i, double timeout_ms)
{
	double		end = now_ms() + timeout_ms;

	for (;;)
	{
		struct pollfd p = {PQsocket(conns[i]), POLLIN, 0};
		PGnotify   *n;
		int			left = (int) (end - now_ms());

		if (!PQconsumeInput(conns[i]))
			die("consume", conns[i]);
		if ((n = PQnotifies(conns[i])) != NULL)
		{
			double		t = now_ms();

			PQfreemem(n);
			while ((n = PQnotifies(conns[i])) != NULL)
				PQfreemem(n);
			return t;
		}
		if (left <= 0)
			return -1;
		poll(&p, 1, left);
	}
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

static void
report(const char *what, double *v, int n)
{
	qsort(v, n, sizeof(double), cmp_double);
	printf("%-44s p50 %7.2f ms  p90 %7.2f ms  max %7.2f ms  (%d)\n", what,
		   v[n / 2], v[(n * 9) / 10], v[n - 1], n);
}

int
main(int argc, char **argv)
{
	const char *dsn;
	int			rounds;
	int			cycle = argc > 4 && strcmp(argv[4], "--cycle") == 0;
	PGconn	   *ctl;
	PGresult   *r;
	char		sql[512];
	char	  **chan;
	double		t0;
	long		rss = 0,
				pss = 0;
	long	   *sw;
	int			ends[2];
	double	   *lat,
			   *commit;

	if (argc < 4)
	{
		fprintf(stderr, "usage: listeners DSN N ROUNDS [--cycle]\n");
		return 2;
	}
	dsn = argv[1];
	nconn = atoi(argv[2]);
	rounds = atoi(argv[3]);
	if (nconn < 1 || rounds < 1)
		return 2;
	conns = calloc(nconn, sizeof(PGconn *));
	pids = calloc(nconn, sizeof(int));
	chan = calloc(nconn, sizeof(char *));
	sw = calloc(nconn, sizeof(long));
	lat = calloc(rounds, sizeof(double));
	commit = calloc(rounds, sizeof(double));

	ctl = PQconnectdb(dsn);
	if (PQstatus(ctl) != CONNECTION_OK)
		die("connect", ctl);
	snprintf(sql, sizeof(sql),
			 "SELECT tide.node_channel('" PREFIX "' || i) FROM generate_series(1, %d) i ORDER BY i", nconn);
	r = run(ctl, sql);
	for (int i = 0; i < nconn; i++)
		chan[i] = strdup(PQgetvalue(r, i, 0));
	PQclear(r);

	/* open and LISTEN, as a launcher does after connecting */
	t0 = now_ms();
	for (int i = 0; i < nconn; i++)
	{
		conns[i] = PQconnectdb(dsn);
		if (PQstatus(conns[i]) != CONNECTION_OK)
		{
			fprintf(stderr, "listeners: connection %d of %d\n", i + 1, nconn);
			die("connect", conns[i]);
		}
		r = run(conns[i], "SELECT pg_backend_pid()");
		pids[i] = atoi(PQgetvalue(r, 0, 0));
		PQclear(r);
		snprintf(sql, sizeof(sql), "LISTEN \"%s\"", chan[i]);
		PQclear(run(conns[i], sql));
	}
	printf("listeners: %d connections opened and LISTENing in %.1f s\n", nconn, (now_ms() - t0) / 1e3);
	sleep(1);
	for (int i = 0; i < nconn; i++)
	{
		rss += smaps(pids[i], "Rss:");
		pss += smaps(pids[i], "Pss:");
	}
	printf("listener backends: Rss %.1f MB each (%.0f MB in all), Pss %.2f MB each (%.0f MB in all)\n",
		   rss / 1024.0 / nconn, rss / 1024.0, pss / 1024.0 / nconn, pss / 1024.0);

	/* how many backends one NOTIFY to one channel wakes */
	for (int i = 0; i < nconn; i++)
		sw[i] = switches(pids[i]);
	snprintf(sql, sizeof(sql), "NOTIFY \"%s\", 'claim'", chan[nconn - 1]);
	for (int k = 0; k < rounds; k++)
	{
		PQclear(run(ctl, sql));
		if (await_notify(nconn - 1, 5000) < 0)
			die("no notification", NULL);
	}
	usleep(500 * 1000);
	{
		long		woken = 0,
					total = 0;

		for (int i = 0; i < nconn; i++)
		{
			long		d = switches(pids[i]) - sw[i];

			total += d;
			woken += d > 0;
		}
		printf("%d NOTIFYs to one channel: %ld of %d listener backends woke (%.1f context switches per NOTIFY in all)\n",
			   rounds, woken, nconn, (double) total / rounds);
	}

	/* NOTIFY to wakeup, first and last listener */
	ends[0] = 0;
	ends[1] = nconn - 1;
	for (int e = 0; e < 2; e++)
	{
		char		what[80];

		snprintf(sql, sizeof(sql), "NOTIFY \"%s\", 'claim'", chan[ends[e]]);
		for (int k = 0; k < rounds; k++)
		{
			double		a = now_ms(),
						b,
						c;

			PQclear(run(ctl, sql));
			b = now_ms();
			c = await_notify(ends[e], 5000);
			if (c < 0)
				die("no notification", NULL);
			commit[k] = b - a;
			lat[k] = c - a;
			usleep(20 * 1000);
		}
		snprintf(what, sizeof(what), "NOTIFY to wakeup, listener %d of %d:", ends[e] + 1, nconn);
		report(what, lat, rounds);
		report("  the notifying statement (commit included):", commit, rounds);
	}

	if (cycle)
	{
		/* a job for the far node, a real cycle, the far listener claims it */
		int			far = nconn - 1;
		double	   *cyc = calloc(rounds, sizeof(double));
		double	   *inner = calloc(rounds, sizeof(double));
		double	   *claim = calloc(rounds, sizeof(double));
		double	   *wake = calloc(rounds, sizeof(double));

		for (int k = 0; k < rounds; k++)
		{
			double		a,
						b,
						w;

			snprintf(sql, sizeof(sql),
					 "SELECT tide.submit('bench', 'cpu=1', command => 'true', "
					 "node_selector => jsonb_build_object('host', '" PREFIX "%d'))", far + 1);
			PQclear(run(ctl, sql));
			a = now_ms();
			PQclear(run(ctl, "SELECT tide.run_cycle()"));
			b = now_ms();
			w = await_notify(far, 10000);
			if (w < 0)
				die("the far listener was not notified by the cycle", NULL);
			snprintf(sql, sizeof(sql), "SELECT count(*) FROM tide.claim('" PREFIX "%d')", far + 1);
			r = run(conns[far], sql);
			if (atoi(PQgetvalue(r, 0, 0)) < 1)
				die("the far node's claim found nothing", NULL);
			PQclear(r);
			claim[k] = now_ms() - b;
			wake[k] = w - b;
			cyc[k] = b - a;
			r = run(ctl, "SELECT extract(epoch FROM finished_at - started_at) * 1000 FROM tide.cycles ORDER BY id DESC LIMIT 1");
			inner[k] = atof(PQgetvalue(r, 0, 0));
			PQclear(r);
			usleep(50 * 1000);
		}
		report("tide.run_cycle() call, commit included:", cyc, rounds);
		report("  the cycle (tide.cycles, before commit):", inner, rounds);
		report("cycle commit to the far listener's wakeup:", wake, rounds);
		report("cycle commit to the far listener's claim:", claim, rounds);
	}
	for (int i = 0; i < nconn; i++)
		PQfinish(conns[i]);
	PQfinish(ctl);
	return 0;
}
