/*
 * work.h: the life of the work on this node: start (through the shepherd,
 * or straight with --no-shepherd), adopt (from the state directory), stop
 * (evictions: SIGTERM, SIGKILL at the deadline), reap, watch adopted
 * processes.  It moves allocations through their states (alloc.h); what
 * the database must hear follows from those states (report.c).
 */
#ifndef TIDE_LAUNCHER_WORK_H
#define TIDE_LAUNCHER_WORK_H

#include "alloc.h"
#include "command.h"

struct pollfd;

void		work_adopt_all(void);
int			work_take_record(int64_t id, int64_t job_id, int replica, Alloc **adopted);
pid_t		work_spawn(const SpawnSpec *spec);
void		work_stop(Alloc *a);
void		work_no_command(int64_t id, int64_t job_id, int replica);
void		work_pump(void);
int			work_pollfds(struct pollfd *pfd);
void		work_reap(void);
void		work_check_adopted(void);
bool		work_have_adopted_running(void);
void		work_check_kill_deadlines(double now);
double		work_earliest_kill_deadline(void);
void		work_check_warnings(double now);
double		work_next_warning(void);
void		work_stop_shepherd(double timeout);

/* A start had to wait (a record being written): claim again soon. */
void		work_claim_soon(void);
double		work_claim_again_at(void);
void		work_claim_again_clear(void);

#endif							/* TIDE_LAUNCHER_WORK_H */
