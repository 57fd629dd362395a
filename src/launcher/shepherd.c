/*
 * shepherd.c: the launcher's side of its shepherd (see shepherd_main.c for
 * the shepherd itself).  Requests are queued in a buffer and written as
 * the pipe takes them; answers are read without blocking and handed back
 * as events, the shepherd's death last.
 *
 * (A shepherd per allocation, a fork of the launcher each time, cost a
 * copy of the launcher's page tables per start: 40% of the machine at
 * 1,200 starts/s.  See docs/launcher.md, "Throughput".)
 */
#include "shepherd.h"
#include "shepherd_proto.h"
#include "statedir.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t shepherd_pid;		/* 0: none running */
static int	req_fd = -1;		/* write end: spawn requests */
static int	rsp_fd = -1;		/* read end: replies */
static bool shepherd_hung_up;	/* we are stopping: its going is expected */
static bool shepherd_was_reaped;	/* reap_children collected it ... */
static int	shepherd_status;	/* ... with this status */
static char *reqbuf;			/* requests not yet written */
static size_t reqlen,
			reqcap;

/* Events of the current pump. */
static ShepherdEvent *events;
static int	nevents,
			events_cap;
static char lost_why[128];

/*
 * Start the shepherd: a fork of the launcher while it is still small (before
 * it connects), so the one copy of its address space is cheap, and never
 * again per allocation.  Commands are started from the shepherd with
 * posix_spawn, which copies nothing.
 */
bool
shepherd_start(void)
{
	int			req[2],
				rsp[2];
	pid_t		launcher = getpid();
	pid_t		pid;

	if (pipe2(req, O_CLOEXEC) != 0)
	{
		tl_log("error", "cannot start the shepherd: pipe: %s", strerror(errno));
		return false;
	}
	if (pipe2(rsp, O_CLOEXEC) != 0)
	{
		tl_log("error", "cannot start the shepherd: pipe: %s", strerror(errno));
		close(req[0]);
		close(req[1]);
		return false;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0)
	{
		tl_log("error", "cannot start the shepherd: fork: %s", strerror(errno));
		close(req[0]);
		close(req[1]);
		close(rsp[0]);
		close(rsp[1]);
		return false;
	}
	if (pid == 0)
	{
		int			keep[3] = {statedir_fd(), req[0], rsp[1]};
		int			from = 3;

		/* keep only the state directory and our pipe ends (not the lock!) */
		for (int i = 0; i < 3; i++)
			for (int j = i + 1; j < 3; j++)
				if (keep[j] < keep[i])
				{
					int			t = keep[i];

					keep[i] = keep[j];
					keep[j] = t;
				}
		for (int i = 0; i < 3; i++)
		{
			if (keep[i] > from)
				close_range(from, keep[i] - 1, 0);
			from = keep[i] + 1;
		}
		close_range(from, ~0U, 0);
		tl_in_shepherd = true;
		shepherd_serve(req[0], rsp[1], launcher);
	}
	close(req[0]);
	close(rsp[1]);
	req_fd = req[1];
	rsp_fd = rsp[0];
	fcntl(req_fd, F_SETFL, O_NONBLOCK);
	fcntl(rsp_fd, F_SETFL, O_NONBLOCK);
	shepherd_pid = pid;
	shepherd_was_reaped = false;
	shepherd_hung_up = false;
	reqlen = 0;
	tl_log("shepherd", "pid=%d (records the exit codes of the commands it starts)", (int) pid);
	return true;
}

/* Is there a shepherd that takes requests? */
bool
shepherd_running(void)
{
	return shepherd_pid != 0 && req_fd >= 0;
}

