-- Tables: queues, nodes, jobs, job tasks, allocations, evictions, cycles and
-- the job history.  The state machines that guard jobs.state and
-- allocations.state are in 22_transitions.sql and the triggers after it;
-- roles and row-level security in 40_roles.sql.  See docs/schema.md for every column.

-- Roles are cluster-wide: they survive DROP EXTENSION and are shared by every
-- database that installs pg_tide, so they are created only when missing.
-- They are needed here already because policies and grants name them.
DO $roles$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['tide_admin', 'tide_submitter', 'tide_launcher', 'tide_reader']
    LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
            EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', r);
        END IF;
    END LOOP;
END
$roles$;

-- ---------------------------------------------------------------- queues
CREATE TABLE tide.queues (
    name              text PRIMARY KEY
                      CONSTRAINT queues_name_check CHECK (name <> ''),
    resource_group    text NOT NULL DEFAULT 'default'
                      CONSTRAINT queues_resource_group_check CHECK (resource_group <> ''),
    quota             tide.resvec,
    capability        tide.resvec,
    priority          integer NOT NULL DEFAULT 0,
    max_priority      integer,
    -- what a non-administrator may do with this queue (tide._jobs_before_insert)
    submit_role       text CONSTRAINT queues_submit_role_check CHECK (submit_role <> ''),
    fixed_service_type boolean NOT NULL DEFAULT false,
    preemptable_only  boolean NOT NULL DEFAULT false,
    reclaimable       boolean NOT NULL DEFAULT true,
    preemption_within text NOT NULL DEFAULT 'never'
                      CONSTRAINT queues_preemption_within_check
                      CHECK (preemption_within IN ('never', 'lower_priority')),
    service_type      text NOT NULL DEFAULT 'training'
                      CONSTRAINT queues_service_type_check
                      CHECK (service_type IN ('training', 'inference')),
    placement         text NOT NULL DEFAULT 'frag'
                      CONSTRAINT queues_placement_check
                      CHECK (placement IN ('pack', 'spread', 'frag')),
    min_runtime       interval NOT NULL DEFAULT '0'
                      CONSTRAINT queues_min_runtime_check
                      CHECK (min_runtime >= interval '0' AND min_runtime <= interval '100 years'),
    held              boolean NOT NULL DEFAULT false,
    -- time limits of the queue's jobs, applied at submission (R-T1)
    default_time_limit interval CONSTRAINT queues_default_time_limit_check
                      CHECK (default_time_limit > interval '0' AND default_time_limit <= interval '100 years'),
    max_time_limit    interval CONSTRAINT queues_max_time_limit_check
                      CHECK (max_time_limit > interval '0' AND max_time_limit <= interval '100 years'),
    created_at        timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT queues_time_limits_check CHECK (default_time_limit <= max_time_limit)
);
COMMENT ON TABLE tide.queues IS
    'Job queues: quota (guaranteed share), capability (hard limit), priority among the queues of a resource group (R-A1, R-O4)';
COMMENT ON COLUMN tide.queues.quota IS 'resources the queue is entitled to; NULL: no guarantee (everything it runs borrows)';
COMMENT ON COLUMN tide.queues.capability IS 'hard limit on everything the queue holds, borrowing included; NULL: no limit';
COMMENT ON COLUMN tide.queues.max_priority IS 'highest job priority a non-administrator may submit with (job priority decides in-queue preemption, R-E3); NULL: no cap';
COMMENT ON COLUMN tide.queues.submit_role IS 'only members of this role (and administrators) may submit to the queue; NULL: any tide_submitter';
COMMENT ON COLUMN tide.queues.fixed_service_type IS 'jobs of non-administrators take the queue''s service_type, another is refused (inference jobs may reclaim training jobs, R-E2)';
COMMENT ON COLUMN tide.queues.preemptable_only IS 'jobs of non-administrators must be preemptable (a non-preemptable job that borrows cannot be reclaimed, R-E1)';
COMMENT ON COLUMN tide.queues.reclaimable IS 'may other queues take back what this queue holds above its quota (R-E1, R-E2)';
COMMENT ON COLUMN tide.queues.preemption_within IS 'never, or lower_priority: jobs may evict lower-priority preemptable jobs of the same queue (R-E3)';
COMMENT ON COLUMN tide.queues.service_type IS 'default service_type of the jobs submitted to this queue';
COMMENT ON COLUMN tide.queues.placement IS 'node order for this queue''s jobs: frag (default: the node where the GPU fragmentation grows least for the typical workload, tide.workload_shapes), pack (fullest node first) or spread (emptiest first) (R-L5)';
COMMENT ON COLUMN tide.queues.held IS 'held (tide.hold_queue): its pending jobs are not considered, running work is untouched (R-P4)';
COMMENT ON COLUMN tide.queues.default_time_limit IS 'time_limit given at submission to a job of this queue submitted without one; NULL: none (R-T1)';
COMMENT ON COLUMN tide.queues.max_time_limit IS 'longest time_limit a job of this queue may have: a longer one, or none, is refused at submission; NULL: no maximum (R-T1)';
COMMENT ON COLUMN tide.queues.min_runtime IS 'a job of this queue that started less than this ago is not evicted by preemption or reclaim';

