-- pgbench script: the rows of :batch submissions in one statement per
-- trigger-less copy (bench/submit_throughput.sh): the floor of a batch.
WITH j AS (
    INSERT INTO floor.jobs (queue, service_type, command, state_reason)
    SELECT 'bench', 'training', 'true', 'submitted' FROM generate_series(1, :batch) RETURNING id),
t AS (
    INSERT INTO floor.job_tasks (job_id, role, replicas, request)
    SELECT id, 'main', 1, 'cpu=1, gpu=1'::tide.resvec FROM j),
e AS (
    INSERT INTO floor.job_events (job_id, old_state, new_state, reason)
    SELECT id, NULL, 'pending', 'submitted' FROM j)
SELECT count(*) FROM j;
