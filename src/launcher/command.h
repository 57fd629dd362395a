/*
 * command.h: starting one allocation's command (/bin/sh -c COMMAND) with
 * its environment; used by the shepherd and, with --no-shepherd, by the
 * launcher itself.
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

int			spawn_command(const SpawnSpec *spec, pid_t *pid, bool own_group);

#endif							/* TIDE_LAUNCHER_COMMAND_H */
