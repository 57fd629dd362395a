/*
 * main.c: tide-launcher's options, signal handling and event loop.
 *
 * The loop waits with poll() on the libpq socket (for NOTIFY on the node's
 * channel), a self-pipe that the signal handlers write to (SIGCHLD,
 * SIGTERM, SIGINT) and the pipes to the shepherd (its answers; our
 * requests while they do not fit).  Every wake-up does the same few
 * idempotent steps: reap children, take the shepherd's answers, claim when
 * woken or when the slow poll is due, send a heartbeat when due, flush the
 * queued reports in batches (at most every 0.2 s under load).
 * Nothing is lost when the database is away: reports stay queued and the
 * loop reconnects with backoff.
 */
#include "launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

LauncherOptions opt = {
	.poll_interval = 5.0,
	.heartbeat_interval = 5.0,
	.grace_period = 10.0,
	.max_backoff = 10.0,
};

Alloc	   *allocs;
int			nallocs;
static int	allocs_cap;

static int	signal_pipe[2] = {-1, -1};
static volatile sig_atomic_t got_stop;
static volatile sig_atomic_t stop_signal;
volatile sig_atomic_t got_child;
double		sync_again_at = 1e18;
bool		tl_in_shepherd;

/* ---- small utilities ---- */

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

/* ---- the table of known allocations ---- */

/*
 * An index from allocation id to its place in allocs[] (open addressing,
 * linear probing; slots hold index + 1, 0 is free): a burst of 10,000
 * allocations answers, reports and forgets each one by id.
 */
static int *id_slots;
static unsigned id_cap;

static unsigned
id_home(int64_t id)
{
	return (unsigned) (((uint64_t) id * 0x9E3779B97F4A7C15ull) >> 32) & (id_cap - 1);
}

static void
id_index_rebuild(void)
{
	free(id_slots);
	id_cap = 1024;
	while (id_cap < (unsigned) allocs_cap * 2)
		id_cap *= 2;
	id_slots = tl_realloc(NULL, id_cap * sizeof(int));
	memset(id_slots, 0, id_cap * sizeof(int));
	for (int i = 0; i < nallocs; i++)
	{
		unsigned	h = id_home(allocs[i].id);

		while (id_slots[h] != 0)
			h = (h + 1) & (id_cap - 1);
		id_slots[h] = i + 1;
	}
}

/* The slot that holds this id, or -1. */
static int
id_slot(int64_t id)
{
	if (id_cap == 0)
		return -1;
	for (unsigned h = id_home(id);; h = (h + 1) & (id_cap - 1))
	{
		if (id_slots[h] == 0)
			return -1;
		if (allocs[id_slots[h] - 1].id == id)
			return (int) h;
	}
}

/* Free a slot, shifting back the entries whose probe ran through it. */
static void
id_slot_free(unsigned i)
{
	unsigned	mask = id_cap - 1;

	for (unsigned j = (i + 1) & mask; id_slots[j] != 0; j = (j + 1) & mask)
	{
		unsigned	k = id_home(allocs[id_slots[j] - 1].id);

		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		id_slots[i] = id_slots[j];
		i = j;
	}
	id_slots[i] = 0;
}

Alloc *
alloc_find(int64_t id)
{
	int			h = id_slot(id);

	return h < 0 ? NULL : &allocs[id_slots[h] - 1];
}

Alloc *
alloc_find_pid(pid_t pid)
{
	for (int i = 0; i < nallocs; i++)
		if (allocs[i].pid == pid && !allocs[i].ended && !allocs[i].spawning)
			return &allocs[i];
	return NULL;
}

Alloc *
alloc_add(int64_t id, int64_t job_id, int replica)
{
	Alloc	   *a;
	unsigned	h;

	if (nallocs == allocs_cap)
	{
		allocs_cap = allocs_cap ? allocs_cap * 2 : 64;
		allocs = tl_realloc(allocs, allocs_cap * sizeof(Alloc));
	}
	a = &allocs[nallocs++];
	memset(a, 0, sizeof(*a));
	a->id = id;
	a->job_id = job_id;
	a->replica = replica;
	if ((unsigned) nallocs * 2 > id_cap)
		id_index_rebuild();
	else
	{
		for (h = id_home(id); id_slots[h] != 0; h = (h + 1) & (id_cap - 1))
			;
		id_slots[h] = nallocs;
	}
	return a;
}

