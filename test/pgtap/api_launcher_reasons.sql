-- The launcher's reason for an exit it decided itself (the command could
-- not be started): tide.report_exited(ids, codes, reasons).  Stored on the
-- allocation (exit_reason), rolled up into the failed job's state_reason,
-- sanitised and bounded, refused where the exit is, and only the launcher
-- of the allocation's node (or an administrator) may give one.  A program's
-- own exit (no reason) keeps the plain message.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(36);

SELECT has_function('tide', 'report_exited', ARRAY['bigint[]', 'integer[]', 'text[]', 'interval[]', 'uuid[]'],
                    'tide.report_exited(bigint[], integer[], text[], interval[], uuid[])');
SELECT hasnt_function('tide', 'report_exited', ARRAY['bigint[]', 'integer[]'],
                      'one function: reasons is an optional argument, not an overload');
SELECT has_column('tide', 'allocations', 'exit_reason', 'tide.allocations.exit_reason');
SELECT ok(NOT has_function_privilege('public', 'tide._launcher_reason(text)', 'EXECUTE'),
          'the sanitiser is not executable by PUBLIC');

-- One job per case on n1 (a single replica), plus a gang of 2 on n1 and one on n3.
SELECT tide.submit('q1', 'gpu=1', name => 'nf') AS jnf, tide.submit('q1', 'gpu=1', name => 'own') AS jown,
       tide.submit('q1', 'gpu=1', name => 'ctl') AS jctl, tide.submit('q1', 'gpu=1', name => 'long') AS jlong,
       tide.submit('q1', 'gpu=1', name => 'blank') AS jblank, tide.submit('q1', 'gpu=1', replicas => 2, name => 'gang') AS jg,
       tide.submit('q1', 'cpu=1', name => 'n3') AS j3, tide.submit('q1', 'gpu=1', name => 'late') AS jlate,
       tide.submit('q1', 'gpu=1', name => 'two') AS jtwo \gset
SELECT pg_temp.place(j, ARRAY['n1']) FROM unnest(ARRAY[:jnf, :jown, :jctl, :jlong, :jblank, :jg, :jtwo]::bigint[]) j;
SELECT pg_temp.place(:j3, ARRAY['n3']);
SELECT pg_temp.place(:jlate, ARRAY['n2']);
SELECT (pg_temp.allocs(:jnf))[1] AS anf, (pg_temp.allocs(:jown))[1] AS aown, (pg_temp.allocs(:jctl))[1] AS actl,
       (pg_temp.allocs(:jlong))[1] AS along, (pg_temp.allocs(:jblank))[1] AS ablank,
       (pg_temp.allocs(:jg))[1] AS g1, (pg_temp.allocs(:jg))[2] AS g2, (pg_temp.allocs(:j3))[1] AS a3,
       (pg_temp.allocs(:jlate))[1] AS alate, (pg_temp.allocs(:jtwo))[1] AS atwo \gset

-- ---------------------------------------------------------------- arguments
SELECT throws_ok(format($$SELECT * FROM tide.report_exited(ARRAY[%s]::bigint[], '{127}', '{a,b}')$$, :anf), '2202E',
                 'exit_codes has 1 elements but reasons has 2', 'reasons of another length: an error');
SELECT throws_ok(format($$SELECT * FROM tide.report_exited(ARRAY[%s]::bigint[], '{127}', '{{a}}')$$, :anf), '2202E',
                 'reasons must be a one-dimensional array, not 2 dimensions', 'a two-dimensional reasons array: an error');
SELECT throws_ok(format($$SELECT * FROM tide.report_exited(ARRAY[%s, %s]::bigint[], '{1,0}', '{NULL,"x"}')$$, :anf, :aown), '22023',
                 format('reason 2 (for allocation %s) comes with exit code 0', :aown), 'a reason with exit code 0: an error naming it');
SELECT throws_ok(format($$SELECT * FROM tide._report('started', ARRAY[%s]::bigint[], NULL, CURRENT_USER, false, '{x}')$$, :anf), '22023',
                 'a launcher report "started" takes no reasons', 'only exits take reasons');
