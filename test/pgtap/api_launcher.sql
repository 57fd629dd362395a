-- The launcher calls: node_channel, claim, started, exited, claim_evictions,
-- evicted, heartbeat; good and bad arguments, idempotency, other nodes.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(53);

-- node_channel: deterministic, a safe identifier for any name.
SELECT is(tide.node_channel('n1'), 'tide_node_' || md5('n1'), 'channel of n1');
SELECT is(tide.node_channel('n1'), tide.node_channel('n1'), 'deterministic');
SELECT isnt(tide.node_channel('n1'), tide.node_channel('N1'), 'names are case-sensitive');
SELECT ok(tide.node_channel(repeat('x', 500) || ' "; DROP TABLE x; ') ~ '^tide_node_[0-9a-f]{32}$', 'any name gives a plain identifier');
SELECT ok(octet_length(tide.node_channel(repeat('é', 300))) <= 63, 'at most 63 bytes');
SELECT is(tide.node_channel(NULL), NULL, 'NULL node: NULL channel');
SELECT lives_ok(format('LISTEN %s', tide.node_channel('gpu-node-01.example.com')), 'LISTEN accepts it unquoted');

SELECT tide.submit('q1', 'cpu=1, gpu=1', replicas => 3, command => 'sleep 1') AS j \gset
SELECT pg_temp.place(:j, ARRAY['n1', 'n1', 'n2']);
SELECT (pg_temp.allocs(:j))[1] AS a1, (pg_temp.allocs(:j))[2] AS a2, (pg_temp.allocs(:j))[3] AS a3 \gset

-- claim
SELECT results_eq($$SELECT id FROM tide.claim('n1')$$, format('VALUES (%s::bigint), (%s)', :a1, :a2), 'claim: assigned allocations of the node, in id order');
SELECT ok((SELECT bool_and(claimed_at IS NOT NULL) FROM tide.allocations WHERE node = 'n1'), 'claim marks them claimed');
SELECT claimed_at AS c1 FROM tide.allocations WHERE id = :a1 \gset
SELECT results_eq($$SELECT id FROM tide.claim('n1')$$, format('VALUES (%s::bigint), (%s)', :a1, :a2), 'claim again: the same');
SELECT is((SELECT claimed_at FROM tide.allocations WHERE id = :a1), :'c1'::timestamptz, 'a second claim keeps the first claim time');
SELECT is_empty($$SELECT * FROM tide.claim('n3')$$, 'claim on an idle node: nothing');
SELECT throws_ok($$SELECT * FROM tide.claim('nowhere')$$, '42704', 'node "nowhere" does not exist', 'claim: unknown node');
SELECT throws_ok($$SELECT * FROM tide.claim(NULL)$$, '42704', NULL, 'claim: NULL node');

-- started
SELECT lives_ok(format('SELECT tide.started(%s)', :a1), 'started');
SELECT is(pg_temp.astate(:a1), 'running', 'assigned -> running');
SELECT ok((SELECT started_at IS NOT NULL FROM tide.allocations WHERE id = :a1), 'started_at set');
SELECT is(pg_temp.jstate(:j), 'allocated', 'the job waits for its other replicas');
SELECT lives_ok(format('SELECT tide.started(%s)', :a1), 'started again: a NOTICE, no error');
SELECT is((SELECT count(*)::int FROM tide.job_events WHERE job_id = :j), 2, 'and no event');
SELECT results_eq($$SELECT id FROM tide.claim('n1')$$, format('VALUES (%s::bigint)', :a2), 'a started allocation is no longer claimed');
SELECT throws_ok('SELECT tide.started(-1)', '42704', 'allocation -1 does not exist', 'started: unknown allocation');
SELECT throws_ok('SELECT tide.started(NULL::bigint)', '42704', 'allocation NULL does not exist', 'started: NULL allocation');
SELECT lives_ok(format('SELECT tide.started(%s)', :a2), 'second replica started');
SELECT lives_ok(format('SELECT tide.started(%s)', :a3), 'third replica started');
SELECT is(pg_temp.jstate(:j), 'running', 'all started: the job runs');

-- exited
SELECT lives_ok(format('SELECT tide.exited(%s, 0)', :a1), 'exited 0');
SELECT results_eq(format('SELECT state, exit_code, release_reason FROM tide.allocations WHERE id = %s', :a1),
                  $$VALUES ('released', 0, 'exited')$$, 'released with its exit code');
