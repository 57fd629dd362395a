/*
 * shepherd_main.c: the shepherd, one small process per launcher, forked
 * once at start-up (shepherd.c).  It starts commands on request
 * (posix_spawn, nothing copied), records each in the state directory
 * (ALLOC.pid: created empty and locked before the start, completed after
 * it; what cannot be recorded does not run), waits for them, appends each
 * exit code to ALLOC.pid and tells the launcher over a pipe.  It carries
 * out the evictions of its own commands (it alone knows whether a pid is
 * still its child).  When the launcher stops or dies it stays until its
 * last command has ended, still recording exits; the next launcher for
 * the node adopts the work from the state directory.  Once a command
 * ends, whatever is left in its process group is killed so that no stray
 * process keeps a GPU that is given to others.
 */
#include "shepherd_proto.h"
#include "command.h"
#include "statedir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Shepherd side: its children, by pid (open addressing, linear probing). */
typedef struct Kid
{
	pid_t		pid;			/* 0: free slot */
	int64_t		id;
} Kid;

static Kid *kids;
static unsigned kids_cap;
static unsigned nkids;

static unsigned
kid_slot(pid_t pid)
{
	return ((unsigned) pid * 2654435761u) & (kids_cap - 1);
}

static void
kid_put(pid_t pid, int64_t id)
{
	unsigned	i;

	if ((nkids + 1) * 2 > kids_cap)
	{
		Kid		   *old = kids;
		unsigned	oldcap = kids_cap;

		kids_cap = kids_cap ? kids_cap * 2 : 1024;
		kids = tl_realloc(NULL, kids_cap * sizeof(Kid));
		memset(kids, 0, kids_cap * sizeof(Kid));
		nkids = 0;
		for (unsigned j = 0; j < oldcap; j++)
			if (old[j].pid != 0)
				kid_put(old[j].pid, old[j].id);
		free(old);
	}
	for (i = kid_slot(pid); kids[i].pid != 0; i = (i + 1) & (kids_cap - 1))
		;
	kids[i].pid = pid;
	kids[i].id = id;
	nkids++;
}

/* Remove a child; its allocation id, or 0 when it is not one of ours. */
static int64_t
kid_take(pid_t pid)
{
	unsigned	i,
				j,
				mask = kids_cap - 1;
	int64_t		id;

	if (kids_cap == 0)
		return 0;
	for (i = kid_slot(pid); kids[i].pid != pid; i = (i + 1) & mask)
		if (kids[i].pid == 0)
			return 0;
	id = kids[i].id;
	/* backward-shift deletion keeps every probe chain unbroken */
	for (j = (i + 1) & mask; kids[j].pid != 0; j = (j + 1) & mask)
	{
		unsigned	k = kid_slot(kids[j].pid);

		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		kids[i] = kids[j];
		i = j;
	}
	kids[i].pid = 0;
	nkids--;
	return id;
}

static void
queue_reply(char **q, size_t *len, size_t *cap, int64_t id, int kind, int value)
{
	ShepherdReply r = {.id = id, .kind = kind, .value = value};

	buf_append(q, len, cap, &r, sizeof(r));
}

/* The end of a command, with the time it ended (R-T6). */
static void
queue_exit(char **q, size_t *len, size_t *cap, int64_t id, int code, double at)
{
	ShepherdReply r = {.id = id, .kind = REPLY_EXITED, .value = code,
	.at_ns = (int64_t) (at * 1e9)};

	buf_append(q, len, cap, &r, sizeof(r));
}

/* The allocation id of a running child, or 0. */
static int64_t
kid_find(pid_t pid)
{
	unsigned	mask = kids_cap - 1;

	if (kids_cap == 0)
		return 0;
	for (unsigned i = kid_slot(pid); kids[i].pid != 0; i = (i + 1) & mask)
		if (kids[i].pid == pid)
			return kids[i].id;
	return 0;
}

