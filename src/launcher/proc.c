/*
 * proc.c: how tide-launcher runs work, stops it, and never loses its exit.
 *
 * Every command runs as /bin/sh -c COMMAND, the leader of its own process
 * group, started by the launcher's "shepherd": one small process per
 * launcher, forked once at start-up, that starts commands on request
 * (posix_spawn, nothing copied), records each in the state directory
 * (ALLOC.pid: created empty and locked before the start, completed after
 * it; what cannot be recorded does not run), waits for them, appends each
 * exit code to ALLOC.pid and tells the launcher over a pipe.  When the launcher stops or dies the
 * shepherd stays until its last command has ended, still recording exits;
 * the next launcher for the node adopts the work from the state directory
 * and reads the exit files.  The process group (= the command's pid) is
 * what evictions signal: SIGTERM, then SIGKILL after the grace period.
 * Once a command ends, whatever is left in its group is killed so that no
 * stray process keeps a GPU that is given to others.
 *
 * (A shepherd per allocation, a fork of the launcher each time, cost a
 * copy of the launcher's page tables per start: 40% of the machine at
 * 1,200 starts/s.  See docs/launcher.md, "Throughput".)
 */
#include "launcher.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/file.h>
#include <linux/falloc.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int	state_fd = -1;		/* the state directory, O_CLOEXEC */
static int	lock_fd = -1;		/* flock: one launcher per node and directory */
static char state_path[4096];
static char boot_id[40];		/* /proc/sys/kernel/random/boot_id, "" if unknown */
static bool state_unwritable;	/* a record could not be written: start nothing */

static void allocation_ended(Alloc *a, int code, const char *how, bool kill_group);
static int	record_begin(int64_t id);
static int	record_finish(int fd, const SpawnSpec *spec, pid_t pid);
static void record_abort(int fd, int64_t id);
static int	record_placeholder_state(int64_t id, bool remove_stale);
static void state_dir_failed(int err);
static bool shepherd_reaped(pid_t pid, int status);
static void record_exit(int64_t id, int code);
static void shepherd_gone(void);
static bool check_one_adopted(Alloc *a);

/* ---- the state directory ---- */