/* Queue a start (sent by the event loop); false without a shepherd. */
bool
shepherd_request_spawn(const SpawnSpec *spec)
{
	SpawnHeader h;
	bool		array = spec->array_id && spec->array_index;
	size_t		lc = strlen(spec->command) + 1,
				lv = strlen(spec->cuda_visible_devices ? spec->cuda_visible_devices : "") + 1,
				lr = spec->role ? strlen(spec->role) + 1 : 0,
				lg = spec->gpu_milli ? strlen(spec->gpu_milli) + 1 : 0,
				le = spec->env ? strlen(spec->env) + 1 : 0,
				lw = spec->workdir ? strlen(spec->workdir) + 1 : 0,
				la = array ? strlen(spec->array_id) + 1 + strlen(spec->array_index) + 1 : 0;

	if (shepherd_pid == 0 && !shepherd_start())
		return false;
	memset(&h, 0, sizeof(h));
	h.id = spec->id;
	h.job_id = spec->job_id;
	h.replica = spec->replica;
	h.flags = (spec->role ? SPAWN_HAS_ROLE : 0) | (spec->gpu_milli ? SPAWN_HAS_GPU_MILLI : 0) |
		(spec->env ? SPAWN_HAS_ENV : 0) | (spec->workdir ? SPAWN_HAS_WORKDIR : 0) |
		(array ? SPAWN_HAS_ARRAY : 0);
	h.len = (uint32_t) (lc + lv + lr + lg + le + lw + la);
	buf_append(&reqbuf, &reqlen, &reqcap, &h, sizeof(h));
	buf_append(&reqbuf, &reqlen, &reqcap, spec->command, lc);
	buf_append(&reqbuf, &reqlen, &reqcap,
			   spec->cuda_visible_devices ? spec->cuda_visible_devices : "", lv);
	if (spec->role)
		buf_append(&reqbuf, &reqlen, &reqcap, spec->role, lr);
	if (spec->gpu_milli)
		buf_append(&reqbuf, &reqlen, &reqcap, spec->gpu_milli, lg);
	if (spec->env)
		buf_append(&reqbuf, &reqlen, &reqcap, spec->env, le);
	if (spec->workdir)
		buf_append(&reqbuf, &reqlen, &reqcap, spec->workdir, lw);
	if (array)
	{
		buf_append(&reqbuf, &reqlen, &reqcap, spec->array_id, strlen(spec->array_id) + 1);
		buf_append(&reqbuf, &reqlen, &reqcap, spec->array_index, strlen(spec->array_index) + 1);
	}
	return true;
}

/*
 * Queue an eviction of one of its commands: SIGTERM to the group now,
 * SIGKILL after grace seconds.  False without a shepherd.
 */
bool
shepherd_request_evict(int64_t id, int64_t job_id, pid_t pid, double grace)
{
	SpawnHeader h;

	if (!shepherd_running())
		return false;
	memset(&h, 0, sizeof(h));
	h.id = id;
	h.job_id = job_id;
	h.replica = (int32_t) pid;
	h.flags = SPAWN_EVICT;
	h.pad = (uint32_t) (grace > 0 ? grace * 1000 : 0);
	h.len = 1;
	buf_append(&reqbuf, &reqlen, &reqcap, &h, sizeof(h));
	buf_append(&reqbuf, &reqlen, &reqcap, "", 1);
	return true;
}

/*
 * Queue a signal to one of its commands' groups (the warning before a
 * time limit); the shepherd sends it only while that pid is still its
 * running command.  False without a shepherd.
 */
bool
shepherd_request_signal(int64_t id, pid_t pid, int sig)
{
	SpawnHeader h;

	if (!shepherd_running())
		return false;
	memset(&h, 0, sizeof(h));
	h.id = id;
	h.replica = (int32_t) pid;
	h.flags = SPAWN_SIGNAL;
	h.pad = (uint32_t) sig;
	h.len = 1;
	buf_append(&reqbuf, &reqlen, &reqcap, &h, sizeof(h));
	buf_append(&reqbuf, &reqlen, &reqcap, "", 1);
	return true;
}

static void
add_event(int64_t id, int kind, int value, const char *why)
{
	if (nevents == events_cap)
	{
		events_cap = events_cap ? events_cap * 2 : 256;
		events = tl_realloc(events, events_cap * sizeof(ShepherdEvent));
	}
	events[nevents].id = id;
	events[nevents].kind = kind;
	events[nevents].value = value;
	events[nevents].why = why;
	events[nevents].at = 0;
	nevents++;
}

