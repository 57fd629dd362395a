-- Placement through tide.run_cycle(): seed 001's node filters and GPU
-- masks (R-L4, R-L5, R-L6), seed 003's fractional GPUs, gangs (R-L3),
-- admission with quota, capability and card keys (R-A1), unschedulable
-- jobs (R-A2), pending reasons (R-C2).
BEGIN;
CREATE EXTENSION pg_tide;
SET client_min_messages = warning;
SELECT plan(36);

CREATE FUNCTION pg_temp.jstate(j bigint) RETURNS text LANGUAGE sql AS
    $$ SELECT state FROM tide.jobs WHERE id = j $$;
CREATE FUNCTION pg_temp.reason(j bigint) RETURNS text LANGUAGE sql AS
    $$ SELECT pending_reason FROM tide.jobs WHERE id = j $$;
CREATE FUNCTION pg_temp.where_(j bigint) RETURNS text LANGUAGE sql AS
    $$ SELECT string_agg(node || ':' || gpus::text || coalesce('@' || gpu_milli, ''), ' ' ORDER BY role, replica)
         FROM tide.allocations WHERE job_id = j AND state <> 'released' $$;
CREATE FUNCTION pg_temp.clear() RETURNS void LANGUAGE sql AS $$
    UPDATE tide.allocations SET state = 'released', released_at = now(), release_reason = 'test'
     WHERE state <> 'released';
    DELETE FROM tide.jobs $$;

-- pack, not the default frag: the node choices below are pack's (R-L5)
INSERT INTO tide.queues (name, placement) VALUES ('q', 'pack');

-- ---------------------------------------------------------------- seed 001 filters
SELECT tide.register_node('a-gpu', 'cpu=32, memory=64Gi, gpu=8', 'K80', '{"zone": "a"}');
SELECT tide.register_node('b-gpu', 'cpu=32, memory=64Gi, gpu=8', 'V100', '{"zone": "b"}');
SELECT tide.register_node('c-cpu', 'cpu=32, memory=64Gi', NULL, '{"zone": "a"}');
SELECT tide.register_node('d-cpu', 'cpu=32, memory=64Gi', NULL, '{"zone": "b"}');
SELECT tide.drain_node('d-cpu');
SELECT tide.submit('q', 'cpu=1, gpu=1', node_selector => '{"zone": "b"}') AS zb \gset
SELECT tide.submit('q', 'cpu=1, gpu=1', gpu_type => 'K80') AS k80 \gset
SELECT tide.submit('q', 'cpu=1') AS cpujob \gset
SELECT tide.submit('q', 'cpu=1', node_selector => '{"zone": "b"}') AS cpub \gset
SELECT tide.submit('q', 'cpu=1, gpu=1', gpu_type => 'B200') AS b200 \gset
SELECT tide.submit('q', 'cpu=1', node_selector => '{"zone": "c"}') AS zc \gset
SELECT tide.run_cycle();
SELECT is(pg_temp.where_(:zb), 'b-gpu:0', 'R-L4 labels: the zone=b GPU job on b-gpu, GPU 0');
SELECT is(pg_temp.where_(:k80), 'a-gpu:0', 'R-L4 gpu_type: the K80 job on the K80 node');
SELECT is(pg_temp.where_(:cpujob), 'c-cpu:', 'R-L4: a CPU job avoids the GPU nodes');
SELECT is(pg_temp.jstate(:cpub), 'pending', 'R-L4: zone=b CPU job: d-cpu is draining');
SELECT is(pg_temp.reason(:cpub), 'no ready node for cpu=1 (1 draining or down)', 'its reason says why');
SELECT ok((SELECT unschedulable FROM tide.jobs WHERE id = :b200), 'R-A2: no B200 node at all: unschedulable');
SELECT is(pg_temp.reason(:b200), 'no node with gpu_type B200 in the resource group', 'R-A2 reason names the card type');
SELECT is(pg_temp.reason(:zc), 'no node has labels zone=c', 'R-A2 reason names the missing label');
SELECT is((SELECT jobs_unschedulable FROM tide.cycles ORDER BY id DESC LIMIT 1), 2, 'the cycle row counts 2 unschedulable jobs');
-- unschedulable jobs are skipped until nodes or queues change
SELECT tide.run_cycle();
SELECT is((SELECT jobs_considered FROM tide.cycles ORDER BY id DESC LIMIT 1), 1,
          'R-A2: the next cycle considers only the draining-blocked job, not the unschedulable ones');