-- ---------------------------------------------------------------- nodes
CREATE TABLE tide.nodes (
    name           text PRIMARY KEY
                   CONSTRAINT nodes_name_check CHECK (name <> ''),
    resource_group text NOT NULL DEFAULT 'default'
                   CONSTRAINT nodes_resource_group_check CHECK (resource_group <> ''),
    capacity       tide.resvec NOT NULL,
    gpu_type       text
                   CONSTRAINT nodes_gpu_type_check CHECK (gpu_type <> ''),
    gpu_topology   integer[],
    labels         jsonb NOT NULL DEFAULT '{}'
                   CONSTRAINT nodes_labels_check CHECK (pg_catalog.jsonb_typeof(labels) = 'object'),
    state          text NOT NULL DEFAULT 'ready'
                   CONSTRAINT nodes_state_check CHECK (state IN ('ready', 'draining', 'down')),
    heartbeat_at   timestamptz,
    -- when state last changed (or the node was registered): a node with no
    -- heartbeat since then is lost like one whose heartbeat stopped (R-C3)
    state_since    timestamptz NOT NULL DEFAULT pg_catalog.now(),
    -- while down: what it was before, and whether the cycle lost it (a
    -- heartbeat brings it back) or an administrator set it down (it stays)
    state_before_down text
                   CONSTRAINT nodes_state_before_down_check CHECK (state_before_down IN ('ready', 'draining')),
    down_reason    text
                   CONSTRAINT nodes_down_reason_check CHECK (down_reason IN ('lost', 'admin')),
    allow_cpu_jobs boolean NOT NULL DEFAULT false,
    launcher_role  text,
    created_at     timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT nodes_down_check
        CHECK ((state = 'down') = (down_reason IS NOT NULL) AND (state = 'down') = (state_before_down IS NOT NULL)),
    CONSTRAINT nodes_gpu_whole_check
        CHECK (tide.get(capacity, 'gpu') = pg_catalog.trunc(tide.get(capacity, 'gpu'))),
    -- a tide.gpumask holds GPU indices 0..63
    CONSTRAINT nodes_gpu_count_check CHECK (tide.get(capacity, 'gpu') <= 64),
    CONSTRAINT nodes_gpu_topology_check
        CHECK (gpu_topology IS NULL
               OR (pg_catalog.array_ndims(gpu_topology) = 1
                   AND pg_catalog.cardinality(gpu_topology) = tide.get(capacity, 'gpu')
                   AND pg_catalog.array_position(gpu_topology, NULL) IS NULL
                   AND 0 <= ALL (gpu_topology) AND 32767 >= ALL (gpu_topology)))
);
COMMENT ON TABLE tide.nodes IS
    'Worker nodes: capacity (its gpu component is the GPU count), GPU type and topology, labels, state and heartbeat';
COMMENT ON COLUMN tide.nodes.gpu_topology IS 'topology domain id per GPU index (GPUs of one NVLink or PCIe switch share an id); NULL: one domain';
COMMENT ON COLUMN tide.nodes.state IS 'ready (schedulable), draining (keeps its work, gets nothing new), down (lost: its work is evicted)';
COMMENT ON COLUMN tide.nodes.state_since IS 'when state last changed, or the node was registered; silence is counted from here when it is later than heartbeat_at (R-C3)';
COMMENT ON COLUMN tide.nodes.state_before_down IS 'while down: its state before (ready or draining), which it returns to';
COMMENT ON COLUMN tide.nodes.down_reason IS 'while down: lost (the cycle timed it out; its next heartbeat brings it back) or admin (set down by hand; tide.resume_node brings it back)';
COMMENT ON COLUMN tide.nodes.allow_cpu_jobs IS 'may jobs that ask for no GPU run on this GPU node (R-L4); CPU-only nodes take them anyway';
COMMENT ON COLUMN tide.nodes.launcher_role IS 'when set, only members of this role (and tide_admin) may act as this node''s launcher; NULL: any tide_launcher member';