/*
 * Its end of the pipe closed: it died.  Say how (reaping it if
 * reap_children has not), forget it, and end the events with
 * SHEPHERD_LOST: its commands are now the launcher's children (it is
 * their subreaper) or already recorded.
 */
static void
shepherd_gone(void)
{
	char		why[64];
	int			status = shepherd_status;

	if (!shepherd_was_reaped)
	{
		/* the pipe closes as it exits: the wait is short */
		while (waitpid(shepherd_pid, &status, 0) < 0)
			if (errno != EINTR)
			{
				status = -1;
				break;
			}
	}
	if (status == -1)
		snprintf(why, sizeof(why), "is gone");
	else if (WIFSIGNALED(status))
		snprintf(why, sizeof(why), "was killed by signal %d", WTERMSIG(status));
	else
		snprintf(why, sizeof(why), "exited with status %d", WEXITSTATUS(status));
	tl_log("error", "shepherd pid=%d %s; its running work is watched from the state directory",
		   (int) shepherd_pid, why);
	snprintf(lost_why, sizeof(lost_why), "%s", why);
	if (req_fd >= 0)
		close(req_fd);
	if (rsp_fd >= 0)
		close(rsp_fd);
	req_fd = rsp_fd = -1;
	reqlen = 0;
	shepherd_pid = 0;
	shepherd_was_reaped = false;	/* whatever path got us here */
	add_event(0, SHEPHERD_LOST, 0, lost_why);
}

/*
 * Move requests and answers between the launcher and its shepherd without
 * blocking.  Called whenever either pipe may be ready.  The answers, in
 * the order given, are in *evs (valid until the next call); the count is
 * returned.
 */
int
shepherd_pump(ShepherdEvent **evs)
{
	nevents = 0;
	*evs = events;
	if (shepherd_pid == 0)
		return 0;
	/*
	 * A write that fails (EPIPE) means it died: its last answers are still
	 * in the other pipe, and its end of file below says how it went.
	 */
	if (reqlen > 0 && req_fd >= 0)
		(void) buf_flush(req_fd, reqbuf, &reqlen);
	for (;;)
	{
		ShepherdReply r[256];
		ssize_t		n = read(rsp_fd, r, sizeof(r));

		if (n > 0)
		{
			/* records are 32 bytes and pipes move them whole */
			for (int i = 0; i < (int) (n / sizeof(ShepherdReply)); i++)
			{
				add_event(r[i].id, r[i].kind, r[i].value, NULL);
				events[nevents - 1].at = r[i].at_ns / 1e9;
			}
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 && shepherd_hung_up)
		{
			/* it answered everything and its commands are over */
			close(rsp_fd);
			rsp_fd = -1;
			shepherd_pid = 0;
		}
		else if (n == 0 || shepherd_was_reaped)
			shepherd_gone();	/* (reaped: its answers are all read) */
		break;
	}
	*evs = events;
	return nevents;
}

/* The descriptors the event loop should poll for the shepherd. */
int
shepherd_pollfds(struct pollfd *pfd)
{
	int			n = 0;

	if (shepherd_pid == 0)
		return 0;
	pfd[n].fd = rsp_fd;
	pfd[n].events = POLLIN;
	pfd[n].revents = 0;
	n++;
	if (reqlen > 0)
	{
		pfd[n].fd = req_fd;
		pfd[n].events = POLLOUT;
		pfd[n].revents = 0;
		n++;
	}
	return n;
}

/*
 * Is this reaped pid our shepherd?  Then it died: the next pump reads its
 * last answers and ends with SHEPHERD_LOST.
 */
bool
shepherd_reaped(pid_t pid, int status)
{
	if (shepherd_pid == 0 || pid != shepherd_pid)
		return false;
	shepherd_status = status;
	shepherd_was_reaped = true;
	return true;
}

/*
 * Stopping: no more requests (the caller waited for the answers it
 * needs).  The shepherd stays while its commands run.
 */
void
shepherd_hangup(void)
{
	if (req_fd >= 0)
		close(req_fd);
	req_fd = -1;
	reqlen = 0;
	shepherd_hung_up = true;
}
