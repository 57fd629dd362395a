/*
 * command.h: starting one allocation's command (/bin/sh -c COMMAND) with
 * its environment; used by the shepherd and, with --no-shepherd, by the
 * launcher itself.  And the launcher's own reasons when it cannot start
 * one (reported to the database with the exit code, see docs/launcher.md).
 */
#ifndef TIDE_LAUNCHER_COMMAND_H
#define TIDE_LAUNCHER_COMMAND_H

#include "util.h"

typedef struct SpawnSpec
{
	int64_t		id;
	int64_t		job_id;
	int			replica;
	const char *command;
	const char *cuda_visible_devices;
	const char *role;
	const char *gpu_milli;		/* NULL when not fractional */
	const char *env;			/* the job's env as the claim sends it:
								 * NAME=HEX pairs (the value's UTF-8 bytes
								 * in hex) separated by spaces; NULL: none */
	const char *workdir;		/* NULL: the launcher's own directory */
	const char *array_id;		/* NULL when not an array member */
	const char *array_index;
} SpawnSpec;

/* What failed when spawn_command() could not start a command. */
typedef enum SpawnFailure
{
	SPAWN_FAILED_SHELL,			/* posix_spawn of /bin/sh */
	SPAWN_FAILED_OUTPUT,		/* opening the --output-dir file */
	SPAWN_FAILED_WORKDIR		/* entering the job's workdir */
} SpawnFailure;

/* Longest reason the launcher sends (the database keeps 500 characters). */
#define TL_REASON_MAX 512

int			spawn_command(const SpawnSpec *spec, pid_t *pid, bool own_group,
						  SpawnFailure *failure);
void		spawn_failure_reason(SpawnFailure failure, int err, int64_t id, int64_t job_id,
								 int replica, const char *workdir, char *why, size_t len);
int			command_check(const char *command, const char *workdir, char *why, size_t len);
char	  **job_environ(const SpawnSpec *spec, char *const *base);
void		free_environ(char **envp);

#endif							/* TIDE_LAUNCHER_COMMAND_H */