-- ---------------------------------------------------------------- cycles
CREATE TABLE tide.cycles (
    id              bigint GENERATED BY DEFAULT AS IDENTITY (SEQUENCE NAME tide.cycles_id_seq),
    started_at      timestamptz NOT NULL DEFAULT pg_catalog.now(),
    finished_at     timestamptz,
    jobs_considered integer NOT NULL DEFAULT 0 CONSTRAINT cycles_jobs_considered_check CHECK (jobs_considered >= 0),
    jobs_placed     integer NOT NULL DEFAULT 0 CONSTRAINT cycles_jobs_placed_check CHECK (jobs_placed >= 0),
    jobs_evicted    integer NOT NULL DEFAULT 0 CONSTRAINT cycles_jobs_evicted_check CHECK (jobs_evicted >= 0),
    jobs_unschedulable integer NOT NULL DEFAULT 0,
    allocations_made integer NOT NULL DEFAULT 0,
    holds           integer NOT NULL DEFAULT 0,
    reasons_deferred integer NOT NULL DEFAULT 0,
    load_ms         double precision,
    decide_ms       double precision,
    write_ms        double precision,
    load            text CONSTRAINT cycles_load_check CHECK (load IN ('quiet', 'full', 'incremental')),
    CONSTRAINT cycles_finished_check CHECK (finished_at IS NULL OR finished_at >= started_at)
)
-- Bounded history: one partition a month (UTC; a cycle updates its row by
-- id and started_at, so only its own partition is visited),
-- made ahead and dropped after tide.history_retention by
-- tide.maintain_history (80_history_partitions.sql).
-- Rows no dated partition covers yet land in the default partition.
-- Keys and indexes are per partition, not on the parent: a partitioned
-- index of an extension table makes pg_dump's output unrestorable (ATTACH
-- PARTITION builds the partition's index, then the dump creates it again).
-- Every partition copies the default partition's (ids come from one
-- sequence, so they are unique across partitions all the same).
PARTITION BY RANGE (started_at);
CREATE TABLE tide.cycles_default PARTITION OF tide.cycles (PRIMARY KEY (id)) DEFAULT;
CREATE INDEX cycles_started_idx ON tide.cycles_default (started_at);
COMMENT ON TABLE tide.cycles_default IS 'cycles no dated partition covers yet (tide.maintain_history moves them out)';
COMMENT ON TABLE tide.cycles IS 'One row per scheduling cycle (R-C2): when it ran and how many jobs it considered, placed and evicted';
COMMENT ON COLUMN tide.cycles.jobs_unschedulable IS 'pending jobs this cycle found can never fit as things stand (R-A2)';
COMMENT ON COLUMN tide.cycles.load IS 'quiet: nothing read had changed, no load; full: every row read; incremental: only the jobs changed since the last cycle of its backend (docs/cadence.md)';
COMMENT ON COLUMN tide.cycles.allocations_made IS 'allocation rows this cycle inserted (one per placed replica)';
COMMENT ON COLUMN tide.cycles.holds IS 'reservation holds this cycle made for reserving jobs (R-L2)';
COMMENT ON COLUMN tide.cycles.reasons_deferred IS 'changed pending reasons this cycle left in tide.reason_backlog instead of writing them into tide.jobs (over tide.reason_updates_per_cycle)';
COMMENT ON COLUMN tide.cycles.load_ms IS 'milliseconds spent reading nodes, queues, pending jobs and live allocations';
COMMENT ON COLUMN tide.cycles.decide_ms IS 'milliseconds spent in the policy engine';
COMMENT ON COLUMN tide.cycles.write_ms IS 'milliseconds spent writing allocations, job states and pending reasons';

