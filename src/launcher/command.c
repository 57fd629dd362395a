/*
 * command.c: start one allocation's command, /bin/sh -c COMMAND, the
 * leader of its own process group, with CUDA_VISIBLE_DEVICES and the
 * TIDE_* variables of docs/launcher.md ("What a command sees").
 */
#include "command.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/*
 * Start /bin/sh -c COMMAND with posix_spawn (no copy of our address space:
 * this is half the cost of a start), default signal handling, stdout and
 * stderr in the output file when asked, and the allocation's environment.
 * The launcher's database password is not the job's business.
 */
int
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
