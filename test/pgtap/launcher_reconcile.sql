-- R-C7: a launcher and the database agree on what runs on its node.
-- Allocations carry a random token that no failover hands out twice; a
-- launcher names what it runs by id, job and token.  tide.reconcile
-- releases the node's running (or releasing) work that its launcher does
-- not run (a running one as lost: its job is retried or gets its
-- on_evict), leaves assigned work to be claimed, and answers keep or stop
-- for each allocation the launcher names; reports that name a token refuse
-- an id that now names another allocation.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(44);

SELECT has_column('tide', 'allocations', 'token', 'tide.allocations.token');
SELECT col_not_null('tide', 'allocations', 'token', 'every allocation has a token');
SELECT has_function('tide', 'reconcile', ARRAY['text', 'bigint[]', 'bigint[]', 'uuid[]'],
                    'tide.reconcile(node, allocation_ids, job_ids, tokens)');
SELECT ok(NOT has_function_privilege('tap_alice', 'tide.reconcile(text,bigint[],bigint[],uuid[])', 'EXECUTE'),
          'a submitter may not reconcile');

-- on n1: keep (running, the launcher runs it), ghost (running, it does not),
-- gone (released while it ran), fresh (assigned, not started yet), stopping
-- (releasing, the launcher does not run it), gang (2 replicas, one ghost);
-- on n3 (tap_l3's): other
SELECT tide.submit('q1', 'gpu=1', name => 'keep') AS jkeep,
       tide.submit('q1', 'gpu=1', name => 'ghost', max_retries => 1) AS jghost,
       tide.submit('q1', 'gpu=1', name => 'gone') AS jgone,
       tide.submit('q1', 'gpu=1', name => 'fresh') AS jfresh,
       tide.submit('q1', 'gpu=1', name => 'stopping') AS jstop,
       tide.submit('q1', 'gpu=1', replicas => 2, name => 'gang', on_evict => 'requeue') AS jgang,
       tide.submit('q1', 'cpu=1', name => 'other') AS jother \gset
SELECT pg_temp.place(j, ARRAY['n1']) FROM unnest(ARRAY[:jkeep, :jghost, :jgone, :jfresh, :jstop, :jgang]::bigint[]) j;
SELECT pg_temp.place(:jother, ARRAY['n3']);
SELECT (pg_temp.allocs(:jkeep))[1] AS akeep, (pg_temp.allocs(:jghost))[1] AS aghost,
       (pg_temp.allocs(:jgone))[1] AS agone, (pg_temp.allocs(:jfresh))[1] AS afresh,
       (pg_temp.allocs(:jstop))[1] AS astop, (pg_temp.allocs(:jgang))[1] AS g1, (pg_temp.allocs(:jgang))[2] AS g2,
       (pg_temp.allocs(:jother))[1] AS aother \gset
SELECT tide.started(ARRAY[:akeep, :aghost, :agone, :astop, :g1, :g2]::bigint[]);
SELECT tide.started(:aother);
SELECT tide.cancel(:jstop);
UPDATE tide.allocations SET state = 'released', released_at = now(), release_reason = 'node down'
 WHERE id = :agone;
SELECT token AS tkeep FROM tide.allocations WHERE id = :akeep \gset
SELECT token AS tgone FROM tide.allocations WHERE id = :agone \gset
SELECT token AS tg1 FROM tide.allocations WHERE id = :g1 \gset
SELECT token AS tother FROM tide.allocations WHERE id = :aother \gset
SELECT is((SELECT count(DISTINCT token) FROM tide.allocations), (SELECT count(*) FROM tide.allocations),
          'tokens are distinct');

-- ---------------------------------------------------------------- arguments and rights
SET LOCAL ROLE tap_l1;
SELECT throws_ok($$SELECT * FROM tide.reconcile('n1', NULL, '{}', '{}')$$, '22004',
                 'allocation_ids, job_ids and tokens must not be NULL', 'NULL arrays are refused');
SELECT throws_ok($$SELECT * FROM tide.reconcile('n1', '{1,2}', '{1}', '{NULL,NULL}')$$, '2202E',
                 'allocation_ids has 2 elements, job_ids 1 and tokens 2', 'arrays of other lengths are refused');
SELECT throws_ok($$SELECT * FROM tide.reconcile('n1', '{{1}}', '{{1}}', '{{NULL}}')$$, '2202E',
                 'allocation_ids, job_ids and tokens must be one-dimensional arrays', 'two dimensions are refused');
SELECT throws_ok($$SELECT * FROM tide.reconcile('n1', '{NULL}', '{1}', '{NULL}')$$, '22004',
                 'allocation_ids and job_ids must not contain NULL', 'a NULL id is refused');
SELECT throws_ok($$SELECT * FROM tide.reconcile('n3', '{}', '{}', '{}')$$, '42501',
                 'role "tap_l1" may not act for node "n3"', 'another node''s launcher is refused');
SELECT throws_ok($$SELECT * FROM tide.reconcile('nx', '{}', '{}', '{}')$$, '42704',
                 'node "nx" does not exist', 'an unknown node is refused');
RESET ROLE;
SELECT is(pg_temp.astate(:aghost), 'running', 'refused calls changed nothing');

-- ---------------------------------------------------------------- the answer
-- The launcher runs keep (by its token), gone (by its token), g1 (no
-- token: an older launcher's record), the other node's allocation, an id
-- that does not exist, and keep's id under another token (a reused id).
SET LOCAL ROLE tap_l1;
CREATE TEMP TABLE answer ON COMMIT DROP AS
SELECT * FROM tide.reconcile('n1',
                             ARRAY[:akeep, :agone, :g1, :aother, 999999]::bigint[],
                             ARRAY[:jkeep, :jgone, :jgang, :jother, 1]::bigint[],
                             ARRAY[:'tkeep', :'tgone', NULL, :'tother', NULL]::uuid[]);
RESET ROLE;
SELECT is((SELECT action FROM answer WHERE allocation_id = :akeep), 'keep', 'its own running allocation: keep');
SELECT is((SELECT gpus FROM answer WHERE allocation_id = :akeep), '0', '... with the GPUs it holds');
SELECT is((SELECT action FROM answer WHERE allocation_id = :g1), 'keep', 'no token: matched by id and job');
SELECT is((SELECT token FROM answer WHERE allocation_id = :g1), :'tg1'::uuid, '... and the answer gives its token');
SELECT is((SELECT action || ': ' || reason FROM answer WHERE allocation_id = :agone),
          format('stop: allocation %s was released (node down)', :agone), 'released while it ran: stop, with why');
SELECT is((SELECT action || ': ' || reason FROM answer WHERE allocation_id = :aother),
          format('stop: allocation %s does not exist on node n1 (lost in a failover?)', :aother),
          'another node''s allocation: stop, telling nothing of it');
SELECT is((SELECT action || ': ' || reason FROM answer WHERE allocation_id = 999999),
          'stop: allocation 999999 does not exist on node n1 (lost in a failover?)', 'an id that does not exist: stop');
SELECT is((SELECT count(*) FROM answer WHERE action = 'released'), 3::bigint,
          'three released: the ghost, the gang''s other replica, and the one being stopped');
SELECT is((SELECT reason FROM answer WHERE allocation_id = :aghost),
          format('allocation %s of job %s was running on node n1 in the database, but its launcher does not run it: released (its job is handled as lost)',
                 :aghost, :jghost), 'the ghost: released as lost');
SELECT is((SELECT reason FROM answer WHERE allocation_id = :astop),
          format('allocation %s of job %s was being stopped on node n1 in the database, but its launcher does not run it: released (as evicted)',
                 :astop, :jstop), 'the one being stopped: released as evicted');
SELECT is((SELECT count(*) FROM answer WHERE allocation_id = :afresh), 0::bigint,
          'assigned work it does not know is not its to judge: left for the next claim');

-- what the database did
SELECT is(pg_temp.astate(:aghost), 'released', 'the ghost is released');
SELECT is((SELECT release_reason FROM tide.allocations WHERE id = :aghost),
          'its launcher does not run it (reconciled when the launcher connected)', '... with the reason');
SELECT is(pg_temp.jstate(:jghost), 'failed', 'its job is handled as lost: failed with a retry left');
SELECT is((SELECT state FROM tide.jobs WHERE retry_of = :jghost), 'pending', '... and retried');
SELECT is(pg_temp.astate(:g2), 'released', 'the gang''s unrun replica is released');
SELECT is(pg_temp.astate(:g1), 'releasing', '... and the replica the launcher runs is being stopped (the gang was lost)');
SELECT is(pg_temp.jstate(:jgang), 'evicting', 'the gang is evicted (on_evict requeue)');
SELECT is(pg_temp.astate(:astop), 'released', 'the one being stopped is released');
SELECT is(pg_temp.jstate(:jstop), 'cancelled', '... and its cancel is done');
SELECT is(pg_temp.astate(:akeep), 'running', 'its own work is untouched');
SELECT is(pg_temp.astate(:afresh), 'assigned', 'assigned work is untouched');
SELECT is(pg_temp.astate(:aother), 'running', 'another node''s work is untouched');

-- a second reconcile with the same list changes nothing more
SET LOCAL ROLE tap_l1;
SELECT is((SELECT count(*) FROM tide.reconcile('n1', ARRAY[:akeep, :g1]::bigint[], ARRAY[:jkeep, :jgang]::bigint[],
                                               ARRAY[:'tkeep', :'tg1']::uuid[]) WHERE action <> 'keep'),
          0::bigint, 'a second reconcile with the same work changes nothing more');
RESET ROLE;
SELECT is((SELECT count(*) FROM tide.allocations WHERE node = 'n1' AND state = 'running'), 1::bigint,
          'only what the launcher runs is running');

-- ---------------------------------------------------------------- reports name tokens
-- keep's id, reported under a token that is not its own (the launcher's
-- old allocation of that id was lost): refused, nothing changes
SET LOCAL ROLE tap_l1;
SELECT results_eq(format($$SELECT outcome, reason FROM tide.report_exited(ARRAY[%s]::bigint[], '{0}', NULL, NULL,
                                                                          '{00000000-0000-0000-0000-000000000001}')$$, :akeep),
                  format($$VALUES ('refused', 'allocation %s is another allocation now (of job %s): the one reported (token 00000000-0000-0000-0000-000000000001) no longer exists, e.g. lost in an asynchronous failover')$$,
                         :akeep, :jkeep),
                  'an exit naming another token: refused, with why');
SELECT results_eq(format($$SELECT outcome FROM tide.report_started(ARRAY[%s]::bigint[], '{00000000-0000-0000-0000-000000000001}')$$, :afresh),
                  $$VALUES ('refused')$$, 'a start naming another token: refused');
SELECT results_eq(format($$SELECT outcome FROM tide.report_evicted(ARRAY[%s]::bigint[], '{00000000-0000-0000-0000-000000000001}')$$, :g1),
                  $$VALUES ('refused')$$, 'an eviction naming another token: refused');
RESET ROLE;
SELECT is(pg_temp.astate(:akeep) || ' ' || pg_temp.astate(:afresh) || ' ' || pg_temp.astate(:g1),
          'running assigned releasing', 'refused reports changed nothing');
SELECT throws_ok(format($$SELECT * FROM tide.report_started(ARRAY[%s]::bigint[], '{NULL,NULL}')$$, :afresh), '2202E',
                 'allocation_ids has 1 elements but tokens has 2', 'tokens of another length are refused');
SET LOCAL ROLE tap_l1;
SELECT results_eq(format($$SELECT outcome FROM tide.report_exited(ARRAY[%s, %s]::bigint[], '{0,0}', NULL, NULL, ARRAY[%L, NULL]::uuid[])$$,
                         :akeep, :afresh, :'tkeep'),
                  $$VALUES ('changed'), ('changed')$$,
                  'its own token, or none: reported as before');
RESET ROLE;
SELECT is(pg_temp.jstate(:jkeep), 'succeeded', 'the exit under its own token counts');

SELECT * FROM finish();
ROLLBACK;
