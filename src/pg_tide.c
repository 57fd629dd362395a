/*
 * pg_tide.c: module entry point.
 *
 * The SQL-callable functions live beside the concept they serve
 * (resvec.c, gpumask.c, cycle.c, ...); this file only marks the library
 * as a PostgreSQL module and defines its settings.
 *
 * The library may be loaded at server start (shared_preload_libraries, as
 * docs/deployment.md advises) or on first use in each backend.  Preloaded,
 * _PG_init runs once in the postmaster: it only defines settings (no
 * shared memory, no background worker, no hook), so both ways behave alike,
 * except that PostgreSQL 15's ALTER SYSTEM refuses a setting whose library
 * the session has not loaded.
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "settings.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

int			tide_reason_updates_per_cycle = 1000;
int			tide_cycle_lock_timeout = 100;
/*
 * Five minutes, like Slurm's SlurmdTimeout and Kubernetes' eviction of
 * pods from an unreachable node: a launcher restart, a host reboot or a
 * short network cut must not trip it, since a lost node's work is placed
 * again elsewhere while its copies may still run (fenced only when the
 * node returns).
 */
int			tide_node_timeout = 300;
int			tide_frag_shapes_jobs = 1000;
int			tide_frag_shapes_refresh = 60;
/*
 * Ten minutes, what Kueue's waitForPodsReady waits by default: long enough
 * for a large image to be pulled, short enough that a gang with one stuck
 * replica does not hold the others' GPUs for the rest of the day.
 */
int			tide_start_timeout = 600;
int			tide_start_attempts = 3;
/*
 * 0: queues of equal priority are ordered by their usage now, as before
 * R-O6, until simulations on real traces show which half-life serves
 * fairness without hurting waits (Slurm defaults to 7 days).
 */
int			tide_fair_share_half_life = 0;
int			tide_eviction_restart_cost = 300;
bool		tide_incremental_load = true;
bool		tide_check_incremental_load = false;

/* read by SQL only (tide._create_retries, 26_rollup.sql), through current_setting */
static int	tide_retry_backoff = 10;
static int	tide_retry_backoff_max = 600;

static bool tide_preloaded = false;

/* bounded history's settings (80_history_partitions.sql reads them) */
static char *tide_history_retention = NULL;
static char *tide_history_detach = NULL;
static char *tide_archive_after = NULL;
static char *tide_archive_batch = NULL;
static char *tide_history_premake = NULL;

static void define_history_settings(void);

PG_FUNCTION_INFO_V1(tide_preloaded_sql);

