-- Roles, privileges and row-level security (docs/security.md).
--
--   tide_admin      everything: queues, nodes, jobs of every owner
--   tide_submitter  submit jobs, cancel and read its own (jobs, tasks,
--                   allocations, evictions, events); read queues and nodes
--   tide_launcher   the launcher calls and heartbeat for the nodes it may act for
--   tide_reader     read everything, change nothing
--
-- The roles themselves are created (when missing) at the top of 20_tables.sql.
-- Superusers (the scheduling cycle under pg_cron) bypass row-level security.

GRANT USAGE ON SCHEMA tide TO tide_admin, tide_submitter, tide_launcher, tide_reader;

-- ---------------------------------------------------------------- tables
GRANT SELECT ON tide.queues, tide.nodes, tide.cycles, tide.jobs, tide.job_tasks, tide.allocations,
                tide.evictions, tide.job_events, tide.job_transitions, tide.allocation_transitions,
                tide.job_states, tide.allocation_states, tide.reason_backlog
    TO tide_admin, tide_reader;
GRANT INSERT, UPDATE, DELETE ON tide.queues, tide.nodes, tide.jobs, tide.job_tasks, tide.allocations,
                                tide.evictions, tide.cycles, tide.reason_backlog
    TO tide_admin;
GRANT DELETE ON tide.job_events TO tide_admin;          -- retention only; rows are never updated
GRANT USAGE, SELECT ON SEQUENCE tide.jobs_id_seq, tide.allocations_id_seq, tide.evictions_id_seq,
                                tide.cycles_id_seq, tide.job_events_id_seq TO tide_admin;
