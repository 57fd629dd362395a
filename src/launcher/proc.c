/*
 * proc.c: how tide-launcher runs work, stops it, and never loses its exit.
 *
 * Each allocation runs under a small "shepherd": a forked copy of the
 * launcher that makes itself a process-group leader, records itself in the
 * state directory (ALLOC.pid), forks /bin/sh -c COMMAND in that group,
 * waits for it, writes the exit code to ALLOC.exit and exits with it.
 * The launcher reaps its shepherds with waitpid() on SIGCHLD; when the
 * launcher itself was stopped or killed, the shepherds keep running, and
 * the next launcher for the node adopts them from the state directory and
 * reads their exit files.  The process group (= the shepherd's pid) is
 * what evictions signal: SIGTERM, then SIGKILL after the grace period.
 * The shepherd ignores nothing and survives SIGTERM only to record the
 * command's exit; once an allocation ends, whatever is left in its group
 * is killed so that no stray process keeps a GPU that is given to others.
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
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int	state_fd = -1;		/* the state directory, O_CLOEXEC */
static int	lock_fd = -1;		/* flock: one launcher per node and directory */
static char state_path[4096];

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
 * "not written yet" instead.
 */
static int
write_state_file(const char *name, const char *content)
{
	int			fd;
	size_t		len = strlen(content);

	fd = openat(state_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (write(fd, content, len) != (ssize_t) len)
	{
		close(fd);
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

/* The final report was accepted: the allocation leaves the directory. */
void
forget_allocation_files(int64_t id)
{
	char		name[64];

	/* exit first: a .pid without .exit reads as "lost", never the reverse */
	snprintf(name, sizeof(name), "%lld.exit", (long long) id);
	unlinkat(state_fd, name, 0);
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

/* Is this adopted shepherd still the same live process? */
static bool
shepherd_alive(const Alloc *a)
{
	char		state = '?';
	unsigned long long st = proc_starttime(a->pid, &state);

	if (st == 0)
	{
		/* no /proc entry: gone, unless /proc is not mounted at all */
		if (access("/proc/self/stat", R_OK) != 0)
			return kill(a->pid, 0) == 0 || errno == EPERM;
		return false;
	}
	if (a->starttime != 0 && st != a->starttime)
		return false;			/* the pid was reused */
	return state != 'Z' && state != 'X';
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
		if (read_state_file(de->d_name, buf, sizeof(buf)) != 0 ||
			sscanf(buf, "%lld %llu %lld %d", &pid, &start, &job, &replica) != 4 ||
			pid <= 1)
		{
			tl_log("warning", "ignoring unreadable state file %s/%s", opt.state_dir, de->d_name);
			continue;
		}
		if (alloc_find(id))
			continue;
		a = alloc_add(id, job, replica);
		a->adopted = true;
		a->pid = (pid_t) pid;
		a->starttime = start;
		tl_log("adopt", "alloc=%lld job=%lld replica=%d pid=%lld (started by an earlier launcher)",
			   id, job, replica, pid);
	}
	closedir(d);
	check_adopted();
}

/* ---- running work ---- */

static void
noop_handler(int sig)
{
	(void) sig;
}

/* Close every inherited descriptor above stderr except the state directory. */
void
close_inherited_fds(void)
{
	if (state_fd > 3)
		close_range(3, state_fd - 1, 0);
	close_range(state_fd + 1, ~0U, 0);
}

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
	char		vars[7][128];
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

/* The shepherd: own process group, record, run, wait, record the exit. */
static void
shepherd_main(const SpawnSpec *spec)
{
	struct sigaction sa;
	char		name[64];
	char		buf[256];
	pid_t		child;
	int			code;
	int			fd;

	setpgid(0, 0);
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGCHLD, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGPIPE, &sa, NULL);
	/* survive the group's SIGTERM long enough to record the command's exit */
	sa.sa_handler = noop_handler;
	sigaction(SIGTERM, &sa, NULL);

	close_inherited_fds();
	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0 && fd != STDIN_FILENO)
	{
		dup2(fd, STDIN_FILENO);
		close(fd);
	}

	snprintf(name, sizeof(name), "%lld.pid", (long long) spec->id);
	snprintf(buf, sizeof(buf), "%d %llu %lld %d\n", (int) getpid(),
			 proc_starttime(getpid(), NULL), (long long) spec->job_id, spec->replica);
	if (write_state_file(name, buf) != 0)
		tl_log("warning", "alloc=%lld cannot record itself in %s: %s",
			   (long long) spec->id, opt.state_dir, strerror(errno));

	if (spawn_command(spec, &child, false) != 0)
		code = TL_EXIT_CANNOT_START;
	else
	{
		int			status;

		while (waitpid(child, &status, 0) < 0)
		{
			if (errno != EINTR)
			{
				status = TL_EXIT_LOST << 8;
				break;
			}
		}
		if (WIFEXITED(status))
			code = WEXITSTATUS(status);
		else if (WIFSIGNALED(status))
			code = 128 + WTERMSIG(status);
		else
			code = TL_EXIT_LOST;
	}
	snprintf(name, sizeof(name), "%lld.exit", (long long) spec->id);
	snprintf(buf, sizeof(buf), "%d\n", code);
	write_state_file(name, buf);
	_exit(code & 0xff);
}

/* Start one allocation under a shepherd; its pid (= process group) or -1. */
pid_t
spawn_allocation(const SpawnSpec *spec)
{
	pid_t		pid;

	if (opt.no_shepherd)
	{
		/*
		 * The command straight from the launcher (posix_spawn: no copy of
		 * our address space), recorded here so that a restarted launcher
		 * still adopts it; only its exit code is lost if it ends while no
		 * launcher runs.
		 */
		char		name[64];
		char		buf[256];
		int			rc = spawn_command(spec, &pid, true);

		if (rc != 0)
			return -1;
		snprintf(name, sizeof(name), "%lld.pid", (long long) spec->id);
		snprintf(buf, sizeof(buf), "%d %llu %lld %d\n", (int) pid,
				 proc_starttime(pid, NULL), (long long) spec->job_id, spec->replica);
		if (write_state_file(name, buf) != 0)
			tl_log("warning", "alloc=%lld cannot record itself in %s: %s",
				   (long long) spec->id, opt.state_dir, strerror(errno));
		return pid;
	}

	fflush(NULL);
	pid = fork();
	if (pid < 0)
	{
		tl_log("error", "alloc=%lld job=%lld cannot fork: %s (will retry)",
			   (long long) spec->id, (long long) spec->job_id, strerror(errno));
		return -1;
	}
	if (pid == 0)
		shepherd_main(spec);
	/* also from the parent, so the group exists before anyone signals it */
	if (setpgid(pid, pid) != 0 && errno != EACCES && errno != ESRCH)
		tl_log("warning", "alloc=%lld setpgid: %s", (long long) spec->id, strerror(errno));
	return pid;
}

/* Record the end of an allocation's process and clean up its group. */
static void
allocation_ended(Alloc *a, int code, const char *how)
{
	/* anything the command left behind in its group goes with it */
	if (a->pid > 1)
		kill(-a->pid, SIGKILL);
	a->ended = true;
	a->exit_code = code;
	a->need_final = true;
	tl_event(a->evicting ? "stopped" : "exited",
			 "alloc=%lld job=%lld replica=%d pid=%d exit_code=%d%s",
			 (long long) a->id, (long long) a->job_id, a->replica, (int) a->pid, code, how);
}

/* Collect every exited shepherd (SIGCHLD arrived). */
void
reap_children(void)
{
	int			status;
	pid_t		pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
	{
		Alloc	   *a = alloc_find_pid(pid);
		int			code;

		if (a == NULL || a->adopted)
			continue;
		if (WIFEXITED(status))
			code = WEXITSTATUS(status);
		else if (WIFSIGNALED(status))
			code = 128 + WTERMSIG(status);
		else
			continue;
		allocation_ended(a, code, "");
	}
}

/* Adopted shepherds are not our children: look at /proc and their files. */
void
check_adopted(void)
{
	for (int i = 0; i < nallocs; i++)
	{
		Alloc	   *a = &allocs[i];
		char		name[64];
		char		buf[64];
		bool		alive;

		if (!a->adopted || a->ended)
			continue;
		alive = shepherd_alive(a);
		/* read the exit file only after seeing the shepherd gone */
		snprintf(name, sizeof(name), "%lld.exit", (long long) a->id);
		if (read_state_file(name, buf, sizeof(buf)) == 0)
			allocation_ended(a, atoi(buf), " (adopted)");
		else if (!alive)
		{
			tl_log("lost", "alloc=%lld job=%lld pid=%d: its shepherd is gone without an exit record; reporting exit code %d",
				   (long long) a->id, (long long) a->job_id, (int) a->pid, TL_EXIT_LOST);
			allocation_ended(a, TL_EXIT_LOST, " (lost)");
		}
	}
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
	if (a->ended || a->pid <= 1)
	{
		a->ended = true;
		a->need_final = true;
		tl_event("evict", "alloc=%lld job=%lld replica=%d (not running here)",
				 (long long) a->id, (long long) a->job_id, a->replica);
		return;
	}
	a->kill_at = now_mono() + opt.grace_period;
	if (kill(-a->pid, SIGTERM) != 0 && errno != ESRCH)
		tl_log("warning", "alloc=%lld kill(-%d, SIGTERM): %s",
			   (long long) a->id, (int) a->pid, strerror(errno));
	tl_event("evict", "alloc=%lld job=%lld replica=%d pgid=%d signal=TERM grace=%gs",
			 (long long) a->id, (long long) a->job_id, a->replica, (int) a->pid,
			 opt.grace_period);
}

/* SIGKILL whatever ignored its SIGTERM for a whole grace period. */
void
check_kill_deadlines(double now)
{
	for (int i = 0; i < nallocs; i++)
	{
		Alloc	   *a = &allocs[i];

		if (!a->evicting || a->ended || a->killed || now < a->kill_at)
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

		if (a->evicting && !a->ended && !a->killed && a->kill_at < t)
			t = a->kill_at;
	}
	return t;
}