-- ---------------------------------------------------------------- jobs
CREATE TABLE tide.jobs (
    -- (fillfactor: see jobs_owner_idx below)
    id               bigint GENERATED BY DEFAULT AS IDENTITY (SEQUENCE NAME tide.jobs_id_seq)
                     PRIMARY KEY WITH (fillfactor = 70),
    -- 1 to 255 characters (tide._name_max(); the insert path says so first)
    name             text CONSTRAINT jobs_name_check CHECK (name <> '' AND pg_catalog.char_length(name) <= 255),
    -- a queue of tide.queues: not a foreign key, whose check would lock the
    -- queue's row on every submission (27_queue_checks.sql keeps it)
    queue            text NOT NULL,
    owner            text NOT NULL DEFAULT CURRENT_USER,
    priority         integer NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT pg_catalog.now(),
    service_type     text NOT NULL
                     CONSTRAINT jobs_service_type_check CHECK (service_type IN ('training', 'inference')),
    preemptable      boolean NOT NULL DEFAULT true,
    idle             boolean NOT NULL DEFAULT false,
    reserve          boolean NOT NULL DEFAULT false,
    min_available    integer CONSTRAINT jobs_min_available_check CHECK (min_available >= 1),
    node_selector    jsonb NOT NULL DEFAULT '{}'
                     CONSTRAINT jobs_node_selector_check CHECK (pg_catalog.jsonb_typeof(node_selector) = 'object'),
    gpu_type         text CONSTRAINT jobs_gpu_type_check CHECK (gpu_type <> ''),
    time_limit       interval CONSTRAINT jobs_time_limit_check
                     CHECK (time_limit > interval '0' AND time_limit <= interval '100 years'),
    -- the launcher signals the job this long before its time limit (R-T2)
    warn_before      interval CONSTRAINT jobs_warn_before_check
                     CHECK (warn_before > interval '0' AND warn_before <= interval '100 years'),
    -- SIGTERM to SIGKILL when the job is stopped; NULL: the launcher's (R-T3)
    grace_period     interval CONSTRAINT jobs_grace_period_check
                     CHECK (grace_period >= interval '0' AND grace_period <= interval '1 day'),
    -- at most 100: each retry enters the retry lane ahead of its queue (R-O3)
    max_retries      integer NOT NULL DEFAULT 0 CONSTRAINT jobs_max_retries_check CHECK (max_retries BETWEEN 0 AND 100),
    retry_of         bigint,   -- not a foreign key: a self-reference makes pg_dump warn on every dump
    attempt          integer NOT NULL DEFAULT 1 CONSTRAINT jobs_attempt_check CHECK (attempt >= 1),
    avoid_nodes      text[] NOT NULL DEFAULT '{}',
    on_evict         text NOT NULL DEFAULT 'requeue'
                     CONSTRAINT jobs_on_evict_check CHECK (on_evict IN ('requeue', 'fail')),
    command          text,
    -- a state of tide.job_states (its CHECK is made from that table in
    -- 22_transitions.sql)
    state            text NOT NULL DEFAULT 'pending',
    -- (the insert trigger makes a NULL one 'submitted' too)
    state_reason     text DEFAULT 'submitted',
    pending_reason   text,
    unschedulable    boolean NOT NULL DEFAULT false,
    evict_goal       text CONSTRAINT jobs_evict_goal_check CHECK (evict_goal IN ('requeue', 'fail', 'cancel')),
    cancel_requested boolean NOT NULL DEFAULT false,
    started_at       timestamptz,
    finished_at      timestamptz,
    exit_code        integer,
    -- what the launcher gives the command besides its TIDE_* variables
    env              jsonb NOT NULL DEFAULT '{}'
                     CONSTRAINT jobs_env_check CHECK (pg_catalog.jsonb_typeof(env) = 'object'),
    workdir          text CONSTRAINT jobs_workdir_check CHECK (workdir <> ''),
    labels           jsonb NOT NULL DEFAULT '{}'
                     CONSTRAINT jobs_labels_check CHECK (pg_catalog.jsonb_typeof(labels) = 'object'),
    -- a member of a job array (tide.submit_array): both set, or neither
    array_id         bigint,
    array_index      integer CONSTRAINT jobs_array_index_check CHECK (array_index >= 0),
    -- why a pending job waits without being considered (R-P1..R-P5): each
    -- set by whoever decides the wait (32_pipelines.sql); waiting is true
    -- while any is, and the cycle loads only jobs not waiting
    held             boolean NOT NULL DEFAULT false,
    begin_at         timestamptz,
    deferred         boolean NOT NULL DEFAULT false,
    dependencies_unmet integer NOT NULL DEFAULT 0
                     CONSTRAINT jobs_dependencies_unmet_check CHECK (dependencies_unmet >= 0),
    array_throttled  boolean NOT NULL DEFAULT false,
    queue_held       boolean NOT NULL DEFAULT false,
    waiting          boolean NOT NULL GENERATED ALWAYS AS
                     (held OR queue_held OR deferred OR array_throttled OR dependencies_unmet > 0) STORED,
    -- an idempotency key: one job per owner and key (R-P6)
    key              text CONSTRAINT jobs_key_check CHECK (key <> '' AND pg_catalog.octet_length(key) <= 1000),
    -- starts that never happened (R-T4), and a stop its retry would meet
    -- again (R-T1, R-T4): extension/63_run_limits.sql sets both
    start_timeouts   integer NOT NULL DEFAULT 0 CONSTRAINT jobs_start_timeouts_check CHECK (start_timeouts >= 0),
    no_retry         boolean NOT NULL DEFAULT false,
    CONSTRAINT jobs_array_check CHECK ((array_id IS NULL) = (array_index IS NULL)),
    CONSTRAINT jobs_evict_goal_state_check CHECK ((state = 'evicting') = (evict_goal IS NOT NULL))
)
-- Every cycle rewrites pending_reason of the jobs whose reason changed; room
-- on each page keeps those updates HOT (no new index entries).
WITH (fillfactor = 70);
COMMENT ON TABLE tide.jobs IS
    'Jobs: what to run (tasks in tide.job_tasks), where it may run, how it is ordered, and its state; change states only as docs/lifecycle.md says';
