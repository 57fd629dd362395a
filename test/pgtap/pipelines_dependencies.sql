-- R-P1: dependencies.  A job waits, out of the cycle's set, until the jobs
-- it names ended as its conditions say (judged on their last attempt); a
-- condition that can no longer be met cancels it, transitively.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(41);

-- ---- waits, out of the cycle's set, then goes
SELECT tide.submit('q1', 'gpu=1') AS a \gset
SELECT tide.submit('q1', 'gpu=1', after => ARRAY[:a, :a]) AS b \gset
SELECT results_eq(format('SELECT state, waiting, dependencies_unmet, pending_reason FROM tide.jobs WHERE id = %s', :b),
                  format($$VALUES ('pending', true, 1, 'waits for job %s to succeed')$$, :a),
                  'after => ids: pending, waiting, with a reason naming the job');
SELECT results_eq(format('SELECT depends_on, condition, satisfied FROM tide.job_dependencies WHERE job_id = %s', :b),
                  format($$VALUES (%s::bigint, 'succeeded', false)$$, :a), 'one row, succeeded (duplicates folded)');
SELECT ok(tide.run_cycle() IS NOT NULL, 'a cycle runs');
SELECT is((SELECT jobs_considered FROM tide.cycles ORDER BY id DESC LIMIT 1), 1, 'the cycle considered only the job not waiting');
SELECT results_eq(format('SELECT state, pending_reason FROM tide.jobs WHERE id = %s', :b),
                  format($$VALUES ('pending', 'waits for job %s to succeed')$$, :a), 'the waiting job keeps its reason');
SELECT is((SELECT pending_reason FROM tide.pending WHERE job_id = :b), format('waits for job %s to succeed', :a),
          'tide.pending shows it');
SELECT is((SELECT tide.explain(:b) -> 'dependencies'),
          jsonb_build_array(jsonb_build_object('job_id', :a, 'condition', 'succeeded', 'satisfied', false, 'state', 'allocated')),
          'explain names each dependency and its state');
SELECT is((SELECT tide.explain(:b) -> 'blocking' -> 0 ->> 'rule'), 'R-P1', 'explain: blocked by R-P1');
SELECT tide.started(x) FROM unnest(pg_temp.allocs(:a)) x;
SELECT is(pg_temp.jstate(:b), 'pending', 'still waiting while it runs');
SELECT tide.exited((pg_temp.allocs(:a))[1], 0);
SELECT results_eq(format('SELECT state, waiting, dependencies_unmet, pending_reason FROM tide.jobs WHERE id = %s', :b),
                  $$VALUES ('pending', false, 0, NULL::text)$$, 'it succeeded: the dependent stops waiting');
SELECT ok((SELECT satisfied FROM tide.job_dependencies WHERE job_id = :b), 'the row is met');
SELECT ok(tide.run_cycle() IS NOT NULL, 'the next cycle');
SELECT is(pg_temp.jstate(:b), 'allocated', 'places it');

-- ---- judged at once on a job that already ended
SELECT tide.submit('q1', 'gpu=1', after => ARRAY[:a]) AS c \gset
SELECT results_eq(format('SELECT state, waiting FROM tide.jobs WHERE id = %s', :c),
                  $$VALUES ('pending', false)$$, 'after a job that succeeded already: not waiting');
SELECT tide.submit('q1', 'gpu=1') AS c2 \gset
INSERT INTO tide.job_dependencies (job_id, depends_on, condition) VALUES (:c2, :a, 'failed');
SELECT results_eq(format('SELECT state, state_reason FROM tide.jobs WHERE id = %s', :c2),
                  format($$VALUES ('cancelled', 'dependency not met: waited for job %s to fail, but it succeeded')$$, :a),
                  'a condition that can no longer be met cancels at once, naming the dependency');

-- ---- the last attempt decides: a retry of the job waits as the job would
SELECT tide.submit('q1', 'gpu=1', max_retries => 1) AS r \gset
SELECT tide.submit('q1', 'gpu=1', after => ARRAY[:r]) AS rs \gset
SELECT tide.submit('q1', 'gpu=1') AS rf \gset
INSERT INTO tide.job_dependencies (job_id, depends_on, condition) VALUES (:rf, :r, 'failed');
SELECT tide.submit('q1', 'gpu=1') AS ra \gset
INSERT INTO tide.job_dependencies (job_id, depends_on, condition) VALUES (:ra, :r, 'finished');
SELECT pg_temp.place(:r, ARRAY['n1']);
SELECT tide.exited((pg_temp.allocs(:r))[1], 1);
SELECT (SELECT id FROM tide.jobs WHERE retry_of = :r) AS r2 \gset
SELECT is(pg_temp.jstate(:r2), 'pending', 'the failed job is retried');
SELECT results_eq(format('SELECT id, state, waiting FROM tide.jobs WHERE id IN (%s, %s, %s) ORDER BY id', :rs, :rf, :ra),
                  format($$VALUES (%s::bigint, 'pending', true), (%s, 'pending', true), (%s, 'pending', true)$$, :rs, :rf, :ra),
                  'while its retry is pending, succeeded, failed and finished all wait');