SELECT is((SELECT count(*)::int FROM tide.allocations WHERE state <> 'assigned'), 0, 'the refused calls changed nothing');

-- ---------------------------------------------------------------- stored and rolled up
SELECT tide.started(ARRAY[:anf, :aown, :actl, :along, :ablank, :g1, :g2, :atwo]::bigint[]);
SELECT results_eq(format($$SELECT allocation_id, outcome FROM tide.report_exited(ARRAY[%s, %s]::bigint[], '{127,127}',
                                  ARRAY['command "foo" not found', NULL])$$, :anf, :aown),
                  format($$VALUES (%s::bigint, 'changed'), (%s, 'changed')$$, :anf, :aown),
                  'report_exited with a reason for one id and none for the other');
SELECT results_eq(format('SELECT state, exit_code, release_reason, exit_reason FROM tide.allocations WHERE id = %s', :anf),
                  $$VALUES ('released', 127, 'exited', 'command "foo" not found')$$, 'the reason is stored on the allocation');
SELECT results_eq(format('SELECT state, exit_code, state_reason FROM tide.jobs WHERE id = %s', :jnf),
                  $$VALUES ('failed', 127, 'launcher on node n1 could not start replica 0 of role main: command "foo" not found (exit code 127)')$$,
                  'the job failed with the launcher''s reason');
SELECT is((SELECT reason FROM tide.job_events WHERE job_id = :jnf AND new_state = 'failed'),
          'launcher on node n1 could not start replica 0 of role main: command "foo" not found (exit code 127)',
          'and its history says so');
SELECT results_eq(format('SELECT exit_reason, state_reason FROM tide.allocations a JOIN tide.jobs j ON j.id = a.job_id WHERE a.id = %s', :aown),
                  $$VALUES (NULL::text, 'replica 0 of role main exited with code 127 on node n1')$$,
                  'a program that exits 127 by itself keeps the plain message');

-- the first two-argument form still works (the launcher of an older build)
SELECT results_eq(format($$SELECT outcome FROM tide.report_exited(ARRAY[%s]::bigint[], '{0}')$$, :atwo),
                  $$VALUES ('changed')$$, 'report_exited(ids, codes): reasons default to none');
SELECT is(pg_temp.jstate(:jtwo), 'succeeded', 'and its job succeeded');

-- a gang: the failed member's reason fails the job, the other is evicted
SELECT results_eq(format($$SELECT outcome FROM tide.report_exited(ARRAY[%s]::bigint[], '{126}',
                                  '{"cannot open output file /out/job-1-1-2.log: Permission denied"}')$$, :g2),
                  $$VALUES ('changed')$$, 'a gang member could not start');
SELECT is((SELECT state_reason FROM tide.jobs WHERE id = :jg),
          'launcher on node n1 could not start replica 1 of role main: cannot open output file /out/job-1-1-2.log: Permission denied (exit code 126)',
          'the gang failed with that member''s reason');
SELECT is(pg_temp.astate(:g1), 'releasing', 'its other member is told to stop');

-- ---------------------------------------------------------------- sanitised and bounded
SELECT tide.report_exited(ARRAY[:actl]::bigint[], '{126}', ARRAY[E'  bad\n\n\tthing \x1b[31mred\x1b[0m\r  ']);
SELECT is((SELECT exit_reason FROM tide.allocations WHERE id = :actl), 'bad thing [31mred [0m',
          'a run of control characters (and blanks next to them) becomes one space, blanks around it go');