COMMENT ON COLUMN tide.jobs.owner IS 'role that submitted the job; row-level security lets a tide_submitter see and cancel only its own jobs';
COMMENT ON COLUMN tide.jobs.service_type IS 'training or inference (R-E2); NULL at insert takes the queue''s service_type';
COMMENT ON COLUMN tide.jobs.idle IS 'idle job: runs on any free resources of the group after every non-idle job, always evictable (R-O2)';
COMMENT ON COLUMN tide.jobs.reserve IS 'a job that does not fit holds what it lacks so later jobs cannot take it (R-L2)';
COMMENT ON COLUMN tide.jobs.min_available IS 'gang minimum in replicas across all roles (R-L3); NULL: all replicas';
COMMENT ON COLUMN tide.jobs.node_selector IS 'labels a node must have (every key equal), e.g. {"zone": "a"} (R-L4)';
COMMENT ON COLUMN tide.jobs.time_limit IS 'how long the job may run: a job still running at started_at + time_limit is stopped and ends failed (R-T1); also what backfill and reservations plan with (R-L2); NULL: no limit';
COMMENT ON COLUMN tide.jobs.warn_before IS 'the launcher sends the job''s process group a warning signal (SIGUSR1 by default) this long before its time limit, once, so that it can checkpoint (R-T2); NULL: no warning';
COMMENT ON COLUMN tide.jobs.grace_period IS 'time between SIGTERM and SIGKILL when the job is stopped (eviction, time limit, cancel); NULL: the launcher''s --grace-period (R-T3)';
COMMENT ON COLUMN tide.jobs.retry_of IS 'the id of the failed or interrupted job this one retries (may have been deleted since); retry jobs go into the retry lane (R-O3)';
COMMENT ON COLUMN tide.jobs.attempt IS '1 for a submitted job, one more for each automatic retry; retries are made while attempt <= max_retries';
COMMENT ON COLUMN tide.jobs.avoid_nodes IS 'nodes where a previous attempt of this job failed: never candidates for it (R-L4)';
COMMENT ON COLUMN tide.jobs.on_evict IS 'what an eviction means for the job: requeue (back to pending) or fail (R-E5)';
COMMENT ON COLUMN tide.jobs.state IS 'a state of tide.job_states (pending, allocated, running, evicting, succeeded, failed, cancelled); changes checked against tide.job_transitions';
COMMENT ON COLUMN tide.jobs.state_reason IS 'why the job is in its current state; every writer sets it in the same UPDATE that changes state, and it becomes the reason of the tide.job_events row';
COMMENT ON COLUMN tide.jobs.pending_reason IS 'why a cycle could not place this pending job (R-C2); NULL until a cycle explained it; tide.pending always shows the latest cycle''s reason, which reaches this column within tide.reason_updates_per_cycle rows a cycle';
COMMENT ON COLUMN tide.jobs.unschedulable IS 'the job can never fit as things stand (R-A2); cleared when queues or nodes change';
COMMENT ON COLUMN tide.jobs.evict_goal IS 'while evicting: what the job becomes once all its allocations are released (requeue: pending, fail: failed, cancel: cancelled)';
COMMENT ON COLUMN tide.jobs.env IS 'environment variables the launcher exports to the command: an object of names (as a shell can export them) to text values';
COMMENT ON COLUMN tide.jobs.workdir IS 'directory the launcher starts the command in; NULL: the launcher''s own; a missing one fails the job with the launcher''s reason';
COMMENT ON COLUMN tide.jobs.labels IS 'free metadata for queries (an experiment, a team, a run), e.g. {"experiment": "e42"}; indexed for containment (labels @> ...)';
COMMENT ON COLUMN tide.jobs.array_id IS 'the job array this job belongs to (the value tide.submit_array returned); NULL for a job of its own';
COMMENT ON COLUMN tide.jobs.array_index IS 'this member''s index in its array, 0 to size - 1 (TIDE_ARRAY_INDEX for the command)';
COMMENT ON COLUMN tide.jobs.held IS 'held (tide.hold, submit(..., hold => true)): never considered while pending, keeps its created_at (R-P2)';
COMMENT ON COLUMN tide.jobs.begin_at IS 'not considered before this time (R-P3); NULL: at once';
COMMENT ON COLUMN tide.jobs.deferred IS 'begin_at is still ahead: set at submission, cleared by the first cycle after begin_at (R-P3)';
COMMENT ON COLUMN tide.jobs.dependencies_unmet IS 'how many rows of tide.job_dependencies of this job are not met yet (R-P1)';
COMMENT ON COLUMN tide.jobs.array_throttled IS 'an array member kept back because max_running members of its array are in play (R-P5)';
COMMENT ON COLUMN tide.jobs.queue_held IS 'its queue is held (tide.hold_queue): not considered while pending (R-P4)';
COMMENT ON COLUMN tide.jobs.waiting IS 'held, queue_held, deferred, array_throttled or a dependency unmet: a pending job the cycle does not load; pending_reason says why (R-P1..R-P5)';
COMMENT ON COLUMN tide.jobs.key IS 'idempotency key: a second tide.submit by the same owner with the same key returns this job''s id (R-P6); retries carry none';
COMMENT ON COLUMN tide.jobs.start_timeouts IS 'how many times this job was placed and not running within tide.start_timeout, and released (R-T4); it fails at tide.start_attempts';
COMMENT ON COLUMN tide.jobs.no_retry IS 'the job was stopped for a reason its retry would meet again (its time limit, R-T1; its start attempts, R-T4): it ends failed with that reason and is not retried';
COMMENT ON COLUMN tide.jobs.cancel_requested IS 'set to true (by tide.cancel or by its owner directly) to cancel the job';