-- Readers read the counters tide.metrics takes from the identity sequences
-- (pg_sequence_last_value checks the caller's rights).
GRANT SELECT ON SEQUENCE tide.jobs_id_seq, tide.allocations_id_seq, tide.evictions_id_seq,
                         tide.cycles_id_seq TO tide_reader;

-- Submitters: their own rows (policies below), the queues and nodes.
GRANT SELECT ON tide.queues, tide.nodes, tide.jobs, tide.job_tasks, tide.allocations, tide.evictions,
                tide.job_events, tide.job_transitions, tide.allocation_transitions,
                tide.job_states, tide.allocation_states
    TO tide_submitter;
-- (held, begin_at, key and the payload are the submitter's choice; deferred,
-- queue_held, array_throttled and pending_reason are set from the facts by
-- tide.submit and by the insert trigger of 32_pipelines.sql whatever a row says)
GRANT INSERT (name, queue, priority, service_type, preemptable, idle, reserve, min_available,
              node_selector, gpu_type, time_limit, warn_before, grace_period, max_retries, on_evict, command,
              held, begin_at, key, env, workdir, labels,
              deferred, queue_held, array_throttled, array_id, array_index, pending_reason)
    ON tide.jobs TO tide_submitter;
GRANT UPDATE (cancel_requested, held) ON tide.jobs TO tide_submitter;
GRANT INSERT (job_id, role, replicas, request) ON tide.job_tasks TO tide_submitter;
-- Pipelines (32_pipelines.sql): dependencies of their own jobs, their arrays.
GRANT SELECT ON tide.job_dependencies, tide.job_arrays TO tide_submitter, tide_admin, tide_reader;
GRANT INSERT (job_id, depends_on, condition) ON tide.job_dependencies TO tide_submitter;
GRANT INSERT (queue, size, max_running, key) ON tide.job_arrays TO tide_submitter;
GRANT INSERT, UPDATE, DELETE ON tide.job_dependencies, tide.job_arrays TO tide_admin;
GRANT USAGE, SELECT ON SEQUENCE tide.job_arrays_id_seq TO tide_admin;

-- Launchers: the nodes, and the allocations and jobs of the nodes they serve.
GRANT SELECT ON tide.nodes, tide.allocations, tide.jobs, tide.job_tasks, tide.evictions TO tide_launcher;
GRANT UPDATE (heartbeat_at) ON tide.nodes TO tide_launcher;
GRANT UPDATE (state, exit_code, claimed_at, started_at, released_at, release_reason, exit_reason, exited_at)
    ON tide.allocations TO tide_launcher;

-- ---------------------------------------------------------------- row-level security
ALTER TABLE tide.jobs ENABLE ROW LEVEL SECURITY;
ALTER TABLE tide.job_tasks ENABLE ROW LEVEL SECURITY;
ALTER TABLE tide.allocations ENABLE ROW LEVEL SECURITY;
ALTER TABLE tide.evictions ENABLE ROW LEVEL SECURITY;
ALTER TABLE tide.job_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE tide.nodes ENABLE ROW LEVEL SECURITY;
ALTER TABLE tide.job_dependencies ENABLE ROW LEVEL SECURITY;
ALTER TABLE tide.job_arrays ENABLE ROW LEVEL SECURITY;

-- Administrators and readers: every row (readers only read: no grants).
CREATE POLICY admin_all ON tide.jobs TO tide_admin USING (true) WITH CHECK (true);
CREATE POLICY admin_all ON tide.job_tasks TO tide_admin USING (true) WITH CHECK (true);
CREATE POLICY admin_all ON tide.allocations TO tide_admin USING (true) WITH CHECK (true);
CREATE POLICY admin_all ON tide.evictions TO tide_admin USING (true) WITH CHECK (true);
CREATE POLICY admin_all ON tide.job_events TO tide_admin USING (true) WITH CHECK (true);
CREATE POLICY admin_all ON tide.nodes TO tide_admin USING (true) WITH CHECK (true);
CREATE POLICY reader_all ON tide.jobs FOR SELECT TO tide_reader USING (true);
CREATE POLICY reader_all ON tide.job_tasks FOR SELECT TO tide_reader USING (true);
CREATE POLICY reader_all ON tide.allocations FOR SELECT TO tide_reader USING (true);
CREATE POLICY reader_all ON tide.evictions FOR SELECT TO tide_reader USING (true);
CREATE POLICY reader_all ON tide.job_events FOR SELECT TO tide_reader USING (true);
CREATE POLICY reader_all ON tide.nodes FOR SELECT TO tide_reader USING (true);
CREATE POLICY admin_all ON tide.job_dependencies TO tide_admin USING (true) WITH CHECK (true);
CREATE POLICY admin_all ON tide.job_arrays TO tide_admin USING (true) WITH CHECK (true);
CREATE POLICY reader_all ON tide.job_dependencies FOR SELECT TO tide_reader USING (true);
CREATE POLICY reader_all ON tide.job_arrays FOR SELECT TO tide_reader USING (true);

-- Submitters: their own jobs and what hangs off them.
CREATE POLICY submitter_own ON tide.jobs FOR SELECT TO tide_submitter
    USING (owner = CURRENT_USER);
CREATE POLICY submitter_submit ON tide.jobs FOR INSERT TO tide_submitter
    WITH CHECK (owner = CURRENT_USER AND state = 'pending' AND retry_of IS NULL);
CREATE POLICY submitter_cancel ON tide.jobs FOR UPDATE TO tide_submitter
    USING (owner = CURRENT_USER) WITH CHECK (owner = CURRENT_USER);
CREATE POLICY submitter_own ON tide.job_tasks FOR SELECT TO tide_submitter
    USING (EXISTS (SELECT 1 FROM tide.jobs j WHERE j.id = job_id AND j.owner = CURRENT_USER));
CREATE POLICY submitter_submit ON tide.job_tasks FOR INSERT TO tide_submitter
    WITH CHECK (EXISTS (SELECT 1 FROM tide.jobs j
                         WHERE j.id = job_id AND j.owner = CURRENT_USER AND j.state = 'pending'));
CREATE POLICY submitter_own ON tide.allocations FOR SELECT TO tide_submitter
    USING (EXISTS (SELECT 1 FROM tide.jobs j WHERE j.id = job_id AND j.owner = CURRENT_USER));
CREATE POLICY submitter_own ON tide.evictions FOR SELECT TO tide_submitter
    USING (EXISTS (SELECT 1 FROM tide.jobs j WHERE j.id = job_id AND j.owner = CURRENT_USER));
CREATE POLICY submitter_own ON tide.job_events FOR SELECT TO tide_submitter
    USING (EXISTS (SELECT 1 FROM tide.jobs j WHERE j.id = job_id AND j.owner = CURRENT_USER));
CREATE POLICY submitter_read ON tide.nodes FOR SELECT TO tide_submitter USING (true);
-- a dependency row is the dependent's: its owner sees and adds it (the
-- insert trigger also requires the job it names to be visible)
CREATE POLICY submitter_own ON tide.job_dependencies FOR SELECT TO tide_submitter
    USING (EXISTS (SELECT 1 FROM tide.jobs j WHERE j.id = job_id AND j.owner = CURRENT_USER));
