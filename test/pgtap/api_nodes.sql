-- Nodes and queues: register_node, drain_node, resume_node, the R-A2
-- reconsideration of unschedulable jobs, and the cycle's constants.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(39);

-- register_node: insert, then update (keeping the state).
SELECT lives_ok($$SELECT tide.register_node('g1', 'cpu=64, memory=512Gi, gpu=8', 'NVIDIA-H200', '{"zone": "a"}', '{0,0,0,0,1,1,1,1}', 'gpu')$$,
                'register a node');
SELECT results_eq($$SELECT gpu_type, labels, gpu_topology, resource_group, state, tide.get(capacity, 'gpu') FROM tide.nodes WHERE name = 'g1'$$,
                  $$VALUES ('NVIDIA-H200', '{"zone": "a"}'::jsonb, '{0,0,0,0,1,1,1,1}'::int[], 'gpu', 'ready', 8::numeric)$$,
                  'every argument stored, state ready');
SELECT tide.drain_node('g1');
SELECT lives_ok($$SELECT tide.register_node('g1', 'cpu=64, memory=512Gi, gpu=4', 'NVIDIA-H100')$$, 'register again: update');
SELECT results_eq($$SELECT gpu_type, labels, gpu_topology, resource_group, state, tide.get(capacity, 'gpu') FROM tide.nodes WHERE name = 'g1'$$,
                  $$VALUES ('NVIDIA-H100', '{}'::jsonb, NULL::int[], 'default', 'draining', 4::numeric)$$,
                  'capacity, type, labels, topology, group replaced; state kept');
SELECT is((SELECT count(*)::int FROM tide.nodes WHERE name = 'g1'), 1, 'still one row');
SELECT lives_ok($$SELECT tide.register_node('cpu-only', 'cpu=16')$$, 'a node without GPUs');
SELECT throws_ok($$SELECT tide.register_node('', 'cpu=1')$$, '22023', 'node name must not be empty', 'empty name');
SELECT throws_ok($$SELECT tide.register_node(NULL, 'cpu=1')$$, '22023', 'node name must not be empty', 'NULL name');
SELECT throws_ok($$SELECT tide.register_node('x', NULL)$$, '22004', 'capacity of node "x" must not be NULL', 'NULL capacity');
SELECT throws_ok($$SELECT tide.register_node('x', 'gpu=2.5')$$, '22023', 'GPU count 2.5 of node "x" is not a whole number', 'fractional GPU count');
SELECT throws_ok($$SELECT tide.register_node('x', 'gpu=2', gpu_topology => '{0}')$$, '22023', 'gpu_topology of node "x" has 1 entries for 2 GPUs', 'topology too short');
SELECT throws_ok($$SELECT tide.register_node('x', 'gpu=2', gpu_topology => '{0,NULL}')$$, '23514', NULL, 'topology with a NULL domain');
SELECT throws_ok($$SELECT tide.register_node('x', 'gpu=2', labels => '[]')$$, '23514', NULL, 'labels must be an object');
SELECT throws_ok($$SELECT tide.register_node('x', 'gpu=2', gpu_type => '')$$, '23514', NULL, 'empty gpu_type');
SELECT throws_ok($$SELECT tide.register_node('x', 'gpu=2', resource_group => '')$$, '23514', NULL, 'empty resource group');
SELECT throws_ok($$INSERT INTO tide.nodes (name, capacity, state) VALUES ('x', 'cpu=1', 'broken')$$, '23514', NULL, 'bad node state');

-- drain_node / resume_node
SELECT is(tide.drain_node('n1'), 'draining', 'drain a ready node');
SELECT is(tide.drain_node('n1'), 'draining', 'drain again: a NOTICE, no change');
SELECT is(tide.resume_node('n1'), 'ready', 'resume it');
SELECT is(tide.resume_node('n1'), 'ready', 'resume again: a NOTICE');
UPDATE tide.nodes SET state = 'down' WHERE name = 'n2';
SELECT is(tide.drain_node('n2'), 'down', 'a down node stays down when drained');
SELECT is(tide.resume_node('n2'), 'ready', 'resume brings a down node back');
SELECT throws_ok($$SELECT tide.drain_node('nowhere')$$, '42704', 'node "nowhere" does not exist', 'drain: unknown node');
SELECT throws_ok($$SELECT tide.resume_node('nowhere')$$, '42704', 'node "nowhere" does not exist', 'resume: unknown node');