SELECT pg_temp.place(:r2, ARRAY['n1']);
SELECT tide.exited((pg_temp.allocs(:r2))[1], 2);
SELECT results_eq(format('SELECT id, state, waiting, state_reason FROM tide.jobs WHERE id IN (%s, %s, %s) ORDER BY id', :rs, :rf, :ra),
                  format($$VALUES (%s::bigint, 'cancelled', true, 'dependency not met: waited for job %s to succeed, but it failed'),
                                  (%s, 'pending', false, 'submitted'), (%s, 'pending', false, 'submitted')$$, :rs, :r, :rf, :ra),
                  'its last attempt failed: succeeded is cancelled, failed and finished are met');

-- ---- transitively, in one transaction
SELECT tide.submit('q1', 'gpu=1') AS x \gset
SELECT tide.submit('q1', 'gpu=1', after => ARRAY[:x]) AS y \gset
SELECT tide.submit('q1', 'gpu=1', after => ARRAY[:y]) AS z \gset
SELECT tide.submit('q1', 'gpu=1') AS w \gset
INSERT INTO tide.job_dependencies (job_id, depends_on, condition) VALUES (:w, :y, 'finished');
SELECT tide.submit('q1', 'gpu=1') AS v \gset
INSERT INTO tide.job_dependencies (job_id, depends_on, condition) VALUES (:v, :z, 'failed');
SELECT tide.cancel(:x);
SELECT results_eq(format('SELECT id, state, state_reason FROM tide.jobs WHERE id IN (%s, %s, %s) ORDER BY id', :y, :z, :v),
                  format($$VALUES (%s::bigint, 'cancelled', 'dependency not met: waited for job %s to succeed, but it was cancelled'),
                                  (%s, 'cancelled', 'dependency not met: waited for job %s to succeed, but it was cancelled'),
                                  (%s, 'cancelled', 'dependency not met: waited for job %s to fail, but it was cancelled')$$,
                         :y, :x, :z, :y, :v, :z),
                  'a cancel cancels what waits for it to succeed or fail, down the graph');
SELECT results_eq(format('SELECT state, waiting FROM tide.jobs WHERE id = %s', :w),
                  $$VALUES ('pending', false)$$, 'finished is met by a cancel');
SELECT is((SELECT count(*)::int FROM tide.job_events WHERE job_id IN (:y, :z, :v) AND new_state = 'cancelled'), 3,
          'each cancel is in the history');

-- ---- R-C3: a late exit is an outcome like another
SELECT tide.submit('q1', 'gpu=1', max_retries => 1) AS l \gset
SELECT tide.submit('q1', 'gpu=1', after => ARRAY[:l]) AS ls \gset
SELECT tide.submit('q1', 'gpu=1') AS lf \gset
INSERT INTO tide.job_dependencies (job_id, depends_on, condition) VALUES (:lf, :l, 'failed');
SELECT pg_temp.place(:l, ARRAY['n2']);
SELECT tide.started((pg_temp.allocs(:l))[1]);
SELECT tide._nodes_lost(ARRAY['n2'], 'node down');
SELECT is(pg_temp.jstate(:l), 'failed', 'lost node: the job failed');
SELECT is((SELECT state FROM tide.jobs WHERE retry_of = :l), 'pending', 'and its retry waits');
SELECT is(pg_temp.jstate(:ls), 'pending', 'the dependent waits for the retry');
SELECT * FROM tide.report_exited(ARRAY[(pg_temp.allocs(:l))[1]], '{0}');
SELECT results_eq(format('SELECT state FROM tide.jobs WHERE id = %s OR retry_of = %s ORDER BY id', :l, :l),
                  $$VALUES ('succeeded'), ('cancelled')$$, 'late exit 0: succeeded, its retry cancelled');
SELECT results_eq(format('SELECT id, state, waiting FROM tide.jobs WHERE id IN (%s, %s) ORDER BY id', :ls, :lf),
                  format($$VALUES (%s::bigint, 'pending', false), (%s, 'cancelled', true)$$, :ls, :lf),
                  'judged succeeded: the succeeded dependent goes, the failed one is cancelled');
