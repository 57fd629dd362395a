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
#include "db.h"
#include "reconcile.h"
#include "report.h"
#include "shepherd.h"
#include "statedir.h"
#include "work.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

static int	signal_pipe[2] = {-1, -1};
static volatile sig_atomic_t got_stop;
static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t got_child;

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
			"      --grace-period SECS      SIGTERM to SIGKILL delay on eviction, for jobs\n"
			"                               without a grace_period of their own (default 10)\n"
			"      --warn-signal NAME       the signal sent warn_before a job's time limit\n"
			"                               (default USR1)\n"
			"      --max-backoff SECS       longest wait between reconnect attempts\n"
			"                               (random, from 0.1 s; default 1.5)\n"
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
			"      --no-listen              do not LISTEN for the cycle's notifications;\n"
			"                               claim every --poll-interval instead (for a\n"
			"                               connection through a transaction pooler,\n"
			"                               which cannot carry LISTEN)\n"
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

/*
 * A signal by name (USR1, SIGUSR1, usr1) or number, for --warn-signal:
 * the signal and its name without SIG, or exit with a message naming it.
 * Only signals a program can catch are offered (not KILL or STOP, nor
 * those that mean a fault, such as SEGV): the warning is for the program
 * to handle.
 */
static int
parse_signal(const char *value, const char **name)
{
	static const struct
	{
		const char *name;
		int			sig;
	}			sigs[] = {
		{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP}, {"INT", SIGINT},
		{"QUIT", SIGQUIT}, {"TERM", SIGTERM}, {"ALRM", SIGALRM}, {"URG", SIGURG},
		{"WINCH", SIGWINCH}, {"CONT", SIGCONT}, {"PWR", SIGPWR}, {"XCPU", SIGXCPU},
	};
	const char *v = value;
	char	   *end;
	long		num;

	if (strncasecmp(v, "SIG", 3) == 0)
		v += 3;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (strcasecmp(v, sigs[i].name) == 0)
		{
			*name = sigs[i].name;
			return sigs[i].sig;
		}
	num = strtol(value, &end, 10);
	if (*value != '\0' && *end == '\0')
	{
		for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
			if (sigs[i].sig == num)
			{
				*name = sigs[i].name;
				return sigs[i].sig;
			}
	}
	fprintf(stderr, "tide-launcher: invalid value for --warn-signal: \"%s\" (expected one of USR1, USR2, HUP, INT, QUIT, TERM, ALRM, URG, WINCH, CONT, PWR, XCPU, with or without SIG, or its number)\n",
			value);
	exit(2);
}

/*
 * Every command's output goes to --output-dir: a directory that is
 * missing or cannot be written would fail each start (exit code 126),
 * so it is checked once, now.
 */
static void
check_output_dir(void)
{
	struct stat st;

	if (opt.output_dir == NULL)
		return;
	if (opt.output_dir[0] == '\0' || stat(opt.output_dir, &st) != 0)
	{
		fprintf(stderr, "tide-launcher: --output-dir \"%s\": %s\n", opt.output_dir,
				opt.output_dir[0] ? strerror(errno) : "empty name");
		exit(2);
	}
	if (!S_ISDIR(st.st_mode))
	{
		fprintf(stderr, "tide-launcher: --output-dir \"%s\" is not a directory\n", opt.output_dir);
		exit(2);
	}
	if (access(opt.output_dir, W_OK | X_OK) != 0)
	{
		fprintf(stderr, "tide-launcher: --output-dir \"%s\" cannot be written: %s\n",
				opt.output_dir, strerror(errno));
		exit(2);
	}
}