CREATE POLICY submitter_submit ON tide.job_dependencies FOR INSERT TO tide_submitter
    WITH CHECK (EXISTS (SELECT 1 FROM tide.jobs j
                         WHERE j.id = job_id AND j.owner = CURRENT_USER AND j.state = 'pending'));
CREATE POLICY submitter_own ON tide.job_arrays FOR SELECT TO tide_submitter
    USING (owner = CURRENT_USER);
CREATE POLICY submitter_submit ON tide.job_arrays FOR INSERT TO tide_submitter
    WITH CHECK (owner = CURRENT_USER);

-- Launchers: the nodes they may act for (tide._may_launch) and their work.
CREATE POLICY launcher_read ON tide.nodes FOR SELECT TO tide_launcher USING (true);
CREATE POLICY launcher_heartbeat ON tide.nodes FOR UPDATE TO tide_launcher
    USING (tide._may_launch(name, CURRENT_USER)) WITH CHECK (tide._may_launch(name, CURRENT_USER));
CREATE POLICY launcher_own ON tide.allocations FOR SELECT TO tide_launcher
    USING (tide._may_launch(node, CURRENT_USER));
CREATE POLICY launcher_report ON tide.allocations FOR UPDATE TO tide_launcher
    USING (tide._may_launch(node, CURRENT_USER)) WITH CHECK (tide._may_launch(node, CURRENT_USER));
CREATE POLICY launcher_own ON tide.jobs FOR SELECT TO tide_launcher
    USING (tide._launches_job(id, CURRENT_USER));
CREATE POLICY launcher_own ON tide.job_tasks FOR SELECT TO tide_launcher
    USING (tide._launches_job(job_id, CURRENT_USER));
CREATE POLICY launcher_own ON tide.evictions FOR SELECT TO tide_launcher
    USING (tide._launches_job(job_id, CURRENT_USER));

-- ---------------------------------------------------------------- functions
-- Functions are executable by PUBLIC unless revoked; the public API is
-- granted to the roles that use it, internal helpers to nobody but their
-- owner (the triggers and SECURITY DEFINER functions run as the owner).
-- tide._evict is created later, and revoked and granted, in 62_evictions.sql.
REVOKE ALL ON FUNCTION
    tide.submit(text, tide.resvec, integer, integer, text, boolean, boolean, text, boolean,
                integer, text, jsonb, interval, integer, text, text, text,
                bigint[], boolean, timestamptz, jsonb, text, jsonb, text, interval, interval),
    tide.cancel(bigint),
    tide.register_node(text, tide.resvec, text, jsonb, integer[], text),
    tide.drain_node(text),
    tide.down_node(text, text),
    tide.resume_node(text),
    tide._set_node_state(text, text[], text),
    tide.claim(text),
    tide.claim_evictions(text),
    tide.started(bigint),
    tide.exited(bigint, integer),
    tide.evicted(bigint),
    tide.heartbeat(text),
    tide._check_launcher(text),
    tide._node_info(text),
    tide._node_back(text),
    tide._launcher_target(bigint, text),
    tide._apply_cancel(bigint[]),
    tide._create_retries(bigint[]),
    tide._rollup_jobs(bigint[], bigint[], bigint[]),
    tide._nodes_lost(text[], text, boolean),
    tide._nodes_set_down(),
    tide._jobs_limits_changed(),
    tide._late_exits(bigint[], integer[]),
    tide._jobs_before_insert(),
    tide._job_tasks_before_write(),
    tide._check_job_tasks(),
    tide._jobs_after_insert(),
    tide._jobs_after_update(),
    tide._jobs_after_delete(),
    tide._job_tasks_after_delete(),
    tide._job_events_refuse_change(),
    tide._allocations_after_insert(),
    tide._allocations_after_update(),
    tide._allocations_release_decided(),
    tide._reconsider_unschedulable(),
    tide._nodes_before_update(),
    tide._queues_before_write(),
    tide._workload_shapes_before_write(),
    tide._jobs_queue_exists(),
    tide._queues_keep_jobs(),
    tide._queues_renamed(),
    tide._admit_job(text, text, boolean, boolean, text, integer),
    tide._jobs_payload_update(),
    tide._owner_channel_of(text),
    tide._channel_for(text),
    tide.owner_channel(),
    tide._job_notices(text[], bigint[], text[]),
    tide._jobs_notify(),
    tide.submit_array(text, tide.resvec, integer, integer, integer, integer, text, boolean, boolean,
                      text, boolean, integer, text, jsonb, interval, integer, text, text, text,
                      bigint[], boolean, timestamptz, jsonb, text, jsonb, text, interval, interval),
    tide.hold(bigint),
    tide.release(bigint),
    tide._set_hold(bigint, boolean),
    tide.hold_queue(text),
    tide.release_queue(text),
    tide._set_queue_hold(text, boolean),
    tide.cancel_array(bigint),
    tide._refresh_waits(bigint[]),
    tide._job_outcomes(bigint[]),
    tide._judge_dependencies(bigint[], bigint[]),
    tide._array_refill(bigint[]),
    tide._jobs_ended(bigint[]),
    tide._jobs_pipelines_after_insert(),
    tide._jobs_pipelines_after_update(),
    tide._jobs_pipelines_after_delete(),
    tide._job_dependencies_before_insert(),
    tide._job_dependencies_after_insert(),
    tide._job_dependencies_after_change(),
    tide._queues_hold_changed(),
    tide._wake_due()
    FROM PUBLIC;

