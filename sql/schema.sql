-- Error and notice texts of the schema part: what users read when they get
-- something wrong, and what idempotent calls say.
\set SHOW_CONTEXT never
SET client_min_messages = notice;
INSERT INTO tide.queues (name, quota) VALUES ('train', 'gpu=8');
SELECT tide.register_node('n1', 'cpu=32, gpu=8', 'H100');
SELECT tide.register_node('n2', 'cpu=32, gpu=8', 'H100');
CREATE ROLE regress_launcher_a IN ROLE tide_launcher;
CREATE ROLE regress_launcher_b IN ROLE tide_launcher;
UPDATE tide.nodes SET launcher_role = 'regress_launcher_b' WHERE name = 'n2';

-- Submission checks.
SELECT tide.submit('nope', 'gpu=1');
SELECT tide.submit('train', 'gpu=1.5');
SELECT tide.submit('train', 'gpu=1', replicas => 0);
SELECT tide.submit('train', 'gpu=1', replicas => 2, min_available => 3);
SELECT tide.submit('train', 'gpu=1', min_available => 0);
SELECT tide.submit('train', 'gpu=1', service_type => 'batch');
SELECT tide.submit('train', 'gpu=1', on_evict => 'ignore');
SELECT tide.submit('train', 'gpu=1', time_limit => '-1 hour');
SELECT tide.submit('train', NULL);
BEGIN;
INSERT INTO tide.jobs (queue, name) VALUES ('train', 'no tasks');
COMMIT;
BEGIN;
INSERT INTO tide.jobs (id, queue, min_available) VALUES (1000, 'train', 5);
INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (1000, 'ps', 1, 'cpu=1'), (1000, 'worker', 3, 'gpu=1');
COMMIT;
INSERT INTO tide.jobs (id, queue, state) VALUES (1001, 'train', 'running');

-- A job walked through its life.
BEGIN;
INSERT INTO tide.jobs (id, queue, name, max_retries) VALUES (2000, 'train', 'gang', 1);
INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (2000, 'worker', 2, 'gpu=1');
COMMIT;
UPDATE tide.jobs SET state = 'running' WHERE id = 2000;
UPDATE tide.jobs SET state = 'allocated', state_reason = 'placed on n1, n2' WHERE id = 2000;
INSERT INTO tide.allocations (id, job_id, role, replica, node, resources, gpus)
VALUES (1, 2000, 'worker', 0, 'n1', 'gpu=1', '0'), (2, 2000, 'worker', 1, 'n2', 'gpu=1', '0');
SET ROLE regress_launcher_a;
SELECT id, job_id, role, replica, node, state FROM tide.claim('n1');
SELECT id FROM tide.claim('n2');
SELECT tide.started(2);
SELECT tide.started(1);
SELECT tide.started(1);
SELECT tide.evicted(1);
SELECT tide.exited(1, 2);
SELECT tide.exited(1, 2);
SELECT tide.started(1);
SELECT tide.exited(99, 0);
RESET ROLE;
SELECT id, state, exit_code, avoid_nodes, state_reason FROM tide.jobs WHERE id = 2000 OR retry_of = 2000 ORDER BY id;
SELECT id, state, release_reason FROM tide.allocations ORDER BY id;
SET ROLE regress_launcher_b;
SELECT id, state FROM tide.claim_evictions('n2');
SELECT tide.evicted(2);
SELECT tide.evicted(2);
RESET ROLE;
SELECT job_id, old_state, new_state, reason FROM tide.job_events WHERE job_id >= 2000 ORDER BY id;
SELECT job_id, reason, goal, acked_at IS NOT NULL AS acked FROM tide.evictions;
UPDATE tide.allocations SET exit_code = 0 WHERE id = 1;
UPDATE tide.allocations SET state = 'running', released_at = NULL WHERE id = 2;
UPDATE tide.job_events SET reason = 'rewritten';

-- Cancel.
SELECT tide.cancel(2000);
SELECT tide.cancel(424242);
SELECT tide.cancel(id) FROM tide.jobs WHERE retry_of = 2000;
SELECT tide.cancel(id) FROM tide.jobs WHERE retry_of = 2000;

-- Nodes.
SELECT tide.register_node('n3', 'gpu=2.5');
SELECT tide.register_node('n3', 'gpu=2', gpu_topology => '{0}');
SELECT tide.drain_node('n1');
SELECT tide.drain_node('n1');
SELECT tide.resume_node('n1');
SELECT tide.drain_node('nowhere');
SET ROLE regress_launcher_a;
SELECT tide.heartbeat('n2');
SELECT tide.heartbeat('nowhere');
RESET ROLE;
DROP ROLE regress_launcher_a, regress_launcher_b;