UPDATE tide.nodes SET state = 'ready', down_reason = NULL, state_before_down = NULL WHERE name = 'n2';

-- ---- refused
SELECT tide.submit('q1', 'gpu=1') AS p \gset
SELECT tide.submit('q1', 'gpu=1', after => ARRAY[:p]) AS q \gset
SELECT throws_ok(format('INSERT INTO tide.job_dependencies (job_id, depends_on) VALUES (%s, %s)', :p, :p), '42P19',
                 format('job %s cannot depend on itself', :p), 'a job depending on itself');
SELECT throws_ok(format('INSERT INTO tide.job_dependencies (job_id, depends_on) VALUES (%s, %s)', :p, :q), '42P19',
                 format('dependencies would form a cycle: job %s waits for job %s waits for job %s', :p, :q, :p),
                 'a cycle, naming its jobs');
SELECT throws_ok(format('INSERT INTO tide.job_dependencies (job_id, depends_on) VALUES (%s, %s)', :a, :p), '55000',
                 format('job %s is succeeded: dependencies can be added only to a pending job', :a),
                 'a dependency added to a job no longer pending');
SELECT throws_ok(format($$INSERT INTO tide.job_dependencies (job_id, depends_on, condition) VALUES (%s, %s, 'ok')$$, :q, :a),
                 '23514', 'condition must be succeeded, failed or finished, not "ok"', 'an unknown condition');
SELECT throws_ok($$SELECT tide.submit('q1', 'gpu=1', after => ARRAY[1, NULL]::bigint[])$$, '22004',
                 'after must not contain NULL', 'after with a NULL');
SELECT throws_ok($$SELECT tide.submit('q1', 'gpu=1', after => ARRAY[987654321])$$, '42704',
                 'job 987654321 does not exist', 'after a missing id');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE id > :q), 0, 'and nothing is left of the refused submissions');

-- tenants: another owner's job is as missing as a missing one
SET LOCAL ROLE tap_bob;
SELECT tide.submit('q1', 'gpu=1') AS bobs \gset
RESET ROLE;
SET LOCAL ROLE tap_alice;
SELECT throws_ok(format($$SELECT tide.submit('q1', 'gpu=1', after => ARRAY[%s])$$, :bobs), '42704',
                 format('job %s does not exist', :bobs), 'after another owner''s job: the answer for a missing id');
SELECT tide.submit('q1', 'gpu=1') AS al1 \gset
SELECT tide.submit('q1', 'gpu=1', after => ARRAY[:al1]) AS al2 \gset
SELECT is((SELECT count(*)::int FROM tide.job_dependencies), 1, 'a submitter sees its own dependency rows');
RESET ROLE;
SET LOCAL ROLE tap_bob;
SELECT is((SELECT count(*)::int FROM tide.job_dependencies), 0, 'and not another owner''s');
SELECT throws_ok(format('INSERT INTO tide.job_dependencies (job_id, depends_on) VALUES (%s, %s)', :bobs, :al1), '42704',
                 format('job %s does not exist', :al1), 'a direct insert naming another owner''s job: missing');
RESET ROLE;

-- ---- a multi-role job inserts its rows in one transaction
INSERT INTO tide.jobs (queue, name) VALUES ('q1', 'multi') RETURNING id AS m \gset
INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (:m, 'ps', 1, 'cpu=1'), (:m, 'worker', 2, 'gpu=1');
INSERT INTO tide.job_dependencies (job_id, depends_on) VALUES (:m, :p);
SELECT results_eq(format('SELECT waiting, pending_reason FROM tide.jobs WHERE id = %s', :m),
                  format($$VALUES (true, 'waits for job %s to succeed')$$, :p), 'a multi-role job waits too');
SELECT tide.submit('q1', 'gpu=1') AS m2 \gset
INSERT INTO tide.job_dependencies (job_id, depends_on) VALUES (:m, :m2);
SELECT is((SELECT pending_reason FROM tide.jobs WHERE id = :m),
          format('waits for job %s to succeed (and 1 more dependencies)', :p), 'two unmet: the first named, the count of the others');

-- ---- a deleted job cancels what still waits for it
DELETE FROM tide.jobs WHERE id = :m2;
SELECT results_eq(format('SELECT state, state_reason FROM tide.jobs WHERE id = %s', :m),
                  format($$VALUES ('cancelled', 'dependency not met: waited for job %s to succeed, but it was deleted')$$, :m2),
                  'its dependent is cancelled');
DELETE FROM tide.jobs WHERE id = :m;
SELECT is((SELECT count(*)::int FROM tide.job_dependencies WHERE job_id = :m), 0, 'a deleted job takes its rows along');

SELECT * FROM finish();
ROLLBACK;
