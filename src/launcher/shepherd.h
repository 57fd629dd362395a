/*
 * shepherd.h: the launcher's side of its shepherd (shepherd_main.c): start
 * it, ask it to start or evict commands, and read what it answers as
 * events.  It knows the pipes and the process, not the allocations: the
 * caller (work.c) applies the events to its table.
 */
#ifndef TIDE_LAUNCHER_SHEPHERD_H
#define TIDE_LAUNCHER_SHEPHERD_H

#include "command.h"

struct pollfd;

/* What the shepherd told us (kinds: REPLY_* of shepherd_proto.h, or:) */
#define SHEPHERD_LOST	100		/* it died; why says how */

typedef struct ShepherdEvent
{
	int64_t		id;
	int			kind;
	int			value;			/* pid, errno or exit code */
	double		at;				/* REPLY_EXITED: when (monotonic seconds) */
	const char *why;			/* SHEPHERD_LOST */
} ShepherdEvent;

bool		shepherd_start(void);
bool		shepherd_running(void);
bool		shepherd_request_spawn(const SpawnSpec *spec);
bool		shepherd_request_evict(int64_t id, int64_t job_id, pid_t pid, double grace);
bool		shepherd_request_signal(int64_t id, pid_t pid, int sig);
int			shepherd_pump(ShepherdEvent **events);
int			shepherd_pollfds(struct pollfd *pfd);
bool		shepherd_reaped(pid_t pid, int status);
void		shepherd_hangup(void);

#endif							/* TIDE_LAUNCHER_SHEPHERD_H */