void
_PG_init(void)
{
	/*
	 * In shared_preload_libraries: this runs in the postmaster, and every
	 * backend inherits the flag (loaded later, by a backend, it stays false).
	 */
	tide_preloaded = process_shared_preload_libraries_in_progress;

	/* R-C3: a node whose launcher is silent this long is marked down by the cycle */
	DefineCustomIntVariable("tide.node_timeout",
							"Heartbeat age after which tide.run_cycle() marks a node down.",
							"Its allocations are released as lost and their jobs retried or "
							"handled per on_evict. 0 turns the check off. A node that sent no "
							"heartbeat since it was registered or last changed state is timed "
							"out from that time.",
							&tide_node_timeout,
							300, 0, 86400 * 365,
							PGC_SUSET, GUC_UNIT_S,
							NULL, NULL, NULL);

	/* R-T4: a placement not running this long after it was made is released */
	DefineCustomIntVariable("tide.start_timeout",
							"How long a placed job may take until all its replicas are running.",
							"After this tide.run_cycle() releases all its allocations and puts it "
							"back to pending; after tide.start_attempts such timeouts the job "
							"fails. 0 turns the check off.",
							&tide_start_timeout,
							600, 0, 86400 * 365,
							PGC_SUSET, GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("tide.start_attempts",
							"Start timeouts after which a job fails instead of waiting again.",
							"The job ends failed, naming the timeout, and is not retried.",
							&tide_start_attempts,
							3, 1, 1000,
							PGC_SUSET, 0,
							NULL, NULL, NULL);

	/*
	 * R-C2 asks for a reason on every job a cycle leaves pending, but a
	 * rewritten job row costs as much as an allocation: bound the rows one
	 * cycle rewrites, so that a fresh backlog does not slow down placement.
	 */
	DefineCustomIntVariable("tide.reason_updates_per_cycle",
							"Changed pending reasons one cycle writes into tide.jobs rows.",
							"Jobs without a reason come first, then the others in scheduling "
							"order; the rest of this cycle's reasons go to tide.reason_backlog, "
							"which tide.pending reads, and reach their rows in later cycles. "
							"-1 writes them all.",
							&tide_reason_updates_per_cycle,
							1000, -1, PG_INT32_MAX,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	/*
	 * Any submitter may hold its own pending job's row in an open
	 * transaction (a cancel request, a task change): the cycle must not wait
	 * for it on everyone's behalf.
	 */
	DefineCustomIntVariable("tide.cycle_lock_timeout",
							"How long a cycle waits for a job or node row another transaction holds.",
							"After this the cycle leaves such jobs as they are (not placed, "
							"reason unchanged) and places the others; the next cycle looks "
							"again. 0 skips held rows at once (each row then costs a lock).",
							&tide_cycle_lock_timeout,
							100, 0, 60 * 1000,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);

	/*
	 * R-L5: frag keeps room for the workload's typical shapes; where no
	 * administrator set them (tide.workload_shapes), they are the recent
	 * submissions', kept in a rollup the cycle remakes now and then.
	 */
	DefineCustomIntVariable("tide.frag_shapes_jobs",
							"Submitted jobs whose request shapes make the typical workload of frag queues.",
							"The last this many jobs, by id; used where tide.workload_shapes "
							"sets no shape for the resource group. 0 keeps no recent shapes: "
							"frag then uses the pending jobs' requests.",
							&tide_frag_shapes_jobs,
							1000, 0, 1000000,
							PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("tide.frag_shapes_refresh",
							"How often a cycle remakes tide.recent_shapes.",
							"A cycle that loads remakes them when they are this old and some "
							"queue places by frag. 0: every such cycle; -1: never (call "
							"tide.refresh_workload_shapes() instead).",
							&tide_frag_shapes_refresh,
							60, -1, 86400 * 365,
							PGC_SUSET, GUC_UNIT_S,
							NULL, NULL, NULL);

	/* R-T5: a retry of a failed command waits before it is placed again */
	DefineCustomIntVariable("tide.retry_backoff",
							"How long the first retry of a failed command waits before it is placed.",
							"Each further attempt waits twice as long, up to tide.retry_backoff_max. "
							"Only retries of a command that exited non-zero wait; a job interrupted "
							"by a lost node or an eviction is retried at once. 0 turns it off.",
							&tide_retry_backoff,
							10, 0, 86400,
							PGC_SUSET, GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("tide.retry_backoff_max",
							"The longest a retry waits before it is placed (see tide.retry_backoff).",
							NULL,
							&tide_retry_backoff_max,
							600, 0, 86400 * 7,
							PGC_SUSET, GUC_UNIT_S,
							NULL, NULL, NULL);

	/*
	 * R-O6: the half-life of the usage that orders queues of equal
	 * priority.  Superuser: it changes every queue's order.
	 */
	DefineCustomIntVariable("tide.fair_share_half_life",
							"Half-life of the usage that orders queues of equal priority (fair share over time).",
							"Queues of equal priority go in the order of their usage averaged "
							"with this half-life, over their quota (tide.fair_share shows it). "
							"0 orders them by their usage now. Changing it needs no reset: the "
							"next cycle decays the kept averages over the time since their update.",
							&tide_fair_share_half_life,
							0, 0, 86400 * 365,
							PGC_SUSET, GUC_UNIT_S,
							NULL, NULL, NULL);

	/*
	 * R-E4: least harm counts the GPU-time an eviction throws away, at
	 * least this much per GPU.  Superuser: it changes whom evictions take.
	 */
	DefineCustomIntVariable("tide.eviction_restart_cost",
							"GPU-time per GPU that an eviction throws away at least (least-harm victims).",
							"Victims are chosen by the GPU-time since they started, counted as at least "
							"this much per GPU, since a restart costs a load and a warm-up. "
							"0 counts only the time since they started.",
							&tide_eviction_restart_cost,
							300, 0, 86400 * 365,
							PGC_SUSET, GUC_UNIT_S,
							NULL, NULL, NULL);

	/*
	 * A whole-cluster cycle keeps its load's rows in its backend and reads
	 * only what changed the next time (cycle_cache.c); the decisions are
	 * the same either way, so off is for measuring and for doubt.
	 */
	DefineCustomBoolVariable("tide.incremental_load",
							 "Lets a scheduling cycle read only what changed since the last cycle of its backend.",
							 "Off: every cycle that is not quiet reads the whole backlog.",
							 &tide_incremental_load,
							 true,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("tide.check_incremental_load",
							 "Makes an incremental load check the jobs it copied from the last load against their rows.",
							 "For tests: a difference is an error.  It costs what the copy saves.",
							 &tide_check_incremental_load,
							 false,
							 PGC_SUSET, GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	define_history_settings();

	/*
	 * No MarkGUCPrefixReserved("tide"): the install script keeps
	 * transaction-local values under the prefix (tide.cycle_id,
	 * tide.archiving), which must stay settable with set_config().
	 */
}

/*
 * Bounded history's settings, read in SQL with current_setting() and
 * checked there when used (tide._setting, tide._setting_interval), with
 * the same defaults when the library is not loaded.  Defined here as
 * well so that ALTER SYSTEM and SHOW know them; kept as text, so a value
 * is judged in one place.
 */
static void
define_history_settings(void)
{
	DefineCustomStringVariable("tide.history_retention",
							   "tide.maintain_history() drops job events, cycles and archived jobs older than this.",
							   "An interval; a whole partition (a day of events, a month of cycles "
							   "or archive) at a time.",
							   &tide_history_retention,
							   "90 days",
							   PGC_USERSET, 0,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("tide.history_detach",
							   "on: tide.maintain_history() detaches expired partitions instead of dropping them.",
							   NULL,
							   &tide_history_detach,
							   "off",
							   PGC_USERSET, 0,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("tide.archive_after",
							   "Finished jobs this long ago move from tide.jobs to tide.jobs_archive.",
							   "An interval; tide.maintain_history() moves them.",
							   &tide_archive_after,
							   "1 day",
							   PGC_USERSET, 0,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("tide.archive_batch",
							   "At most this many jobs are archived by one tide.maintain_history() call.",
							   NULL,
							   &tide_archive_batch,
							   "100000",
							   PGC_USERSET, 0,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("tide.history_premake",
							   "tide.maintain_history() makes history partitions this far ahead of now.",
							   "An interval.",
							   &tide_history_premake,
							   "3 days",
							   PGC_USERSET, 0,
							   NULL, NULL, NULL);
}

/*
 * tide._preloaded(): was the library loaded at server start?  Without it,
 * ALTER SYSTEM SET tide.* fails on PostgreSQL 15 in a session that has not
 * used pg_tide yet; CREATE EXTENSION and tide.schedule_cycles() say so.
 */
Datum
tide_preloaded_sql(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(tide_preloaded);
}
