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
} SpawnSpec;

/* What failed when spawn_command() could not start a command. */
typedef enum SpawnFailure
{
	SPAWN_FAILED_SHELL,			/* posix_spawn of /bin/sh */
	SPAWN_FAILED_OUTPUT			/* opening the --output-dir file */
} SpawnFailure;

/* Longest reason the launcher sends (the database keeps 500 characters). */
#define TL_REASON_MAX 512

int			spawn_command(const SpawnSpec *spec, pid_t *pid, bool own_group,
						  SpawnFailure *failure);
void		spawn_failure_reason(SpawnFailure failure, int err, int64_t id, int64_t job_id,
								 int replica, char *why, size_t len);
int			command_check(const char *command, char *why, size_t len);

#endif							/* TIDE_LAUNCHER_COMMAND_H */