/*
 * Evictions in progress, carried out by the shepherd because only it knows
 * whether a command's pid (= its group) is still its own: SIGTERM to the
 * group at once, SIGKILL at the deadline.  The grace period covers the
 * whole group: when the command (sh) ends first, the members it leaves
 * (a program that traps SIGTERM to save a checkpoint) are held by pidfds
 * and keep their time; the exit is answered once they are gone or killed.
 */
typedef struct Eviction
{
	pid_t		pgid;			/* the command's pid = its process group */
	int64_t		id;
	int64_t		job_id;
	double		deadline;		/* monotonic: SIGKILL then */
	bool		ended;			/* the command ended, code waits ... */
	int			code;
	double		ended_at;		/* (when it ended) */
	int			nfds;			/* ... while these members live */
	int		   *fds;
} Eviction;

static Eviction *evs;
static int	nevs,
			evs_cap;

static Eviction *
eviction_find(pid_t pgid)
{
	for (int i = 0; i < nevs; i++)
		if (evs[i].pgid == pgid)
			return &evs[i];
	return NULL;
}

static void
eviction_remove(Eviction *e)
{
	for (int i = 0; i < e->nfds; i++)
		close(e->fds[i]);
	free(e->fds);
	*e = evs[--nevs];
}

/* The launcher asks: evict this command (if it still runs). */
static void
shepherd_evict(int64_t id, int64_t job_id, pid_t pid, double grace)
{
	Eviction   *e;

	if (pid <= 1 || kid_find(pid) != id || eviction_find(pid))
		return;					/* ended already: its answer is on its way */
	kill(-pid, SIGTERM);
	if (nevs == evs_cap)
	{
		evs_cap = evs_cap ? evs_cap * 2 : 16;
		evs = tl_realloc(evs, evs_cap * sizeof(Eviction));
	}
	e = &evs[nevs++];
	memset(e, 0, sizeof(*e));
	e->pgid = pid;
	e->id = id;
	e->job_id = job_id;
	e->deadline = now_mono() + grace;
}

/*
 * The command of an eviction ended before its deadline: hold a pidfd on
 * every other live member of its group (read from /proc while the
 * command's zombie still holds the group id, so each is ours).  True
 * when there is any: then the group lives on until they end or the
 * deadline.  (Without pidfds, or /proc, nothing is held: the group is
 * killed at once, as before.)
 */
static bool
eviction_hold_members(Eviction *e)
{
	DIR		   *d = opendir("/proc");
	struct dirent *de;

	if (d == NULL)
		return false;
	while ((de = readdir(d)) != NULL)
	{
		char	   *end;
		long		pid = strtol(de->d_name, &end, 10);
		char		path[64];
		char		buf[512];
		char	   *p;
		int			fd;
		ssize_t		n;
		long		pgrp;
		char		state;

		if (*end != '\0' || pid <= 1 || pid == e->pgid)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		p = strrchr(buf, ')');
		/* after the name: state ppid pgrp */
		if (p == NULL || sscanf(p + 2, "%c %*d %ld", &state, &pgrp) != 2 ||
			pgrp != e->pgid || state == 'Z' || state == 'X')
			continue;
		fd = (int) syscall(SYS_pidfd_open, (pid_t) pid, 0);
		if (fd < 0)
			continue;
		if (e->nfds % 16 == 0)
			e->fds = tl_realloc(e->fds, (e->nfds + 16) * sizeof(int));
		e->fds[e->nfds++] = fd;
	}
	closedir(d);
	return e->nfds > 0;
}

/* Members of an ended command's group still alive (their pidfds not readable). */
static int
eviction_live_members(Eviction *e)
{
	int			live = 0;

	for (int i = 0; i < e->nfds; i++)
	{
		struct pollfd pfd = {.fd = e->fds[i], .events = POLLIN};

		if (poll(&pfd, 1, 0) == 0)
			live++;
	}
	return live;
}

/*
 * Deadlines and held groups: SIGKILL what outlived its grace period,
 * answer the evictions whose groups are gone.  The time until the next
 * look (seconds; -1: nothing to wait for).
 */