SELECT tide.register_node('e-gpu', 'cpu=32, memory=64Gi, gpu=8', 'B200');
SELECT tide.run_cycle();
SELECT is(pg_temp.where_(:b200), 'e-gpu:0', 'R-A2: a B200 node arrives: the job is looked at again and placed');
SELECT tide.resume_node('d-cpu');
SELECT tide.run_cycle();
SELECT is(pg_temp.where_(:cpub), 'd-cpu:', 'd-cpu ready again: the zone=b CPU job lands there');
SELECT pg_temp.clear();
DELETE FROM tide.nodes;

-- ---------------------------------------------------------------- packing and gangs (R-L5, R-L3)
SELECT tide.register_node('n3', 'cpu=64, memory=512Gi, gpu=8', 'H100', '{}', '{0,0,0,0,1,1,1,1}');
SELECT tide.register_node('n1', 'cpu=64, memory=512Gi, gpu=8', 'H100', '{}', '{0,0,0,0,1,1,1,1}');
SELECT tide.register_node('n2', 'cpu=64, memory=512Gi, gpu=8', 'H100', '{}', '{0,0,0,0,1,1,1,1}');
SELECT tide.submit('q', 'cpu=4, gpu=4', priority => 10) AS half \gset
SELECT tide.run_cycle();
SELECT is(pg_temp.where_(:half), 'n1:0-3', 'R-L5/R-L6: empty nodes tie, n1 by name; GPUs 0-3 fill domain 0');
SELECT tide.submit('q', 'cpu=1, gpu=2') AS two \gset
SELECT tide.run_cycle();
SELECT is(pg_temp.where_(:two), 'n1:4,5', 'R-L5 pack: 2 GPUs on the half-full n1, inside domain 1');
SELECT tide.submit('q', 'cpu=1, gpu=4', replicas => 2) AS gang \gset
SELECT tide.run_cycle();
SELECT is(pg_temp.where_(:gang), 'n2:0-3 n2:4-7', 'R-L5: a gang of 2 x 4 GPUs on one node, one domain each');
SELECT tide.submit('q', 'cpu=1, gpu=4', replicas => 3) AS big \gset
SELECT tide.run_cycle();
SELECT is(pg_temp.jstate(:big), 'pending', 'R-L3: 3 x 4 GPUs with room for 2: nothing placed');
SELECT is(pg_temp.reason(:big), 'gang 3 x cpu=1, gpu=4: best fit places 2; no ready node has room for cpu=1, gpu=4 (2 nodes: short of gpu on 2)', 'R-C2: the gang reason with the best fit');
SELECT is((SELECT count(*)::int FROM tide.allocations WHERE job_id = :big), 0, 'R-L3: no allocation row of it survives');
SELECT tide.submit('q', 'cpu=1, gpu=4', replicas => 3, min_available => 2) AS elastic \gset
SELECT tide.run_cycle();
SELECT is(pg_temp.where_(:elastic), 'n3:0-3 n3:4-7', 'R-L3 min_available 2 of 3: placed with the 2 that fit');
SELECT pg_temp.clear();

-- multi-role: one parameter server (cpu) and two workers (8 GPUs each)
INSERT INTO tide.jobs (id, queue, name) OVERRIDING SYSTEM VALUE VALUES (900, 'q', 'mpi');
INSERT INTO tide.job_tasks (job_id, role, replicas, request)
VALUES (900, 'ps', 1, 'cpu=4'), (900, 'worker', 2, 'cpu=8, gpu=8');
SELECT tide.run_cycle();
SELECT is(pg_temp.where_(900), 'n1: n1:0-7 n2:0-7',
          'R-L3/R-L4: the ps role stays with the gang on a GPU node; the workers take n1 and n2');
SELECT pg_temp.clear();

-- ---------------------------------------------------------------- seed 003 fractions
SELECT tide.submit('q', 'gpu=0.5') AS f1 \gset
SELECT tide.submit('q', 'gpu=0.5') AS f2 \gset
SELECT tide.submit('q', 'gpu=0.25') AS f3 \gset
SELECT tide.run_cycle();
SELECT is(pg_temp.where_(:f1) || ' ' || pg_temp.where_(:f2), 'n1:0@500 n1:0@500',
          'seed 003: two halves share GPU 0 (a shared GPU first)');
SELECT is(pg_temp.where_(:f3), 'n1:1@250', 'the quarter opens GPU 1 (GPU 0 is full)');
SELECT tide.submit('q', 'gpu=0.8') AS f4 \gset
SELECT tide.run_cycle();
SELECT is(pg_temp.where_(:f4), 'n1:2@800', 'R-L6: 0.8 does not fit GPU 1 (0.75 left): a free GPU, never two parts added');
SELECT tide.submit('q', 'gpu=0.75') AS f5 \gset
SELECT tide.run_cycle();
SELECT is(pg_temp.where_(:f5), 'n1:1@750', 'R-L6: 0.75 fills the shared GPU 1 exactly');
SELECT pg_temp.clear();