SELECT tide.report_exited(ARRAY[:along]::bigint[], '{126}', ARRAY[repeat('x', 100000)]);
SELECT is((SELECT char_length(exit_reason) FROM tide.allocations WHERE id = :along), 500, 'a long reason is cut to 500 characters');
SELECT is((SELECT right(exit_reason, 4) FROM tide.allocations WHERE id = :along), 'x...', 'and ends in "..."');
SELECT ok((SELECT char_length(state_reason) < 700 FROM tide.jobs WHERE id = :jlong), 'so the job''s state_reason stays bounded too');
SELECT tide.report_exited(ARRAY[:ablank]::bigint[], '{127}', ARRAY[E' \n\t ']);
SELECT results_eq(format('SELECT exit_reason, state_reason FROM tide.allocations a JOIN tide.jobs j ON j.id = a.job_id WHERE a.id = %s', :ablank),
                  $$VALUES (NULL::text, 'replica 0 of role main exited with code 127 on node n1')$$,
                  'a blank reason is no reason: the plain message');
SELECT throws_ok(format($$UPDATE tide.allocations SET exit_reason = repeat('y', 501) WHERE id = %s$$, :a3), '23514', NULL,
                 'the column itself refuses more than 500 characters');

-- ---------------------------------------------------------------- refused or not taken
SELECT results_eq(format($$SELECT outcome FROM tide.report_exited(ARRAY[%s]::bigint[], '{127}', '{"another reason"}')$$, :anf),
                  $$VALUES ('already')$$, 'a repeated exit with another reason: already');
SELECT is((SELECT exit_reason FROM tide.allocations WHERE id = :anf), 'command "foo" not found', 'the first reason is kept');
SELECT results_eq(format($$SELECT outcome, reason FROM tide.report_exited(ARRAY[-4]::bigint[], '{127}', '{"x"}')$$),
                  $$VALUES ('refused', 'allocation -4 does not exist')$$, 'an unknown id with a reason: refused');
SELECT throws_ok(format($$UPDATE tide.allocations SET exit_reason = 'rewritten' WHERE id = %s$$, :anf), '55000',
                 format('allocation %s is released and cannot change', :anf), 'a released allocation''s reason cannot be rewritten');
-- an exit reported late (its node was lost meanwhile) is recorded without its reason
SELECT tide.started(:alate);
SELECT tide._nodes_lost(ARRAY['n2'], 'node down');
SELECT results_eq(format($$SELECT outcome FROM tide.report_exited(ARRAY[%s]::bigint[], '{127}', '{"command \"x\" not found"}')$$, :alate),
                  $$VALUES ('changed')$$, 'a late exit with a reason is recorded');
SELECT results_eq(format('SELECT exit_code, exit_reason FROM tide.allocations WHERE id = %s', :alate),
                  $$VALUES (127, NULL::text)$$, 'with its code, not its reason (the job was already interrupted by the loss)');

-- ---------------------------------------------------------------- who may give a reason
SET LOCAL ROLE tap_l1;
SELECT results_eq(format($$SELECT outcome, reason FROM tide.report_exited(ARRAY[%s]::bigint[], '{127}', '{"x"}')$$, :a3),
                  format($$VALUES ('refused', 'allocation %s belongs to node "n3", which role "tap_l1" may not act for')$$, :a3),
                  'another node''s launcher: refused');
RESET ROLE;
SELECT results_eq(format('SELECT state, exit_reason FROM tide.allocations WHERE id = %s', :a3),
                  $$VALUES ('assigned', NULL::text)$$, 'and nothing stored');
SET LOCAL ROLE tap_alice;
SELECT throws_ok(format($$SELECT * FROM tide.report_exited(ARRAY[%s]::bigint[], '{127}', '{"x"}')$$, :a3), '42501', NULL,
                 'a submitter may not report');
RESET ROLE;
SET LOCAL ROLE tap_l3;
SELECT results_eq(format($$SELECT outcome FROM tide.report_exited(ARRAY[%s]::bigint[], '{127}', '{"the job has no command"}')$$, :a3),
                  $$VALUES ('changed')$$, 'the node''s own launcher role: accepted');
RESET ROLE;
SELECT is((SELECT state_reason FROM tide.jobs WHERE id = :j3),
          'launcher on node n3 could not start replica 0 of role main: the job has no command (exit code 127)',
          'and rolled up');

SELECT * FROM finish();
ROLLBACK;