/* Remove by moving the last entry into the hole (pointers are not kept). */
void
alloc_remove(Alloc *a)
{
	int			i = (int) (a - allocs);
	int			h;

	if (i < 0 || i >= nallocs)
		return;
	h = id_slot(a->id);
	if (h >= 0)
		id_slot_free((unsigned) h);
	free(a->cvd);
	if (i != nallocs - 1)
	{
		int			hl = id_slot(allocs[nallocs - 1].id);

		allocs[i] = allocs[nallocs - 1];
		if (hl >= 0)
			id_slots[hl] = i + 1;
	}
	nallocs--;
}

/* ---- signals ---- */

static void
wake_loop(void)
{
	int			save = errno;
	char		c = 0;

	if (write(signal_pipe[1], &c, 1) < 0)
	{
		/* pipe full: the loop is awake anyway */
	}
	errno = save;
}

static void
on_child(int sig)
{
	(void) sig;
	got_child = 1;
	wake_loop();
}

static void
on_stop(int sig)
{
	got_stop = 1;
	stop_signal = sig;
	wake_loop();
}

/* Install the handlers and the non-blocking, close-on-exec self-pipe. */
static void
setup_signals(void)
{
	struct sigaction sa;

	if (pipe2(signal_pipe, O_NONBLOCK | O_CLOEXEC) != 0)
	{
		perror("tide-launcher: pipe");
		exit(1);
	}
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	sa.sa_handler = on_child;
	sigaction(SIGCHLD, &sa, NULL);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static void
drain_signal_pipe(void)
{
	char		buf[256];

	while (read(signal_pipe[0], buf, sizeof(buf)) > 0)
		;
}

/* ---- options ---- */

static void
usage(FILE *out)
{
	fprintf(out,
			"tide-launcher runs the work that pg_tide places on one node.\n"
			"\n"
			"Usage:\n"
			"  tide-launcher --node NAME [OPTION]...\n"
			"\n"
			"Options:\n"
			"  -n, --node NAME              the node this launcher serves (required;\n"
			"                               registered with tide.register_node)\n"
			"  -d, --dsn CONNINFO           libpq connection string or URI (default: the\n"
			"                               PGHOST, PGPORT, PGDATABASE, PGUSER... variables)\n"
			"      --poll-interval SECS     claim even without a notification this often\n"
			"                               (default 5)\n"
			"      --heartbeat-interval SECS  call tide.heartbeat this often (default 5)\n"
			"      --grace-period SECS      SIGTERM to SIGKILL delay on eviction (default 10)\n"
			"      --max-backoff SECS       longest wait between reconnect attempts\n"
			"                               (default 10)\n"
			"      --state-dir DIR          where running work is recorded so that a\n"
			"                               restarted launcher adopts it (default\n"
			"                               /dev/shm/tide-launcher-UID/NODE)\n"
			"      --output-dir DIR         write each allocation's stdout and stderr to\n"
			"                               DIR/job-JOB-REPLICA-ALLOC.log (default: inherit\n"
			"                               the launcher's)\n"
			"      --no-shepherd            start commands directly, without the shepherd\n"
			"                               process that records their exit codes: an\n"
			"                               exit that happens while no launcher runs is\n"
			"                               then reported as lost (137)\n"
			"  -q, --quiet                  log only lifecycle and errors, not every\n"
			"                               allocation event\n"
			"  -v, --verbose                also log each claim and report batch with its\n"
			"                               size and duration\n"
			"  -h, --help                   show this help and exit\n"
			"  -V, --version                show the version and exit\n"
			"\n"
			"Each command runs as /bin/sh -c COMMAND in its own process group, with\n"
			"CUDA_VISIBLE_DEVICES, TIDE_JOB_ID, TIDE_ALLOCATION_ID, TIDE_REPLICA,\n"
			"TIDE_ROLE and TIDE_NODE set.  SIGTERM or SIGINT stops the launcher (exit 0)\n"
			"and leaves running work running; a new launcher for the node adopts it.\n"
			"See docs/launcher.md.\n");
}

/* Parse a positive number of seconds or exit with a message naming it. */
static double
parse_seconds(const char *name, const char *value)
{
	char	   *end;
	double		v;

	errno = 0;
	v = strtod(value, &end);
	if (errno != 0 || end == value || *end != '\0' || !isfinite(v) || v <= 0 || v > 86400)
	{
		fprintf(stderr, "tide-launcher: invalid value for --%s: \"%s\" (expected seconds, > 0 and <= 86400)\n",
				name, value);
		exit(2);
	}
	return v;
}

static void
parse_options(int argc, char **argv)
{
	enum
	{
		O_POLL = 256, O_HB, O_GRACE, O_BACKOFF, O_STATE, O_OUTPUT, O_NO_SHEPHERD
	};
	static const struct option longopts[] = {
		{"node", required_argument, NULL, 'n'},
		{"dsn", required_argument, NULL, 'd'},
		{"poll-interval", required_argument, NULL, O_POLL},
		{"heartbeat-interval", required_argument, NULL, O_HB},
		{"grace-period", required_argument, NULL, O_GRACE},
		{"max-backoff", required_argument, NULL, O_BACKOFF},
		{"state-dir", required_argument, NULL, O_STATE},
		{"output-dir", required_argument, NULL, O_OUTPUT},
		{"no-shepherd", no_argument, NULL, O_NO_SHEPHERD},
		{"quiet", no_argument, NULL, 'q'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0}
	};
	int			c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":n:d:qvhV", longopts, NULL)) != -1)
	{
		switch (c)
		{
			case 'n':
				opt.node = optarg;
				break;
			case 'd':
				opt.dsn = optarg;
				break;
			case O_POLL:
				opt.poll_interval = parse_seconds("poll-interval", optarg);
				break;
			case O_HB:
				opt.heartbeat_interval = parse_seconds("heartbeat-interval", optarg);
				break;
			case O_GRACE:
				opt.grace_period = parse_seconds("grace-period", optarg);
				break;
			case O_BACKOFF:
				opt.max_backoff = parse_seconds("max-backoff", optarg);
				break;
			case O_STATE:
				opt.state_dir = optarg;
				break;
			case O_OUTPUT:
				opt.output_dir = optarg;
				break;
			case O_NO_SHEPHERD:
				opt.no_shepherd = true;
				break;
			case 'q':
				opt.quiet = true;
				break;
			case 'v':
				opt.verbose = true;
				break;
			case 'h':
				usage(stdout);
				exit(0);
			case 'V':
				printf("tide-launcher (pg_tide) 0.1.0\n");
				exit(0);
			case ':':
				fprintf(stderr, "tide-launcher: option %s needs a value\n", argv[optind - 1]);
				fprintf(stderr, "Try \"tide-launcher --help\".\n");
				exit(2);
			default:
				fprintf(stderr, "tide-launcher: unknown option %s\n", argv[optind - 1]);
				fprintf(stderr, "Try \"tide-launcher --help\".\n");
				exit(2);
		}
	}
	if (optind < argc)
	{
		fprintf(stderr, "tide-launcher: unexpected argument \"%s\"\n", argv[optind]);
		fprintf(stderr, "Try \"tide-launcher --help\".\n");
		exit(2);
	}
	if (opt.node == NULL || opt.node[0] == '\0')
	{
		fprintf(stderr, "tide-launcher: --node NAME is required (the node this launcher serves)\n");
		fprintf(stderr, "Try \"tide-launcher --help\".\n");
		exit(2);
	}
	if (strlen(opt.node) > 200)
	{
		fprintf(stderr, "tide-launcher: --node name is too long (at most 200 bytes)\n");
		exit(2);
	}
}

