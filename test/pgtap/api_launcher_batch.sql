-- The set-based launcher calls tide.started(bigint[]), tide.exited(bigint[],
-- integer[]) and tide.evicted(bigint[]): good and bad arguments, the same
-- checks as the single-row calls, idempotence, mixed batches, job roll-up
-- from one call, and every role allowed or refused.  Then the per-id
-- reports tide.report_started/exited/evicted: changed, already and refused
-- in one call, accepted states read from tide.allocation_transitions.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(112);

SELECT has_function('tide', 'started', ARRAY['bigint[]'], 'tide.started(bigint[])');
SELECT has_function('tide', 'exited', ARRAY['bigint[]', 'integer[]'], 'tide.exited(bigint[], integer[])');
SELECT has_function('tide', 'evicted', ARRAY['bigint[]'], 'tide.evicted(bigint[])');
SELECT is((SELECT array_agg(p ORDER BY p) FROM unnest(ARRAY['tide.started(bigint[])', 'tide.exited(bigint[],integer[])',
                                                          'tide.evicted(bigint[])', 'tide._launcher_targets(bigint[],text,uuid[])']) p
            WHERE has_function_privilege('public', p::regprocedure, 'EXECUTE')),
          NULL, 'not executable by PUBLIC');
SELECT ok((SELECT bool_and(obj_description(p::regprocedure, 'pg_proc') IS NOT NULL)
             FROM unnest(ARRAY['tide.started(bigint[])', 'tide.exited(bigint[],integer[])',
                               'tide.evicted(bigint[])', 'tide._launcher_targets(bigint[],text,uuid[])']) p),
          'each has a comment');

-- A gang of 3 on n1, a single on n1, a pair on n1 and n2, a single on n3
-- (launcher_role tap_l3).
SELECT tide.submit('q1', 'gpu=1', replicas => 3) AS jg, tide.submit('q1', 'gpu=1') AS js,
       tide.submit('q1', 'gpu=1', replicas => 2) AS jp, tide.submit('q1', 'cpu=1') AS j3 \gset
SELECT pg_temp.place(:jg, ARRAY['n1']);
SELECT pg_temp.place(:js, ARRAY['n1']);
SELECT pg_temp.place(:jp, ARRAY['n1', 'n2']);
SELECT pg_temp.place(:j3, ARRAY['n3']);
SELECT (pg_temp.allocs(:jg))[1] AS g1, (pg_temp.allocs(:jg))[2] AS g2, (pg_temp.allocs(:jg))[3] AS g3,
       (pg_temp.allocs(:js))[1] AS s1, (pg_temp.allocs(:jp))[1] AS p1, (pg_temp.allocs(:jp))[2] AS p2,
       (pg_temp.allocs(:j3))[1] AS a3 \gset

-- ---------------------------------------------------------------- bad arguments
SELECT throws_ok('SELECT tide.started(NULL::bigint[])', '22004', 'allocation_ids must not be NULL', 'started: NULL array');
SELECT throws_ok('SELECT tide.evicted(NULL::bigint[])', '22004', 'allocation_ids must not be NULL', 'evicted: NULL array');
SELECT throws_ok('SELECT tide.exited(NULL::bigint[], ''{}''::integer[])', '22004', 'allocation_ids must not be NULL', 'exited: NULL ids');
SELECT throws_ok('SELECT tide.exited(''{}''::bigint[], NULL::integer[])', '22004', 'exit_codes must not be NULL', 'exited: NULL codes');
SELECT throws_ok(format('SELECT tide.started(ARRAY[%s, NULL]::bigint[])', :g1), '42704', 'allocation NULL does not exist', 'started: a NULL id');
SELECT throws_ok(format('SELECT tide.started(ARRAY[%s, -1, -2]::bigint[])', :g1), '42704', 'allocation -1 does not exist', 'started: the first unknown id is named');
SELECT throws_ok(format('SELECT tide.evicted(ARRAY[-5]::bigint[])'), '42704', 'allocation -5 does not exist', 'evicted: unknown id');
SELECT throws_ok(format('SELECT tide.exited(ARRAY[%s, -3]::bigint[], ''{0,0}'')', :g1), '42704', 'allocation -3 does not exist', 'exited: unknown id');
SELECT throws_ok(format('SELECT tide.started(ARRAY[[%s],[%s]]::bigint[])', :g1, :g2), '2202E',
                 'allocation_ids must be a one-dimensional array, not 2 dimensions', 'started: two dimensions');