/* Make a directory (0700) unless it exists; refuse anything but our own dir. */
static int
ensure_private_dir(const char *path)
{
	struct stat st;

	if (mkdir(path, 0700) != 0 && errno != EEXIST)
	{
		tl_log("fatal", "cannot create state directory \"%s\": %s", path, strerror(errno));
		return -1;
	}
	if (lstat(path, &st) != 0)
	{
		tl_log("fatal", "cannot read state directory \"%s\": %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
	{
		tl_log("fatal", "state directory \"%s\" is not a directory", path);
		return -1;
	}
	if (st.st_uid != geteuid())
	{
		tl_log("fatal", "state directory \"%s\" belongs to another user (uid %d)",
			   path, (int) st.st_uid);
		return -1;
	}
	return 0;
}

/*
 * Open (creating it if needed) the state directory and take its lock, so
 * that two launchers for one node on one machine cannot run at once.
 */
int
state_dir_open(void)
{
	if (opt.state_dir == NULL)
	{
		const char *tmp = getenv("XDG_RUNTIME_DIR");
		char		base[2048];
		char		node[1024];
		int			j = 0;
		struct stat st;

		/*
		 * Memory-backed by default: the records only matter while the
		 * processes live, and tmpfs keeps thousands of creations a second
		 * cheap.
		 */
		if (tmp == NULL || tmp[0] == '\0' || access(tmp, W_OK | X_OK) != 0)
			tmp = (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
				   access("/dev/shm", W_OK | X_OK) == 0) ? "/dev/shm" : getenv("TMPDIR");
		if (tmp == NULL || tmp[0] == '\0')
			tmp = "/tmp";
		snprintf(base, sizeof(base), "%s/tide-launcher-%d", tmp, (int) geteuid());
		if (ensure_private_dir(base) != 0)
			return -1;
		/* the node name, with anything unsafe in a file name escaped */
		for (const char *p = opt.node; *p && j < (int) sizeof(node) - 4; p++)
		{
			unsigned char c = (unsigned char) *p;

			if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
				(c >= '0' && c <= '9') || c == '-' || c == '_' || (c == '.' && j > 0))
				node[j++] = (char) c;
			else
				j += snprintf(node + j, sizeof(node) - j, "%%%02X", c);
		}
		node[j] = '\0';
		snprintf(state_path, sizeof(state_path), "%s/%s", base, node);
	}
	else
		snprintf(state_path, sizeof(state_path), "%s", opt.state_dir);
	opt.state_dir = state_path;
	if (ensure_private_dir(state_path) != 0)
		return -1;
	{
		/* records of another boot name processes that no longer exist */
		int			fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
		ssize_t		n = fd >= 0 ? read(fd, boot_id, sizeof(boot_id) - 1) : -1;

		if (fd >= 0)
			close(fd);
		boot_id[n > 0 ? n : 0] = '\0';
		boot_id[strcspn(boot_id, "\n ")] = '\0';
	}

	state_fd = open(state_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (state_fd < 0)
	{
		tl_log("fatal", "cannot open state directory \"%s\": %s", state_path, strerror(errno));
		return -1;
	}
	lock_fd = openat(state_fd, "lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock_fd < 0)
	{
		tl_log("fatal", "cannot open \"%s/lock\": %s", state_path, strerror(errno));
		return -1;
	}
	if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0)
	{
		char		buf[32] = "";
		ssize_t		n = pread(lock_fd, buf, sizeof(buf) - 1, 0);

		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		tl_log("fatal", "another tide-launcher for node %s is running (pid %s, state directory %s)",
			   opt.node, buf[0] ? buf : "?", state_path);
		return -1;
	}
	{
		char		buf[32];
		int			n = snprintf(buf, sizeof(buf), "%d\n", (int) getpid());

		if (ftruncate(lock_fd, 0) != 0 || pwrite(lock_fd, buf, n, 0) != n)
			tl_log("warning", "cannot write pid to \"%s/lock\": %s", state_path, strerror(errno));
	}
	return 0;
}

/*
 * Write a small state file.  No temporary name and rename: that would take
 * the directory lock twice per allocation, the launcher's bottleneck at
 * thousands of starts a second.  Readers treat an empty or partial file as
 * "not written yet" instead, and a failed write removes the file: nothing
 * half-written stays behind.
 */
static int
write_state_file(const char *name, const char *content)
{
	int			fd;
	size_t		len = strlen(content);
	ssize_t		w;

	fd = openat(state_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if ((w = write(fd, content, len)) != (ssize_t) len)
	{
		int			save = w < 0 ? errno : ENOSPC;

		close(fd);
		unlinkat(state_fd, name, 0);
		errno = save;
		return -1;
	}
	close(fd);
	return 0;
}

/* Read a small state file into buf; -1 unless it is there and complete. */
static int
read_state_file(const char *name, char *buf, size_t size)
{
	int			fd = openat(state_fd, name, O_RDONLY | O_CLOEXEC);
	ssize_t		n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0 || buf[n - 1] != '\n')
		return -1;				/* missing, empty or not fully written */
	buf[n] = '\0';
	return 0;
}

/*
 * The final report was accepted: the allocation leaves the directory.
 * also_exit: there may be an ALLOC.exit too (adopted work); it goes
 * first, since a .pid without an exit record reads as "lost", never the
 * reverse.  (A shepherd that could not append to ALLOC.pid also writes
 * ALLOC.exit; state_dir_adopt() removes such leftovers.)
 */
void
forget_allocation_files(int64_t id, bool also_exit)
{
	char		name[64];

	if (also_exit)
	{
		snprintf(name, sizeof(name), "%lld.exit", (long long) id);
		unlinkat(state_fd, name, 0);
	}
	snprintf(name, sizeof(name), "%lld.pid", (long long) id);
	unlinkat(state_fd, name, 0);
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

/*
 * Parse the first line of ALLOC.pid: "PID TICKS JOB REPLICA [BOOT_ID]".
 * A record of another boot (the state directory outlived a reboot) names
 * a pid that is now someone else's: *other_boot says so.  Records without
 * a boot id (older launchers) count as this boot's.
 */
static bool
parse_state_record(const char *buf, long long *pid, unsigned long long *start,
				   long long *job, int *replica, bool *other_boot)
{
	char		boot[40] = "";
	char		line[256];
	size_t		n = strcspn(buf, "\n");

	/* the first line only: the second (the exit code) is not a boot id */
	if (n >= sizeof(line))
		n = sizeof(line) - 1;
	memcpy(line, buf, n);
	line[n] = '\0';
	if (sscanf(line, "%lld %llu %lld %d %39s", pid, start, job, replica, boot) < 4 ||
		*pid <= 1)
		return false;
	*other_boot = boot[0] != '\0' && boot_id[0] != '\0' && strcmp(boot, boot_id) != 0;
	return true;
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

/*
 * Read what earlier launchers for this node left: work still running (or
 * ended) under shepherds that outlived them.  Each becomes a known
 * allocation, reported like any other.
 */
void
state_dir_adopt(void)
{
	DIR		   *d;
	struct dirent *de;
	int			dfd = dup(state_fd);

	if (dfd < 0 || (d = fdopendir(dfd)) == NULL)
	{
		tl_log("error", "cannot list state directory %s: %s", opt.state_dir, strerror(errno));
		if (dfd >= 0)
			close(dfd);
		return;
	}
	while ((de = readdir(d)) != NULL)
	{
		char	   *end;
		long long	id = strtoll(de->d_name, &end, 10);
		char		buf[256];
		long long	pid = 0,
					job = 0;
		unsigned long long start = 0;
		int			replica = 0;
		bool		other_boot = false;
		Alloc	   *a;

		if (end == de->d_name || id <= 0)
			continue;
		if (strcmp(end, ".pid.tmp") == 0 || strcmp(end, ".exit.tmp") == 0)
		{
			unlinkat(state_fd, de->d_name, 0);
			continue;
		}
		if (strcmp(end, ".exit") == 0)
		{
			char		pidname[64];
			struct stat st;

			snprintf(pidname, sizeof(pidname), "%lld.pid", id);
			if (fstatat(state_fd, pidname, &st, 0) != 0)
				unlinkat(state_fd, de->d_name, 0);	/* already reported */
			continue;
		}
		if (strcmp(end, ".pid") != 0)
			continue;
		if (alloc_find(id))
			continue;
		if (read_state_file(de->d_name, buf, sizeof(buf)) != 0)
		{
			/*
			 * Empty: a shepherd is starting it (or died doing so).  The
			 * claim decides when the allocation comes (state_record_take);
			 * here only a stale one is removed.
			 */
			(void) record_placeholder_state(id, true);
			continue;
		}
		if (!parse_state_record(buf, &pid, &start, &job, &replica, &other_boot))
		{
			tl_log("warning", "ignoring unreadable state file %s/%s", opt.state_dir, de->d_name);
			continue;
		}
		a = alloc_add(id, job, replica);
		a->adopted = true;
		a->pid = (pid_t) pid;
		a->starttime = start;
		a->other_boot = other_boot;
		tl_log("adopt", "alloc=%lld job=%lld replica=%d pid=%lld (started by an earlier launcher%s)",
			   id, job, replica, pid, other_boot ? "; before the last reboot" : "");
	}
	closedir(d);
	check_adopted();
}

/* ---- running work ---- */

/* Is this environment entry one the launcher sets (or removes) itself? */
static bool
env_is_ours(const char *entry)
{
	static const char *const names[] = {
		"CUDA_VISIBLE_DEVICES=", "TIDE_JOB_ID=", "TIDE_ALLOCATION_ID=", "TIDE_REPLICA=",
		"TIDE_ROLE=", "TIDE_NODE=", "TIDE_GPU_MILLI=", "PGPASSWORD=", NULL
	};

	for (int i = 0; names[i]; i++)
		if (strncmp(entry, names[i], strlen(names[i])) == 0)
			return true;
	return false;
}

/*
 * Start /bin/sh -c COMMAND with posix_spawn (no copy of our address space:
 * this is half the cost of a start), default signal handling, stdout and
 * stderr in the output file when asked, and the allocation's environment.
 * The launcher's database password is not the job's business.
 */
static int
spawn_command(const SpawnSpec *spec, pid_t *pid, bool own_group)
{
	extern char **environ;
	char	  **envp;
	int			n = 0,
				k = 0,
				rc;
	char		vars[7][256];	/* TIDE_NODE: names of up to 200 bytes */
	posix_spawnattr_t attr;
	posix_spawn_file_actions_t fa;
	sigset_t	all,
				none;
	char		path[4096];
	char	   *argv[] = {"sh", "-c", (char *) spec->command, NULL};

	while (environ[n])
		n++;
	envp = malloc((n + 8) * sizeof(char *));
	if (envp == NULL)
		return ENOMEM;
	for (int i = 0; i < n; i++)
		if (!env_is_ours(environ[i]))
			envp[k++] = environ[i];
	snprintf(vars[0], sizeof(vars[0]), "TIDE_JOB_ID=%lld", (long long) spec->job_id);
	snprintf(vars[1], sizeof(vars[1]), "TIDE_ALLOCATION_ID=%lld", (long long) spec->id);
	snprintf(vars[2], sizeof(vars[2]), "TIDE_REPLICA=%d", spec->replica);
	snprintf(vars[3], sizeof(vars[3]), "TIDE_ROLE=%s", spec->role ? spec->role : "main");
	snprintf(vars[4], sizeof(vars[4]), "TIDE_NODE=%s", opt.node);
	for (int i = 0; i < 5; i++)
		envp[k++] = vars[i];
	if (spec->gpu_milli)
	{
		snprintf(vars[5], sizeof(vars[5]), "TIDE_GPU_MILLI=%s", spec->gpu_milli);
		envp[k++] = vars[5];
	}
	{
		/* the mask may be long (64 GPUs): its own buffer */
		size_t		len = strlen(spec->cuda_visible_devices ? spec->cuda_visible_devices : "");
		char	   *cvd = malloc(len + 32);

		if (cvd == NULL)
		{
			free(envp);
			return ENOMEM;
		}
		snprintf(cvd, len + 32, "CUDA_VISIBLE_DEVICES=%s",
				 spec->cuda_visible_devices ? spec->cuda_visible_devices : "");
		envp[k++] = cvd;
	}
	envp[k] = NULL;

	posix_spawnattr_init(&attr);
	sigfillset(&all);
	sigemptyset(&none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK |
							 (own_group ? POSIX_SPAWN_SETPGROUP : 0));
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawn_file_actions_init(&fa);
	if (own_group)				/* straight from the launcher: no stdin */
		posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	if (opt.output_dir)
	{
		snprintf(path, sizeof(path), "%s/job-%lld-%d-%lld.log", opt.output_dir,
				 (long long) spec->job_id, spec->replica, (long long) spec->id);
		posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, path,
										 O_WRONLY | O_CREAT | O_APPEND, 0644);
		posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
	}
	rc = posix_spawn(pid, "/bin/sh", &fa, &attr, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	free(envp[k - 1]);
	free(envp);
	if (rc != 0 && opt.output_dir)
		tl_log("error", "alloc=%lld cannot start /bin/sh (output file %s): %s",
			   (long long) spec->id, path, strerror(rc));
	else if (rc != 0)
		tl_log("error", "alloc=%lld cannot start /bin/sh: %s", (long long) spec->id, strerror(rc));
	return rc;
}

/* ---- the shepherd: one small process per launcher ---- */

/*
 * Launcher -> shepherd: a SpawnHeader, then its strings (command,
 * CUDA_VISIBLE_DEVICES, then role and gpu_milli when present), each
 * NUL-terminated.  Shepherd -> launcher: fixed-size ShepherdReply records.
 * One writer and one reader per pipe, so a record is never interleaved.
 */
typedef struct SpawnHeader
{
	int64_t		id;
	int64_t		job_id;
	int32_t		replica;
	uint32_t	flags;			/* SPAWN_HAS_* */
	uint32_t	len;			/* bytes of strings that follow */
	uint32_t	pad;
} SpawnHeader;

#define SPAWN_HAS_ROLE		1
#define SPAWN_HAS_GPU_MILLI 2
#define SPAWN_EVICT			4	/* not a start: evict pid (in replica) with a
								 * grace period of pad milliseconds */

typedef struct ShepherdReply
{
	int64_t		id;
	int32_t		kind;			/* REPLY_* */
	int32_t		value;			/* pid, errno or exit code */
} ShepherdReply;

#define REPLY_SPAWNED	1
#define REPLY_FAILED	2
#define REPLY_EXITED	3
#define REPLY_NOT_RECORDED 4	/* the state directory refused it: not run */
#define REPLY_TAKEN		5		/* ALLOC.pid exists: another shepherd's */

/* Launcher side. */
static pid_t shepherd_pid;		/* 0: none running */
static int	req_fd = -1;		/* write end: spawn requests */
static int	rsp_fd = -1;		/* read end: replies */
static bool shepherd_hung_up;	/* we are stopping: its going is expected */
static bool shepherd_was_reaped;	/* reap_children collected it ... */
static int	shepherd_status;	/* ... with this status */
static char *reqbuf;			/* requests not yet written */
static size_t reqlen,
			reqcap;

/* Append bytes to a growing buffer. */
static void
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
static bool
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
			queue_reply(q, len, cap, e->id, REPLY_EXITED, e->code);
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

		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0)
			break;
		id = kid_take(si.si_pid);
		if (id > 0)
		{
			Eviction   *e = eviction_find(si.si_pid);

			code = si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
			record_exit(id, code);
			if (e != NULL && e->deadline > now_mono() && eviction_hold_members(e))
			{
				/* evicted: the rest of its group keeps its grace period */
				e->ended = true;
				e->code = code;
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
			queue_reply(q, len, cap, id, REPLY_EXITED, code);
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

		/*
		 * The record first (empty and locked), then the check that our
		 * launcher still lives: a successor that claims the allocation
		 * after we passed the check finds the record and waits for it
		 * (state_record_take), and one that came before the record
		 * exists means our launcher is gone and we start nothing.
		 */
		rfd = record_begin(h.id);
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
			record_abort(rfd, h.id);
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
			spec.gpu_milli = s;

		rc = spawn_command(&spec, &pid, true);
		if (rc != 0)
		{
			record_abort(rfd, h.id);
			queue_reply(q, qlen, qcap, h.id, REPLY_FAILED, rc);
			continue;
		}
		if (record_finish(rfd, &spec, pid) != 0)
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
static void
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
		int			keep[3] = {state_fd, req[0], rsp[1]};
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

/*
 * The shepherd died (killed, out of memory): its commands are now the
 * launcher's children (it is their subreaper) or already recorded.  Watch
 * them like adopted work; start a new shepherd for new work.
 */
static void
shepherd_lost(const char *why)
{
	tl_log("error", "shepherd pid=%d %s; its running work is watched from the state directory",
		   (int) shepherd_pid, why);
	if (req_fd >= 0)
		close(req_fd);
	if (rsp_fd >= 0)
		close(rsp_fd);
	req_fd = rsp_fd = -1;
	reqlen = 0;
	shepherd_pid = 0;
	shepherd_was_reaped = false;	/* whatever path got us here */
	for (int i = 0; i < nallocs; i++)
	{
		Alloc	   *a = &allocs[i];

		if (a->spawning)
		{
			char		name[64];
			char		buf[256];
			long long	pid = 0,
						job = 0;
			unsigned long long start = 0;
			int			replica = 0;
			bool		other_boot = false;

			snprintf(name, sizeof(name), "%lld.pid", (long long) a->id);
			if (read_state_file(name, buf, sizeof(buf)) == 0 &&
				parse_state_record(buf, &pid, &start, &job, &replica, &other_boot))
			{
				/* it did start: the answer was lost with the shepherd */
				a->spawning = false;
				a->pid = (pid_t) pid;
				a->starttime = start;
				a->adopted = true;
				a->need_started = !a->evicting;
				/* signalled only if still ours (we may have reaped it) */
				if (a->evicting && check_one_adopted(a))
				{
					a->kill_at = now_mono() + opt.grace_period;
					kill(-a->pid, SIGTERM);
				}
			}
			else if (a->evicting)
			{
				a->spawning = false;
				a->ended = true;
				a->need_final = true;
			}
			else
			{
				/* never started: still assigned, the next claim retries */
				alloc_remove(a);
				i--;
			}
		}
		else if (!a->ended && a->pid > 0)
		{
			/* its eviction deadline is ours again (checked as adopted) */
			a->adopted = true;
			a->shepherd_kills = false;
		}
	}
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
	if (!a->adopted && !opt.no_shepherd && shepherd_pid != 0 && req_fd >= 0)
	{
		SpawnHeader h;
		double		grace = a->kill_at - now_mono();

		memset(&h, 0, sizeof(h));
		h.id = a->id;
		h.job_id = a->job_id;
		h.replica = (int32_t) a->pid;
		h.flags = SPAWN_EVICT;
		h.pad = (uint32_t) (grace > 0 ? grace * 1000 : 0);
		h.len = 1;
		buf_append(&reqbuf, &reqlen, &reqcap, &h, sizeof(h));
		buf_append(&reqbuf, &reqlen, &reqcap, "", 1);
		a->shepherd_kills = true;	/* sent by the event loop (POLLOUT) */
		return;
	}
	if (kill(-a->pid, SIGTERM) != 0 && errno != ESRCH)
		tl_log("warning", "alloc=%lld kill(-%d, SIGTERM): %s",
			   (long long) a->id, (int) a->pid, strerror(errno));
}

/* Handle one answer of the shepherd. */
static void
shepherd_answer(const ShepherdReply *r)
{
	Alloc	   *a = alloc_find(r->id);

	if (a == NULL)
		return;
	switch (r->kind)
	{
		case REPLY_SPAWNED:
			if (!a->spawning)
				return;
			a->spawning = false;
			a->pid = r->value;
			if (a->evicting)
			{
				/* evicted while being started: stop it now */
				a->kill_at = now_mono() + opt.grace_period;
				evict_signal(a);
				tl_event("evict", "alloc=%lld job=%lld replica=%d pgid=%d signal=TERM grace=%gs",
						 (long long) a->id, (long long) a->job_id, a->replica, (int) a->pid,
						 opt.grace_period);
			}
			else
				a->need_started = true;
			tl_event("started", "alloc=%lld job=%lld replica=%d pid=%d CUDA_VISIBLE_DEVICES=%s",
					 (long long) a->id, (long long) a->job_id, a->replica, (int) a->pid,
					 a->cvd ? a->cvd : "");
			break;
		case REPLY_FAILED:
			if (!a->spawning)
				return;
			tl_log("error", "alloc=%lld job=%lld cannot start /bin/sh: %s",
				   (long long) a->id, (long long) a->job_id, strerror(r->value));
			/* like a shell that cannot run the command: the job learns why */
			a->spawning = false;
			a->need_started = !a->evicting;
			a->ended = true;
			a->need_final = true;
			a->exit_code = TL_EXIT_CANNOT_START;
			break;
		case REPLY_NOT_RECORDED:
			if (!a->spawning)
				return;
			state_dir_failed(r->value);
			/* like a start that failed: the job learns it did not run */
			a->spawning = false;
			a->need_started = !a->evicting;
			a->ended = true;
			a->need_final = true;
			a->exit_code = TL_EXIT_CANNOT_START;
			break;
		case REPLY_TAKEN:
			if (!a->spawning)
				return;
			/* an earlier launcher's shepherd has it: the next claim adopts it */
			tl_log("adopt", "alloc=%lld job=%lld is already recorded by another shepherd; adopting it instead",
				   (long long) a->id, (long long) a->job_id);
			alloc_remove(a);
			sync_again_at = now_mono() + 0.2;
			break;
		case REPLY_EXITED:
			if (!a->ended && !a->spawning)
				allocation_ended(a, r->value, "", false);
			break;
	}
}

/*
 * Move requests and answers between the launcher and its shepherd without
 * blocking.  Called whenever either pipe may be ready.
 */
void
shepherd_pump(void)
{
	if (shepherd_pid == 0)
		return;
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
			/* records are 16 bytes and pipes move them whole */
			for (int i = 0; i < (int) (n / sizeof(ShepherdReply)); i++)
				shepherd_answer(&r[i]);
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
		else if (n == 0)
			shepherd_gone();
		break;
	}
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
 * Its end of the pipe closed: it died.  Say how (reaping it if
 * reap_children has not), then take over its work.
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
	shepherd_was_reaped = false;
	if (status == -1)
		snprintf(why, sizeof(why), "is gone");
	else if (WIFSIGNALED(status))
		snprintf(why, sizeof(why), "was killed by signal %d", WTERMSIG(status));
	else
		snprintf(why, sizeof(why), "exited with status %d", WEXITSTATUS(status));
	shepherd_lost(why);
}

/* Is this pid our shepherd (it died: reap_children saw it)? */
static bool
shepherd_reaped(pid_t pid, int status)
{
	if (shepherd_pid == 0 || pid != shepherd_pid)
		return false;
	shepherd_status = status;
	shepherd_was_reaped = true;
	/* its last answers are still in the pipe: take them, up to its end */
	shepherd_pump();
	if (shepherd_pid == pid)
		shepherd_gone();
	return true;
}

/*
 * Stopping: wait (a little) until every request is answered, so that no
 * command starts after we are gone, then hang up: the shepherd stays while
 * its commands run.
 */
void
shepherd_stop(double timeout)
{
	double		until = now_mono() + timeout;

	while (shepherd_pid != 0 && now_mono() < until)
	{
		struct pollfd pfd[2];
		int			n;
		bool		waiting = false;

		for (int i = 0; i < nallocs; i++)
			if (allocs[i].spawning)
				waiting = true;
		if (!waiting)
			break;
		n = shepherd_pollfds(pfd);
		(void) poll(pfd, n, 50);
		shepherd_pump();
	}
	if (req_fd >= 0)
		close(req_fd);
	req_fd = -1;
	reqlen = 0;
	shepherd_hung_up = true;
}

/*
 * Now, in the clock ticks since boot of /proc/PID/stat's start time
 * (CLOCK_BOOTTIME, which is what the kernel stamps a new process with).
 * Taken right after a start, it is at or after the process's start time,
 * and a later process reusing the pid starts after it: that tells them
 * apart without reading /proc for every start.
 */
static unsigned long long
boot_ticks_now(void)
{
	struct timespec ts;
	long		hz = sysconf(_SC_CLK_TCK);

	if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts) != 0)
		return 0;				/* 0: no pid-reuse check */
	return (unsigned long long) ts.tv_sec * hz +
		(unsigned long long) ts.tv_nsec / (1000000000ULL / hz);
}

/*
 * Begin the record of an allocation before anything runs (fail closed:
 * what cannot be recorded is not started).  ALLOC.pid is created empty
 * with O_EXCL, so an existing one (another shepherd's) is never taken
 * over; it stays locked until the record is complete, which tells a
 * restarted launcher that its creator is still at work; and its blocks are
 * reserved, so that neither the record nor the exit code appended later
 * can fail for want of space.  The descriptor, or -1 with errno (EEXIST:
 * someone else's).
 */
static int
record_begin(int64_t id)
{
	char		name[64];
	int			fd;

	snprintf(name, sizeof(name), "%lld.pid", (long long) id);
	fd = openat(state_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	(void) flock(fd, LOCK_EX | LOCK_NB);	/* a new file: cannot be taken */
	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 512) != 0 &&
		errno != EOPNOTSUPP && errno != ENOSYS)
	{
		int			save = errno;

		record_abort(fd, id);
		errno = save;
		return -1;
	}
	return fd;
}

/* Nothing was started: the empty record goes. */
static void
record_abort(int fd, int64_t id)
{
	char		name[64];

	snprintf(name, sizeof(name), "%lld.pid", (long long) id);
	unlinkat(state_fd, name, 0);
	close(fd);
}

/*
 * Complete ALLOC.pid: "PID TICKS JOB REPLICA BOOT_ID" for a restarted
 * launcher; the shepherd appends the exit code as a second line when the
 * command ends.  One write into the empty file: a reader sees nothing or
 * all of it.  On failure the file is removed (nothing partial is left) and
 * -1 returned with errno; the caller must then stop the command.
 */
static int
record_finish(int fd, const SpawnSpec *spec, pid_t pid)
{
	char		buf[256];
	int			len = snprintf(buf, sizeof(buf), "%d %llu %lld %d%s%s\n", (int) pid,
							   boot_ticks_now(), (long long) spec->job_id, spec->replica,
							   boot_id[0] ? " " : "", boot_id);
	ssize_t		w = write(fd, buf, len);

	if (w != len)
	{
		int			save = w < 0 ? errno : ENOSPC;

		record_abort(fd, spec->id);
		errno = save;
		return -1;
	}
	close(fd);					/* and with it the lock: the record is complete */
	return 0;
}

/* Wall-clock seconds since a file was last written. */
static double
file_age(int fd)
{
	struct stat st;
	struct timespec now;

	if (fstat(fd, &st) != 0 || clock_gettime(CLOCK_REALTIME, &now) != 0)
		return 0;
	return (now.tv_sec - st.st_mtim.tv_sec) + (now.tv_nsec - st.st_mtim.tv_nsec) / 1e9;
}

/*
 * An ALLOC.pid that is empty (or not fully written): a shepherd is between
 * creating and completing it, or died there.  RECORD_BUSY while its
 * creator may still complete it: it holds the file's lock, or the file is
 * a few seconds young (the creator locks it just after creating it).
 * RECORD_ADOPTED when it is complete by now (the caller reads it).  Else
 * the creator is gone without starting anything it recorded: with
 * remove_stale the file is removed, RECORD_NONE.
 */
static int
record_placeholder_state(int64_t id, bool remove_stale)
{
	char		name[64];
	char		buf[256];
	int			fd;
	ssize_t		n;
	double		age;

	snprintf(name, sizeof(name), "%lld.pid", (long long) id);
	fd = openat(state_fd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return RECORD_NONE;
	if (flock(fd, LOCK_SH | LOCK_NB) != 0)
	{
		close(fd);
		return RECORD_BUSY;
	}
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n > 0 && buf[n - 1] == '\n')
	{
		close(fd);
		return RECORD_ADOPTED;
	}
	age = file_age(fd);
	if ((age < 3.0 && age > -3.0) || !remove_stale)
	{
		close(fd);
		return RECORD_BUSY;
	}
	tl_log("stale", "alloc=%lld: removing the unfinished record %s/%s (its shepherd is gone; nothing was started from it)",
		   (long long) id, opt.state_dir, name);
	unlinkat(state_fd, name, 0);
	close(fd);
	return RECORD_NONE;
}

/*
 * Before starting an allocation the database assigns and this launcher
 * does not know: has a shepherd of an earlier launcher already started it
 * (it asked just before dying, the shepherd recorded it after we read the
 * state directory)?  Then adopt it instead of starting it twice.
 */
int
state_record_take(int64_t id, int64_t job_id, int replica, Alloc **adopted)
{
	char		name[64];
	char		buf[256];
	long long	pid = 0,
				job = 0;
	unsigned long long start = 0;
	int			rep = 0;
	bool		other_boot = false;
	Alloc	   *a;

	*adopted = NULL;
	snprintf(name, sizeof(name), "%lld.pid", (long long) id);
	if (read_state_file(name, buf, sizeof(buf)) != 0)
	{
		int			r = record_placeholder_state(id, true);

		if (r != RECORD_ADOPTED || read_state_file(name, buf, sizeof(buf)) != 0)
			return r == RECORD_ADOPTED ? RECORD_BUSY : r;
	}
	if (!parse_state_record(buf, &pid, &start, &job, &rep, &other_boot))
	{
		tl_log("warning", "alloc=%lld: removing unreadable state file %s/%s", (long long) id,
			   opt.state_dir, name);
		unlinkat(state_fd, name, 0);
		return RECORD_NONE;
	}
	a = alloc_add(id, job_id, replica);
	a->adopted = true;
	a->pid = (pid_t) pid;
	a->starttime = start;
	a->other_boot = other_boot;
	a->need_started = true;
	tl_log("adopt", "alloc=%lld job=%lld replica=%d pid=%lld (started by the shepherd of an earlier launcher)",
		   (long long) id, (long long) job_id, replica, pid);
	*adopted = a;
	return RECORD_ADOPTED;
}

/*
 * A record could not be written: start nothing more until the state
 * directory takes writes again (state_dir_can_start retries).
 */
static void
state_dir_failed(int err)
{
	if (!state_unwritable)
		tl_log("error", "state directory %s cannot be written (%s): starting no new work until it can (evictions and reports go on)",
			   opt.state_dir, strerror(err));
	state_unwritable = true;
}

/*
 * May new work start?  Not while the state directory refuses writes: each
 * start would fail (or run unrecorded).  Probed again at each claim: a
 * write of a block, then removed.
 */
bool
state_dir_can_start(void)
{
	int			fd;
	bool		ok;

	if (!state_unwritable)
		return true;
	fd = openat(state_fd, "write-probe", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return false;
	ok = fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 512) == 0 ||
		((errno == EOPNOTSUPP || errno == ENOSYS) && write(fd, "probe\n", 6) == 6);
	close(fd);
	unlinkat(state_fd, "write-probe", 0);
	if (ok)
	{
		state_unwritable = false;
		tl_log("state_dir", "state directory %s takes writes again: starting work again", opt.state_dir);
	}
	return ok;
}

/*
 * Record an exit code: appended to ALLOC.pid as its second line (one small
 * write to a file that exists: cheaper than creating another), or in
 * ALLOC.exit when there is no ALLOC.pid to append to.
 */
static void
record_exit(int64_t id, int code)
{
	char		name[64];
	char		buf[32];
	int			len = snprintf(buf, sizeof(buf), "%d\n", code);
	int			fd;

	snprintf(name, sizeof(name), "%lld.pid", (long long) id);
	fd = openat(state_fd, name, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd >= 0)
	{
		bool		ok = write(fd, buf, len) == len;

		close(fd);
		if (ok)
			return;
	}
	snprintf(name, sizeof(name), "%lld.exit", (long long) id);
	if (write_state_file(name, buf) != 0)
		tl_log("warning", "alloc=%lld cannot record its exit in %s: %s",
			   (long long) id, opt.state_dir, strerror(errno));
}

/*
 * The recorded exit code of an allocation, or -1 while there is none:
 * the second line of ALLOC.pid, or ALLOC.exit (written by launchers
 * before this one, and when appending failed).
 */
static int
read_exit_record(int64_t id)
{
	char		name[64];
	char		buf[320];
	char	   *nl;

	snprintf(name, sizeof(name), "%lld.pid", (long long) id);
	if (read_state_file(name, buf, sizeof(buf)) == 0 &&
		(nl = strchr(buf, '\n')) != NULL && nl[1] >= '0' && nl[1] <= '9')
		return atoi(nl + 1);
	snprintf(name, sizeof(name), "%lld.exit", (long long) id);
	if (read_state_file(name, buf, sizeof(buf)) == 0)
		return atoi(buf);
	return -1;
}

/*
 * Start one allocation.  With the shepherd: queue the request and return 0
 * (the pid comes with the answer, see shepherd_pump).  With --no-shepherd:
 * posix_spawn from here and return the pid (= process group).  -1: not
 * started, the next claim retries.
 */
pid_t
spawn_allocation(const SpawnSpec *spec)
{
	pid_t		pid;

	if (!opt.no_shepherd)
	{
		SpawnHeader h;
		size_t		lc = strlen(spec->command) + 1,
					lv = strlen(spec->cuda_visible_devices ? spec->cuda_visible_devices : "") + 1,
					lr = spec->role ? strlen(spec->role) + 1 : 0,
					lg = spec->gpu_milli ? strlen(spec->gpu_milli) + 1 : 0;

		if (shepherd_pid == 0 && !shepherd_start())
			return -1;
		memset(&h, 0, sizeof(h));
		h.id = spec->id;
		h.job_id = spec->job_id;
		h.replica = spec->replica;
		h.flags = (spec->role ? SPAWN_HAS_ROLE : 0) | (spec->gpu_milli ? SPAWN_HAS_GPU_MILLI : 0);
		h.len = (uint32_t) (lc + lv + lr + lg);
		buf_append(&reqbuf, &reqlen, &reqcap, &h, sizeof(h));
		buf_append(&reqbuf, &reqlen, &reqcap, spec->command, lc);
		buf_append(&reqbuf, &reqlen, &reqcap,
				   spec->cuda_visible_devices ? spec->cuda_visible_devices : "", lv);
		if (spec->role)
			buf_append(&reqbuf, &reqlen, &reqcap, spec->role, lr);
		if (spec->gpu_milli)
			buf_append(&reqbuf, &reqlen, &reqcap, spec->gpu_milli, lg);
		return 0;
	}

	/*
	 * The command straight from the launcher, recorded here so that a
	 * restarted launcher still adopts it; only its exit code is lost if it
	 * ends while no launcher runs.
	 */
	{
		int			rfd = record_begin(spec->id);

		if (rfd < 0)
		{
			/* not started: still assigned, the next claim retries */
			if (errno == EEXIST)
				sync_again_at = now_mono() + 0.2;
			else
				state_dir_failed(errno);
			return -1;
		}
		if (spawn_command(spec, &pid, true) != 0)
		{
			record_abort(rfd, spec->id);
			return -1;
		}
		if (record_finish(rfd, spec, pid) != 0)
		{
			state_dir_failed(errno);
			kill(-pid, SIGKILL);
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
			return -1;
		}
	}
	return pid;
}

/*
 * Record the end of an allocation's process.  kill_group: clean up what the
 * command left in its group (the shepherd did that already for its own,
 * before the pid could be reused).
 */
static void
allocation_ended(Alloc *a, int code, const char *how, bool kill_group)
{
	if (kill_group && a->pid > 1)
		kill(-a->pid, SIGKILL);
	a->ended = true;
	a->exit_code = code;
	a->need_final = true;
	tl_event(a->evicting ? "stopped" : "exited",
			 "alloc=%lld job=%lld replica=%d pid=%d exit_code=%d%s",
			 (long long) a->id, (long long) a->job_id, a->replica, (int) a->pid, code, how);
}

/*
 * Collect every ended child (SIGCHLD arrived): commands started with
 * --no-shepherd, the shepherd itself, and commands of a dead shepherd
 * (we are their subreaper), whose exit codes we then see here.
 */
void
reap_children(void)
{
	int			status;
	pid_t		pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
	{
		Alloc	   *a;
		int			code;

		if (shepherd_reaped(pid, status))
			continue;
		a = alloc_find_pid(pid);
		if (a == NULL)
			continue;
		if (WIFEXITED(status))
			code = WEXITSTATUS(status);
		else if (WIFSIGNALED(status))
			code = 128 + WTERMSIG(status);
		else
			continue;
		allocation_ended(a, code, a->adopted ? " (adopted)" : "", true);
	}
}

/*
 * Adopted work is not our child: look at /proc and its files.  True while
 * it still runs (as ours).
 */
static bool
check_one_adopted(Alloc *a)
{
	{
		char		state;
		int			code;

		if (!a->adopted || a->ended)
			return !a->ended;
		state = adopted_state(a);

		/*
		 * Read the exit file only after looking at the process: a shepherd
		 * writes it before it reaps the command (and an old-style
		 * per-allocation shepherd before it exits), so a process that is
		 * gone always left its record.
		 */
		if ((code = read_exit_record(a->id)) >= 0)
			allocation_ended(a, code, " (adopted)", false);
		else if (state == 'Z' && a->zombie_since == 0)
			a->zombie_since = now_mono();	/* its shepherd is about to write it */
		else if (state == PROC_NOT_OURS)
		{
			/*
			 * Its pid now names another process (reused, or a record of
			 * an earlier boot): ours ended long ago.  That process and
			 * its group are someone else's: no signal.
			 */
			tl_log("lost", "alloc=%lld job=%lld pid=%d: it ended without an exit record (%s); reporting exit code %d",
				   (long long) a->id, (long long) a->job_id, (int) a->pid,
				   a->other_boot ? "recorded before the last reboot" : "its pid now belongs to another process",
				   TL_EXIT_LOST);
			allocation_ended(a, TL_EXIT_LOST, " (lost)", false);
		}
		else if (state == PROC_GONE || (state == 'Z' && now_mono() > a->zombie_since + 5.0))
		{
			/*
			 * Gone, or a zombie that nobody records (its shepherd died).
			 * Kill what is left of its process group: with no process of
			 * that pid, a group of that id can only still exist if a
			 * member of our command's group lives (the kernel does not
			 * hand out a pid while it names a live group), and a zombie
			 * of ours holds its pid; so only our command's leftovers are
			 * hit.
			 */
			tl_log("lost", "alloc=%lld job=%lld pid=%d: it ended without an exit record; reporting exit code %d",
				   (long long) a->id, (long long) a->job_id, (int) a->pid, TL_EXIT_LOST);
			allocation_ended(a, TL_EXIT_LOST, " (lost)", true);
		}
	}
	return !a->ended;
}

void
check_adopted(void)
{
	for (int i = 0; i < nallocs; i++)
		if (allocs[i].adopted && !allocs[i].ended)
			(void) check_one_adopted(&allocs[i]);
}

bool
have_adopted_running(void)
{
	for (int i = 0; i < nallocs; i++)
		if (allocs[i].adopted && !allocs[i].ended)
			return true;
	return false;
}

/* An eviction: SIGTERM to the group now, SIGKILL at the deadline. */
void
stop_allocation(Alloc *a)
{
	if (a->evicting)
		return;
	a->evicting = true;
	a->need_started = false;	/* the database has moved on */
	if (a->spawning)
	{
		/* the shepherd is starting it: stopped as soon as its pid is known */
		tl_event("evict", "alloc=%lld job=%lld replica=%d (being started; stopped once it is)",
				 (long long) a->id, (long long) a->job_id, a->replica);
		return;
	}
	if (a->ended || a->pid <= 1)
	{
		a->ended = true;
		a->need_final = true;
		tl_event("evict", "alloc=%lld job=%lld replica=%d (not running here)",
				 (long long) a->id, (long long) a->job_id, a->replica);
		return;
	}
	/* adopted work is looked at first: its pid may no longer be ours */
	if (a->adopted && !check_one_adopted(a))
	{
		tl_event("evict", "alloc=%lld job=%lld replica=%d (had already ended)",
				 (long long) a->id, (long long) a->job_id, a->replica);
		return;
	}
	a->kill_at = now_mono() + opt.grace_period;
	evict_signal(a);
	tl_event("evict", "alloc=%lld job=%lld replica=%d pgid=%d signal=TERM grace=%gs",
			 (long long) a->id, (long long) a->job_id, a->replica, (int) a->pid,
			 opt.grace_period);
}

/* SIGKILL whatever ignored its SIGTERM for a whole grace period. */
void
check_kill_deadlines(double now)
{
	bool		pumped = false;

	for (int i = 0; i < nallocs; i++)
	{
		Alloc	   *a = &allocs[i];

		if (!a->evicting || a->ended || a->killed || a->pid <= 1 || now < a->kill_at ||
			a->shepherd_kills)
			continue;

		/*
		 * Not to a pid that has been reaped meanwhile: take the shepherd's
		 * pending answers first, look at adopted work again.
		 */
		if (!pumped)
		{
			pumped = true;
			shepherd_pump();
			i = -1;
			continue;
		}
		if (a->adopted && !check_one_adopted(a))
			continue;
		a->killed = true;
		kill(-a->pid, SIGKILL);
		tl_event("kill", "alloc=%lld job=%lld pgid=%d signal=KILL (grace period over)",
				 (long long) a->id, (long long) a->job_id, (int) a->pid);
	}
}

double
earliest_kill_deadline(void)
{
	double		t = 1e18;

	for (int i = 0; i < nallocs; i++)
	{
		Alloc	   *a = &allocs[i];

		if (a->evicting && !a->ended && !a->killed && a->pid > 1 && a->kill_at < t &&
			!a->shepherd_kills)
			t = a->kill_at;
	}
	return t;
}
