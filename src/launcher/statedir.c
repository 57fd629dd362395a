/*
 * statedir.c: the state directory (see statedir.h), a record store.
 *
 * Records are written without a temporary name and a rename (that would
 * take the directory lock twice per allocation, the launcher's bottleneck
 * at thousands of starts a second): readers take an empty or partial file
 * for "not written yet", and a failed write removes the file, so nothing
 * half-written stays behind.  ALLOC.pid is created empty, locked and with
 * its blocks reserved before its command starts (what cannot be recorded
 * does not run), completed after the start, and gets the exit code
 * appended; ALLOC.exit files, which earlier launchers wrote, are still
 * read.
 */
#include "statedir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int	state_fd = -1;		/* the state directory, O_CLOEXEC */
static int	lock_fd = -1;		/* flock: one launcher per node and directory */
static char state_path[4096];
static char boot_id[40];		/* /proc/sys/kernel/random/boot_id, "" if unknown */
static bool state_unwritable;	/* a record could not be written: start nothing */

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
statedir_open(void)
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

/* The directory's descriptor (the shepherd keeps it, not the lock). */
int
statedir_fd(void)
{
	return state_fd;
}

/* Write a small state file; on failure it is removed (see the top). */
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
 * ALLOC.exit; statedir_list() removes such leftovers.)
 */
void
statedir_forget(int64_t id, bool also_exit)
{
	char		name[64];

	if (also_exit)
	{
		snprintf(name, sizeof(name), "%lld.exit", (long long) id);
		unlinkat(state_fd, name, 0);
	}
	snprintf(name, sizeof(name), "%lld.warned", (long long) id);
	unlinkat(state_fd, name, 0);
	snprintf(name, sizeof(name), "%lld.pid", (long long) id);
	unlinkat(state_fd, name, 0);
	snprintf(name, sizeof(name), "%lld.token", (long long) id);
	unlinkat(state_fd, name, 0);
}

/*
 * Parse the first line of ALLOC.pid: "PID TICKS JOB REPLICA [BOOT_ID]".
 * A record of another boot (the state directory outlived a reboot) names
 * a pid that is now someone else's: other_boot says so.  Records without
 * a boot id (older launchers) count as this boot's.
 */
static bool
parse_state_record(const char *buf, int64_t id, StateRecord *rec)
{
	char		boot[40] = "";
	char		line[256];
	size_t		n = strcspn(buf, "\n");
	long long	pid,
				job;

	/* the first line only: the second (the exit code) is not a boot id */
	if (n >= sizeof(line))
		n = sizeof(line) - 1;
	memcpy(line, buf, n);
	line[n] = '\0';
	memset(rec, 0, sizeof(*rec));
	if (sscanf(line, "%lld %llu %lld %d %39s", &pid, &rec->starttime, &job, &rec->replica, boot) < 4 ||
		pid <= 1)
		return false;
	rec->id = id;
	rec->pid = (pid_t) pid;
	rec->job_id = job;
	rec->other_boot = boot[0] != '\0' && boot_id[0] != '\0' && strcmp(boot, boot_id) != 0;
	return true;
}

