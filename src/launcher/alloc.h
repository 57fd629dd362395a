/*
 * alloc.h: the table of allocations this launcher knows about, from the
 * moment one is claimed (or adopted from the state directory) until its
 * last report is accepted, and the one state each is in.
 *
 * An allocation's life, as AllocState (alloc_set_state() refuses any
 * other change, like pg_cron's task states):
 *
 *   SPAWNING ----------> RUNNING ----------> EXITED  (report tide.exited)
 *      |                    |                  |
 *      v                    v                  v
 *   SPAWNING_EVICTED --> EVICTING --> KILLED --> STOPPED (report tide.evicted)
 *
 *   SPAWNING          asked the shepherd to start it, no answer yet
 *   SPAWNING_EVICTED  the same, and evicted meanwhile: stopped once started
 *   RUNNING           its process runs (pid = its process group)
 *   EVICTING          SIGTERM sent; SIGKILL at kill_at
 *   KILLED            SIGKILL sent by the launcher
 *   EXITED            the process ended on its own (exit_code)
 *   STOPPED           the process ended (or never ran) after an eviction
 *
 * plus the arrows from SPAWNING to EXITED (the start failed), from
 * SPAWNING_EVICTED and RUNNING to STOPPED (evicted when it had already
 * ended without our knowing), from EVICTING to STOPPED, and from EVICTING
 * to EXITED (its process turned out to have ended on its own before the
 * stop was asked for: the exit is reported, R-T6).  An EXITED allocation
 * that the database then asks to stop stays EXITED: its exit, with the
 * time it happened, is what the database hears (R-T6).  A new allocation enters
 * in SPAWNING, RUNNING (adopted, or started without a shepherd), EXITED
 * (no command) or STOPPED (evicted, never ran here); it leaves the table
 * once its final report is accepted.
 *
 * Besides its state: whether tide.started is still owed to the database
 * (started_owed), how the process is watched (adopted: not our child, so
 * through /proc and the state directory; other_boot), and who holds the
 * SIGKILL deadline of an eviction (shepherd_kills).
 */
#ifndef TIDE_LAUNCHER_ALLOC_H
#define TIDE_LAUNCHER_ALLOC_H

#include "util.h"

typedef enum AllocState
{
	AS_SPAWNING,
	AS_SPAWNING_EVICTED,
	AS_RUNNING,
	AS_EVICTING,
	AS_KILLED,
	AS_EXITED,
	AS_STOPPED
} AllocState;

/* The warning before a job's time limit (R-T2). */
typedef enum WarnState
{
	WARN_NONE,					/* none: the job has no warn_before or limit */
	WARN_ASK,					/* it has one: ask the database when (the job
								 * has not started, or adopted work) */
	WARN_DUE,					/* due at warn_at */
	WARN_SENT					/* sent (once; also recorded in the state
								 * directory) */
} WarnState;

typedef struct Alloc
{
	int64_t		id;
	int64_t		job_id;
	int			replica;
	AllocState	state;
	char		token[40];		/* tide.allocations.token, the name no
								 * failover hands out twice (R-C7); "":
								 * not known (a record of an older
								 * launcher) */
	pid_t		pid;			/* the command (/bin/sh) = its process group;
								 * 0: none (yet) */
	unsigned long long starttime;	/* of an adopted process (/proc) */
	char	   *cvd;			/* CUDA_VISIBLE_DEVICES: the GPUs it holds
								 * while its process lives (the GPU fence,
								 * R-C8); NULL: not known (adopted work
								 * until tide.reconcile answers) */
	int			gpu_milli;		/* its share of the one GPU in cvd, in
								 * thousandths; 0: whole GPUs */
	double		zombie_since;	/* adopted: first seen ended, not reaped */
	double		kill_at;		/* monotonic deadline for SIGKILL */
	double		grace;			/* the job's grace_period in seconds; < 0:
								 * the launcher's --grace-period (R-T3) */
	double		stop_at;		/* monotonic time the stop was asked, 0: none */
	double		exited_at;		/* monotonic time its process ended, 0:
								 * unknown (R-T6: reported as how long ago) */
	WarnState	warn;
	double		warn_at;		/* WARN_DUE: monotonic time of the warning */
	int			exit_code;		/* EXITED, STOPPED */
	char	   *reason;			/* EXITED without running: the launcher's
								 * reason, reported with the exit (malloc'd) */
	bool		started_owed;	/* tide.started not yet accepted */
	bool		adopted;		/* not our child: watched through /proc and
								 * the state directory */
	bool		other_boot;		/* adopted record of an earlier boot */
	bool		shepherd_kills; /* the shepherd carries out its eviction */
} Alloc;

/* The table (read it in place; alloc_add and alloc_remove move entries). */
extern Alloc *allocs;
extern int	nallocs;

Alloc	   *alloc_find(int64_t id);
Alloc	   *alloc_find_pid(pid_t pid);
Alloc	   *alloc_add(int64_t id, int64_t job_id, int replica, AllocState state);
void		alloc_remove(Alloc *a);

bool		alloc_set_state(Alloc *a, AllocState to);
const char *alloc_state_name(AllocState s);
double		alloc_grace(const Alloc *a);

/* The process ended (EXITED or STOPPED): only the final report is left. */
static inline bool
alloc_ended(const Alloc *a)
{
	return a->state == AS_EXITED || a->state == AS_STOPPED;
}

/* The shepherd has not answered its start yet. */
static inline bool
alloc_spawning(const Alloc *a)
{
	return a->state == AS_SPAWNING || a->state == AS_SPAWNING_EVICTED;
}

/* The database asked to stop it (claim_evictions, or it was released). */
static inline bool
alloc_evicting(const Alloc *a)
{
	return a->state == AS_SPAWNING_EVICTED || a->state == AS_EVICTING ||
		a->state == AS_KILLED || a->state == AS_STOPPED;
}

#endif							/* TIDE_LAUNCHER_ALLOC_H */