GRANT EXECUTE ON FUNCTION
    tide.submit(text, tide.resvec, integer, integer, text, boolean, boolean, text, boolean,
                integer, text, jsonb, interval, integer, text, text, text,
                bigint[], boolean, timestamptz, jsonb, text, jsonb, text, interval, interval),
    tide.cancel(bigint),
    tide._admit_job(text, text, boolean, boolean, text, integer),
    tide.owner_channel(),
    tide._channel_for(text),
    tide.submit_array(text, tide.resvec, integer, integer, integer, integer, text, boolean, boolean,
                      text, boolean, integer, text, jsonb, interval, integer, text, text, text,
                      bigint[], boolean, timestamptz, jsonb, text, jsonb, text, interval, interval),
    tide.hold(bigint),
    tide.release(bigint),
    tide._set_hold(bigint, boolean),
    tide.cancel_array(bigint),
    -- (the dependency trigger runs with the caller's rights)
    tide._job_dependencies_before_insert()
    TO tide_submitter, tide_admin;
GRANT EXECUTE ON FUNCTION
    tide.hold_queue(text),
    tide.release_queue(text),
    tide._set_queue_hold(text, boolean),
    tide._wake_due()
    TO tide_admin;
GRANT EXECUTE ON FUNCTION
    tide.register_node(text, tide.resvec, text, jsonb, integer[], text),
    tide.drain_node(text),
    tide.down_node(text, text),
    tide.resume_node(text),
    tide._set_node_state(text, text[], text),
    tide._nodes_lost(text[], text, boolean)
    TO tide_admin;
GRANT EXECUTE ON FUNCTION
    tide.claim(text),
    tide.claim_evictions(text),
    tide.started(bigint),
    tide.exited(bigint, integer),
    tide.evicted(bigint),
    tide.heartbeat(text),
    tide._check_launcher(text),
    tide._node_info(text),
    tide._node_back(text),
    tide._late_exits(bigint[], integer[]),
    tide._launcher_target(bigint, text)
    TO tide_launcher, tide_admin;
-- tide.node_channel, tide._may_launch, tide._launches_job, tide._cycle_lock_key,
-- tide._writer (a trigger's WHEN calls it with the rights of whoever writes the table),
-- tide._current_cycle, tide._restoring, tide._name_max, tide._late_exit_reason and the value checks (tide._check_name,
-- _check_choice, _check_job_values, _check_task_values, _check_node_values, _check_payload with _cut and
-- _payload_max, _job_time_limit) stay executable by PUBLIC: they only compute or answer yes or no (and policies call them as
-- the querying role).  tide._channel_for answers only for a role the session may act as (R-C5).
