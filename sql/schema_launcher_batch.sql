-- The set-based launcher reports: what a launcher sees (NOTICEs, errors).
-- pgTAP (test/pgtap/api_launcher_batch.sql) covers the semantics and roles.
-- Runs after schema.sql in the same database: its own queue, node and ids,
-- removed at the end.
\set SHOW_CONTEXT never
SELECT (SELECT last_value FROM tide.jobs_id_seq) AS jl, (SELECT is_called FROM tide.jobs_id_seq) AS jc,
       (SELECT last_value FROM tide.allocations_id_seq) AS al, (SELECT is_called FROM tide.allocations_id_seq) AS ac \gset
SELECT setval('tide.jobs_id_seq', 5000, false) > 0 AS j, setval('tide.allocations_id_seq', 6000, false) > 0 AS a;
INSERT INTO tide.queues (name) VALUES ('lb_q');
SELECT tide.register_node('lb_n1', 'cpu=8');
SELECT tide.submit('lb_q', 'cpu=1', replicas => 3);
UPDATE tide.jobs SET state = 'allocated', state_reason = 'placed by the test' WHERE id = 5000;
INSERT INTO tide.allocations (job_id, role, replica, node, resources)
SELECT 5000, 'main', r, 'lb_n1', 'cpu=1' FROM generate_series(0, 2) r;

SELECT tide.started(ARRAY[6000, 6001]::bigint[]);
-- repeats: one NOTICE counting them
SELECT tide.started(ARRAY[6000, 6002, 6001, 6002]::bigint[]);
SELECT state FROM tide.jobs WHERE id = 5000;
-- errors name the first bad allocation in array order
SELECT tide.evicted(ARRAY[6002, 6000]::bigint[]);
SELECT tide.started(ARRAY[6000, 99, 98]::bigint[]);
SELECT tide.exited(ARRAY[6000, 6001]::bigint[], ARRAY[0]);
SELECT tide.exited(ARRAY[6000, 6001]::bigint[], ARRAY[0, NULL]);
SELECT tide.started(NULL::bigint[]);
-- a failing member fails the gang; the member outside the batch is told to stop
SELECT tide.exited(ARRAY[6001, 6000]::bigint[], ARRAY[0, 3]);
SELECT id, state, exit_code, release_reason FROM tide.allocations WHERE job_id = 5000 ORDER BY id;
SELECT state, exit_code, state_reason FROM tide.jobs WHERE id = 5000;
SELECT tide.exited(ARRAY[6000, 6001, 6002]::bigint[], ARRAY[1, 1, 143]);
SELECT tide.evicted(ARRAY[6002, 6001]::bigint[]);
SELECT tide.started(ARRAY[6002]::bigint[]);
SELECT id, state, exit_code, release_reason FROM tide.allocations WHERE job_id = 5000 ORDER BY id;

DELETE FROM tide.jobs WHERE queue = 'lb_q';
DELETE FROM tide.nodes WHERE name = 'lb_n1';
DELETE FROM tide.queues WHERE name = 'lb_q';
SELECT setval('tide.jobs_id_seq', :jl, :'jc'::boolean) > 0 AS j, setval('tide.allocations_id_seq', :al, :'ac'::boolean) > 0 AS a;
