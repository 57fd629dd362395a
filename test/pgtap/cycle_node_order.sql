-- The load reads the nodes in no order and sorts them by name itself, in
-- the byte order of COLLATE "C" (unsigned bytes, a prefix before the names
-- it starts): empty equal nodes tie, and ties go by name (R-L5), so whole-
-- node jobs placed in one cycle take the nodes in that order, whatever the
-- order they were registered in or the database's collation.  Equal
-- capacities, card types and topologies of neighbours are shared by the
-- load: nodes that differ from the one before them keep their own.
BEGIN;
CREATE EXTENSION pg_tide;
SET client_min_messages = warning;
SELECT plan(5);

INSERT INTO tide.queues (name, placement) VALUES ('q', 'pack');
-- registered out of order; C order: 0 A A1 A10 A2 B Z a a-1 ab b e z é ü
SELECT tide.register_node(n, 'cpu=8, memory=64Gi, gpu=8', 'H100', '{}', '{0,0,0,0,1,1,1,1}')
  FROM unnest(ARRAY['ü', 'b', 'A10', 'a', 'Z', 'é', 'A', 'ab', 'e', 'B', '0', 'a-1', 'A2', 'z', 'A1']) n;
-- one whole-node job for each, in submission order
CREATE TEMP TABLE j AS
SELECT k, tide.submit('q', 'cpu=8, gpu=8') AS id FROM generate_series(1, 15) k;
SELECT tide.run_cycle();
SELECT is((SELECT string_agg(a.node, ' ' ORDER BY j.k) FROM j JOIN tide.allocations a ON a.job_id = j.id),
          '0 A A1 A10 A2 B Z a a-1 ab b e z é ü',
          'R-L5: equal empty nodes are taken by name in byte order (COLLATE "C")');

-- nodes that differ from their neighbour in name order keep their own
-- capacity, card type and topology
UPDATE tide.allocations SET state = 'released', released_at = now(), release_reason = 'test';
DELETE FROM tide.jobs;
DELETE FROM tide.nodes;
SELECT tide.register_node('m1', 'cpu=8, memory=64Gi, gpu=8', 'H100', '{}', '{0,0,0,0,1,1,1,1}');
SELECT tide.register_node('m2', 'cpu=8, memory=64Gi, gpu=4', 'A100', '{"zone": "b"}', '{0,0,1,1}');
SELECT tide.register_node('m3', 'cpu=8, memory=64Gi, gpu=8', 'H100', '{}', '{0,1,0,1,0,1,0,1}');
SELECT tide.submit('q', 'cpu=1, gpu=4', gpu_type => 'A100') AS a100 \gset
SELECT tide.submit('q', 'cpu=1, gpu=2', node_selector => '{"zone": "b"}') AS zb \gset
SELECT tide.submit('q', 'cpu=1, gpu=8', gpu_type => 'H100') AS h100 \gset
SELECT tide.submit('q', 'cpu=1, gpu=4', gpu_type => 'H100') AS half \gset
SELECT tide.run_cycle();
SELECT is((SELECT node || ':' || gpus::text FROM tide.allocations WHERE job_id = :a100), 'm2:0-3',
          'the 4-GPU A100 node between two H100 nodes keeps its card type and capacity');
SELECT is((SELECT state FROM tide.jobs WHERE id = :zb), 'pending',
          'its labels are its own: the zone=b job waits for it');
SELECT is((SELECT node || ':' || gpus::text FROM tide.allocations WHERE job_id = :h100), 'm1:0-7',
          'a whole H100 node by name');
SELECT is((SELECT node || ':' || gpus::text FROM tide.allocations WHERE job_id = :half), 'm3:0,2,4,6',
          'm3 keeps its own topology: 4 GPUs of one domain are 0,2,4,6');

SELECT * FROM finish();
ROLLBACK;