SELECT throws_ok(format('SELECT tide.exited(ARRAY[%s, %s]::bigint[], ''{0}'')', :g1, :g2), '2202E',
                 'allocation_ids has 2 elements but exit_codes has 1', 'exited: lengths differ');
SELECT throws_ok(format('SELECT tide.exited(ARRAY[%s, %s]::bigint[], ''{0,NULL}'')', :g1, :g2), '22004',
                 format('exit code 2 (for allocation %s) must not be NULL', :g2), 'exited: a NULL exit code');
SELECT throws_ok(format('SELECT tide.evicted(ARRAY[%s, %s]::bigint[])', :g1, :g2), '55000',
                 format('allocation %s is assigned, not being evicted', :g1), 'evicted: not being evicted');
SELECT lives_ok('SELECT tide.started(''{}''::bigint[])', 'an empty batch reports nothing');
SELECT lives_ok('SELECT tide.exited(''{}''::bigint[], ''{}''::integer[])', 'an empty exited batch too');
SELECT is((SELECT count(*)::int FROM tide.allocations WHERE state <> 'assigned'), 0, 'refused batches changed nothing');

-- ---------------------------------------------------------------- started
SELECT lives_ok(format('SELECT tide.started(ARRAY[%s, %s, %s, %s]::bigint[])', :g3, :g1, :s1, :g2), 'started: one batch over two jobs');
SELECT is((SELECT array_agg(state ORDER BY id) FROM tide.allocations WHERE id IN (:g1, :g2, :g3, :s1)),
          '{running,running,running,running}'::text[], 'every member running');
SELECT ok((SELECT bool_and(started_at IS NOT NULL) FROM tide.allocations WHERE id IN (:g1, :g2, :g3, :s1)), 'started_at set');
SELECT is(ARRAY[pg_temp.jstate(:jg), pg_temp.jstate(:js)], '{running,running}', 'both jobs roll up to running');
SELECT is((SELECT count(*)::int FROM tide.job_events WHERE job_id IN (:jg, :js) AND new_state = 'running'), 2,
          'one history row per job');
SELECT started_at AS t_g1 FROM tide.allocations WHERE id = :g1 \gset
SELECT lives_ok(format('SELECT tide.started(ARRAY[%s, %s, %s]::bigint[])', :g1, :g2, :g1), 'started again (with a duplicate): a NOTICE, no error');
SELECT is((SELECT started_at FROM tide.allocations WHERE id = :g1), :'t_g1'::timestamptz, 'and nothing changed');
SELECT is((SELECT count(*)::int FROM tide.job_events WHERE job_id = :jg), 3, 'and no event');

-- mixed: one new, one repeat, two nodes
SELECT lives_ok(format('SELECT tide.started(ARRAY[%s, %s]::bigint[])', :g1, :p1), 'mixed batch: a repeat and a new start');
SELECT is(ARRAY[pg_temp.astate(:p1), pg_temp.astate(:p2)], '{running,assigned}', 'the new one started');
SELECT is(pg_temp.jstate(:jp), 'allocated', 'its job waits for the other replica');
SELECT lives_ok(format('SELECT tide.started(ARRAY[%s]::bigint[])', :p2), 'the replica on n2 starts');
SELECT is(pg_temp.jstate(:jp), 'running', 'now the job runs');

-- a bad state is named (first in array order) and nothing of the batch changes
UPDATE tide.allocations SET state = 'releasing' WHERE id = :a3;
SELECT tide.submit('q1', 'gpu=1', replicas => 2) AS jx \gset
SELECT pg_temp.place(:jx, ARRAY['n2']);
SELECT (pg_temp.allocs(:jx))[1] AS x1, (pg_temp.allocs(:jx))[2] AS x2 \gset
SELECT tide.exited(ARRAY[:x2]::bigint[], '{0}');
SELECT throws_ok(format('SELECT tide.started(ARRAY[%s, %s, %s]::bigint[])', :x1, :x2, :a3), '55000',
                 format('allocation %s is released, so it cannot start', :x2), 'started: the first bad state in array order');
SELECT throws_ok(format('SELECT tide.started(ARRAY[%s, %s]::bigint[])', :x1, :a3), '55000',
                 format('allocation %s is releasing, so it cannot start', :a3), 'started: releasing');