/* The complete record of an allocation, if there is one. */
bool
statedir_read(int64_t id, StateRecord *rec)
{
	char		name[64];
	char		buf[256];

	snprintf(name, sizeof(name), "%lld.pid", (long long) id);
	return read_state_file(name, buf, sizeof(buf)) == 0 && parse_state_record(buf, id, rec);
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
 * RECORD_FOUND when it is complete by now (the caller reads it).  Else
 * the creator is gone without starting anything it recorded: the file is
 * removed, RECORD_NONE.
 */
static int
record_placeholder_state(int64_t id)
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
		return RECORD_FOUND;
	}
	age = file_age(fd);
	if (age < 3.0 && age > -3.0)
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
 * Every complete record the directory holds, for the launcher to adopt
 * (*recs, malloc'ed; the count is returned).  Leftovers go on the way:
 * temporary files and exit files of reported allocations of earlier
 * launchers, and empty records whose shepherd is gone.  Empty records
 * still being written are left to statedir_take.
 */
int
statedir_list(StateRecord **recs)
{
	DIR		   *d;
	struct dirent *de;
	int			dfd = dup(state_fd);
	int			n = 0;

	*recs = NULL;
	if (dfd < 0 || (d = fdopendir(dfd)) == NULL)
	{
		tl_log("error", "cannot list state directory %s: %s", opt.state_dir, strerror(errno));
		if (dfd >= 0)
			close(dfd);
		return 0;
	}
	while ((de = readdir(d)) != NULL)
	{
		char	   *end;
		long long	id = strtoll(de->d_name, &end, 10);
		char		buf[256];
		StateRecord rec;

		if (end == de->d_name || id <= 0)
			continue;
		if (strcmp(end, ".pid.tmp") == 0 || strcmp(end, ".exit.tmp") == 0)
		{
			unlinkat(state_fd, de->d_name, 0);
			continue;
		}
		if (strcmp(end, ".exit") == 0 || strcmp(end, ".warned") == 0)
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
		if (read_state_file(de->d_name, buf, sizeof(buf)) != 0)
		{
			/*
			 * Empty: a shepherd is starting it (or died doing so).  The
			 * claim decides when the allocation comes (statedir_take);
			 * here only a stale one is removed.
			 */
			(void) record_placeholder_state(id);
			continue;
		}
		if (!parse_state_record(buf, id, &rec))
		{
			tl_log("warning", "ignoring unreadable state file %s/%s", opt.state_dir, de->d_name);
			continue;
		}
		if (n % 64 == 0)
			*recs = tl_realloc(*recs, (n + 64) * sizeof(StateRecord));
		(*recs)[n++] = rec;
	}
	closedir(d);
	return n;
}

/*
 * Before starting an allocation the database assigns and this launcher
 * does not know: has a shepherd of an earlier launcher already started it
 * (it asked just before dying, the shepherd recorded it after we read the
 * state directory)?  RECORD_FOUND with its record: adopt it instead of
 * starting it twice.  An unreadable record is removed (RECORD_NONE).
 */
int
statedir_take(int64_t id, StateRecord *rec)
{
	char		name[64];
	char		buf[256];

	snprintf(name, sizeof(name), "%lld.pid", (long long) id);
	if (read_state_file(name, buf, sizeof(buf)) != 0)
	{
		int			r = record_placeholder_state(id);

		if (r != RECORD_FOUND || read_state_file(name, buf, sizeof(buf)) != 0)
			return r == RECORD_FOUND ? RECORD_BUSY : r;
	}
	if (!parse_state_record(buf, id, rec))
	{
		tl_log("warning", "alloc=%lld: removing unreadable state file %s/%s", (long long) id,
			   opt.state_dir, name);
		unlinkat(state_fd, name, 0);
		return RECORD_NONE;
	}
	return RECORD_FOUND;
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
int
statedir_record_begin(int64_t id)
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

		statedir_record_abort(fd, id);
		errno = save;
		return -1;
	}
	return fd;
}

/* Nothing was started: the empty record goes. */
void
statedir_record_abort(int fd, int64_t id)
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
int
statedir_record_finish(int fd, int64_t id, int64_t job_id, int replica, pid_t pid)
{
	char		buf[256];
	int			len = snprintf(buf, sizeof(buf), "%d %llu %lld %d%s%s\n", (int) pid,
							   boot_ticks_now(), (long long) job_id, replica,
							   boot_id[0] ? " " : "", boot_id);
	ssize_t		w = write(fd, buf, len);

	if (w != len)
	{
		int			save = w < 0 ? errno : ENOSPC;

		statedir_record_abort(fd, id);
		errno = save;
		return -1;
	}
	close(fd);					/* and with it the lock: the record is complete */
	return 0;
}