-- ---------------------------------------------------------------- admission (R-A1)
INSERT INTO tide.queues (name, capability) VALUES ('capped', 'NVIDIA-H200=8');
INSERT INTO tide.queues (name, quota, priority) VALUES ('lo', 'gpu=8', 0);
INSERT INTO tide.queues (name, priority) VALUES ('hi', 100);
DELETE FROM tide.nodes;
SELECT tide.register_node('h1', 'cpu=64, gpu=8', 'NVIDIA-H200');
SELECT tide.register_node('h2', 'cpu=64, gpu=8', 'NVIDIA-H200');
SELECT tide.submit('capped', 'gpu=8') AS c1 \gset
SELECT tide.submit('capped', 'gpu=4') AS c2 \gset
SELECT tide.run_cycle();
SELECT is(pg_temp.jstate(:c1), 'allocated', 'card capability 8: the first 8 H200 GPUs are placed');
SELECT is(pg_temp.reason(:c2), 'queue capped NVIDIA-H200 capability: 8 used + 4 asked > 8',
          'R-A1 card key: h2 is free but the queue''s H200 capability is reached');
SELECT pg_temp.clear();
UPDATE tide.queues SET capability = 'gpu=8' WHERE name = 'capped';
SELECT tide.submit('capped', 'gpu=4', replicas => 4) AS never \gset
SELECT tide.run_cycle();
SELECT is(pg_temp.reason(:never), 'queue capped gpu capability is 8, the job needs 16', 'R-A2: above capability: unschedulable');
SELECT ok((SELECT unschedulable FROM tide.jobs WHERE id = :never), 'and marked so');
UPDATE tide.queues SET capability = NULL WHERE name = 'capped';
SELECT ok(NOT (SELECT unschedulable FROM tide.jobs WHERE id = :never), 'R-A2: a queue change clears the mark');
SELECT pg_temp.clear();
-- borrowing never takes what a guaranteed job of the same cycle can use
DELETE FROM tide.nodes WHERE name = 'h2';
SELECT tide.submit('hi', 'gpu=8') AS borrow \gset
SELECT tide.submit('lo', 'gpu=8') AS owed \gset
SELECT tide.run_cycle();
SELECT is(pg_temp.jstate(:owed), 'allocated', 'R-A1: lo''s job within quota is placed');
SELECT is(pg_temp.jstate(:borrow), 'pending', 'R-A1: hi (priority 100, no quota) borrows, so it comes after');

-- resource groups never mix (POLICY: nothing crosses resource groups); spread; non-text labels
SELECT pg_temp.clear();
DELETE FROM tide.nodes;
INSERT INTO tide.queues (name, resource_group, placement) VALUES ('gb_spread', 'gb', 'spread');
INSERT INTO tide.queues (name, resource_group) VALUES ('gc', 'gc');
SELECT tide.register_node('a1', 'cpu=8', NULL, '{"rack": 1}', NULL, 'ga');
SELECT tide.register_node('b1', 'cpu=8', NULL, '{"rack": 1}', NULL, 'gb');
SELECT tide.register_node('b2', 'cpu=8', NULL, '{"rack": 2}', NULL, 'gb');
SELECT tide.submit('gb_spread', 'cpu=2') AS s1 \gset
SELECT tide.submit('gb_spread', 'cpu=2') AS s2 \gset
SELECT tide.submit('gb_spread', 'cpu=1', node_selector => '{"rack": 2}') AS s3 \gset
SELECT tide.submit('gc', 'cpu=1') AS nogroup \gset
SELECT tide.run_cycle();
SELECT is(pg_temp.where_(:s1) || ' ' || pg_temp.where_(:s2), 'b1: b2:',
          'R-L5 spread: the second job goes to the emptier node; only group gb''s nodes are used');
SELECT is(pg_temp.where_(:s3), 'b2:', 'a numeric label value matches the same selector value');
SELECT is(pg_temp.reason(:nogroup), 'no node in queue gc''s resource group', 'R-A2: a queue whose group has no node');

-- a node with more GPUs than a mask holds is refused at registration (the
-- cycle would also give it no work rather than stop)
SELECT pg_temp.clear();
SELECT tide.register_node('h1', 'cpu=64, gpu=8', 'NVIDIA-H200');
SELECT throws_ok($$SELECT tide.register_node('huge', 'cpu=64, gpu=80', 'NVIDIA-H200')$$, '54000',
                 'node "huge" has 80 GPUs, at most 64 are supported', 'a node of 80 GPUs is refused');
SELECT throws_ok($$INSERT INTO tide.nodes (name, capacity) VALUES ('huge2', 'gpu=2147483648')$$, '23514', NULL,
                 'and a direct insert too (the constraint behind it)');

SELECT * FROM finish();
ROLLBACK;
