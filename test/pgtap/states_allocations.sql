-- Every allocation state change: the 6 in tide.allocation_transitions are
-- allowed, the 6 others refused; released is final; new ones are assigned.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(12 + 6 + 7 + 4);

-- An allocation in a given state, of a job that is evicting (so the roll-up
-- leaves its job alone), built without the checks.
CREATE FUNCTION pg_temp.alloc_in(st text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE j bigint; a bigint;
BEGIN
    j := tide.submit('q1', 'gpu=1', max_retries => 0);
    PERFORM pg_temp.place(j, ARRAY['n1']);
    a := (pg_temp.allocs(j))[1];
    SET LOCAL session_replication_role = replica;
    UPDATE tide.jobs SET state = 'failed' WHERE id = j;
    UPDATE tide.allocations SET state = st, released_at = CASE WHEN st = 'released' THEN now() END WHERE id = a;
    SET LOCAL session_replication_role = origin;
    RETURN a;
END $$;
CREATE FUNCTION pg_temp.try(a text, b text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE x bigint := pg_temp.alloc_in(a);
BEGIN
    UPDATE tide.allocations SET state = b, released_at = CASE WHEN b = 'released' THEN now() END WHERE id = x;
    RETURN 'ok';
EXCEPTION WHEN object_not_in_prerequisite_state THEN
    RETURN regexp_replace(SQLERRM, '[0-9]+', 'N');
END $$;

SELECT is(pg_temp.try(a, b),
          CASE WHEN t.old_state IS NOT NULL THEN 'ok'
               WHEN a = 'released' THEN 'allocation N is released and cannot change'
               ELSE format('allocation N cannot go from %s to %s', a, b) END,
          format('%s -> %s %s', a, b, CASE WHEN t.old_state IS NOT NULL THEN 'allowed' ELSE 'refused' END))
  FROM unnest(ARRAY['assigned','running','releasing','released']) WITH ORDINALITY s1(a, i)
 CROSS JOIN unnest(ARRAY['assigned','running','releasing','released']) WITH ORDINALITY s2(b, k)
  LEFT JOIN tide.allocation_transitions t ON t.old_state = a AND t.new_state = b
 WHERE a <> b
 ORDER BY i, k;

SELECT pg_temp.alloc_in('released') AS rel \gset
SELECT throws_ok(format($$UPDATE tide.allocations SET exit_code = 7 WHERE id = %s$$, :rel), '55000',
                 format('allocation %s is released and cannot change', :rel), 'a released allocation keeps its exit code');
SELECT throws_ok(format($$UPDATE tide.allocations SET released_at = now() - interval '1 day' WHERE id = %s$$, :rel), '55000',
                 NULL, 'a released allocation is released exactly once');
SELECT lives_ok(format($$UPDATE tide.allocations SET claimed_at = now() WHERE id = %s$$, :rel),
                'bookkeeping columns of a released allocation may change');
SELECT throws_ok($$INSERT INTO tide.allocations (job_id, role, replica, node, resources, state)
                   SELECT id, 'main', 5, 'n1', 'gpu=1', 'running' FROM tide.jobs LIMIT 1$$, '23514', NULL,
                 'a new allocation must be assigned');
SELECT throws_ok($$UPDATE tide.allocations SET state = 'released' WHERE id = (SELECT min(id) FROM tide.allocations WHERE state = 'running')$$,
                 '23514', NULL, 'released needs released_at');
SELECT throws_ok(format($$INSERT INTO tide.allocations (job_id, role, replica, node, resources)
                   SELECT job_id, role, replica, node, resources FROM tide.allocations WHERE id = %s$$,
                   pg_temp.alloc_in('running')), '23505', NULL, 'a replica has at most one live allocation');

-- R-C4: live allocations fit their node and never share a GPU.
SELECT tide.submit('q1', 'cpu=10, gpu=1', replicas => 2) AS g \gset
UPDATE tide.jobs SET state = 'allocated', state_reason = 'test' WHERE id = :g;
SELECT throws_ok(format($$INSERT INTO tide.allocations (job_id, role, replica, node, resources)
                          VALUES (%1$s, 'main', 0, 'n3', 'cpu=10'), (%1$s, 'main', 1, 'n3', 'cpu=10')$$, :g),
                 '23514', NULL, 'more than a node''s capacity is refused');
SELECT throws_ok(format($$INSERT INTO tide.allocations (job_id, role, replica, node, resources, gpus)
                          VALUES (%1$s, 'main', 0, 'n2', 'gpu=1', '5'), (%1$s, 'main', 1, 'n2', 'gpu=1', '5')$$, :g),
                 '23514', 'node "n2" would be overcommitted: a GPU is given to two allocations', 'the same GPU twice is refused');
SELECT throws_ok(format($$INSERT INTO tide.allocations (job_id, role, replica, node, resources, gpus)
                          VALUES (%1$s, 'main', 0, 'n2', 'gpu=1', '8')$$, :g),
                 '23514', NULL, 'a GPU index the node does not have is refused');
SELECT throws_ok(format($$INSERT INTO tide.allocations (job_id, role, replica, node, resources, gpus, gpu_milli)
                          VALUES (%1$s, 'main', 0, 'n2', 'gpu=0.6', '6', 600), (%1$s, 'main', 1, 'n2', 'gpu=0.6', '6', 600)$$, :g),
                 '23514', 'node "n2" would be overcommitted: GPU 6 is shared beyond one GPU or also given whole', 'shares above one GPU are refused');
SELECT lives_ok(format($$INSERT INTO tide.allocations (job_id, role, replica, node, resources, gpus, gpu_milli)
                         VALUES (%1$s, 'main', 0, 'n2', 'gpu=0.5', '6', 500), (%1$s, 'main', 1, 'n2', 'gpu=0.5', '6', 500)$$, :g),
                'two halves of one GPU fit');
UPDATE tide.allocations SET state = 'released', released_at = now(), release_reason = 'exited', exit_code = 0 WHERE job_id = :g;
SELECT lives_ok(format($$INSERT INTO tide.allocations (job_id, role, replica, node, resources, gpus)
                         VALUES (%1$s, 'main', 0, 'n2', 'gpu=1', '6')$$, :g),
                'released allocations hold nothing');
SELECT throws_ok(format($$INSERT INTO tide.allocations (job_id, role, replica, node, resources, gpus, gpu_milli)
                          VALUES (%1$s, 'main', 1, 'n2', 'gpu=0.5', '6', 500)$$, :g),
                 '23514', NULL, 'a share of a GPU held whole is refused');

-- R-C4 also when a live allocation changes in place (an administrator's
-- correction): the node it then holds must still fit.
SELECT throws_like(format($$UPDATE tide.allocations SET resources = 'cpu=40, gpu=1'
                            WHERE job_id = %s AND state <> 'released'$$, :g),
                   'node "n2" would be overcommitted: live allocations hold %',
                   'a live allocation grown past its node''s capacity is refused');
SELECT throws_ok(format($$UPDATE tide.allocations SET gpus = '8' WHERE job_id = %s AND state <> 'released'$$, :g),
                 '23514', 'node "n2" would be overcommitted: GPUs 8 are not all on the node',
                 'a live allocation moved to a GPU the node does not have is refused');
SELECT throws_ok(format($$UPDATE tide.allocations SET node = 'n3' WHERE job_id = %s AND state <> 'released'$$, :g),
                 '23514', NULL, 'a live allocation moved to a node without room is refused');
SELECT lives_ok(format($$UPDATE tide.allocations SET resources = 'cpu=8, gpu=1' WHERE job_id = %s AND state <> 'released'$$, :g),
                'a live allocation changed within its node''s capacity is kept');

SELECT * FROM finish();
ROLLBACK;