SELECT is(pg_temp.astate(:x1), 'assigned', 'the good member of a refused batch is unchanged');

-- ---------------------------------------------------------------- exited
SELECT lives_ok(format('SELECT tide.exited(ARRAY[%s, %s, %s]::bigint[], ''{0,0,0}'')', :g1, :g2, :g3), 'a gang exits 0 in one call');
SELECT is(pg_temp.jstate(:jg), 'succeeded', 'the job succeeded');
SELECT results_eq(format($$SELECT old_state, new_state FROM tide.job_events WHERE job_id = %s ORDER BY id$$, :jg),
                  $$VALUES (NULL, 'pending'), ('pending', 'allocated'), ('allocated', 'running'), ('running', 'succeeded')$$,
                  'its history: one row per change');
SELECT lives_ok(format('SELECT tide.exited(ARRAY[%s, %s]::bigint[], ''{7,7}'')', :g1, :s1), 'exited: a repeat and a new exit');
SELECT is((SELECT exit_code FROM tide.allocations WHERE id = :g1), 0, 'the repeat changed nothing');
SELECT results_eq(format('SELECT state, exit_code FROM tide.jobs WHERE id = %s', :js), $$VALUES ('failed', 7)$$,
                  'the new non-zero exit failed its job');
-- an id given twice: the first mention wins, as one call after the other would
SELECT lives_ok(format('SELECT tide.exited(ARRAY[%s, %s]::bigint[], ''{0,9}'')', :x1, :x1), 'exited: an id twice');
SELECT is((SELECT exit_code FROM tide.allocations WHERE id = :x1), 0, 'the first mention wins');
SELECT is(pg_temp.jstate(:jx), 'succeeded', 'and its job succeeded');

-- a failing member in a batch stops its gang
SELECT tide.submit('q1', 'gpu=1', replicas => 3) AS jf \gset
SELECT pg_temp.place(:jf, ARRAY['n2']);
SELECT (pg_temp.allocs(:jf))[1] AS f1, (pg_temp.allocs(:jf))[2] AS f2, (pg_temp.allocs(:jf))[3] AS f3 \gset
SELECT tide.started(ARRAY[:f1, :f2, :f3]::bigint[]);
SELECT lives_ok(format('SELECT tide.exited(ARRAY[%s, %s]::bigint[], ''{0,3}'')', :f1, :f2), 'a batch with a failing member');
SELECT results_eq(format('SELECT state, exit_code FROM tide.jobs WHERE id = %s', :jf), $$VALUES ('failed', 3)$$, 'the gang failed with its code');
SELECT results_eq(format('SELECT state, release_reason FROM tide.allocations WHERE id = %s', :f3),
                  $$VALUES ('releasing', 'gang member failed')$$, 'the member outside the batch is told to stop');
SELECT results_eq(format('SELECT goal, acked_at IS NULL FROM tide.evictions WHERE job_id = %s', :jf), $$VALUES ('fail', true)$$,
                  'one open eviction');
SELECT lives_ok(format('SELECT tide.evicted(ARRAY[%s]::bigint[])', :f3), 'its launcher reports it stopped');
SELECT results_eq(format('SELECT state, release_reason FROM tide.allocations WHERE id = %s', :f3),
                  $$VALUES ('released', 'gang member failed')$$, 'released, keeping the reason');
SELECT ok((SELECT acked_at IS NOT NULL FROM tide.evictions WHERE job_id = :jf), 'the eviction is acknowledged');
SELECT lives_ok(format('SELECT tide.evicted(ARRAY[%s, %s]::bigint[])', :f3, :f3), 'evicted again: a NOTICE, no error');
SELECT throws_ok(format('SELECT tide.started(ARRAY[%s]::bigint[])', :f3), '55000',
                 format('allocation %s is released, so it cannot start', :f3), 'started after release');

-- ---------------------------------------------------------------- evicted
SELECT lives_ok(format('SELECT tide.cancel(%s)', :jp), 'cancel the pair');
SELECT lives_ok(format('SELECT tide.evicted(ARRAY[%s, %s]::bigint[])', :p2, :p1), 'both evictions reported in one call');
SELECT results_eq(format('SELECT state, release_reason FROM tide.allocations WHERE job_id = %s ORDER BY id', :jp),
                  $$VALUES ('released', 'cancelled'), ('released', 'cancelled')$$, 'released with the eviction''s reason');