SELECT lives_ok(format('SELECT tide.exited(%s, 5)', :a1), 'exited again: a NOTICE, no error');
SELECT is((SELECT exit_code FROM tide.allocations WHERE id = :a1), 0, 'the second exited changed nothing');
SELECT is(pg_temp.jstate(:j), 'running', 'other replicas still run');
SELECT throws_ok(format('SELECT tide.exited(%s, NULL)', :a2), '22004', 'exit_code must not be NULL', 'exited: NULL exit code');
SELECT throws_ok('SELECT tide.exited(-1, 0)', '42704', 'allocation -1 does not exist', 'exited: unknown allocation');
SELECT throws_ok(format('SELECT tide.started(%s)', :a1), '55000', format('allocation %s is released, so it cannot start', :a1), 'started after exit');

-- evictions
SELECT throws_ok(format('SELECT tide.evicted(%s)', :a2), '55000', format('allocation %s is running, not being evicted', :a2), 'evicted: not being evicted');
SELECT tide.cancel(:j);
SELECT results_eq($$SELECT id, state FROM tide.claim_evictions('n1')$$, format($$VALUES (%s::bigint, 'releasing')$$, :a2), 'claim_evictions of n1');
SELECT results_eq($$SELECT id FROM tide.claim_evictions('n1')$$, format('VALUES (%s::bigint)', :a2), 'claim_evictions again: the same');
SELECT throws_ok(format('SELECT tide.started(%s)', :a2), '55000', format('allocation %s is releasing, so it cannot start', :a2), 'started while releasing');
SELECT lives_ok(format('SELECT tide.evicted(%s)', :a2), 'evicted');
SELECT results_eq(format('SELECT state, release_reason FROM tide.allocations WHERE id = %s', :a2), $$VALUES ('released', 'cancelled')$$, 'released, with the eviction''s reason');
SELECT lives_ok(format('SELECT tide.evicted(%s)', :a2), 'evicted again: a NOTICE, no error');
SELECT is_empty($$SELECT * FROM tide.claim_evictions('n1')$$, 'nothing left to stop on n1');
SELECT throws_ok('SELECT tide.evicted(-1)', '42704', 'allocation -1 does not exist', 'evicted: unknown allocation');
SELECT throws_ok($$SELECT * FROM tide.claim_evictions('nowhere')$$, '42704', 'node "nowhere" does not exist', 'claim_evictions: unknown node');

-- heartbeat
SELECT is(tide.heartbeat('n2'), 'ready', 'heartbeat returns the node state');
SELECT is((SELECT heartbeat_at FROM tide.nodes WHERE name = 'n2'), now(), 'heartbeat_at set');
SELECT throws_ok($$SELECT tide.heartbeat('nowhere')$$, '42704', 'node "nowhere" does not exist', 'heartbeat: unknown node');

-- The SECURITY DEFINER helpers take the acting role as an argument: a
-- session naming a role it is not is refused.  (SET SESSION AUTHORIZATION
-- makes the session really tap_l1: SET ROLE would leave a superuser session.)
SELECT tide.submit('q1', 'gpu=1') AS lj \gset
SELECT pg_temp.place(:lj, ARRAY['n1']);
SELECT (pg_temp.allocs(:lj))[1] AS la \gset
SELECT tide.started(:la);
SET LOCAL SESSION AUTHORIZATION tap_l1;
SELECT throws_ok(format('SELECT tide._launcher_target(%s, %L)', :a1, 'tap_admin'), '42501',
                 'session role "tap_l1" may not act as role "tap_admin"',
                 'a launcher cannot borrow an admin''s rights through the helper');
SELECT throws_ok(format('SELECT * FROM tide._launcher_targets(ARRAY[%s]::bigint[], %L)', :a1, 'tap_l3'), '42501',
                 'session role "tap_l1" may not act as role "tap_l3"', 'nor another launcher''s, in the batch helper');
SELECT lives_ok(format('SELECT tide._launcher_target(%s, %L)', :a1, 'tap_l1'), 'acting as itself is fine');
-- Nor can it strand a job by stopping or ending work behind the state
-- machine's back: releasing needs an eviction, an exit needs its code.
SELECT throws_ok(format($$UPDATE tide.allocations SET state = 'releasing' WHERE id = %s$$, :la), '55000',
                 format('allocation %s cannot be released while job %s is running', :la, :lj),
                 'a launcher''s own UPDATE to releasing is refused');
SELECT throws_ok(format($$UPDATE tide.allocations SET state = 'released', released_at = now(), release_reason = 'exited'
                          WHERE id = %s$$, :la), '23514', NULL,
                 'an exit without an exit code is refused');
RESET SESSION AUTHORIZATION;
SELECT throws_ok(format('SELECT tide._launcher_target(%s, %L)', :a1, 'no_such_role'), '42501',
                 'session role "postgres" may not act as role "no_such_role"', 'an unknown role is refused');

SELECT * FROM finish();
ROLLBACK;
