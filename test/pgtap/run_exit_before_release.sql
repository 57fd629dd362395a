-- R-T6: finished work is never run again.  An allocation the database
-- decided to stop (release_decided_at, set whoever stops it) whose process
-- had exited before that decision ends as its process did: the launcher
-- reports the exit with how long ago it happened (tide.report_exited's
-- exited_ago), and a job whose replicas all exited 0 succeeds instead of
-- being requeued, retried or cancelled; a non-zero exit fails it as an
-- exit would (with its retry).  An exit after the decision, or one
-- reported without a time, stays an eviction.  Repeats are idempotent and
-- only the node's launcher (or an administrator) may report.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(39);

SELECT has_column('tide', 'allocations', 'release_decided_at', 'tide.allocations.release_decided_at');
SELECT has_column('tide', 'allocations', 'exited_at', 'tide.allocations.exited_at');
SELECT hasnt_function('tide', 'report_exited', ARRAY['bigint[]', 'integer[]', 'text[]'],
                      'one function: exited_ago is an optional argument, not an overload');

-- jobs on n1, each placed and started: ok (exits 0 before a cancel), bad
-- (exits 3 before a preemption-like eviction, with a retry left), late
-- (exits after the cancel), plain (tide.exited without a time), gang (one
-- replica before, the other stopped), idem (repeats), other (n3's launcher)
SELECT tide.submit('q1', 'gpu=1', name => 'ok') AS jok,
       tide.submit('q1', 'gpu=1', name => 'bad', max_retries => 1) AS jbad,
       tide.submit('q1', 'gpu=1', name => 'late') AS jlate,
       tide.submit('q1', 'gpu=1', name => 'plain') AS jplain,
       tide.submit('q1', 'gpu=1', replicas => 2, name => 'gang') AS jgang,
       tide.submit('q1', 'gpu=1', name => 'run') AS jrun,
       tide.submit('q1', 'cpu=1', name => 'n3') AS j3 \gset
SELECT pg_temp.place(j, ARRAY['n1']) FROM unnest(ARRAY[:jok, :jbad, :jlate, :jplain, :jgang, :jrun]::bigint[]) j;
SELECT pg_temp.place(:j3, ARRAY['n3']);
SELECT (pg_temp.allocs(:jok))[1] AS aok, (pg_temp.allocs(:jbad))[1] AS abad, (pg_temp.allocs(:jlate))[1] AS alate,
       (pg_temp.allocs(:jplain))[1] AS aplain, (pg_temp.allocs(:jgang))[1] AS g1, (pg_temp.allocs(:jgang))[2] AS g2,
       (pg_temp.allocs(:jrun))[1] AS arun, (pg_temp.allocs(:j3))[1] AS a3 \gset
SELECT tide.started(ARRAY[:aok, :abad, :alate, :aplain, :g1, :g2, :arun]::bigint[]);
SELECT tide.started(:a3);

-- ---------------------------------------------------------------- when the stop was decided
SELECT is((SELECT count(*) FROM tide.allocations WHERE release_decided_at IS NOT NULL), 0::bigint,
          'nothing decided yet');
SELECT tide.cancel(j) FROM unnest(ARRAY[:jok, :jlate, :jplain, :jgang, :j3]::bigint[]) j;
SELECT tide._evict(ARRAY[:jbad]::bigint[], ARRAY['evicted for job 99 of queue qi (R-E2)']);
SELECT is((SELECT count(*) FROM tide.allocations
            WHERE id = ANY (ARRAY[:aok, :abad, :alate, :aplain, :g1, :g2, :a3]::bigint[])
              AND state = 'releasing' AND release_decided_at IS NOT NULL), 7::bigint,
          'an eviction (cancel or not) records when it was decided, on every allocation it stops');
SELECT ok((SELECT release_decided_at <= clock_timestamp() FROM tide.allocations WHERE id = :aok),
          '... at the moment it was written');

-- ---------------------------------------------------------------- arguments
SET LOCAL ROLE tap_l1;
SELECT throws_ok(format($$SELECT * FROM tide.report_exited(ARRAY[%s]::bigint[], '{0}', NULL, '{-1}')$$, :aok), '22023',
                 format('exited_ago 1 (for allocation %s) is negative: -00:00:01', :aok), 'a negative exited_ago is refused');
SELECT throws_ok(format($$SELECT * FROM tide.report_exited(ARRAY[%s]::bigint[], '{0}', NULL, '{1,2}')$$, :aok), '2202E',
                 'exit_codes has 1 elements but exited_ago has 2', 'exited_ago of another length is refused');
SELECT throws_ok(format($$SELECT * FROM tide.report_exited(ARRAY[%s]::bigint[], '{0}', NULL, '{{1}}')$$, :aok), '2202E',
                 'exited_ago must be a one-dimensional array, not 2 dimensions', 'a two-dimensional exited_ago is refused');
RESET ROLE;
SELECT throws_ok($$SELECT * FROM tide._report('started', '{1}', NULL, CURRENT_USER, false, NULL, '{1}')$$, '22023',
                 'a launcher report "started" takes no exit times', 'only exits take exit times');
SELECT is(pg_temp.astate(:aok), 'releasing', 'refused calls changed nothing');

-- ---------------------------------------------------------------- who may report
SET LOCAL ROLE tap_l1;
SELECT results_eq(format($$SELECT outcome, reason FROM tide.report_exited(ARRAY[%s]::bigint[], '{0}', NULL, '{5 s}')$$, :a3),
                  format($$VALUES ('refused', 'allocation %s belongs to node "n3", which role "tap_l1" may not act for')$$, :a3),
                  'another node''s launcher: refused');
RESET ROLE;
SET LOCAL ROLE tap_alice;
SELECT throws_ok(format($$SELECT * FROM tide.report_exited(ARRAY[%s]::bigint[], '{0}', NULL, '{5 s}')$$, :a3), '42501', NULL,
                 'a submitter may not report');
RESET ROLE;
SELECT is(pg_temp.jstate(:j3), 'evicting', 'and nothing changed');

-- ---------------------------------------------------------------- an exit 0 before the cancel
SET LOCAL ROLE tap_l1;
SELECT results_eq(format($$SELECT outcome FROM tide.report_exited(ARRAY[%s]::bigint[], '{0}', NULL, '{5 s}')$$, :aok),
                  $$VALUES ('changed')$$, 'an exit 5 s before the cancel: changed');
RESET ROLE;
SELECT results_eq(format($$SELECT state, release_reason, exit_code, exited_at < release_decided_at FROM tide.allocations WHERE id = %s$$, :aok),
                  $$VALUES ('released', 'exited', 0, true)$$, 'the allocation records the exit, before the decision');
SELECT results_eq(format('SELECT state, exit_code, evict_goal, state_reason FROM tide.jobs WHERE id = %s', :jok),
                  $$VALUES ('succeeded', 0, NULL::text, 'all replicas exited 0 before its stop was decided (cancelled)')$$,
                  'the job succeeded: it finished before it was cancelled');
SELECT is((SELECT count(*) FROM tide.jobs WHERE retry_of = :jok), 0::bigint, 'no retry');
SELECT is((SELECT acked_at IS NOT NULL FROM tide.evictions WHERE job_id = :jok), true, 'its eviction is acknowledged');
SELECT is((SELECT string_agg(coalesce(old_state, '-') || '>' || new_state, ',' ORDER BY id) FROM tide.job_events WHERE job_id = :jok),
          '->pending,pending>allocated,allocated>running,running>evicting,evicting>succeeded', 'its history');
-- repeats are idempotent
SET LOCAL ROLE tap_l1;
SELECT results_eq(format($$SELECT outcome FROM tide.report_exited(ARRAY[%s, %s]::bigint[], '{0,0}', NULL, '{5 s,1 s}')$$, :aok, :aok),
                  $$VALUES ('already'), ('already')$$, 'a repeated report: already, twice');
SELECT results_eq(format($$SELECT outcome FROM tide.report_evicted(ARRAY[%s]::bigint[])$$, :aok),
                  $$VALUES ('already')$$, 'an evicted report after it: already');
RESET ROLE;
SELECT is(pg_temp.jstate(:jok), 'succeeded', 'still succeeded');

-- ---------------------------------------------------------------- a non-zero exit before an eviction
SET LOCAL ROLE tap_l1;
SELECT results_eq(format($$SELECT outcome FROM tide.report_exited(ARRAY[%s]::bigint[], '{3}', NULL, '{2 s}')$$, :abad),
                  $$VALUES ('changed')$$, 'an exit 3, 2 s before the eviction: changed');
RESET ROLE;
SELECT results_eq(format('SELECT state, exit_code, evict_goal, state_reason FROM tide.jobs WHERE id = %s', :jbad),
                  $$VALUES ('failed', 3, NULL::text,
                            'replica 0 of role main exited with code 3 on node n1, before its stop was decided (evicted for job 99 of queue qi (R-E2))')$$,
                  'the job failed as the exit says, not as the eviction would');
SELECT results_eq(format('SELECT state, attempt, avoid_nodes FROM tide.jobs WHERE retry_of = %s', :jbad),
                  $$VALUES ('pending', 2, '{n1}'::text[])$$, 'with its retry, as for any failed exit');

-- ---------------------------------------------------------------- an exit after the decision
SET LOCAL ROLE tap_l1;
SELECT results_eq(format($$SELECT outcome FROM tide.report_exited(ARRAY[%s]::bigint[], '{0}', NULL, '{0 s}')$$, :alate),
                  $$VALUES ('changed')$$, 'an exit 0 just now, after the cancel: changed');
RESET ROLE;
SELECT results_eq(format('SELECT state, exit_code FROM tide.jobs WHERE id = %s', :jlate),
                  $$VALUES ('cancelled', NULL::integer)$$, 'it stays an eviction: the job is cancelled');
SELECT results_eq(format($$SELECT exit_code, exited_at >= release_decided_at FROM tide.allocations WHERE id = %s$$, :alate),
                  $$VALUES (0, true)$$, '(the exit is recorded, after the decision)');

-- ---------------------------------------------------------------- the contract's tide.exited, without a time
SET LOCAL ROLE tap_l1;
SELECT tide.exited(:aplain, 0);
RESET ROLE;
SELECT is(pg_temp.jstate(:jplain), 'cancelled', 'tide.exited(id, code) still works: an exit without a time is now, after the cancel');

-- ---------------------------------------------------------------- a gang: one replica finished, one stopped
SET LOCAL ROLE tap_l1;
SELECT results_eq(format($$SELECT outcome FROM tide.report_exited(ARRAY[%s]::bigint[], '{0}', NULL, '{3 s}')$$, :g1),
                  $$VALUES ('changed')$$, 'gang: replica 0 exited 0 before the cancel');
RESET ROLE;
SELECT is(pg_temp.jstate(:jgang), 'evicting', 'the other replica is still to stop');
SET LOCAL ROLE tap_l1;
SELECT results_eq(format($$SELECT outcome FROM tide.report_evicted(ARRAY[%s]::bigint[])$$, :g2),
                  $$VALUES ('changed')$$, 'replica 1 stopped');
RESET ROLE;
SELECT is(pg_temp.jstate(:jgang), 'cancelled', 'not all of the work finished: the cancel is carried out');

-- ---------------------------------------------------------------- a lost node's return
-- released without an exit: the decision is the release; an exit reported
-- later is a late exit (R-C3), recorded on the allocation
SELECT tide._nodes_lost(ARRAY['n1'], 'node down');
SELECT ok((SELECT release_decided_at IS NOT NULL AND state = 'released' FROM tide.allocations WHERE id = :arun),
          'a lost node''s allocations record the decision too');
SET LOCAL ROLE tap_l1;
SELECT results_eq(format($$SELECT outcome FROM tide.report_exited(ARRAY[%s]::bigint[], '{0}', NULL, '{9 s}')$$, :arun),
                  $$VALUES ('changed')$$, 'an exit reported after the node''s return: recorded');
RESET ROLE;
SELECT results_eq(format('SELECT state, exit_code FROM tide.jobs WHERE id = %s', :jrun),
                  $$VALUES ('succeeded', 0)$$, 'and its job, requeued and not placed again, succeeded (R-C3)');

-- ---------------------------------------------------------------- an exit that is no stop
SELECT tide.submit('q1', 'gpu=1', name => 'normal') AS jn \gset
SELECT pg_temp.place(:jn, ARRAY['n2']);
SELECT tide.started((pg_temp.allocs(:jn))[1]);
SELECT tide.exited((pg_temp.allocs(:jn))[1], 0);
SELECT results_eq(format('SELECT release_decided_at IS NULL, exited_at IS NOT NULL FROM tide.allocations WHERE job_id = %s', :jn),
                  $$VALUES (true, true)$$, 'an ordinary exit: no stop decided, its time recorded');
SELECT is(pg_temp.jstate(:jn), 'succeeded', 'and the job succeeded as before');

SELECT * FROM finish();
ROLLBACK;