SELECT is(pg_temp.jstate(:jp), 'cancelled', 'the job reached its goal');

-- ---------------------------------------------------------------- roles
-- Fresh work: n1 gang running (h1, h2) and releasing (h3); n3 assigned (a3 reset).
SELECT tide.submit('q1', 'gpu=1', replicas => 3) AS jh, tide.submit('q1', 'cpu=1') AS jn3 \gset
SELECT pg_temp.place(:jh, ARRAY['n1']);
SELECT pg_temp.place(:jn3, ARRAY['n3']);
SELECT (pg_temp.allocs(:jh))[1] AS h1, (pg_temp.allocs(:jh))[2] AS h2, (pg_temp.allocs(:jh))[3] AS h3,
       (pg_temp.allocs(:jn3))[1] AS n3a \gset
SELECT tide.started(ARRAY[:h1, :h2]::bigint[]);
UPDATE tide.allocations SET state = 'releasing' WHERE id = :h3;

CREATE FUNCTION pg_temp.as_role(r text, sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        EXECUTE format('SET LOCAL ROLE %I', r);
        EXECUTE sql;
        RAISE EXCEPTION 'undo' USING ERRCODE = 'P0099';
    EXCEPTION WHEN SQLSTATE 'P0099' THEN
        RESET ROLE;
        RETURN 'allowed';
    WHEN OTHERS THEN
        RESET ROLE;
        RETURN 'refused';
    END;
END $$;
CREATE TEMP TABLE ops (n serial, op text, sql text, allowed text[]);
GRANT SELECT ON ops TO PUBLIC;
INSERT INTO ops (op, sql, allowed) VALUES
 ('batch started on n3',            format('SELECT tide.started(ARRAY[%s]::bigint[])', :n3a),                   '{tap_admin}'),
 ('batch exited on n1',             format('SELECT tide.exited(ARRAY[%s, %s]::bigint[], ''{0,0}'')', :h1, :h2), '{tap_admin,tap_l1}'),
 ('batch evicted on n1',            format('SELECT tide.evicted(ARRAY[%s]::bigint[])', :h3),                    '{tap_admin,tap_l1}'),
 ('batch exited on n1 and n3',      format('SELECT tide.exited(ARRAY[%s, %s]::bigint[], ''{0,0}'')', :h1, :n3a), '{tap_admin}'),
 ('the lookup helper',              format('SELECT * FROM tide._launcher_targets(ARRAY[%s]::bigint[], CURRENT_USER)', :h1), '{tap_admin,tap_l1}');

SELECT is(pg_temp.as_role(r, o.sql),
          CASE WHEN r = ANY (o.allowed) THEN 'allowed' ELSE 'refused' END,
          format('%s: %s', r, o.op))
  FROM ops o
 CROSS JOIN unnest(ARRAY['tap_admin', 'tap_alice', 'tap_l1', 'tap_reader', 'tap_nobody']) r
 ORDER BY o.n, r;

SELECT is(pg_temp.as_role('tap_l3', format('SELECT tide.started(ARRAY[%s]::bigint[])', :n3a)), 'allowed',
          'tap_l3: batch started on n3 (its launcher_role)');
SELECT is(pg_temp.as_role('tap_l3', format('SELECT tide.evicted(ARRAY[%s]::bigint[])', :h3)), 'allowed',
          'tap_l3: batch evicted on n1 (no launcher_role: any launcher)');
SET LOCAL ROLE tap_l1;
SELECT throws_ok(format('SELECT tide.exited(ARRAY[%s, %s, -1]::bigint[], ''{0,0,0}'')', :h1, :n3a), '42501',
                 format('allocation %s belongs to node "n3", which role "tap_l1" may not act for', :n3a),
                 'another node''s allocation in a batch: the first bad id is named');
SELECT throws_ok(format('SELECT tide.exited(ARRAY[-1, %s]::bigint[], ''{0,0}'')', :n3a), '42704',
                 'allocation -1 does not exist', '... in array order');
RESET ROLE;
SELECT is(ARRAY[pg_temp.astate(:h1), pg_temp.astate(:n3a)], '{running,assigned}', 'refused batches changed nothing');

-- ---------------------------------------------------------------- per-id reports
SELECT has_function('tide', 'report_started', ARRAY['bigint[]', 'uuid[]'], 'tide.report_started(bigint[], uuid[])');
SELECT has_function('tide', 'report_exited', ARRAY['bigint[]', 'integer[]', 'text[]', 'interval[]', 'uuid[]'], 'tide.report_exited(bigint[], integer[], text[], interval[], uuid[])');
SELECT has_function('tide', 'report_evicted', ARRAY['bigint[]', 'uuid[]'], 'tide.report_evicted(bigint[], uuid[])');
SELECT is((SELECT array_agg(p ORDER BY p) FROM unnest(ARRAY['tide.report_started(bigint[],uuid[])', 'tide.report_exited(bigint[],integer[],text[],interval[],uuid[])',
                                                          'tide.report_evicted(bigint[],uuid[])', 'tide._report(text,bigint[],integer[],text,boolean,text[],interval[],uuid[])']) p
            WHERE has_function_privilege('public', p::regprocedure, 'EXECUTE')),
          NULL, 'per-id reports: not executable by PUBLIC');
SELECT ok((SELECT bool_and(obj_description(p::regprocedure, 'pg_proc') IS NOT NULL)
             FROM unnest(ARRAY['tide.report_started(bigint[],uuid[])', 'tide.report_exited(bigint[],integer[],text[],interval[],uuid[])',
                               'tide.report_evicted(bigint[],uuid[])', 'tide._report(text,bigint[],integer[],text,boolean,text[],interval[],uuid[])']) p),
          'per-id reports: each has a comment');

-- Fresh work on n1: a gang of 3 (r1 r2 r3), a single (r4) and one on n3 (r5).
SELECT tide.submit('q1', 'gpu=1', replicas => 3) AS jr, tide.submit('q1', 'gpu=1') AS jr4,
       tide.submit('q1', 'cpu=1') AS jr5 \gset
SELECT pg_temp.place(:jr, ARRAY['n1']);
SELECT pg_temp.place(:jr4, ARRAY['n1']);
SELECT pg_temp.place(:jr5, ARRAY['n3']);
SELECT (pg_temp.allocs(:jr))[1] AS r1, (pg_temp.allocs(:jr))[2] AS r2, (pg_temp.allocs(:jr))[3] AS r3,
       (pg_temp.allocs(:jr4))[1] AS r4, (pg_temp.allocs(:jr5))[1] AS r5 \gset
SELECT tide.started(:r2);
SELECT tide.exited(:r4, 0);

-- started: changed, already, refused (released, unknown), and a repeat
SELECT results_eq(format('SELECT allocation_id, outcome, reason FROM tide.report_started(ARRAY[%s, %s, %s, -7, %s]::bigint[])',
                         :r1, :r2, :r4, :r1),
                  format($$VALUES (%s::bigint, 'changed', NULL::text), (%s, 'already', NULL), (%s, 'refused', 'allocation %s is released, so it cannot start'),
                                  (-7, 'refused', 'allocation -7 does not exist'), (%s, 'already', NULL)$$, :r1, :r2, :r4, :r4, :r1),
                  'report_started: changed, already and refused in one call, one row per id in array order');
SELECT is(ARRAY[pg_temp.astate(:r1), pg_temp.astate(:r2), pg_temp.astate(:r4)], '{running,running,released}',
          'the refused ids did not hold back the good one');
SELECT is((SELECT count(*)::int FROM tide.report_started('{}'::bigint[])), 0, 'report_started: an empty array, no rows');
SELECT throws_ok('SELECT * FROM tide.report_started(NULL::bigint[])', '22004', 'allocation_ids must not be NULL',
                 'report_started: a NULL array is still an error');
SELECT is(pg_temp.jstate(:jr), 'allocated', 'r3 not started: the gang waits');
SELECT results_eq(format('SELECT outcome FROM tide.report_started(ARRAY[%s]::bigint[])', :r3), $$VALUES ('changed')$$,
                  'the last member starts');
SELECT is(pg_temp.jstate(:jr), 'running', 'and the gang runs');

-- another node's allocation is refused per id, the node named
SET LOCAL ROLE tap_l1;
SELECT results_eq(format('SELECT allocation_id, outcome, reason FROM tide.report_started(ARRAY[%s, %s]::bigint[])', :r5, :r1),
                  format($$VALUES (%s::bigint, 'refused', 'allocation %s belongs to node "n3", which role "tap_l1" may not act for'),
                                  (%s, 'already', NULL)$$, :r5, :r5, :r1),
                  'report_started as n1''s launcher: n3''s allocation refused, its own answered');
RESET ROLE;
SELECT is(pg_temp.astate(:r5), 'assigned', 'n3''s allocation unchanged');

-- exited: changed with its code, already, refused
SELECT results_eq(format('SELECT allocation_id, outcome, reason FROM tide.report_exited(ARRAY[%s, %s, -8, %s]::bigint[], ''{0,5,0,9}'')',
                         :r1, :r4, :r1),
                  format($$VALUES (%s::bigint, 'changed', NULL::text), (%s, 'already', NULL), (-8, 'refused', 'allocation -8 does not exist'),
                                  (%s, 'already', NULL)$$, :r1, :r4, :r1),
                  'report_exited: changed, already and refused; a repeat of an id is already');
SELECT results_eq(format('SELECT state, exit_code FROM tide.allocations WHERE id IN (%s, %s) ORDER BY id', :r1, :r4),
                  $$VALUES ('released', 0), ('released', 0)$$, 'the first mention''s code is kept; the repeat changed nothing');
SELECT throws_ok(format('SELECT * FROM tide.report_exited(ARRAY[%s]::bigint[], ''{}'')', :r2), '2202E',
                 'allocation_ids has 1 elements but exit_codes has 0', 'report_exited: lengths differ is still an error');
SELECT throws_ok(format('SELECT * FROM tide.report_exited(ARRAY[%s]::bigint[], ''{NULL}'')', :r2), '22004',
                 format('exit code 1 (for allocation %s) must not be NULL', :r2), 'report_exited: a NULL code is still an error');

-- evicted: the gang member r1 exited 0, so nothing is evicted yet; cancel it
SELECT results_eq(format('SELECT allocation_id, outcome, reason FROM tide.report_evicted(ARRAY[%s]::bigint[])', :r2),
                  format($$VALUES (%s::bigint, 'refused', 'allocation %s is running, not being evicted')$$, :r2, :r2),
                  'report_evicted of a running allocation: refused with the reason');
SELECT tide.cancel(:jr);
SELECT results_eq(format('SELECT allocation_id, outcome FROM tide.report_evicted(ARRAY[%s, %s, %s, %s]::bigint[])', :r3, :r1, :r2, :r5),
                  format($$VALUES (%s::bigint, 'changed'), (%s, 'already'), (%s, 'changed'), (%s, 'refused')$$, :r3, :r1, :r2, :r5),
                  'report_evicted: changed, already and refused in one call');
SELECT is(pg_temp.jstate(:jr), 'cancelled', 'the eviction reached its goal from that one call');

-- accepted states are read from tide.allocation_transitions
SELECT tide.submit('q1', 'gpu=1') AS jt \gset
SELECT pg_temp.place(:jt, ARRAY['n1']);
SELECT (pg_temp.allocs(:jt))[1] AS t1 \gset
SAVEPOINT no_start;
DELETE FROM tide.allocation_transitions WHERE old_state = 'assigned' AND new_state = 'running';
SELECT results_eq(format('SELECT outcome, reason FROM tide.report_started(ARRAY[%s]::bigint[])', :t1),
                  format($$VALUES ('refused', 'allocation %s is assigned, so it cannot start')$$, :t1),
                  'without assigned -> running in tide.allocation_transitions, a start is refused');
ROLLBACK TO SAVEPOINT no_start;
SAVEPOINT no_report;
UPDATE tide.allocation_transitions SET reports = '{}' WHERE old_state = 'assigned' AND new_state = 'running';
SELECT results_eq(format('SELECT outcome FROM tide.report_started(ARRAY[%s]::bigint[])', :t1), $$VALUES ('refused')$$,
                  'a change whose reports do not list started is not one a start makes');
ROLLBACK TO SAVEPOINT no_report;
-- the descriptions are for people: rewording them changes nothing
UPDATE tide.allocation_transitions SET made_by = 'reworded';
SELECT results_eq(format('SELECT outcome FROM tide.report_started(ARRAY[%s]::bigint[])', :t1), $$VALUES ('changed')$$,
                  'with it, accepted, whatever made_by says');


SELECT * FROM finish();
ROLLBACK;