static double
shepherd_evictions(char **q, size_t *len, size_t *cap)
{
	double		now = now_mono();
	double		next = -1;

	for (int i = 0; i < nevs; i++)
	{
		Eviction   *e = &evs[i];
		int			live;

		if (!e->ended)
		{
			/* the command itself still runs (unreaped: its group is ours) */
			if (now >= e->deadline && e->deadline > 0)
			{
				kill(-e->pgid, SIGKILL);
				tl_event("kill", "alloc=%lld job=%lld pgid=%d signal=KILL (grace period over)",
						 (long long) e->id, (long long) e->job_id, (int) e->pgid);
				e->deadline = 0;	/* killed: shepherd_reap ends it */
			}
			else if (e->deadline > 0 && (next < 0 || e->deadline - now < next))
				next = e->deadline - now;
			continue;
		}
		live = eviction_live_members(e);
		if (live > 0 && now >= e->deadline)
		{
			/*
			 * A live member holds the group id, so the group is still
			 * ours: kill it whole (members that started after we looked
			 * too), and each member we hold by its pidfd.
			 */
			kill(-e->pgid, SIGKILL);
			for (int k = 0; k < e->nfds; k++)
				(void) syscall(SYS_pidfd_send_signal, e->fds[k], SIGKILL, NULL, 0);
			tl_event("kill", "alloc=%lld job=%lld pgid=%d signal=KILL (grace period over; the command had ended, %d of its group had not)",
					 (long long) e->id, (long long) e->job_id, (int) e->pgid, live);
			live = 0;
		}
		if (live == 0)
		{
			queue_exit(q, len, cap, e->id, e->code, e->ended_at);
			eviction_remove(e);
			i--;
			continue;
		}
		/* members exit without telling us: look again soon */
		if (next < 0 || next > 0.05)
			next = 0.05;
	}
	return next;
}

/*
 * Collect every ended child.  waitid(WNOWAIT) first: while the command is
 * a zombie its pid (and so its process group id) cannot be reused, so the
 * exit file is written and the rest of the group killed before the pid is
 * released.  Whoever sees the pid gone therefore finds the exit file.
 */
static void
shepherd_reap(char **q, size_t *len, size_t *cap)
{
	for (;;)
	{
		siginfo_t	si;
		int64_t		id;
		int			code = 0;
		double		at;

		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0)
			break;
		id = kid_take(si.si_pid);
		at = now_mono();
		if (id > 0)
		{
			Eviction   *e = eviction_find(si.si_pid);

			code = si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
			statedir_record_exit(id, code, at);
			if (e != NULL && e->deadline > now_mono() && eviction_hold_members(e))
			{
				/* evicted: the rest of its group keeps its grace period */
				e->ended = true;
				e->code = code;
				e->ended_at = at;
				while (waitpid(si.si_pid, NULL, 0) < 0 && errno == EINTR)
					;
				continue;
			}
			if (e != NULL)
				eviction_remove(e);
			/* anything the command left behind in its group goes with it */
			kill(-si.si_pid, SIGKILL);
		}
		while (waitpid(si.si_pid, NULL, 0) < 0 && errno == EINTR)
			;
		if (id > 0)
			queue_exit(q, len, cap, id, code, at);
	}
}

/*
 * Start up to max of the requests in buf[0..*len), keeping the rest (and an
 * incomplete last one) for later.  True when complete requests are left.
 */
