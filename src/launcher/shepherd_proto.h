/*
 * shepherd_proto.h: what the launcher (shepherd.c) and its shepherd
 * (shepherd_main.c) say to each other over their two pipes.
 *
 * Launcher -> shepherd: a SpawnHeader, then its strings (command,
 * CUDA_VISIBLE_DEVICES, then role, gpu_milli, env, workdir, array id and
 * array index when present, in that order), each NUL-terminated.  Shepherd -> launcher: fixed-size ShepherdReply records.
 * One writer and one reader per pipe, so a record is never interleaved.
 */
#ifndef TIDE_LAUNCHER_SHEPHERD_PROTO_H
#define TIDE_LAUNCHER_SHEPHERD_PROTO_H

#include "util.h"

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
#define SPAWN_HAS_ENV		8
#define SPAWN_HAS_WORKDIR	16
#define SPAWN_HAS_ARRAY		32	/* array id, then array index */
#define SPAWN_SIGNAL		64	/* not a start: send signal pad to the group of
								 * pid (in replica), if that is still its
								 * command (the warning before a time limit) */

typedef struct ShepherdReply
{
	int64_t		id;
	int32_t		kind;			/* REPLY_* */
	int32_t		value;			/* pid, errno or exit code */
	int64_t		at_ns;			/* REPLY_EXITED: when the command ended
								 * (CLOCK_MONOTONIC, ns) */
	int64_t		unused;			/* 32 bytes: a divisor of the pipe's pages,
								 * so records are never split */
} ShepherdReply;

#define REPLY_SPAWNED	1
#define REPLY_FAILED	2		/* /bin/sh could not be started (value: errno) */
#define REPLY_EXITED	3
#define REPLY_NOT_RECORDED 4	/* the state directory refused it: not run */
#define REPLY_TAKEN		5		/* ALLOC.pid exists: another shepherd's */
#define REPLY_FAILED_OUTPUT 6	/* its --output-dir file could not be opened
								 * (value: errno): not run */
#define REPLY_FAILED_WORKDIR 7	/* its workdir could not be entered (value:
								 * errno): not run */

/* The shepherd's life (shepherd_main.c); never returns. */
void		shepherd_serve(int in, int out, pid_t launcher) __attribute__((noreturn));

#endif							/* TIDE_LAUNCHER_SHEPHERD_PROTO_H */
