-- Errors a user meets first: every bad argument or column value is refused
-- naming the argument, the value and the limit, with a hint; no constraint
-- names, no rows printed back, no INSERT text in the context, no job id
-- that the rollback removed.
\set SHOW_CONTEXT never
SET client_min_messages = notice;
INSERT INTO tide.queues (name) VALUES ('train');
SELECT tide.register_node('n1', 'cpu=32, gpu=8', 'H100');
-- 10,240 characters that do not compress: as an index key they would not fit
CREATE TEMP TABLE long_name AS SELECT string_agg(md5(i::text), '') AS s FROM generate_series(1, 320) i;

-- tide.submit
SELECT tide.submit('train', 'gpu=1', replicas => 100000);
SELECT tide.submit('train', 'gpu=1', max_retries => 101);
SELECT tide.submit('train', 'gpu=1', max_retries => -1);
SELECT tide.submit('train', 'gpu=1', time_limit => '1000 years');
SELECT tide.submit('train', 'gpu=1', time_limit => '0');
SELECT tide.submit('train', 'gpu=1', gpu_type => '');
SELECT tide.submit('train', 'gpu=1', gpu_type => (SELECT s FROM long_name));
SELECT tide.submit('train', 'gpu=1', node_selector => '[1]');
SELECT tide.submit('train', 'gpu=1', node_selector => '"zone=a"');
SELECT tide.submit('train', 'gpu=1', role => '');
SELECT tide.submit('train', 'gpu=1', role => (SELECT s FROM long_name));
SELECT tide.submit('train', '');
SELECT tide.submit('train', 'gpu=1.5');
SELECT tide.submit('train', 'gpu=1', service_type => 'batch');
SELECT tide.submit('nope', 'gpu=1');
-- the refused submissions took no job id: the first job is job 1
SELECT tide.submit('train', 'gpu=1');

-- INSERT INTO tide.jobs and tide.job_tasks
INSERT INTO tide.jobs (queue, max_retries) VALUES ('train', 101);
INSERT INTO tide.jobs (queue, time_limit) VALUES ('train', '1000 years');
INSERT INTO tide.jobs (queue, gpu_type) VALUES ('train', '');
INSERT INTO tide.jobs (queue, node_selector) VALUES ('train', '[]');
INSERT INTO tide.jobs (queue, min_available) VALUES ('train', 0);
INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (1, 'more', 100000, 'gpu=1');
INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (1, '', 1, 'gpu=1');
INSERT INTO tide.job_tasks (job_id, role, replicas, request) SELECT 1, s, 1, 'gpu=1' FROM long_name;
INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (1, 'more', 1, '');

-- tide.register_node
SELECT tide.register_node((SELECT s FROM long_name), 'cpu=1');
SELECT tide.register_node('n2', 'cpu=1', labels => '[]');
SELECT tide.register_node('n2', 'cpu=1', gpu_type => '');
SELECT tide.register_node('n2', 'cpu=1', resource_group => '');
SELECT tide.register_node('n2', 'gpu=2.5');
SELECT tide.register_node('n2', 'gpu=100');
SELECT tide.register_node('n2', 'gpu=2', gpu_topology => '{0,40000}');
SELECT tide.register_node('n2', 'gpu=2', gpu_topology => '{{0},{1}}');
SELECT tide.register_node('n2', 'gpu=2', gpu_topology => '{0}');

-- INSERT INTO tide.queues
INSERT INTO tide.queues (name) VALUES ('');
INSERT INTO tide.queues (name) SELECT s FROM long_name;
INSERT INTO tide.queues (name, resource_group) VALUES ('x', '');
INSERT INTO tide.queues (name, submit_role) VALUES ('x', '');
INSERT INTO tide.queues (name, min_runtime) VALUES ('x', '1000 years');
INSERT INTO tide.queues (name, placement) VALUES ('x', 'random');
INSERT INTO tide.queues (name, preemption_within) VALUES ('x', 'always');
INSERT INTO tide.queues (name, service_type) VALUES ('x', 'batch');
UPDATE tide.queues SET placement = 'fullest' WHERE name = 'train';

-- The context of an error names functions and lines, never a statement's
-- text (line numbers written as N).
CREATE FUNCTION pg_temp.context_of(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    c text;
BEGIN
    EXECUTE sql;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS c = PG_EXCEPTION_CONTEXT;
    -- (less this function's own lines: its EXECUTE and itself)
    RETURN regexp_replace(regexp_replace(c, 'line \d+', 'line N', 'g'),
                          '\n(SQL statement "|PL/pgSQL function pg_temp)[^\n]*', '', 'g');
END $$;
SELECT pg_temp.context_of($$SELECT tide.submit('train', 'gpu=1', max_retries => 101)$$);
SELECT pg_temp.context_of($$SELECT tide.submit('train', 'gpu=1.5')$$);
SELECT pg_temp.context_of($$SELECT tide.submit('nope', 'gpu=1')$$);
SELECT pg_temp.context_of($$SELECT tide.register_node('n2', 'cpu=1', labels => '[]')$$);
SELECT pg_temp.context_of($$INSERT INTO tide.jobs (queue, max_retries) VALUES ('train', 101)$$);

-- Leave the database as the install left it for the tests after this one
-- (pg_regress runs them all in one database, and they count job ids).
TRUNCATE tide.queues, tide.nodes, tide.jobs, tide.job_tasks, tide.allocations, tide.evictions,
         tide.eviction_holds, tide.job_events, tide.cycles, tide.reason_backlog RESTART IDENTITY;
