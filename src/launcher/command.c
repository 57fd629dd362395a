/*
 * command.c: start one allocation's command, /bin/sh -c COMMAND, the
 * leader of its own process group, with CUDA_VISIBLE_DEVICES and the
 * TIDE_* variables of docs/launcher.md ("What a command sees"); and say
 * why, when the launcher cannot: the program the command names is not
 * there or not executable (command_check, before the start), or the start
 * itself failed (spawn_failure_reason).
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
		"TIDE_ROLE=", "TIDE_NODE=", "TIDE_GPU_MILLI=", "PGPASSWORD=", NULL
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

/*
 * Start /bin/sh -c COMMAND with posix_spawn (no copy of our address space:
 * this is half the cost of a start), default signal handling, stdout and
 * stderr in the output file when asked, and the allocation's environment.
 * The launcher's database password is not the job's business.  The output
 * file is opened here, before the start, so that a failure says which
 * step failed (*failure): the file, or /bin/sh.  0, or an errno.
 */
int
spawn_command(const SpawnSpec *spec, pid_t *pid, bool own_group, SpawnFailure *failure)
{
	extern char **environ;
	char	  **envp;
	int			n = 0,
				k = 0,
				rc;
	int			out = -1;
	char		vars[7][256];	/* TIDE_NODE: names of up to 200 bytes */
	posix_spawnattr_t attr;
	posix_spawn_file_actions_t fa;
	sigset_t	all,
				none;
	char		path[PATH_MAX];
	char	   *argv[] = {"sh", "-c", (char *) spec->command, NULL};

	*failure = SPAWN_FAILED_SHELL;
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
	while (environ[n])
		n++;
	envp = malloc((n + 8) * sizeof(char *));
	if (envp == NULL)
	{
		if (out >= 0)
			close(out);
		return ENOMEM;
	}
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
			if (out >= 0)
				close(out);
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
	if (out >= 0)
	{
		/* dup2 clears close-on-exec on the copies */
		posix_spawn_file_actions_adddup2(&fa, out, STDOUT_FILENO);
		posix_spawn_file_actions_adddup2(&fa, out, STDERR_FILENO);
	}
	rc = posix_spawn(pid, "/bin/sh", &fa, &attr, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	free(envp[k - 1]);
	free(envp);
	if (out >= 0)
		close(out);
	if (rc != 0)
		tl_log("error", "alloc=%lld cannot start /bin/sh: %s", (long long) spec->id, strerror(rc));
	return rc;
}

/* The reason reported for a start that spawn_command() refused. */
void
spawn_failure_reason(SpawnFailure failure, int err, int64_t id, int64_t job_id, int replica,
					 char *why, size_t len)
{
	char		path[PATH_MAX];

	if (failure == SPAWN_FAILED_OUTPUT && opt.output_dir)
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
 * Before a start: can the program that COMMAND names first be run?  Only a
 * plain first word is looked at (letters, digits and _./+-,:@%, followed
 * by a blank, ; & | < > or the end); anything else (a keyword or builtin,
 * an assignment, quotes, expansions) is left to sh, as is a program that
 * is there.  0: start it.  Else the exit code sh would give (127: not
 * found, 126: not executable) and the reason in why: the launcher then
 * reports it without starting anything.
 */
int
command_check(const char *command, char *why, size_t len)
{
	char		word[PATH_MAX];
	size_t		n;
	const char *p = command + strspn(command, " \t\n");
	const char *path;
	bool		seen = false;

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

		if (stat(word, &st) != 0)
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
		if (access(word, X_OK) != 0)
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
		char		file[PATH_MAX];
		int			dlen = (int) (end - path);
		int			st;

		/* an empty entry is the current directory */
		if (snprintf(file, sizeof(file), "%.*s%s%s", dlen, path, dlen ? "/" : "./", word) <
			(int) sizeof(file))
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
