/*
 * launcher.h: shared declarations of tide-launcher, the reference launcher
 * of pg_tide (one process per node; see docs/launcher.md).
 *
 * The launcher is plain C with libpq.  main.c owns the options and the event
 * loop, db.c talks to the database (claims and batched reports), proc.c runs
 * the work (the shepherd process that starts commands and records their
 * exits, process groups, the state directory that lets a restarted
 * launcher adopt what an earlier one started).
 */
#ifndef TIDE_LAUNCHER_H
#define TIDE_LAUNCHER_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>

struct pollfd;

/* Exit code reported for a job that has no command (like sh's "not found"). */
#define TL_EXIT_NO_COMMAND	127
/* Exit code reported when the work could not be started at all. */
#define TL_EXIT_CANNOT_START 126
/* Exit code reported for work whose shepherd vanished without a trace. */
#define TL_EXIT_LOST		137

/* Options, from the command line (main.c). */
typedef struct LauncherOptions
{
	const char *node;
	const char *dsn;			/* NULL: libpq's PG* variables */
	double		poll_interval;	/* seconds between fallback claims */
	double		heartbeat_interval;
	double		grace_period;	/* SIGTERM to SIGKILL */
	double		max_backoff;	/* reconnect backoff ceiling */
	const char *state_dir;
	const char *output_dir;		/* NULL: children inherit stdout/stderr */
	bool		quiet;			/* no per-allocation event lines */
	bool		verbose;		/* also a line per round trip (timings) */
	bool		no_shepherd;	/* spawn commands directly, from the launcher
								 * (no faster on two cores; see docs) */
} LauncherOptions;

extern LauncherOptions opt;

/*
 * One allocation this launcher knows about: from the moment it is claimed
 * (or adopted from the state directory) until its last report is accepted.
 */
typedef struct Alloc
{
	int64_t		id;
	int64_t		job_id;
	int			replica;
	pid_t		pid;			/* the command (/bin/sh) = its process group;
								 * 0: none (yet) */
	unsigned long long starttime;	/* of an adopted process (/proc) */
	char	   *cvd;			/* CUDA_VISIBLE_DEVICES, for the started line */
	double		zombie_since;	/* adopted: first seen ended, not reaped */
	bool		spawning;		/* asked the shepherd, no answer yet */
	bool		adopted;		/* not our child: watched through /proc and
								 * the state directory */
	bool		evicting;		/* asked to stop (claim_evictions) */
	bool		killed;			/* SIGKILL sent */
	double		kill_at;		/* monotonic deadline for SIGKILL */
	bool		ended;			/* process gone; exit_code valid */
	int			exit_code;
	bool		need_started;	/* tide.started not yet accepted */
	bool		need_final;		/* tide.exited / tide.evicted pending */
	bool		in_db_assigned; /* seen in the last claim */
	bool		other_boot;		/* adopted record of an earlier boot */
	bool		shepherd_kills; /* the shepherd carries out its eviction */
} Alloc;

/* Set by the SIGCHLD handler (main.c). */
extern volatile sig_atomic_t got_child;
/* Claim again at this monotonic time (a start had to wait); 1e18: none. */
extern double sync_again_at;
/* True in the shepherd process: out of memory there is _exit, not exit. */
extern bool tl_in_shepherd;

/* The table of known allocations (main.c). */
extern Alloc *allocs;
extern int	nallocs;

Alloc	   *alloc_find(int64_t id);
Alloc	   *alloc_find_pid(pid_t pid);
Alloc	   *alloc_add(int64_t id, int64_t job_id, int replica);
void		alloc_remove(Alloc *a);

/* util */
double		now_mono(void);
void		tl_log(const char *event, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));
void		tl_event(const char *event, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));
void	   *tl_realloc(void *p, size_t n);

/* proc.c */
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

int			state_dir_open(void);
void		state_dir_adopt(void);
bool		state_dir_can_start(void);

/* state_record_take(): what the state directory says of an allocation */
#define RECORD_NONE		0		/* nothing: start it */
#define RECORD_BUSY		1		/* a shepherd is starting it: ask again soon */
#define RECORD_ADOPTED	2		/* started by an earlier shepherd: now adopted */
int			state_record_take(int64_t id, int64_t job_id, int replica, Alloc **adopted);
pid_t		spawn_allocation(const SpawnSpec *spec);
void		reap_children(void);
bool		shepherd_start(void);
void		shepherd_pump(void);
int			shepherd_pollfds(struct pollfd *pfd);
void		shepherd_stop(double timeout);
void		check_adopted(void);
void		stop_allocation(Alloc *a);
void		check_kill_deadlines(double now);
void		forget_allocation_files(int64_t id, bool also_exit);
bool		have_adopted_running(void);
double		earliest_kill_deadline(void);

/* db.c */
bool		db_connected(void);
int			db_socket(void);
bool		db_connect(bool first);
void		db_disconnect(const char *why);
bool		db_sync(void);
bool		db_heartbeat(void);
bool		db_flush_reports(bool force);
double		db_report_due(void);
bool		db_consume_input(void);

#endif							/* TIDE_LAUNCHER_H */
