/*
 * command.c: start one allocation's command, /bin/sh -c COMMAND, the
 * leader of its own process group, in the job's workdir, with the job's
 * env, CUDA_VISIBLE_DEVICES and the TIDE_* variables of docs/launcher.md
 * ("What a command sees"); and say why, when the launcher cannot: the
 * workdir is missing or cannot be entered, or the program the command
 * names is not there or not executable (command_check, before the
 * start), or the start itself failed (spawn_failure_reason).
 */
#include "command.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Is this environment entry one the launcher sets (or removes) itself? */
static bool
env_is_ours(const char *entry)
{
	static const char *const names[] = {
		"CUDA_VISIBLE_DEVICES=", "TIDE_JOB_ID=", "TIDE_ALLOCATION_ID=", "TIDE_REPLICA=",
		"TIDE_ROLE=", "TIDE_NODE=", "TIDE_GPU_MILLI=", "TIDE_ARRAY_ID=", "TIDE_ARRAY_INDEX=",
		"PGPASSWORD=", NULL
	};

	for (int i = 0; names[i]; i++)
		if (strncmp(entry, names[i], strlen(names[i])) == 0)
			return true;
	return false;
}

/* The output file of an allocation in --output-dir. */
static void
output_path(char *path, size_t len, int64_t id, int64_t job_id, int replica)
{
	snprintf(path, len, "%s/job-%lld-%d-%lld.log", opt.output_dir,
			 (long long) job_id, replica, (long long) id);
}

/* The value of a hex digit, or -1. */
static int
hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * One pair of the claim's env text, NAME=HEX (at p, n bytes), as the
 * entry NAME=VALUE; NULL when it is malformed (the database sends none).
 */
static char *
env_entry(const char *p, size_t n)
{
	const char *eq = memchr(p, '=', n);
	size_t		name,
				hex;
	char	   *e;

	if (eq == NULL || eq == p)
		return NULL;
	name = (size_t) (eq - p);
	hex = n - name - 1;
	if (hex % 2 != 0 || (e = malloc(name + 1 + hex / 2 + 1)) == NULL)
		return NULL;
	memcpy(e, p, name + 1);
	for (size_t i = 0; i < hex / 2; i++)
	{
		int			hi = hex_value(eq[1 + 2 * i]),
					lo = hex_value(eq[2 + 2 * i]);

		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
		{
			free(e);
			return NULL;
		}
		e[name + 1 + i] = (char) (hi * 16 + lo);
	}
	e[name + 1 + hex / 2] = '\0';
	return e;
}

/* Does entry (NAME=...) set one of the names of the job's env entries? */
static bool
env_overridden(const char *entry, char **job, int njob)
{
	size_t		n = strcspn(entry, "=");

	for (int i = 0; i < njob; i++)
		if (strncmp(job[i], entry, n) == 0 && job[i][n] == '=')
			return true;
	return false;
}

/*
 * The environment of a command: the launcher's own (base) without its
 * database password and without what the launcher sets itself, the job's
 * env over it (a name the job sets replaces the inherited one), then
 * TIDE_JOB_ID, TIDE_ALLOCATION_ID, TIDE_REPLICA, TIDE_ROLE, TIDE_NODE,
 * TIDE_GPU_MILLI (fractional), TIDE_ARRAY_ID and TIDE_ARRAY_INDEX (array
 * members) and CUDA_VISIBLE_DEVICES, which nothing overrides.  Every
 * string is the array's own (free_environ).  NULL when out of memory.
 */