/* ---- the event loop ---- */

int
main(int argc, char **argv)
{
	double		backoff = 0.25;
	double		reconnect_at = 0;
	double		next_poll = 0;
	double		next_heartbeat = 0;
	double		retry_at = 1e18;
	double		next_adopted_check = 0;
	bool		ever_connected = false;
	bool		need_sync = true;

	/*
	 * Keep nothing the caller left open (a lock file, a pipe): a launcher
	 * runs for months and must not hold them, nor pass them to its work.
	 */
	close_range(3, ~0U, 0);
	parse_options(argc, argv);
	setup_signals();
	/*
	 * Become the reaper of orphaned descendants (a command whose shepherd
	 * was killed), so no zombie outlives its allocation even under an init
	 * that does not reap; reap_children() collects and ignores them.
	 */
	(void) prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	if (state_dir_open() != 0)
		exit(1);
	tl_log("start", "pid=%d poll_interval=%g heartbeat_interval=%g grace_period=%g state_dir=%s%s",
		   (int) getpid(), opt.poll_interval, opt.heartbeat_interval,
		   opt.grace_period, opt.state_dir, opt.no_shepherd ? " no_shepherd" : "");
	/* before connecting: the one fork of the launcher is cheapest now */
	if (!opt.no_shepherd && !shepherd_start())
		exit(1);
	state_dir_adopt();

	while (!got_stop)
	{
		double		now = now_mono();
		double		wake;
		struct pollfd pfd[4];
		int			nfd = 0;
		int			timeout_ms;

		/* connect when away and the backoff has passed */
		if (!db_connected() && now >= reconnect_at)
		{
			if (db_connect(!ever_connected))
			{
				ever_connected = true;
				backoff = 0.25;
				need_sync = true;
				next_heartbeat = 0;
			}
			else
			{
				reconnect_at = now_mono() + backoff;
				backoff = backoff * 2 > opt.max_backoff ? opt.max_backoff : backoff * 2;
			}
		}

		/* processes: exits, adopted work, overdue kills */
		if (got_child)
		{
			got_child = 0;
			reap_children();
		}
		shepherd_pump();
		/* /proc and the state files of adopted work: a few times a second */
		if (now >= next_adopted_check)
		{
			check_adopted();
			next_adopted_check = now + 0.2;
		}
		now = now_mono();
		check_kill_deadlines(now);

		/* database work; any failure drops the connection, nothing queued is lost */
		if (db_connected())
		{
			bool		ok = true;

			if (now >= next_heartbeat)
			{
				ok = db_heartbeat();
				next_heartbeat = now + opt.heartbeat_interval;
			}
			if (ok && (need_sync || now >= next_poll || now >= retry_at ||
					   now >= sync_again_at))
			{
				sync_again_at = 1e18;
				ok = db_sync();
				if (ok)
				{
					need_sync = false;
					next_poll = now_mono() + opt.poll_interval;
				}
			}
			/* children may have exited while we claimed: report them too */
			if (ok && got_child)
			{
				got_child = 0;
				reap_children();
			}
			if (ok)
				shepherd_pump();
			if (ok)
				ok = db_flush_reports(false);
			if (!ok && !db_connected())
			{
				reconnect_at = now_mono() + backoff;
				need_sync = true;
			}
			/* the server asked us to retry (lock, serialization): soon */
			retry_at = (!ok && db_connected()) ? now_mono() + 0.5 : 1e18;
		}

		/* sleep until the next deadline or a wake-up */
		now = now_mono();
		wake = now + 60;
		if (db_connected())
		{
			if (next_poll < wake)
				wake = next_poll;
			if (next_heartbeat < wake)
				wake = next_heartbeat;
			if (retry_at < wake)
				wake = retry_at;
			if (sync_again_at < wake)
				wake = sync_again_at;
			if (db_report_due() < wake)
				wake = db_report_due();
		}
		else if (reconnect_at < wake)
			wake = reconnect_at;
		if (earliest_kill_deadline() < wake)
			wake = earliest_kill_deadline();
		if (have_adopted_running() && now + 0.2 < wake)
			wake = now + 0.2;
		timeout_ms = wake <= now ? 0 : (int) ((wake - now) * 1000) + 1;

		pfd[nfd].fd = signal_pipe[0];
		pfd[nfd].events = POLLIN;
		pfd[nfd].revents = 0;
		nfd++;
		if (db_connected())
		{
			pfd[nfd].fd = db_socket();
			pfd[nfd].events = POLLIN;
			pfd[nfd].revents = 0;
			nfd++;
		}
		{
			int			db_nfd = nfd;

			nfd += shepherd_pollfds(pfd + nfd);
			if (got_stop || got_child)
				timeout_ms = 0;
			if (poll(pfd, nfd, timeout_ms) < 0 && errno != EINTR)
			{
				tl_log("error", "poll failed: %s", strerror(errno));
				sleep(1);
			}
			for (int i = db_nfd; i < nfd; i++)
				if (pfd[i].revents)
					shepherd_pump();
			nfd = db_nfd;
		}
		if (pfd[0].revents)
			drain_signal_pipe();
		if (nfd > 1 && pfd[1].revents)
		{
			if (db_consume_input())
				need_sync = true;
			else if (!db_connected())
			{
				reconnect_at = now_mono() + backoff;
				need_sync = true;
			}
		}
	}

	/*
	 * Let the shepherd answer what it was asked (no command may start after
	 * we are gone), report what already ended, leave the rest running.
	 */
	shepherd_stop(2.0);
	if (db_connected())
	{
		reap_children();
		db_flush_reports(true);
	}
	{
		int			running = 0;

		for (int i = 0; i < nallocs; i++)
			if (!allocs[i].ended)
				running++;
		tl_log("stop", "signal=%d running=%d (left running; a new launcher for this node adopts them)",
			   (int) stop_signal, running);
	}
	db_disconnect(NULL);
	return 0;
}
