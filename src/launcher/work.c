/*
 * work.c: how tide-launcher runs work, stops it, and never loses its exit
 * (see work.h).
 *
 * Every command runs as /bin/sh -c COMMAND, the leader of its own process
 * group, normally started by the shepherd (shepherd.c, shepherd_main.c),
 * whose answers come back here as events.  The process group (= the
 * command's pid) is what evictions signal: SIGTERM, then SIGKILL after the
 * grace period.  Work that is not our child (adopted from an earlier
 * launcher, or left by a shepherd that died) is watched through /proc and
 * its record in the state directory.
 */
#include "work.h"
#include "shepherd.h"
#include "shepherd_proto.h"
#include "statedir.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static double claim_again_at = 1e18;

static bool check_one_adopted(Alloc *a);

void
work_claim_soon(void)
{
	claim_again_at = now_mono() + 0.2;
}

double
work_claim_again_at(void)
{
	return claim_again_at;
}

void
work_claim_again_clear(void)
{
	claim_again_at = 1e18;
}

/* Start time of a process in clock ticks since boot (/proc), 0 if gone. */
static unsigned long long
proc_starttime(pid_t pid, char *state)
{
	char		path[64];
	char		buf[1024];
	char	   *p;
	int			fd;
	ssize_t		n;
	unsigned long long start = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* the command name may hold spaces and parentheses: skip to the last ')' */
	p = strrchr(buf, ')');
	if (p == NULL)
		return 0;
	p += 2;
	if (state)
		*state = *p;
	/* fields after the name: 3 state ... 22 starttime */
	for (int field = 3; field < 22 && p; field++)
	{
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (p)
		start = strtoull(p, NULL, 10);
	return start;
}

/* What /proc says about an adopted command's pid (see adopted_state). */
#define PROC_GONE		0		/* no such process */
#define PROC_NOT_OURS	1		/* the pid belongs to another process now */

/*
 * Is this adopted process still there?  PROC_GONE: no process has its pid;
 * PROC_NOT_OURS: one has, but not ours (it started more than a few seconds
 * before our record or after it, or the record is of another boot); else
 * its state letter from /proc ('Z': ended, not yet reaped).
 *
 * The recorded start time is taken right after the start returned, so our
 * process started at or shortly before it: later means the pid was reused,
 * much earlier means an older process (a daemon of a later boot that got
 * the same pid, when the boot id was not recorded).
 */
static char
adopted_state(const Alloc *a)
{
	char		state = '?';
	unsigned long long st;
	long		hz = sysconf(_SC_CLK_TCK);
	unsigned long long slack = (unsigned long long) (hz > 0 ? hz : 100) * 5;

	if (a->other_boot)
		return PROC_NOT_OURS;
	st = proc_starttime(a->pid, &state);
	if (st == 0)
	{
		/* no /proc entry: gone, unless /proc is not mounted at all */
		if (access("/proc/self/stat", R_OK) != 0)
			return (kill(a->pid, 0) == 0 || errno == EPERM) ? '?' : PROC_GONE;
		return PROC_GONE;
	}
	if (a->starttime != 0 && (st > a->starttime || st + slack < a->starttime))
		return PROC_NOT_OURS;
	return state == 'X' ? PROC_GONE : state;
}

/* A record of the state directory becomes an adopted allocation. */
static Alloc *
adopt_record(const StateRecord *rec, int64_t job_id, int replica)
{
	Alloc	   *a = alloc_add(rec->id, job_id, replica, AS_RUNNING);

	a->adopted = true;
	a->pid = rec->pid;
	/* R-C7: named as it was claimed; its GPUs come from tide.reconcile */
	(void) statedir_read_token(rec->id, a->token, sizeof(a->token));
	a->starttime = rec->starttime;
	a->other_boot = rec->other_boot;
	/* its job may have a warning before its time limit: ask, unless sent */
	a->warn = statedir_warned(rec->id) ? WARN_SENT : WARN_ASK;
	return a;
}

/*
 * Read what earlier launchers for this node left: work still running (or
 * ended) under shepherds that outlived them.  Each becomes a known
 * allocation, reported like any other.
 */
void
work_adopt_all(void)
{
	StateRecord *recs;
	int			n = statedir_list(&recs);

	for (int i = 0; i < n; i++)
	{
		if (alloc_find(recs[i].id))
			continue;
		(void) adopt_record(&recs[i], recs[i].job_id, recs[i].replica);
		tl_log("adopt", "alloc=%lld job=%lld replica=%d pid=%lld (started by an earlier launcher%s)",
			   (long long) recs[i].id, (long long) recs[i].job_id, recs[i].replica,
			   (long long) recs[i].pid, recs[i].other_boot ? "; before the last reboot" : "");
	}
	free(recs);
	work_check_adopted();
}

/*
 * An allocation the database assigns and this launcher does not know:
 * adopt it when a shepherd of an earlier launcher started it (see
 * statedir_take).  RECORD_FOUND (*adopted set), RECORD_BUSY or
 * RECORD_NONE.
 */
int
work_take_record(int64_t id, int64_t job_id, int replica, Alloc **adopted)
{
	StateRecord rec;
	int			r = statedir_take(id, &rec);
	Alloc	   *a;

	*adopted = NULL;
	if (r != RECORD_FOUND)
		return r;
	/* what the record says it is (the caller compares it with the claim) */
	(void) job_id;
	(void) replica;
	a = adopt_record(&rec, rec.job_id, rec.replica);
	a->started_owed = true;
	tl_log("adopt", "alloc=%lld job=%lld replica=%d pid=%lld (started by the shepherd of an earlier launcher)",
		   (long long) id, (long long) rec.job_id, rec.replica, (long long) rec.pid);
	*adopted = a;
	return RECORD_FOUND;
}

/*
 * The launcher does not run this allocation's command, for a reason of its
 * own: reported as started, then exited with code and the reason (which
 * its job's state_reason then gives).
 */
static void
not_started(const char *event, int64_t id, int64_t job_id, int replica, int code, const char *why)
{
	Alloc	   *a = alloc_add(id, job_id, replica, AS_EXITED);

	a->started_owed = true;
	a->exit_code = code;
	a->reason = strdup(why);
	tl_log(event, "alloc=%lld job=%lld replica=%d: %s; reporting exit code %d",
		   (long long) id, (long long) job_id, replica, why, code);
}

/*
 * Start one allocation.  With the shepherd: queue the request and return 0
 * (the pid comes with its answer, see work_pump).  With --no-shepherd:
 * posix_spawn from here and return the pid (= process group).  -1: not
 * started, the next claim retries.  -2: not started for good (the program
 * is not there, or not executable; the output file cannot be opened):
 * its exit is reported with the reason.
 */
pid_t
work_spawn(const SpawnSpec *spec)
{
	pid_t		pid;
	int			rfd;
	int			code;
	char		why[TL_REASON_MAX];
	SpawnFailure failure;

	code = command_check(spec->command, spec->workdir, why, sizeof(why));
	if (code != 0)
	{
		not_started("not_started", spec->id, spec->job_id, spec->replica, code, why);
		return -2;
	}
	if (!opt.no_shepherd)
		return shepherd_request_spawn(spec) ? 0 : -1;

	/*
	 * The command straight from the launcher, recorded here so that a
	 * restarted launcher still adopts it; only its exit code is lost if it
	 * ends while no launcher runs.
	 */
	rfd = statedir_record_begin(spec->id);
	if (rfd < 0)
	{
		/* not started: still assigned, the next claim retries */
		if (errno == EEXIST)
			work_claim_soon();
		else
			statedir_failed(errno);
		return -1;
	}
	if ((code = spawn_command(spec, &pid, true, &failure)) != 0)
	{
		statedir_record_abort(rfd, spec->id);
		spawn_failure_reason(failure, code, spec->id, spec->job_id, spec->replica, spec->workdir,
							 why, sizeof(why));
		not_started("not_started", spec->id, spec->job_id, spec->replica, TL_EXIT_CANNOT_START, why);
		return -2;
	}
	if (statedir_record_finish(rfd, spec->id, spec->job_id, spec->replica, pid) != 0)
	{
		statedir_failed(errno);
		kill(-pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		return -1;
	}
	return pid;
}

/* A job without a command: reported as started, then exited with 127. */
void
work_no_command(int64_t id, int64_t job_id, int replica)
{
	not_started("no_command", id, job_id, replica, TL_EXIT_NO_COMMAND, "the job has no command");
}

/*
 * Record the end of an allocation's process: EXITED, or STOPPED when it
 * was being evicted.  at: when it ended (monotonic seconds; 0: not
 * known).  A process that ended before its stop was asked for ended on
 * its own, not by the stop: EXITED, and its exit is reported (R-T6).
 * kill_group: clean up what the command left in its group (the shepherd
 * did that already for its own, before the pid could be reused).
 */
static void
allocation_ended(Alloc *a, int code, const char *how, bool kill_group, double at)
{
	bool		evicting = alloc_evicting(a);

	if (evicting && a->state == AS_EVICTING && at > 0 && a->stop_at > 0 && at < a->stop_at)
	{
		evicting = false;
		how = " (it had ended before the stop was asked for: its exit is reported)";
	}
	if (kill_group && a->pid > 1)
		kill(-a->pid, SIGKILL);
	alloc_set_state(a, evicting ? AS_STOPPED : AS_EXITED);
	a->exit_code = code;
	a->exited_at = at;
	tl_event(evicting ? "stopped" : "exited",
			 "alloc=%lld job=%lld replica=%d pid=%d exit_code=%d%s",
			 (long long) a->id, (long long) a->job_id, a->replica, (int) a->pid, code, how);
}

/*
 * Signal an allocation's group for its eviction: SIGTERM now, SIGKILL at
 * a->kill_at.  The shepherd does it for its own commands (it alone knows
 * whether the pid is still its child, and it gives the grace period to
 * the whole group); the launcher for adopted work and --no-shepherd.
 */
static void
evict_signal(Alloc *a)
{
	if (!a->adopted && !opt.no_shepherd &&
		shepherd_request_evict(a->id, a->job_id, a->pid, a->kill_at - now_mono()))
	{
		a->shepherd_kills = true;	/* sent by the event loop (POLLOUT) */
		return;
	}
	if (kill(-a->pid, SIGTERM) != 0 && errno != ESRCH)
		tl_log("warning", "alloc=%lld kill(-%d, SIGTERM): %s",
			   (long long) a->id, (int) a->pid, strerror(errno));
}

/* The start failed: the job learns that it did not run (126), and why. */
static void
start_failed(Alloc *a, const char *why)
{
	a->started_owed = a->state != AS_SPAWNING_EVICTED;
	alloc_set_state(a, a->state == AS_SPAWNING_EVICTED ? AS_STOPPED : AS_EXITED);
	a->exit_code = TL_EXIT_CANNOT_START;
	free(a->reason);
	a->reason = a->state == AS_EXITED ? strdup(why) : NULL;
}

/* Apply one answer of the shepherd. */
static void
shepherd_answer(const ShepherdEvent *r)
{
	Alloc	   *a = alloc_find(r->id);
	char		why[TL_REASON_MAX];

	if (a == NULL)
		return;
	switch (r->kind)
	{
		case REPLY_SPAWNED:
			if (!alloc_spawning(a))
				return;
			a->pid = r->value;
			if (a->state == AS_SPAWNING_EVICTED)
			{
				/* evicted while being started: stop it now */
				alloc_set_state(a, AS_EVICTING);
				a->kill_at = now_mono() + alloc_grace(a);
				evict_signal(a);
				tl_event("evict", "alloc=%lld job=%lld replica=%d pgid=%d signal=TERM grace=%gs",
						 (long long) a->id, (long long) a->job_id, a->replica, (int) a->pid,
						 alloc_grace(a));
			}
			else
			{
				alloc_set_state(a, AS_RUNNING);
				a->started_owed = true;
			}
			tl_event("started", "alloc=%lld job=%lld replica=%d pid=%d CUDA_VISIBLE_DEVICES=%s",
					 (long long) a->id, (long long) a->job_id, a->replica, (int) a->pid,
					 a->cvd ? a->cvd : "");
			break;
		case REPLY_FAILED:
		case REPLY_FAILED_OUTPUT:
		case REPLY_FAILED_WORKDIR:
			if (!alloc_spawning(a))
				return;
			/* (the workdir was there when the launcher checked it: unnamed) */
			spawn_failure_reason(r->kind == REPLY_FAILED_OUTPUT ? SPAWN_FAILED_OUTPUT :
								 r->kind == REPLY_FAILED_WORKDIR ? SPAWN_FAILED_WORKDIR : SPAWN_FAILED_SHELL,
								 r->value, a->id, a->job_id, a->replica, NULL, why, sizeof(why));
			tl_log("error", "alloc=%lld job=%lld not started: %s", (long long) a->id,
				   (long long) a->job_id, why);
			/* like a shell that cannot run the command: the job learns why */
			start_failed(a, why);
			break;
		case REPLY_NOT_RECORDED:
			if (!alloc_spawning(a))
				return;
			statedir_failed(r->value);
			/* like a start that failed: the job learns it did not run */
			snprintf(why, sizeof(why), "cannot record it in the state directory %s: %s",
					 opt.state_dir, strerror(r->value));
			start_failed(a, why);
			break;
		case REPLY_TAKEN:
			if (!alloc_spawning(a))
				return;
			/* an earlier launcher's shepherd has it: the next claim adopts it */
			tl_log("adopt", "alloc=%lld job=%lld is already recorded by another shepherd; adopting it instead",
				   (long long) a->id, (long long) a->job_id);
			alloc_remove(a);
			work_claim_soon();
			break;
		case REPLY_EXITED:
			if (!alloc_ended(a) && !alloc_spawning(a))
				allocation_ended(a, r->value, "", false, r->at > 0 ? r->at : now_mono());
			break;
	}
}

/*
 * The shepherd died (killed, out of memory): its commands are now the
 * launcher's children (it is their subreaper) or already recorded.  Watch
 * them like adopted work; a new shepherd is started for new work.
 */
static void
shepherd_lost(void)
{
	for (int i = 0; i < nallocs; i++)
	{
		Alloc	   *a = &allocs[i];
		StateRecord rec;

		if (alloc_spawning(a))
		{
			if (statedir_read(a->id, &rec))
			{
				bool		evicting = alloc_evicting(a);

				/* it did start: the answer was lost with the shepherd */
				alloc_set_state(a, evicting ? AS_EVICTING : AS_RUNNING);
				a->pid = rec.pid;
				a->starttime = rec.starttime;
				a->adopted = true;
				a->started_owed = !evicting;
				/* signalled only if still ours (we may have reaped it) */
				if (evicting && check_one_adopted(a))
				{
					a->kill_at = now_mono() + alloc_grace(a);
					kill(-a->pid, SIGTERM);
				}
			}
			else if (alloc_evicting(a))
				alloc_set_state(a, AS_STOPPED);
			else
			{
				/* never started: still assigned, the next claim retries */
				alloc_remove(a);
				i--;
			}
		}
		else if (!alloc_ended(a) && a->pid > 0)
		{
			/* its eviction deadline is ours again (checked as adopted) */
			a->adopted = true;
			a->shepherd_kills = false;
		}
	}
}

/*
 * Take the shepherd's answers (and send it what is queued) without
 * blocking.  Called whenever either pipe may be ready.
 */
void
work_pump(void)
{
	ShepherdEvent *ev;
	int			n = shepherd_pump(&ev);

	for (int i = 0; i < n; i++)
	{
		if (ev[i].kind == SHEPHERD_LOST)
			shepherd_lost();
		else
			shepherd_answer(&ev[i]);
	}
}

/* The descriptors the event loop polls for the shepherd. */
int
work_pollfds(struct pollfd *pfd)
{
	return shepherd_pollfds(pfd);
}

/*
 * Collect every ended child (SIGCHLD arrived): commands started with
 * --no-shepherd, the shepherd itself, and commands of a dead shepherd
 * (we are their subreaper), whose exit codes we then see here.
 */
void
work_reap(void)
{
	int			status;
	pid_t		pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
	{
		Alloc	   *a;
		int			code;

		if (shepherd_reaped(pid, status))
		{
			/* its last answers are still in the pipe: take them, up to its end */
			work_pump();
			continue;
		}
		a = alloc_find_pid(pid);
		if (a == NULL)
			continue;
		if (WIFEXITED(status))
			code = WEXITSTATUS(status);
		else if (WIFSIGNALED(status))
			code = 128 + WTERMSIG(status);
		else
			continue;
		allocation_ended(a, code, a->adopted ? " (adopted)" : "", true, now_mono());
	}
}

/*
 * Adopted work is not our child: look at /proc and its files.  True while
 * it still runs (as ours).
 */
static bool
check_one_adopted(Alloc *a)
{
	char		state;
	int			code;
	double		at;

	if (!a->adopted || alloc_ended(a))
		return !alloc_ended(a);
	state = adopted_state(a);

	/*
	 * Read the exit file only after looking at the process: a shepherd
	 * writes it before it reaps the command (and an old-style
	 * per-allocation shepherd before it exits), so a process that is gone
	 * always left its record.
	 */
	if ((code = statedir_read_exit(a->id, &at)) >= 0)
		allocation_ended(a, code, " (adopted)", false, at);
	else if (state == 'Z' && a->zombie_since == 0)
		a->zombie_since = now_mono();	/* its shepherd is about to write it */
	else if (state == PROC_NOT_OURS)
	{
		/*
		 * Its pid now names another process (reused, or a record of an
		 * earlier boot): ours ended long ago.  That process and its group
		 * are someone else's: no signal.
		 */
		tl_log("lost", "alloc=%lld job=%lld pid=%d: it ended without an exit record (%s); reporting exit code %d",
			   (long long) a->id, (long long) a->job_id, (int) a->pid,
			   a->other_boot ? "recorded before the last reboot" : "its pid now belongs to another process",
			   TL_EXIT_LOST);
		allocation_ended(a, TL_EXIT_LOST, " (lost)", false, 0);
	}
	else if (state == PROC_GONE || (state == 'Z' && now_mono() > a->zombie_since + 5.0))
	{
		/*
		 * Gone, or a zombie that nobody records (its shepherd died).  Kill
		 * what is left of its process group: with no process of that pid,
		 * a group of that id can only still exist if a member of our
		 * command's group lives (the kernel does not hand out a pid while
		 * it names a live group), and a zombie of ours holds its pid; so
		 * only our command's leftovers are hit.
		 */
		tl_log("lost", "alloc=%lld job=%lld pid=%d: it ended without an exit record; reporting exit code %d",
			   (long long) a->id, (long long) a->job_id, (int) a->pid, TL_EXIT_LOST);
		allocation_ended(a, TL_EXIT_LOST, " (lost)", true, 0);
	}
	return !alloc_ended(a);
}

void
work_check_adopted(void)
{
	for (int i = 0; i < nallocs; i++)
		if (allocs[i].adopted && !alloc_ended(&allocs[i]))
			(void) check_one_adopted(&allocs[i]);
}

bool
work_have_adopted_running(void)
{
	for (int i = 0; i < nallocs; i++)
		if (allocs[i].adopted && !alloc_ended(&allocs[i]))
			return true;
	return false;
}

/*
 * An eviction: SIGTERM to the group now, SIGKILL at the grace period's
 * end (the job's, else the launcher's: R-T3).  Work whose process had
 * already exited on its own is not stopped: its exit is reported, with
 * how long ago it happened, and the database counts it as the exit when
 * that was before it decided the stop (R-T6).
 */
void
work_stop(Alloc *a)
{
	if (alloc_evicting(a))
		return;
	a->started_owed = false;	/* the database has moved on */
	if (a->state == AS_EXITED)
	{
		/* said once: the claims repeat it until the exit is reported */
		if (a->stop_at == 0)
			tl_event("evict", "alloc=%lld job=%lld replica=%d (it had exited with code %d before: reporting its exit)",
					 (long long) a->id, (long long) a->job_id, a->replica, a->exit_code);
		a->stop_at = now_mono();
		return;
	}
	a->stop_at = now_mono();
	if (alloc_spawning(a))
	{
		/* the shepherd is starting it: stopped as soon as its pid is known */
		alloc_set_state(a, AS_SPAWNING_EVICTED);
		tl_event("evict", "alloc=%lld job=%lld replica=%d (being started; stopped once it is)",
				 (long long) a->id, (long long) a->job_id, a->replica);
		return;
	}
	if (a->state == AS_STOPPED || a->pid <= 1)
	{
		alloc_set_state(a, AS_STOPPED);
		tl_event("evict", "alloc=%lld job=%lld replica=%d (not running here)",
				 (long long) a->id, (long long) a->job_id, a->replica);
		return;
	}
	alloc_set_state(a, AS_EVICTING);
	/* adopted work is looked at first: its pid may no longer be ours */
	if (a->adopted && !check_one_adopted(a))
	{
		tl_event("evict", "alloc=%lld job=%lld replica=%d (had already ended)",
				 (long long) a->id, (long long) a->job_id, a->replica);
		return;
	}
	a->kill_at = now_mono() + alloc_grace(a);
	evict_signal(a);
	tl_event("evict", "alloc=%lld job=%lld replica=%d pgid=%d signal=TERM grace=%gs",
			 (long long) a->id, (long long) a->job_id, a->replica, (int) a->pid,
			 alloc_grace(a));
}

/*
 * The warning before a job's time limit (R-T2): the warning signal to
 * the group, once.  The shepherd sends it to its own commands (it alone
 * knows the pid is still theirs); the launcher to adopted work, after
 * looking at it, and with --no-shepherd.  Recorded in the state directory,
 * so that a launcher that adopts the work does not send it again.
 */
static void
warn_one(Alloc *a, double now)
{
	double		late = now - a->warn_at;

	if (a->adopted || !shepherd_request_signal(a->id, a->pid, opt.warn_signal))
	{
		if (a->adopted && !check_one_adopted(a))
			return;				/* it ended meanwhile */
		if (kill(-a->pid, opt.warn_signal) != 0 && errno != ESRCH)
			tl_log("warning", "alloc=%lld kill(-%d, SIG%s): %s",
				   (long long) a->id, (int) a->pid, opt.warn_signal_name, strerror(errno));
	}
	a->warn = WARN_SENT;
	statedir_record_warned(a->id);
	if (late > 1.0)
		tl_event("warn", "alloc=%lld job=%lld replica=%d pgid=%d signal=%s (time limit warning, %.1f s late: it was due while no launcher could send it)",
				 (long long) a->id, (long long) a->job_id, a->replica, (int) a->pid,
				 opt.warn_signal_name, late);
	else
		tl_event("warn", "alloc=%lld job=%lld replica=%d pgid=%d signal=%s (time limit warning)",
				 (long long) a->id, (long long) a->job_id, a->replica, (int) a->pid,
				 opt.warn_signal_name);
}

/* Send the warnings that are due. */
void
work_check_warnings(double now)
{
	for (int i = 0; i < nallocs; i++)
	{
		Alloc	   *a = &allocs[i];

		if (a->warn == WARN_DUE && a->state == AS_RUNNING && a->pid > 1 && now >= a->warn_at)
			warn_one(a, now);
	}
}

/* When the next warning is due (for the event loop's sleep), else 1e18. */
double
work_next_warning(void)
{
	double		t = 1e18;

	for (int i = 0; i < nallocs; i++)
		if (allocs[i].warn == WARN_DUE && allocs[i].state == AS_RUNNING &&
			allocs[i].warn_at < t)
			t = allocs[i].warn_at;
	return t;
}

/* Does the launcher hold this allocation's SIGKILL deadline? */
static bool
launcher_kills(const Alloc *a)
{
	return a->state == AS_EVICTING && a->pid > 1 && !a->shepherd_kills;
}

/* SIGKILL whatever ignored its SIGTERM for a whole grace period. */
void
work_check_kill_deadlines(double now)
{
	bool		pumped = false;

	for (int i = 0; i < nallocs; i++)
	{
		Alloc	   *a = &allocs[i];

		if (!launcher_kills(a) || now < a->kill_at)
			continue;

		/*
		 * Not to a pid that has been reaped meanwhile: take the shepherd's
		 * pending answers first, look at adopted work again.
		 */
		if (!pumped)
		{
			pumped = true;
			work_pump();
			i = -1;
			continue;
		}
		if (a->adopted && !check_one_adopted(a))
			continue;
		alloc_set_state(a, AS_KILLED);
		kill(-a->pid, SIGKILL);
		tl_event("kill", "alloc=%lld job=%lld pgid=%d signal=KILL (grace period over)",
				 (long long) a->id, (long long) a->job_id, (int) a->pid);
	}
}

double
work_earliest_kill_deadline(void)
{
	double		t = 1e18;

	for (int i = 0; i < nallocs; i++)
		if (launcher_kills(&allocs[i]) && allocs[i].kill_at < t)
			t = allocs[i].kill_at;
	return t;
}

/*
 * Stopping: wait (a little) until every start asked of the shepherd is
 * answered, so that no command starts after we are gone, then hang up:
 * the shepherd stays while its commands run.
 */
void
work_stop_shepherd(double timeout)
{
	double		until = now_mono() + timeout;

	while (shepherd_running() && now_mono() < until)
	{
		struct pollfd pfd[2];
		int			n;
		bool		waiting = false;

		for (int i = 0; i < nallocs; i++)
			if (alloc_spawning(&allocs[i]))
				waiting = true;
		if (!waiting)
			break;
		n = shepherd_pollfds(pfd);
		(void) poll(pfd, n, 50);
		work_pump();
	}
	shepherd_hangup();
}