char	  **
job_environ(const SpawnSpec *spec, char *const *base)
{
	int			nbase = 0,
				njob = 0,
				k = 0;
	char	  **job;
	char	  **envp;
	const char *p;
	size_t		cvd_len = strlen(spec->cuda_visible_devices ? spec->cuda_visible_devices : "");

	while (base[nbase])
		nbase++;
	for (p = spec->env ? spec->env + strspn(spec->env, " ") : ""; *p; p += strspn(p, " "))
	{
		p += strcspn(p, " ");
		njob++;
	}
	envp = calloc(nbase + njob + 10, sizeof(char *));
	job = calloc(njob + 1, sizeof(char *));
	if (envp == NULL || job == NULL)
	{
		free(envp);
		free(job);
		return NULL;
	}
	njob = 0;
	for (p = spec->env ? spec->env + strspn(spec->env, " ") : ""; *p; p += strspn(p, " "))
	{
		size_t		n = strcspn(p, " ");

		if ((job[njob] = env_entry(p, n)) != NULL)
			njob++;
		else
			tl_log("error", "alloc=%lld job=%lld: an env entry the launcher cannot read (%.40s); left out",
				   (long long) spec->id, (long long) spec->job_id, p);
		p += n;
	}
	for (int i = 0; i < nbase; i++)
		if (!env_is_ours(base[i]) && !env_overridden(base[i], job, njob))
			envp[k++] = strdup(base[i]);
	/* the job's entries, in the claim's (name) order; envp owns them now */
	for (int i = 0; i < njob; i++)
		envp[k++] = job[i];
	free(job);
#define ADD(...) \
	do { \
		char	   *v_ = malloc(cvd_len + 512); \
		if (v_) snprintf(v_, cvd_len + 512, __VA_ARGS__); \
		envp[k++] = v_; \
	} while (0)
	ADD("TIDE_JOB_ID=%lld", (long long) spec->job_id);
	ADD("TIDE_ALLOCATION_ID=%lld", (long long) spec->id);
	ADD("TIDE_REPLICA=%d", spec->replica);
	ADD("TIDE_ROLE=%s", spec->role ? spec->role : "main");
	ADD("TIDE_NODE=%s", opt.node ? opt.node : "");
	if (spec->gpu_milli)
		ADD("TIDE_GPU_MILLI=%s", spec->gpu_milli);
	if (spec->array_id && spec->array_index)
	{
		ADD("TIDE_ARRAY_ID=%s", spec->array_id);
		ADD("TIDE_ARRAY_INDEX=%s", spec->array_index);
	}
	ADD("CUDA_VISIBLE_DEVICES=%s", spec->cuda_visible_devices ? spec->cuda_visible_devices : "");
#undef ADD
	envp[k] = NULL;
	for (int i = 0; i < k; i++)
		if (envp[i] == NULL)
		{
			/* out of memory on the way: drop what was made */
			for (int j = i + 1; j < k; j++)
				free(envp[j]);
			free_environ(envp);
			return NULL;
		}
	return envp;
}

/* Free what job_environ() made. */
void
free_environ(char **envp)
{
	if (envp == NULL)
		return;
	for (int i = 0; envp[i]; i++)
		free(envp[i]);
	free(envp);
}

/*
 * Start /bin/sh -c COMMAND with posix_spawn (no copy of our address space:
 * this is half the cost of a start), default signal handling, stdout and
 * stderr in the output file when asked, in the job's workdir, with the
 * allocation's environment (job_environ).  The launcher's database
 * password is not the job's business.  The output file and the workdir
 * are checked here, before the start, so that a failure says which step
 * failed (*failure): the file, the directory, or /bin/sh.  0, or an errno.
 */
