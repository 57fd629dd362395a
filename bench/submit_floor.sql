-- pgbench script: the rows of one submission, written into trigger-less
-- copies of tide.jobs, tide.job_tasks and tide.job_events with the same
-- columns, defaults, checks and indexes (bench/submit_throughput.sh): the
-- floor any submit path pays.
WITH j AS (
    INSERT INTO floor.jobs (queue, service_type, command, state_reason)
    VALUES ('bench', 'training', 'true', 'submitted') RETURNING id),
t AS (
    INSERT INTO floor.job_tasks (job_id, role, replicas, request)
    SELECT id, 'main', 1, 'cpu=1, gpu=1'::tide.resvec FROM j),
e AS (
    INSERT INTO floor.job_events (job_id, old_state, new_state, reason)
    SELECT id, NULL, 'pending', 'submitted' FROM j)
SELECT id FROM j;