static void
parse_options(int argc, char **argv)
{
	enum
	{
		O_POLL = 256, O_HB, O_GRACE, O_BACKOFF, O_STATE, O_OUTPUT, O_NO_SHEPHERD, O_NO_LISTEN,
		O_WARN_SIGNAL
	};
	static const struct option longopts[] = {
		{"node", required_argument, NULL, 'n'},
		{"dsn", required_argument, NULL, 'd'},
		{"poll-interval", required_argument, NULL, O_POLL},
		{"heartbeat-interval", required_argument, NULL, O_HB},
		{"grace-period", required_argument, NULL, O_GRACE},
		{"warn-signal", required_argument, NULL, O_WARN_SIGNAL},
		{"max-backoff", required_argument, NULL, O_BACKOFF},
		{"state-dir", required_argument, NULL, O_STATE},
		{"output-dir", required_argument, NULL, O_OUTPUT},
		{"no-shepherd", no_argument, NULL, O_NO_SHEPHERD},
		{"no-listen", no_argument, NULL, O_NO_LISTEN},
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
			case O_WARN_SIGNAL:
				opt.warn_signal = parse_signal(optarg, &opt.warn_signal_name);
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
			case O_NO_LISTEN:
				opt.no_listen = true;
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
	check_output_dir();
}

/* ---- one claim ---- */

/*
 * A large claim takes seconds to start: every so often, reap what already
 * ended and report, so that the database hears of the first starts
 * without waiting for the last.
 */
static void
report_meanwhile(void)
{
	work_pump();
	if (got_child)
	{
		got_child = 0;
		work_reap();
	}
	report_flush(true);
}

/* When the current claim was sent (monotonic): warnings count from it. */
static double claim_sent_at;

/*
 * What an allocation is named by and holds, from its claim row (R-C7,
 * R-C8): its token, the GPUs its process holds while it lives.
 */
static void
name_alloc(Alloc *a, const ClaimRow *r)
{
	if (a == NULL)
		return;
	if (r->token != NULL && r->token[0] != '\0')
		snprintf(a->token, sizeof(a->token), "%s", r->token);
	if (a->cvd == NULL)
		a->cvd = strdup(r->cvd ? r->cvd : "");
	a->gpu_milli = r->gpu_milli ? atoi(r->gpu_milli) : 0;
}

/*
 * R-C8: may this allocation start now, with what still runs here?  If a
 * process that has not ended holds one of its GPUs (past one card's
 * worth), it waits: said once per allocation, and claimed again soon
 * (the holder is being stopped, or will be: nothing the database still
 * counts can hold it, R-C4).
 */
static bool
fence_allows(const ClaimRow *r)
{
	static int64_t said[64];
	static int	nsaid;
	int			gpu;
	const Alloc *h = fence_holder(r->cvd, r->gpu_milli ? atoi(r->gpu_milli) : 0, &gpu);
	bool		already = false;

	if (h == NULL)
		return true;
	work_claim_soon();
	for (int i = 0; i < 64; i++)
		already |= said[i] == r->id;
	if (already)
		return false;
	said[nsaid++ % 64] = r->id;
	if (gpu >= 0)
		tl_log("fence", "alloc=%lld job=%lld replica=%d waits: GPU %d is still held by alloc=%lld job=%lld pid=%d (%s); it starts once that process has ended",
			   (long long) r->id, (long long) r->job_id, r->replica, gpu, (long long) h->id,
			   (long long) h->job_id, (int) h->pid, alloc_state_name(h->state));
	else
		tl_log("fence", "alloc=%lld job=%lld replica=%d waits: alloc=%lld job=%lld pid=%d still runs here and the GPUs it holds are not known; it starts once that process has ended",
			   (long long) r->id, (long long) r->job_id, r->replica, (long long) h->id,
			   (long long) h->job_id, (int) h->pid);
	return false;
}

/*
 * R-C7: the claim row names another allocation by the id of ours (an id
 * handed out again after a failover).  Ours goes first; the new one is
 * claimed again soon, and starts once ours has ended and been reported.
 */
static void
stop_replaced(Alloc *a, const ClaimRow *r)
{
	if (!alloc_ended(a) && !alloc_evicting(a))
	{
		tl_log("gone", "alloc=%lld job=%lld replica=%d runs here, but the database now names another allocation (of job %lld) by its id: the one running here was lost (a failover?); stopping it, and the new one starts once it has ended",
			   (long long) a->id, (long long) a->job_id, a->replica, (long long) r->job_id);
		a->started_owed = false;
		work_stop(a);
	}
	work_claim_soon();
}

/* Carry out one action of reconcile(). */
static bool
apply_action(const Action *act, const ClaimRow *r)
{
	Alloc	   *a = alloc_find(r->id);
	SpawnSpec	spec;
	pid_t		pid;

	/*
	 * Unknown here: a shepherd of an earlier launcher may have started it
	 * (or be starting it) after this launcher read the state directory.
	 * Adopt it, or wait while it is being recorded.
	 */
	if (act->unknown && act->kind != ACT_NONE)
	{
		int			rec = work_take_record(r->id, r->job_id, r->replica, &a);

		if (rec == RECORD_BUSY)
		{
			work_claim_soon();
			return false;
		}
		if (rec == RECORD_FOUND && reconcile_other(a, r))
		{
			/* the record is another allocation's: an id handed out again */
			stop_replaced(a, r);
			return false;
		}
		if (rec == RECORD_FOUND && r->kind == CLAIM_RUN)
		{
			name_alloc(a, r);
			a->grace = r->grace;
			if (!r->warns && a->warn == WARN_ASK)
				a->warn = WARN_NONE;
			return false;
		}
	}
	switch (act->kind)
	{
		case ACT_NONE:
		case ACT_ADOPT_ONLY:
			return false;
		case ACT_OWE_STARTED:
			a->started_owed = true;
			return false;
		case ACT_WARN:
			/* R-T2: due warn_in seconds after the claim's now() */
			if (r->warn_known)
			{
				a->warn = WARN_DUE;
				a->warn_at = claim_sent_at + r->warn_in;
			}
			else
				a->warn = WARN_ASK; /* its job has not started: ask again */
			return false;
		case ACT_GONE:
			if (a != NULL && !alloc_evicting(a))
				tl_log("gone", "alloc=%lld job=%lld replica=%d runs here, but no live allocation of this node is it any more (released by the database, e.g. the node was marked down, or lost in a failover); stopping it",
					   (long long) a->id, (long long) a->job_id, a->replica);
			/* FALLTHROUGH */
		case ACT_STOP:
			if (a == NULL)
			{
				/* never ran here: stopped at once, holds nothing */
				a = alloc_add(r->id, r->job_id, r->replica, AS_RUNNING);
				name_alloc(a, r);
			}
			a->grace = r->grace;	/* the job's, as it is now (R-T3) */
			work_stop(a);
			return false;
		case ACT_REPLACED:
			stop_replaced(a, r);
			return false;
		case ACT_WAIT:
			work_claim_soon();
			return false;
		case ACT_NO_COMMAND:
			work_no_command(r->id, r->job_id, r->replica);
			name_alloc(alloc_find(r->id), r);
			return false;
		case ACT_START:
			break;
	}
	if (!fence_allows(r))
		return false;
	/*
	 * R-C7: the token goes to the state directory first, for a launcher
	 * that adopts the work after us.  A directory that refuses it refuses
	 * the start's own record next, which fails the start with its reason
	 * (126) and stops new work; without the token an adopting launcher
	 * names the work by id and job only.
	 */
	(void) statedir_record_token(r->id, r->token);
	memset(&spec, 0, sizeof(spec));
	spec.id = r->id;
	spec.job_id = r->job_id;
	spec.replica = r->replica;
	spec.command = r->command;
	spec.cuda_visible_devices = r->cvd;
	spec.role = r->role;
	spec.gpu_milli = r->gpu_milli;
	spec.env = r->env;
	spec.workdir = r->workdir;
	spec.array_id = r->array_id;
	spec.array_index = r->array_index;
	pid = work_spawn(&spec);
	if (pid == -2)
		name_alloc(alloc_find(r->id), r);
	if (pid < 0)
		return false;			/* -1: still assigned, the next claim retries;
								 * -2: not started, its exit is reported */
	if (pid == 0)
	{
		/* asked the shepherd: the pid (and the report) follow */
		a = alloc_add(r->id, r->job_id, r->replica, AS_SPAWNING);
	}
	else
	{
		a = alloc_add(r->id, r->job_id, r->replica, AS_RUNNING);
		a->pid = pid;
		a->started_owed = true;
		tl_event("started", "alloc=%lld job=%lld replica=%d pid=%d CUDA_VISIBLE_DEVICES=%s",
				 (long long) r->id, (long long) r->job_id, r->replica, (int) pid, r->cvd);
	}
	name_alloc(a, r);
	a->grace = r->grace;
	a->warn = r->warns ? WARN_ASK : WARN_NONE;
	return true;
}

/*
 * Claim new allocations and evictions in one round trip, start the new
 * work and stop the evicted.  Idempotent: what is already known is not
 * started twice.  False when the connection is lost or the server asks
 * to retry.
 */
static bool
sync_claims(void)
{
	static AllocName *running,
			   *asking;
	static Action *actions;
	static int	running_cap,
				actions_cap;
	int			nrunning = 0,
				nasking = 0;
	ClaimRow   *rows;
	int			nrows;
	int			started = 0;
	bool		can_start = statedir_can_start();
	double		t0;
	QueryOutcome q;

	if (nallocs > running_cap)
	{
		running_cap = nallocs * 2;
		running = tl_realloc(running, running_cap * sizeof(AllocName));
		asking = tl_realloc(asking, running_cap * sizeof(AllocName));
	}
	/* (the names point into allocs[], which does not move until the
	 * answer has been read) */
	for (int i = 0; i < nallocs; i++)
	{
		AllocName	name = {allocs[i].id, allocs[i].job_id, allocs[i].token};

		if (!alloc_ended(&allocs[i]) && !alloc_evicting(&allocs[i]) && allocs[i].pid > 0)
			running[nrunning++] = name;
		if (allocs[i].warn == WARN_ASK && !alloc_ended(&allocs[i]) && !alloc_evicting(&allocs[i]))
			asking[nasking++] = name;
	}
	claim_sent_at = now_mono();
	q = db_claim(running, nrunning, asking, nasking, &rows, &nrows);
	if (q != Q_OK)
		return q == Q_REFUSED;	/* refused: try again at the next poll */
	t0 = now_mono();
	/* asked about and not answered: the job has no warning (R-T2) */
	for (int i = 0; i < nasking; i++)
	{
		Alloc	   *a = alloc_find(asking[i].id);

		if (a != NULL)
			a->warn = WARN_NONE;
	}
	if (nrows > actions_cap)
	{
		actions_cap = nrows * 2;
		actions = tl_realloc(actions, actions_cap * sizeof(Action));
	}
	reconcile(rows, nrows, can_start, actions);
	for (int i = 0; i < nrows; i++)
	{
		if (!apply_action(&actions[i], &rows[actions[i].row]))
			continue;
		started++;
		/* keep the shepherd busy on the other core while we go on */
		if (started % 16 == 0)
			work_pump();
		if (started % 1000 == 0 && db_connected())
			report_meanwhile();
	}
	work_pump();
	if (opt.verbose && started > 0)
		tl_log("batch", "spawned n=%d ms=%.1f", started, (now_mono() - t0) * 1000);
	return true;
}

/*
 * While a job with a warning before its time limit has not started (its
 * start time is what the warning counts from), claim at least this often,
 * so that the warning is known well before it is due.
 */
#define WARN_ASK_INTERVAL 0.5

/* Is any allocation waiting to learn when its warning is due? */
static bool
warn_asking(void)
{
	for (int i = 0; i < nallocs; i++)
		if (allocs[i].warn == WARN_ASK && !alloc_ended(&allocs[i]) && !alloc_evicting(&allocs[i]))
			return true;
	return false;
}

/*
 * R-C7: the first thing said after each connect.  The database hears
 * every allocation known here, releases what it had running on this node
 * that nothing here runs, and answers for each of ours: keep (with the
 * GPUs it holds, for work adopted from an earlier launcher) or stop
 * (nothing live behind it: a failover lost it, or gave its id to another
 * allocation).  False when the connection is lost or the server asks to
 * retry; a refusal is logged and the launcher goes on without.
 */
static bool
sync_reconcile(void)
{
	AllocName  *names = tl_realloc(NULL, (nallocs + 1) * sizeof(AllocName));
	ReconcileRow *rows;
	int			nrows;
	int			known = nallocs,
				stopped = 0,
				released = 0;
	QueryOutcome q;

	for (int i = 0; i < nallocs; i++)
	{
		names[i].id = allocs[i].id;
		names[i].job_id = allocs[i].job_id;
		names[i].token = allocs[i].token;
	}
	q = db_reconcile(names, nallocs, &rows, &nrows);
	free(names);
	if (q != Q_OK)
		return q == Q_REFUSED;
	for (int i = 0; i < nrows; i++)
	{
		const ReconcileRow *r = &rows[i];
		Alloc	   *a = alloc_find(r->id);

		if (r->action == RECON_RELEASED)
		{
			released++;
			tl_log("reconcile", "%s", r->reason);
			continue;
		}
		if (a == NULL || a->job_id != r->job_id)
			continue;
		if (r->action == RECON_KEEP)
		{
			/* adopted work learns what the database knows of it */
			if (a->token[0] == '\0' && r->token[0] != '\0')
				snprintf(a->token, sizeof(a->token), "%s", r->token);
			if (a->cvd == NULL && r->gpus != NULL)
			{
				a->cvd = strdup(r->gpus);
				a->gpu_milli = r->gpu_milli;
			}
			continue;
		}
		if (alloc_ended(a) || alloc_evicting(a))
			continue;			/* its report says the rest */
		stopped++;
		tl_log("gone", "alloc=%lld job=%lld replica=%d runs here, but %s; stopping it",
			   (long long) a->id, (long long) a->job_id, a->replica, r->reason);
		a->started_owed = false;
		work_stop(a);
	}
	tl_log("reconcile", "known=%d stopped=%d released=%d", known, stopped, released);
	return true;
}

/*
 * The wait before the next connection attempt: random between 0.1 s and
 * three times the last wait, at most --max-backoff ("decorrelated
 * jitter").  Launchers that lost the same server come back spread out,
 * not all at the same instants, and one that retries keeps trying about
 * every max-backoff / 2 seconds, so a new primary is found within
 * --max-backoff of accepting connections.
 */
#define BACKOFF_BASE 0.1

static double
next_backoff(double *last)
{
	double		hi = *last * 3;
	double		lo;

	if (hi < BACKOFF_BASE * 3)
		hi = BACKOFF_BASE * 3;
	if (hi > opt.max_backoff)
		hi = opt.max_backoff;
	lo = BACKOFF_BASE < hi ? BACKOFF_BASE : hi;
	*last = lo + (hi - lo) * drand48();
	return *last;
}

/* ---- the event loop ---- */

int
main(int argc, char **argv)
{
	double		backoff = 0;
	double		reconnect_at = 0;
	double		next_poll = 0;
	double		next_heartbeat = 0;
	double		retry_at = 1e18;
	double		next_adopted_check = 0;
	bool		ever_connected = false;
	bool		need_sync = true;
	bool		need_reconcile = false;

	/*
	 * Keep nothing the caller left open (a lock file, a pipe): a launcher
	 * runs for months and must not hold them, nor pass them to its work.
	 */
	close_range(3, ~0U, 0);
	parse_options(argc, argv);
	setup_signals();
	{
		/* the reconnect jitter: different on every node and every start */
		unsigned long h = 5381;

		for (const char *p = opt.node; *p; p++)
			h = h * 33 + (unsigned char) *p;
		srand48((long) (h ^ (unsigned long) getpid() ^ (unsigned long) (now_mono() * 1e6)));
	}
	/*
	 * Become the reaper of orphaned descendants (a command whose shepherd
	 * was killed), so no zombie outlives its allocation even under an init
	 * that does not reap; reap_children() collects and ignores them.
	 */
	(void) prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	if (statedir_open() != 0)
		exit(1);
	tl_log("start", "pid=%d poll_interval=%g heartbeat_interval=%g grace_period=%g warn_signal=%s state_dir=%s%s%s",
		   (int) getpid(), opt.poll_interval, opt.heartbeat_interval,
		   opt.grace_period, opt.warn_signal_name, opt.state_dir, opt.no_shepherd ? " no_shepherd" : "",
		   opt.no_listen ? " no_listen" : "");
	/* before connecting: the one fork of the launcher is cheapest now */
	if (!opt.no_shepherd && !shepherd_start())
		exit(1);
	work_adopt_all();

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
				backoff = 0;
				need_sync = true;
				need_reconcile = true;
				next_heartbeat = 0;
			}
			else
				reconnect_at = now_mono() + next_backoff(&backoff);
		}

		/* processes: exits, adopted work, overdue kills */
		if (got_child)
		{
			got_child = 0;
			work_reap();
		}
		work_pump();
		/* /proc and the state files of adopted work: a few times a second */
		if (now >= next_adopted_check)
		{
			work_check_adopted();
			next_adopted_check = now + 0.2;
		}
		now = now_mono();
		work_check_kill_deadlines(now);
		work_check_warnings(now);

		/* database work; any failure drops the connection, nothing queued is lost */
		if (db_connected())
		{
			bool		ok = true;

			/* R-C7: before any claim or report of this connection */
			if (need_reconcile)
			{
				ok = sync_reconcile();
				if (ok)
					need_reconcile = false;
			}
			if (ok && now >= next_heartbeat)
			{
				ok = db_heartbeat();
				next_heartbeat = now + opt.heartbeat_interval;
			}
			if (ok && (need_sync || now >= next_poll || now >= retry_at ||
					   now >= work_claim_again_at()))
			{
				work_claim_again_clear();
				ok = sync_claims();
				if (ok)
				{
					need_sync = false;
					next_poll = now_mono() + opt.poll_interval;
					/* a job's start time is awaited for its warning: soon */
					if (warn_asking() && next_poll > now_mono() + WARN_ASK_INTERVAL)
						next_poll = now_mono() + WARN_ASK_INTERVAL;
				}
			}
			/* children may have exited while we claimed: report them too */
			if (ok && got_child)
			{
				got_child = 0;
				work_reap();
			}
			if (ok)
				work_pump();
			if (ok)
				ok = report_flush(false);
			if (!ok && !db_connected())
			{
				reconnect_at = now_mono() + next_backoff(&backoff);
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
			if (work_claim_again_at() < wake)
				wake = work_claim_again_at();
			if (report_due() < wake)
				wake = report_due();
		}
		else if (reconnect_at < wake)
			wake = reconnect_at;
		if (work_earliest_kill_deadline() < wake)
			wake = work_earliest_kill_deadline();
		if (work_next_warning() < wake)
			wake = work_next_warning();
		if (work_have_adopted_running() && now + 0.2 < wake)
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

			nfd += work_pollfds(pfd + nfd);
			if (got_stop || got_child)
				timeout_ms = 0;
			if (poll(pfd, nfd, timeout_ms) < 0 && errno != EINTR)
			{
				tl_log("error", "poll failed: %s", strerror(errno));
				sleep(1);
			}
			for (int i = db_nfd; i < nfd; i++)
				if (pfd[i].revents)
					work_pump();
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
				reconnect_at = now_mono() + next_backoff(&backoff);
				need_sync = true;
			}
		}
	}

	/*
	 * Let the shepherd answer what it was asked (no command may start after
	 * we are gone), report what already ended, leave the rest running.
	 */
	work_stop_shepherd(2.0);
	if (db_connected())
	{
		work_reap();
		report_flush(true);
	}
	{
		int			running = 0;

		for (int i = 0; i < nallocs; i++)
			if (!alloc_ended(&allocs[i]))
				running++;
		tl_log("stop", "signal=%d running=%d (left running; a new launcher for this node adopts them)",
			   (int) stop_signal, running);
	}
	db_disconnect(NULL);
	return 0;
}