/*
 * Record an exit code and when it happened (CLOCK_MONOTONIC seconds, the
 * same clock in every process of this boot: a later launcher can tell how
 * long ago it was, R-T6): "CODE AT", appended to ALLOC.pid as its second
 * line (one small write to a file that exists: cheaper than creating
 * another), or in ALLOC.exit when there is no ALLOC.pid to append to.
 */
void
statedir_record_exit(int64_t id, int code, double at)
{
	char		name[64];
	char		buf[64];
	int			len = snprintf(buf, sizeof(buf), "%d %.6f\n", code, at);
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

/* "CODE [AT]": the code, and *at when the line has it (else 0). */
static int
parse_exit_line(const char *line, double *at)
{
	char	   *end;
	int			code = (int) strtol(line, &end, 10);

	*at = 0;
	if (*end == ' ')
		*at = strtod(end + 1, NULL);
	return code;
}

/*
 * The recorded exit code of an allocation, or -1 while there is none:
 * the second line of ALLOC.pid, or ALLOC.exit (written by launchers
 * before this one, and when appending failed).  *at: when it exited
 * (monotonic seconds), 0 when not recorded (earlier launchers).
 */
int
statedir_read_exit(int64_t id, double *at)
{
	char		name[64];
	char		buf[320];
	char	   *nl;

	*at = 0;
	snprintf(name, sizeof(name), "%lld.pid", (long long) id);
	if (read_state_file(name, buf, sizeof(buf)) == 0 &&
		(nl = strchr(buf, '\n')) != NULL && nl[1] >= '0' && nl[1] <= '9')
		return parse_exit_line(nl + 1, at);
	snprintf(name, sizeof(name), "%lld.exit", (long long) id);
	if (read_state_file(name, buf, sizeof(buf)) == 0)
		return parse_exit_line(buf, at);
	return -1;
}

/*
 * The warning before the time limit was sent (R-T2): ALLOC.warned, so
 * that a later launcher that adopts the work does not send it again.
 */
void
statedir_record_warned(int64_t id)
{
	char		name[64];

	snprintf(name, sizeof(name), "%lld.warned", (long long) id);
	if (write_state_file(name, "1\n") != 0)
		tl_log("warning", "alloc=%lld cannot record its warning in %s: %s (a later launcher may warn it again)",
			   (long long) id, opt.state_dir, strerror(errno));
}

/*
 * R-C7: the allocation's token, written before its command is started, so
 * that a launcher that adopts the work names it as the database does.
 * -1 (errno set) when it cannot be written: nothing is started then.
 */
int
statedir_record_token(int64_t id, const char *token)
{
	char		name[64];
	char		line[64];

	if (token == NULL || token[0] == '\0')
		return 0;
	snprintf(name, sizeof(name), "%lld.token", (long long) id);
	snprintf(line, sizeof(line), "%s\n", token);
	return write_state_file(name, line);
}

/* The recorded token of an allocation; false (buf "") when there is none. */
bool
statedir_read_token(int64_t id, char *buf, size_t size)
{
	char		name[64];
	char		line[64];

	buf[0] = '\0';
	snprintf(name, sizeof(name), "%lld.token", (long long) id);
	if (read_state_file(name, line, sizeof(line)) != 0)
		return false;
	line[strcspn(line, "\n")] = '\0';
	snprintf(buf, size, "%s", line);
	return buf[0] != '\0';
}

/* Was the warning sent (by this launcher or an earlier one)? */
bool
statedir_warned(int64_t id)
{
	char		name[64];
	struct stat st;

	snprintf(name, sizeof(name), "%lld.warned", (long long) id);
	return fstatat(state_fd, name, &st, 0) == 0;
}

/*
 * A record could not be written: start nothing more until the state
 * directory takes writes again (statedir_can_start retries).
 */
void
statedir_failed(int err)
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
statedir_can_start(void)
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