-- ---------------------------------------------------------------- reasons
-- Rewriting a wide tide.jobs row costs about as much as inserting an
-- allocation, so a cycle writes at most tide.reason_updates_per_cycle changed
-- pending reasons into job rows (jobs without one first, then in scheduling
-- order) and keeps the rest here: one row per distinct reason with the jobs
-- it explains, replaced by every cycle.  A fresh backlog of 10k jobs then
-- costs a few rows, not 10k row versions (docs/scheduling.md#pending-reasons).
CREATE TABLE tide.reason_backlog (
    cycle_id bigint NOT NULL,
    reason   text NOT NULL,
    job_ids  bigint[] NOT NULL
);
-- Stored out of line uncompressed: pglz took 5 ms a cycle on 7k job ids at
-- 10k pending (a third of the allocations' INSERT), for a table every
-- cycle replaces and nobody keeps.
ALTER TABLE tide.reason_backlog ALTER COLUMN job_ids SET STORAGE EXTERNAL;
COMMENT ON TABLE tide.reason_backlog IS
    'pending reasons of the latest cycle not yet copied into tide.jobs.pending_reason (R-C2), one row per distinct reason; tide.pending reads them';
COMMENT ON COLUMN tide.reason_backlog.job_ids IS 'the pending jobs this reason explains, by id';

-- ---------------------------------------------------------------- tasks
CREATE TABLE tide.job_tasks (
    job_id   bigint NOT NULL REFERENCES tide.jobs (id) ON DELETE CASCADE,
    role     text NOT NULL DEFAULT 'main'
             CONSTRAINT job_tasks_role_check CHECK (role <> ''),
    -- at most 10000 replicas a role and a job (tide._check_job_tasks): the
    -- cycle sizes its arrays by them
    replicas integer NOT NULL DEFAULT 1 CONSTRAINT job_tasks_replicas_check CHECK (replicas BETWEEN 1 AND 10000),
    request  tide.resvec NOT NULL,
    PRIMARY KEY (job_id, role)
);
COMMENT ON TABLE tide.job_tasks IS 'Task roles of a job: replicas of one per-replica request each (a one-role job has the role main)';

-- ---------------------------------------------------------------- allocations
CREATE TABLE tide.allocations (
    id             bigint GENERATED BY DEFAULT AS IDENTITY (SEQUENCE NAME tide.allocations_id_seq) PRIMARY KEY,
    -- the allocation's name that no failover hands out twice (R-C7): after
    -- an asynchronous failover the new primary may give a lost
    -- allocation's id to another one; the launcher names what it runs by
    -- id and token, so a reused id is never taken for work already running
    token          uuid NOT NULL DEFAULT pg_catalog.gen_random_uuid(),
    job_id         bigint NOT NULL,
    role           text NOT NULL,
    replica        integer NOT NULL CONSTRAINT allocations_replica_check CHECK (replica >= 0),
    node           text NOT NULL REFERENCES tide.nodes (name) ON UPDATE CASCADE,
    resources      tide.resvec NOT NULL,
    gpus           tide.gpumask NOT NULL DEFAULT '',
    gpu_milli      integer CONSTRAINT allocations_gpu_milli_check CHECK (gpu_milli BETWEEN 1 AND 999),
    -- cycle_id columns (here, evictions, job_events) are not foreign keys:
    -- only the cycle writes them, and old cycles may be deleted without
    -- touching the history that names them
    cycle_id       bigint,
    -- a state of tide.allocation_states (CHECK made in 22_transitions.sql)
    state          text NOT NULL DEFAULT 'assigned',
    exit_code      integer,
    created_at     timestamptz NOT NULL DEFAULT pg_catalog.now(),
    claimed_at     timestamptz,
    started_at     timestamptz,
    released_at    timestamptz,
    release_reason text,
    -- when the database decided to stop it: it became releasing, or was
    -- released without an exit (a lost node); set by the trigger
    -- allocations_release_decided.  An exit that happened before is the
    -- allocation's exit, not an eviction (R-T6).
    release_decided_at timestamptz,
    -- when its process exited, as its launcher reported it (how long ago,
    -- subtracted from the report's clock_timestamp()); that moment when not
    -- said
    exited_at      timestamptz,
    -- the launcher's reason for an exit it decided itself (the command
    -- could not be started), from tide.report_exited; NULL for a program's
    -- own exit.  Sanitised and bounded by the report (tide._launcher_reason).
    exit_reason    text CONSTRAINT allocations_exit_reason_check
                   CHECK (exit_reason IS NULL OR pg_catalog.char_length(exit_reason) BETWEEN 1 AND 500),
    -- (job_id, role) names a row of tide.job_tasks.  Not a foreign key: its
    -- check would lock each task row, one WAL record per allocation, a
    -- third of what a cycle pays to insert it.  The insert trigger checks
    -- the tasks exist (set-based); the tasks trigger locks the job row, which
    -- the cycle holds while it places the job, so the tasks of a job being
    -- placed cannot change; deleting tasks (or their job) deletes their
    -- allocations (tide._job_tasks_after_delete).
    CONSTRAINT allocations_released_check CHECK ((state = 'released') = (released_at IS NOT NULL)),
    -- an exit without its code would leave the job's outcome unknown
    CONSTRAINT allocations_exit_code_check CHECK (release_reason IS DISTINCT FROM 'exited' OR exit_code IS NOT NULL),
    CONSTRAINT allocations_gpu_milli_mask_check CHECK (gpu_milli IS NULL OR tide.gpu_count(gpus) = 1)
);
COMMENT ON TABLE tide.allocations IS
    'Placements of job replicas on nodes: assigned by a cycle, running once the launcher started it, releasing while being stopped, released exactly once';
COMMENT ON COLUMN tide.allocations.gpus IS 'GPU indices of the node given to this replica';
COMMENT ON COLUMN tide.allocations.gpu_milli IS 'share of the one GPU in gpus, in thousandths, for a fractional request; NULL for whole GPUs';
COMMENT ON COLUMN tide.allocations.claimed_at IS 'first time the node''s launcher claimed it (tide.claim)';
COMMENT ON COLUMN tide.allocations.release_reason IS 'why it was released: exited, evicted, node down, ...';
COMMENT ON COLUMN tide.allocations.release_decided_at IS 'when the database decided to stop it (it became releasing, or was released without an exit); an exit reported as happening before counts as its exit (R-T6)';
COMMENT ON COLUMN tide.allocations.exited_at IS 'when its process exited, by its launcher''s report (tide.report_exited''s exited_ago subtracted from the moment of the report; that moment when not given) (R-T6)';
COMMENT ON COLUMN tide.allocations.token IS 'a random name of the allocation that no failover hands out twice: launchers name what they run by id and token (tide.reconcile, the reports'' tokens), so an id that an asynchronous failover reused is never taken for work already running (R-C7)';
COMMENT ON COLUMN tide.allocations.exit_reason IS 'the launcher''s reason when it, not the program, decided the exit (e.g. command "foo" not found); NULL for a program''s own exit; at most 500 characters, no control characters';

-- ---------------------------------------------------------------- evictions
CREATE TABLE tide.evictions (
    id               bigint GENERATED BY DEFAULT AS IDENTITY (SEQUENCE NAME tide.evictions_id_seq) PRIMARY KEY,
    job_id           bigint NOT NULL REFERENCES tide.jobs (id) ON DELETE CASCADE,
    cycle_id         bigint,
    reason           text NOT NULL,
    preemptor_job_id bigint REFERENCES tide.jobs (id) ON DELETE SET NULL,
    goal             text NOT NULL DEFAULT 'requeue'
                     CONSTRAINT evictions_goal_check CHECK (goal IN ('requeue', 'fail', 'cancel')),
    created_at       timestamptz NOT NULL DEFAULT pg_catalog.now(),
    acked_at         timestamptz
);
COMMENT ON TABLE tide.evictions IS
    'Orders to stop a job''s allocations (preemption, reclaim, cancel, a failed gang member, a lost node); acked_at is set once all of them are released';
COMMENT ON COLUMN tide.evictions.goal IS 'what the eviction is for: requeue, fail or cancel the job';

-- ---------------------------------------------------------------- history
CREATE TABLE tide.job_events (
    id        bigint GENERATED BY DEFAULT AS IDENTITY (SEQUENCE NAME tide.job_events_id_seq),
    -- not a foreign key: only the state-machine triggers write events, for
    -- the job row they are changing, and a key check per event would cost
    -- as much as the event (a cycle logs thousands); deleting a job deletes
    -- its events (tide._jobs_after_delete)
    job_id    bigint NOT NULL,
    at        timestamptz NOT NULL DEFAULT pg_catalog.now(),
    old_state text,
    new_state text NOT NULL,
    reason    text,
    cycle_id  bigint
)
-- Partitioned by day (UTC), with a default partition whose key and indexes
-- every partition copies, like tide.cycles.
PARTITION BY RANGE (at);
CREATE TABLE tide.job_events_default PARTITION OF tide.job_events (PRIMARY KEY (id)) DEFAULT;
CREATE INDEX job_events_at_idx ON tide.job_events_default (at);
COMMENT ON TABLE tide.job_events_default IS 'job events no dated partition covers yet (tide.maintain_history moves them out)';
COMMENT ON TABLE tide.job_events IS
    'Append-only history of job state changes: one row per change, written by the state machine triggers (old_state NULL at submission)';
COMMENT ON COLUMN tide.job_events.cycle_id IS 'the cycle that made the change (the transaction-local setting tide.cycle_id), NULL otherwise';

-- ---------------------------------------------------------------- indexes
-- Pending jobs in scheduling order per queue (R-O1): the cycle's main read.
-- Waiting jobs (R-P1..R-P5) are not in it: they cost a cycle nothing.
CREATE INDEX jobs_pending_idx ON tide.jobs (queue, priority DESC, created_at, id)
    WHERE state = 'pending' AND NOT waiting;
-- Jobs holding resources, for usage sums and eviction candidates.
CREATE INDEX jobs_active_idx ON tide.jobs (queue, id)
    WHERE state IN ('allocated', 'running', 'evicting');
-- Every change of a job's state is a new row version with new entries in
-- this index and the primary key (state is in partial indexes' predicates:
-- never HOT).  A cycle that places a sixth of the backlog at once would
-- split nearly every leaf page filled to btree's default 90% (submissions
-- fill them in id order), each split after a bottom-up deletion pass that
-- cannot succeed (the old versions are the cycle's own); left 70% full,
-- the pages take them: 8% of the first cycle at 10k pending x 1k nodes.
CREATE INDEX jobs_owner_idx ON tide.jobs (owner, id) WITH (fillfactor = 70);
CREATE INDEX jobs_retry_of_idx ON tide.jobs (retry_of) WHERE retry_of IS NOT NULL;
-- Analysts' questions by label ("GPU-hours of experiment e42": labels @> ...).
CREATE INDEX jobs_labels_idx ON tide.jobs USING gin (labels jsonb_path_ops);
CREATE INDEX jobs_array_idx ON tide.jobs (array_id, array_index) WHERE array_id IS NOT NULL;
-- Deferred jobs by begin_at: the cycle's "due now" step reads only the due ones (R-P3).
CREATE INDEX jobs_deferred_idx ON tide.jobs (begin_at) WHERE deferred AND state = 'pending';
-- One job per owner and idempotency key (R-P6).
CREATE UNIQUE INDEX jobs_owner_key ON tide.jobs (owner, key) WHERE key IS NOT NULL;
-- An array's members in play, and the throttled ones in index order (R-P5).
CREATE INDEX jobs_array_live_idx ON tide.jobs (array_id)
    WHERE array_id IS NOT NULL AND NOT array_throttled AND state IN ('pending', 'allocated', 'running', 'evicting');
CREATE INDEX jobs_array_throttled_idx ON tide.jobs (array_id, array_index)
    WHERE array_throttled AND state = 'pending';
-- Live allocations per node: usage, free GPUs, claims.
CREATE INDEX allocations_live_node_idx ON tide.allocations (node, state)
    WHERE state <> 'released';
CREATE INDEX allocations_job_idx ON tide.allocations (job_id);
-- A replica has at most one live allocation.
CREATE UNIQUE INDEX allocations_live_replica_key ON tide.allocations (job_id, role, replica)
    WHERE state <> 'released';
CREATE INDEX evictions_job_idx ON tide.evictions (job_id);
CREATE INDEX evictions_open_idx ON tide.evictions (job_id) WHERE acked_at IS NULL;
CREATE INDEX job_events_job_idx ON tide.job_events_default (job_id, id);

-- pg_dump keeps the rows (and sequence positions) of these tables.
SELECT pg_catalog.pg_extension_config_dump('tide.queues', '');
SELECT pg_catalog.pg_extension_config_dump('tide.nodes', '');
SELECT pg_catalog.pg_extension_config_dump('tide.cycles', '');
SELECT pg_catalog.pg_extension_config_dump('tide.cycles_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('tide.jobs', '');
SELECT pg_catalog.pg_extension_config_dump('tide.jobs_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('tide.job_tasks', '');
SELECT pg_catalog.pg_extension_config_dump('tide.allocations', '');
SELECT pg_catalog.pg_extension_config_dump('tide.allocations_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('tide.evictions', '');
SELECT pg_catalog.pg_extension_config_dump('tide.evictions_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('tide.job_events', '');
SELECT pg_catalog.pg_extension_config_dump('tide.job_events_id_seq', '');
-- The default partitions are extension members: their rows are dumped like
-- those of any configuration table.  Dated partitions are made later by
-- tide.maintain_history, belong to no extension, and pg_dump dumps them
-- (definition, ATTACH and rows) as ordinary tables.
SELECT pg_catalog.pg_extension_config_dump('tide.cycles_default', '');
SELECT pg_catalog.pg_extension_config_dump('tide.job_events_default', '');