static bool
shepherd_spawn_requests(char *buf, size_t *start, size_t *len, pid_t launcher,
						char **q, size_t *qlen, size_t *qcap, int max)
{
	size_t		pos = *start;
	bool		more;

	while (*len - pos >= sizeof(SpawnHeader) && max-- > 0)
	{
		SpawnHeader h;
		SpawnSpec	spec;
		char	   *s;
		char	   *end;
		pid_t		pid;
		int			rc;
		int			rfd;
		SpawnFailure failure;

		memcpy(&h, buf + pos, sizeof(h));
		if (*len - pos - sizeof(h) < h.len)
			break;
		s = buf + pos + sizeof(h);
		end = s + h.len;
		pos += sizeof(h) + h.len;
		if (h.len == 0 || end[-1] != '\0')
			continue;			/* cannot happen: same program on both ends */
		if (h.flags & SPAWN_EVICT)
		{
			shepherd_evict(h.id, h.job_id, (pid_t) h.replica, h.pad / 1000.0);
			continue;
		}
		if (h.flags & SPAWN_SIGNAL)
		{
			/* only a command of ours that runs and is not being evicted */
			if (h.replica > 1 && kid_find((pid_t) h.replica) == h.id &&
				!eviction_find((pid_t) h.replica))
				kill(-(pid_t) h.replica, (int) h.pad);
			continue;
		}

		/*
		 * The record first (empty and locked), then the check that our
		 * launcher still lives: a successor that claims the allocation
		 * after we passed the check finds the record and waits for it
		 * (statedir_take), and one that came before the record
		 * exists means our launcher is gone and we start nothing.
		 */
		rfd = statedir_record_begin(h.id);
		if (rfd < 0)
		{
			int			err = errno;

			if (err != EEXIST)
				tl_log("error", "alloc=%lld not started: cannot record it in %s: %s (reported as exit code %d)",
					   (long long) h.id, opt.state_dir, strerror(err), TL_EXIT_CANNOT_START);
			queue_reply(q, qlen, qcap, h.id, err == EEXIST ? REPLY_TAKEN : REPLY_NOT_RECORDED, err);
			continue;
		}
		if (getppid() != launcher)
		{
			statedir_record_abort(rfd, h.id);
			continue;
		}
		memset(&spec, 0, sizeof(spec));
		spec.id = h.id;
		spec.job_id = h.job_id;
		spec.replica = h.replica;
		spec.command = s;
		s += strlen(s) + 1;
		spec.cuda_visible_devices = s < end ? s : "";
		s += s < end ? strlen(s) + 1 : 0;
		if ((h.flags & SPAWN_HAS_ROLE) && s < end)
		{
			spec.role = s;
			s += strlen(s) + 1;
		}
		if ((h.flags & SPAWN_HAS_GPU_MILLI) && s < end)
		{
			spec.gpu_milli = s;
			s += strlen(s) + 1;
		}
		if ((h.flags & SPAWN_HAS_ENV) && s < end)
		{
			spec.env = s;
			s += strlen(s) + 1;
		}
		if ((h.flags & SPAWN_HAS_WORKDIR) && s < end)
		{
			spec.workdir = s;
			s += strlen(s) + 1;
		}
		if ((h.flags & SPAWN_HAS_ARRAY) && s < end)
		{
			spec.array_id = s;
			s += strlen(s) + 1;
			spec.array_index = s < end ? s : NULL;
		}

		rc = spawn_command(&spec, &pid, true, &failure);
		if (rc != 0)
		{
			statedir_record_abort(rfd, h.id);
			queue_reply(q, qlen, qcap, h.id,
						failure == SPAWN_FAILED_OUTPUT ? REPLY_FAILED_OUTPUT :
						failure == SPAWN_FAILED_WORKDIR ? REPLY_FAILED_WORKDIR : REPLY_FAILED, rc);
			continue;
		}
		if (statedir_record_finish(rfd, spec.id, spec.job_id, spec.replica, pid) != 0)
		{
			/* unrecorded work must not run: stop it before it does much */
			int			err = errno;

			tl_log("error", "alloc=%lld stopped at once: cannot record it in %s: %s (reported as exit code %d)",
				   (long long) h.id, opt.state_dir, strerror(err), TL_EXIT_CANNOT_START);
			kill(-pid, SIGKILL);
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
			queue_reply(q, qlen, qcap, h.id, REPLY_NOT_RECORDED, err);
			continue;
		}
		kid_put(pid, h.id);
		queue_reply(q, qlen, qcap, h.id, REPLY_SPAWNED, pid);
	}
	*start = pos;
	if (*len - pos < sizeof(SpawnHeader))
		more = false;
	else
	{
		SpawnHeader h;

		memcpy(&h, buf + pos, sizeof(h));
		more = *len - pos - sizeof(h) >= h.len;
	}
	return more;
}

