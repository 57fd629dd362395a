-- R-P2 hold and release, R-P3 deferred start, R-P4 queue hold.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(35);

-- ---- R-P2: a held job is not considered and keeps its place
SELECT tide.submit('q1', 'gpu=8', hold => true) AS h \gset
SELECT tide.submit('q1', 'gpu=8') AS l \gset
SELECT tide.submit('q1', 'gpu=8') AS m \gset
SELECT tide.submit('q1', 'cpu=1', gpu_type => 'B200') AS qn0 \gset
SELECT results_eq(format('SELECT held, waiting, pending_reason FROM tide.jobs WHERE id = %s', :h),
                  $$VALUES (true, true, 'held')$$, 'submitted held: waiting, reason held');
SELECT is((SELECT tide.explain(:h) -> 'blocking' -> 0), jsonb_build_object('rule', 'R-P2', 'reason', 'held', 'unblock', format('tide.release(%s)', :h)),
          'explain: held, and how to release it');
SELECT is((SELECT count(*)::int FROM tide.dry_run() WHERE job_id = :h AND kind = 'place'), 0, 'the dry run does not place it');
SELECT is((SELECT count(*)::int FROM tide.dry_run() WHERE kind = 'place'), 2, 'but places the others');
SELECT tide.release(:h);
SELECT results_eq(format('SELECT held, waiting, pending_reason FROM tide.jobs WHERE id = %s', :h),
                  $$VALUES (false, false, NULL::text)$$, 'released: considered again, its reason cleared');
SELECT is((SELECT position FROM tide.pending WHERE job_id = :h), 1::bigint, 'first in its queue: it kept its created_at');
SELECT ok(tide.run_cycle() IS NOT NULL, 'a cycle with room for two of three');
SELECT results_eq(format('SELECT id, state FROM tide.jobs WHERE id IN (%s, %s, %s) ORDER BY id', :h, :l, :m),
                  format($$VALUES (%s::bigint, 'allocated'), (%s, 'allocated'), (%s, 'pending')$$, :h, :l, :m),
                  'the released job is placed before the later one');
SELECT tide.hold(:m);
SELECT ok(tide.run_cycle() IS NOT NULL, 'a cycle');
SELECT is((SELECT pending_reason FROM tide.jobs WHERE id = :m), 'held', 'a held job keeps the reason held through cycles');
SELECT is((SELECT pending_reason FROM tide.pending WHERE job_id = :m), 'held', 'and tide.pending shows it');
SELECT throws_ok(format('SELECT tide.hold(%s)', :h), '55000', format('job %s is allocated: only a pending job can be held', :h),
                 'holding a job that is not pending');
SELECT throws_ok('SELECT tide.hold(987654321)', '42704', 'job 987654321 does not exist', 'holding an unknown id');
SELECT throws_ok('SELECT tide.release(987654321)', '42704', 'job 987654321 does not exist', 'releasing an unknown id');
SELECT lives_ok(format('SELECT tide.hold(%s)', :m), 'holding a held job again changes nothing (a NOTICE)');
SELECT lives_ok(format('SELECT tide.release(%s)', :qn0), 'releasing a pending job not held: no error (a NOTICE)');
SET LOCAL ROLE tap_alice;
SELECT tide.submit('q1', 'gpu=1') AS alice_job \gset
SELECT lives_ok(format('SELECT tide.hold(%s)', :alice_job), 'a submitter holds its own job');
SELECT throws_ok(format('SELECT tide.hold(%s)', :m), '42704', format('job %s does not exist', :m),
                 'another owner''s job: as missing');
SELECT throws_ok($$SELECT tide.hold_queue('q1')$$, '42501', NULL, 'a submitter may not hold a queue');
RESET ROLE;

-- ---- R-P3: deferred start
SELECT tide.submit('q1', 'cpu=1', begin_at => now() - interval '1 minute') AS past \gset
SELECT results_eq(format('SELECT deferred, waiting FROM tide.jobs WHERE id = %s', :past),
                  $$VALUES (false, false)$$, 'a begin_at in the past is no wait');
SELECT tide.submit('q1', 'cpu=1', begin_at => '2026-11-27 08:00:00+00'::timestamptz + interval '10 years') AS far \gset
SELECT results_eq(format('SELECT deferred, waiting, pending_reason FROM tide.jobs WHERE id = %s', :far),
                  $$VALUES (true, true, 'deferred until 2036-11-27 08:00:00+00')$$, 'a begin_at ahead: deferred, and says until when');
SELECT tide.submit('q1', 'cpu=1', begin_at => clock_timestamp() + interval '300 ms') AS soon \gset
SELECT ok((SELECT deferred FROM tide.jobs WHERE id = :soon), 'deferred for 300 ms');
SELECT ok(tide.run_cycle() IS NOT NULL, 'a cycle before it is due');
SELECT is(pg_temp.jstate(:soon), 'pending', 'not placed before begin_at');
SELECT pg_sleep(0.4);
SELECT ok(tide.run_cycle() IS NOT NULL, 'a cycle after it is due');
SELECT results_eq(format('SELECT state, deferred FROM tide.jobs WHERE id = %s', :soon),
                  $$VALUES ('allocated', false)$$, 'the cycle woke it and placed it');
SELECT is(pg_temp.jstate(:far), 'pending', 'the far one still waits');
SELECT ok(pg_get_indexdef('tide.jobs_deferred_idx'::regclass) ~ '\(begin_at\) WHERE \(deferred AND', 'the due step reads an index of deferred jobs');

-- ---- R-P4: queue hold
SELECT tide.hold_queue('q1');
SELECT ok((SELECT queue_held FROM tide.jobs WHERE id = :h), 'the queue''s running work is marked');
SELECT is(pg_temp.jstate(:h), 'allocated', 'and untouched');
SELECT tide.submit('q1', 'cpu=1') AS qn \gset
SELECT results_eq(format('SELECT waiting, pending_reason FROM tide.jobs WHERE id = %s', :qn),
                  $$VALUES (true, 'queue q1 is held')$$, 'a job submitted to a held queue waits, saying so');
SELECT throws_ok($$SELECT tide.hold_queue('nope')$$, '42704', 'queue "nope" does not exist', 'an unknown queue');
SELECT tide.release_queue('q1');
SELECT results_eq(format('SELECT waiting, pending_reason FROM tide.jobs WHERE id = %s', :qn),
                  $$VALUES (false, NULL::text)$$, 'released: it is considered again');

-- a held queue's jobs do not preempt (R-E2 needs a considered preemptor)
SELECT tide.cancel(id) FROM tide.jobs WHERE state IN ('pending', 'allocated') AND id <> :far;
UPDATE tide.allocations SET state = 'released', released_at = now(), release_reason = 'test' WHERE state <> 'released';
SELECT tide.submit('q1', 'gpu=8') AS t1 \gset
SELECT tide.submit('q1', 'gpu=8') AS t2 \gset
SELECT tide.run_cycle();
SELECT count(*) AS ev0 FROM tide.evictions \gset
SELECT tide.hold_queue('qi');
SELECT tide.submit('qi', 'gpu=8', service_type => 'inference') AS inf \gset
SELECT tide.run_cycle();
SELECT is((SELECT count(*)::int - :ev0 FROM tide.evictions), 0, 'an inference job of a held queue evicts nobody');
SELECT tide.release_queue('qi');
SELECT tide.run_cycle();
SELECT ok((SELECT count(*) FROM tide.evictions) > :ev0, 'released, it reclaims');

SELECT * FROM finish();
ROLLBACK;