-- R-A2: unschedulable jobs are looked at again when queues or nodes change.
SELECT tide.submit('q1', 'gpu=64') AS big \gset
UPDATE tide.jobs SET unschedulable = true, pending_reason = 'no node has 64 GPUs' WHERE id = :big;
SELECT tide.heartbeat('n1');
SELECT ok((SELECT unschedulable FROM tide.jobs WHERE id = :big), 'a heartbeat changes nothing');
SELECT tide.register_node('huge', 'gpu=64');
SELECT ok(NOT (SELECT unschedulable FROM tide.jobs WHERE id = :big), 'a new node: looked at again');
UPDATE tide.jobs SET unschedulable = true WHERE id = :big;
UPDATE tide.queues SET capability = 'gpu=128' WHERE name = 'q1';
SELECT ok(NOT (SELECT unschedulable FROM tide.jobs WHERE id = :big), 'a queue change: looked at again');
UPDATE tide.jobs SET unschedulable = true WHERE id = :big;
UPDATE tide.nodes SET labels = '{"rack": "7"}' WHERE name = 'n1';
SELECT ok(NOT (SELECT unschedulable FROM tide.jobs WHERE id = :big), 'new node labels: looked at again');

-- The cycle's constants.
SELECT is(tide._cycle_lock_key(), 8388346165908733953, 'the cycle lock key');
SELECT ok(pg_try_advisory_xact_lock(tide._cycle_lock_key()), 'a cycle takes it');
SELECT is(tide._current_cycle(), NULL, 'no cycle id outside a cycle');
SELECT set_config('tide.cycle_id', '17', true);
SELECT is(tide._current_cycle(), 17::bigint, 'the transaction''s cycle id');
SELECT set_config('tide.cycle_id', '', true);
SELECT is(tide._current_cycle(), NULL, 'an empty setting is no cycle');

-- A node keeps what its live allocations need (R-C4): capacity, GPUs in
-- use, resource group and GPU type.
SELECT tide.register_node('keep', 'cpu=8, gpu=4', 'H100');
SELECT tide.submit('q1', 'cpu=4, gpu=1') AS kj \gset
SELECT pg_temp.place(:kj, ARRAY['keep']);
UPDATE tide.allocations SET gpus = '3' WHERE job_id = :kj;
SELECT throws_ok($$SELECT tide.register_node('keep', 'cpu=2, gpu=4', 'H100')$$, '55006',
                 'capacity "cpu=2, gpu=4" of node "keep" does not hold its live allocations ("cpu=4, gpu=1")',
                 'shrinking below the live allocations is refused');
SELECT throws_ok($$SELECT tide.register_node('keep', 'cpu=8, gpu=2', 'H100')$$, '55006',
                 'node "keep" would lose GPUs in use (3)', 'dropping a GPU in use is refused');
SELECT throws_ok($$SELECT tide.register_node('keep', 'cpu=8, gpu=4', 'H100', resource_group => 'other')$$, '55006',
                 'node "keep" has 1 live allocations: its resource group and GPU type cannot change',
                 'moving a busy node to another resource group is refused');
SELECT throws_ok($$UPDATE tide.nodes SET gpu_type = 'A100' WHERE name = 'keep'$$, '55006', NULL,
                 'so is changing its GPU type, by a direct UPDATE too');
SELECT lives_ok($$SELECT tide.register_node('keep', 'cpu=4, gpu=4', 'H100', '{"rack": "b"}')$$,
                'a change its work survives is fine (labels, capacity it still holds)');
SELECT tide.exited((pg_temp.allocs(:kj))[1], 0);
SELECT lives_ok($$SELECT tide.register_node('keep', 'cpu=1', NULL, resource_group => 'other')$$,
                'once its work is done, anything goes');

SELECT * FROM finish();
ROLLBACK;