/*
 * The shepherd's life: start what the launcher asks for, in its own process
 * group each, wait for every command, record its exit code in the state
 * directory (appended to ALLOC.pid) and tell the launcher.  When the
 * launcher is gone it keeps recording exits, and leaves once its last
 * command has ended.
 */
void
shepherd_serve(int in, int out, pid_t launcher)
{
	struct sigaction sa;
	sigset_t	chld;
	int			sfd;
	char	   *inbuf = NULL,
			   *outq = NULL;
	size_t		inlen = 0,
				inpos = 0,
				incap = 0,
				outlen = 0,
				outcap = 0;
	bool		in_open = true,
				out_open = true,
				pending = false;
	double		wait = -1;		/* until the next look at evictions */

	/* stdin first: a launcher started with it closed must not lose an fd to it */
	{
		int			fd = open("/dev/null", O_RDONLY);

		if (fd >= 0 && fd != STDIN_FILENO)
		{
			dup2(fd, STDIN_FILENO);
			close(fd);
		}
	}
	/* not in the launcher's group: a Ctrl-C or a group kill of it spares us */
	setpgid(0, 0);
	(void) prctl(PR_SET_NAME, "tide-shepherd", 0, 0, 0);
	/* orphans of the commands come to us, not to init: we reap them */
	(void) prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = SIG_IGN;
	/* survive what stops the launcher: exit codes must still be recorded */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGPIPE, &sa, NULL);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGCHLD, &sa, NULL);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	sfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0)
	{
		tl_log("fatal", "shepherd: signalfd: %s", strerror(errno));
		_exit(1);
	}
	fcntl(in, F_SETFL, O_NONBLOCK);
	fcntl(out, F_SETFL, O_NONBLOCK);

	while (in_open || nkids > 0 || pending || nevs > 0)
	{
		struct pollfd pfd[3];
		int			n = 0;

		pfd[n].fd = sfd;
		pfd[n].events = POLLIN;
		n++;
		if (in_open)
		{
			pfd[n].fd = in;
			pfd[n].events = POLLIN;
			n++;
		}
		if (out_open && outlen > 0)
		{
			pfd[n].fd = out;
			pfd[n].events = POLLOUT;
			n++;
		}
		for (int i = 0; i < n; i++)
			pfd[i].revents = 0;
		if (poll(pfd, n, pending ? 0 : wait < 0 ? -1 : (int) (wait * 1000) + 1) < 0 &&
			errno != EINTR)
		{
			tl_log("error", "shepherd: poll: %s", strerror(errno));
			sleep(1);
		}
		if (pfd[0].revents)
		{
			struct signalfd_siginfo ssi[16];

			while (read(sfd, ssi, sizeof(ssi)) > 0)
				;
		}
		shepherd_reap(&outq, &outlen, &outcap);
		/* drop what was started (now and then: the backlog may be long) */
		if (inpos > 0 && (inpos == inlen || inpos >= 65536))
		{
			memmove(inbuf, inbuf + inpos, inlen - inpos);
			inlen -= inpos;
			inpos = 0;
		}
		while (in_open)
		{
			ssize_t		r;

			if (incap - inlen < 65536)
			{
				incap = incap * 2 + 65536;
				inbuf = tl_realloc(inbuf, incap);
			}
			r = read(in, inbuf + inlen, incap - inlen);
			if (r > 0)
			{
				inlen += r;
				break;
			}
			if (r < 0 && errno == EINTR)
				continue;
			if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			{
				in_open = false;	/* the launcher is gone */
				close(in);
			}
			break;
		}

		/*
		 * A few starts at a time, then reap and answer: the launcher
		 * reports the first starts while later ones are still queued.
		 */
		pending = shepherd_spawn_requests(inbuf, &inpos, &inlen, launcher,
										  &outq, &outlen, &outcap, 32);
		wait = shepherd_evictions(&outq, &outlen, &outcap);
		if (out_open && outlen > 0 && !buf_flush(out, outq, &outlen))
			out_open = false;
		if (!out_open)
			outlen = 0;
	}
	_exit(0);
}
