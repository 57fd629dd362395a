/*
 * statedir.h: the state directory, a store of one record per allocation
 * started on this node (ALLOC.pid: "PID TICKS JOB REPLICA BOOT_ID", then
 * "CODE SECONDS" as a second line once the command ended: its exit code
 * and the monotonic time it ended; ALLOC.warned once the warning before
 * its time limit was sent; ALLOC.token, the allocation's token, written
 * before the start, R-C7).  It lets a
 * restarted launcher adopt what an earlier one started.  It knows files
 * only: no allocation table, no processes.
 */
#ifndef TIDE_LAUNCHER_STATEDIR_H
#define TIDE_LAUNCHER_STATEDIR_H

#include "util.h"

/* A complete record. */
typedef struct StateRecord
{
	int64_t		id;
	pid_t		pid;
	unsigned long long starttime;	/* boot-time clock ticks after the start */
	int64_t		job_id;
	int			replica;
	bool		other_boot;		/* written before the last reboot */
} StateRecord;

/* statedir_take(): what the directory says of an allocation */
#define RECORD_NONE		0		/* nothing: start it */
#define RECORD_BUSY		1		/* a shepherd is starting it: ask again soon */
#define RECORD_FOUND	2		/* started by an earlier shepherd: *rec */

int			statedir_open(void);
int			statedir_fd(void);
int			statedir_list(StateRecord **recs);
int			statedir_take(int64_t id, StateRecord *rec);
bool		statedir_read(int64_t id, StateRecord *rec);
int			statedir_read_exit(int64_t id, double *at);
void		statedir_record_warned(int64_t id);
int			statedir_record_token(int64_t id, const char *token);
bool		statedir_read_token(int64_t id, char *buf, size_t size);
bool		statedir_warned(int64_t id);
void		statedir_forget(int64_t id, bool also_exit);

int			statedir_record_begin(int64_t id);
int			statedir_record_finish(int fd, int64_t id, int64_t job_id, int replica, pid_t pid);
void		statedir_record_abort(int fd, int64_t id);
void		statedir_record_exit(int64_t id, int code, double at);

void		statedir_failed(int err);
bool		statedir_can_start(void);

#endif							/* TIDE_LAUNCHER_STATEDIR_H */