int
spawn_command(const SpawnSpec *spec, pid_t *pid, bool own_group, SpawnFailure *failure)
{
	extern char **environ;
	char	  **envp;
	int			rc;
	int			out = -1;
	posix_spawnattr_t attr;
	posix_spawn_file_actions_t fa;
	sigset_t	all,
				none;
	char		path[PATH_MAX];
	char	   *argv[] = {"sh", "-c", (char *) spec->command, NULL};

	*failure = SPAWN_FAILED_SHELL;
	if (spec->workdir)
	{
		struct stat st;

		rc = 0;
		if (stat(spec->workdir, &st) != 0)
			rc = errno;
		else if (!S_ISDIR(st.st_mode))
			rc = ENOTDIR;
		else if (access(spec->workdir, X_OK) != 0)
			rc = errno;
		if (rc != 0)
		{
			*failure = SPAWN_FAILED_WORKDIR;
			tl_log("error", "alloc=%lld cannot enter its workdir %s: %s",
				   (long long) spec->id, spec->workdir, strerror(rc));
			return rc;
		}
	}
	if (opt.output_dir)
	{
		output_path(path, sizeof(path), spec->id, spec->job_id, spec->replica);
		out = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (out < 0)
		{
			rc = errno;
			*failure = SPAWN_FAILED_OUTPUT;
			tl_log("error", "alloc=%lld cannot open its output file %s: %s",
				   (long long) spec->id, path, strerror(rc));
			return rc;
		}
	}
	envp = job_environ(spec, environ);
	if (envp == NULL)
	{
		if (out >= 0)
			close(out);
		return ENOMEM;
	}

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
	if (out >= 0)
	{
		/* dup2 clears close-on-exec on the copies */
		posix_spawn_file_actions_adddup2(&fa, out, STDOUT_FILENO);
		posix_spawn_file_actions_adddup2(&fa, out, STDERR_FILENO);
	}
	if (spec->workdir)
		posix_spawn_file_actions_addchdir_np(&fa, spec->workdir);
	rc = posix_spawn(pid, "/bin/sh", &fa, &attr, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	free_environ(envp);
	if (out >= 0)
		close(out);
	if (rc != 0)
		tl_log("error", "alloc=%lld cannot start /bin/sh: %s", (long long) spec->id, strerror(rc));
	return rc;
}

/* The reason reported for a start that spawn_command() refused. */
void
spawn_failure_reason(SpawnFailure failure, int err, int64_t id, int64_t job_id, int replica,
					 const char *workdir, char *why, size_t len)
{
	char		path[PATH_MAX];

	if (failure == SPAWN_FAILED_WORKDIR)
		snprintf(why, len, "cannot enter workdir%s%s: %s", workdir ? " " : "", workdir ? workdir : "",
				 strerror(err));
	else if (failure == SPAWN_FAILED_OUTPUT && opt.output_dir)
	{
		output_path(path, sizeof(path), id, job_id, replica);
		snprintf(why, len, "cannot open output file %s: %s", path, strerror(err));
	}
	else
		snprintf(why, len, "cannot start /bin/sh: %s", strerror(err));
}

/*
 * Words that sh runs itself (keywords and builtins of POSIX sh, dash and
 * bash): a command starting with one is not looked up in PATH.
 */
static const char *const shell_words[] = {
	"!", "{", "}", "case", "do", "done", "elif", "else", "esac", "fi", "for", "function",
	"if", "in", "select", "then", "time", "until", "while", "coproc",
	".", ":", "alias", "bg", "break", "builtin", "caller", "cd", "command", "compgen",
	"complete", "continue", "declare", "dirs", "disown", "echo", "enable", "eval", "exec",
	"exit", "export", "false", "fc", "fg", "getopts", "hash", "help", "history", "jobs",
	"kill", "let", "local", "logout", "mapfile", "popd", "printf", "pushd", "pwd", "read",
	"readarray", "readonly", "return", "set", "shift", "shopt", "source", "suspend",
	"test", "times", "trap", "true", "type", "typeset", "ulimit", "umask", "unalias",
	"unset", "wait", NULL
};

/* What sh searches when PATH is not set (dash's and glibc's default). */
#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/*
 * Programs found in PATH lately: a burst of starts of one command looks its
 * program up once a second (a PATH search costs tens of microseconds, and
 * the launcher starts a thousand commands a second).  Only what was found
 * is kept: a program removed meanwhile fails in sh, with sh's own 127.
 * Forgotten when PATH changes.
 */
#define FOUND_MEMO 16
static struct
{
	char		word[256];
	double		until;
}			found_memo[FOUND_MEMO];
static char *found_path;
static int	found_next;

static bool
found_lately(const char *word, const char *path)
{
	double		now = now_mono();

	if (found_path == NULL || strcmp(found_path, path) != 0)
	{
		free(found_path);
		found_path = strdup(path);
		memset(found_memo, 0, sizeof(found_memo));
		return false;
	}
	for (int i = 0; i < FOUND_MEMO; i++)
		if (found_memo[i].until > now && strcmp(found_memo[i].word, word) == 0)
			return true;
	return false;
}

static void
found_now(const char *word)
{
	if (strlen(word) >= sizeof(found_memo[0].word))
		return;
	strcpy(found_memo[found_next].word, word);
	found_memo[found_next].until = now_mono() + 1.0;
	found_next = (found_next + 1) % FOUND_MEMO;
}

/* Is file there (not a directory), and executable?  1, 0: not executable, -1: absent. */
static int
file_state(const char *file)
{
	struct stat st;

	if (stat(file, &st) != 0 || S_ISDIR(st.st_mode))
		return -1;
	return access(file, X_OK) == 0 ? 1 : 0;
}

/*
 * file as the command sees it: a relative path is relative to workdir
 * (when the job has one).  False when the result is too long.
 */
static bool
in_workdir(char *out, size_t size, const char *workdir, const char *file)
{
	if (workdir == NULL || file[0] == '/')
		return snprintf(out, size, "%s", file) < (int) size;
	return snprintf(out, size, "%s/%s", workdir, file) < (int) size;
}

/*
 * Before a start: can the command start in workdir (NULL: ours), and can
 * the program that COMMAND names first be run there?  A workdir that is
 * not there, is no directory, or cannot be entered fails the start.  Only
 * a plain first word is looked at (letters, digits and _./+-,:@%, followed
 * by a blank, ; & | < > or the end); anything else (a keyword or builtin,
 * an assignment, quotes, expansions) is left to sh, as is a program that
 * is there.  0: start it.  Else the exit code sh would give (127: not
 * found, 126: not executable or no workdir) and the reason in why: the
 * launcher then reports it without starting anything.
 */
int
command_check(const char *command, const char *workdir, char *why, size_t len)
{
	char		word[PATH_MAX];
	size_t		n;
	const char *p = command + strspn(command, " \t\n");
	const char *path;
	bool		seen = false;
	char		file[PATH_MAX];

	if (workdir)
	{
		struct stat st;

		if (stat(workdir, &st) != 0)
		{
			if (errno == ENOENT || errno == ENOTDIR)
				snprintf(why, len, "workdir %s does not exist", workdir);
			else
				snprintf(why, len, "cannot enter workdir %s: %s", workdir, strerror(errno));
			return TL_EXIT_CANNOT_START;
		}
		if (!S_ISDIR(st.st_mode))
		{
			snprintf(why, len, "workdir %s is not a directory", workdir);
			return TL_EXIT_CANNOT_START;
		}
		if (access(workdir, X_OK) != 0)
		{
			snprintf(why, len, "cannot enter workdir %s: %s", workdir, strerror(errno));
			return TL_EXIT_CANNOT_START;
		}
	}
	n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./+-,:@%");
	if (n == 0 || n >= sizeof(word) || (p[n] != '\0' && strchr(" \t\n;&|<>", p[n]) == NULL))
		return 0;
	memcpy(word, p, n);
	word[n] = '\0';
	for (int i = 0; shell_words[i]; i++)
		if (strcmp(word, shell_words[i]) == 0)
			return 0;

	if (strchr(word, '/'))
	{
		struct stat st;

		if (!in_workdir(file, sizeof(file), workdir, word))
			return 0;			/* sh will say */
		if (stat(file, &st) != 0)
		{
			if (errno != ENOENT && errno != ENOTDIR)
				return 0;		/* sh will say */
			snprintf(why, len, "command \"%s\" not found", word);
			return TL_EXIT_NOT_FOUND;
		}
		if (S_ISDIR(st.st_mode))
		{
			snprintf(why, len, "command \"%s\" is a directory", word);
			return TL_EXIT_CANNOT_START;
		}
		if (access(file, X_OK) != 0)
		{
			snprintf(why, len, "command \"%s\" is not executable: %s", word, strerror(errno));
			return TL_EXIT_CANNOT_START;
		}
		return 0;
	}

	path = getenv("PATH");
	if (path == NULL)
		path = DEFAULT_PATH;
	if (found_lately(word, path))
		return 0;
	for (;;)
	{
		const char *end = strchrnul(path, ':');
		char		entry[PATH_MAX];
		int			dlen = (int) (end - path);
		int			st;

		/* an empty entry is the current directory (the workdir) */
		if (snprintf(entry, sizeof(entry), "%.*s%s%s", dlen, path, dlen ? "/" : "./", word) <
			(int) sizeof(entry) && in_workdir(file, sizeof(file), workdir, entry))
		{
			st = file_state(file);
			if (st == 1)
			{
				found_now(word);
				return 0;
			}
			seen = seen || st == 0;
		}
		if (*end == '\0')
			break;
		path = end + 1;
	}
	if (seen)
	{
		snprintf(why, len, "command \"%s\" is not executable (found in PATH without execute permission)", word);
		return TL_EXIT_CANNOT_START;
	}
	snprintf(why, len, "command \"%s\" not found", word);
	return TL_EXIT_NOT_FOUND;
}
