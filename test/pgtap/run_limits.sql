-- Time limits enforced by the cycle (R-T1): a running job past
-- started_at + time_limit is evicted, ends failed with "time limit HH:MM:SS
-- reached" and is not retried; what counts, what does not, and how the
-- limit meets cancels, evictions in progress, changed limits and quiet
-- cycles; estimates of a job past its limit (never in the past).  Time is
-- faked by moving started_at into the past.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(46);
SET LOCAL tide.start_timeout = 0;

-- the limit as reasons write it
SELECT is(tide._hms('1 hour'), '01:00:00', 'an hour: 01:00:00');
SELECT is(tide._hms('3 seconds'), '00:00:03', 'three seconds: 00:00:03');
SELECT is(tide._hms('26 hours'), '1 day 02:00:00', 'days before the hours when it has any');
SELECT is(tide._hms('2 days 3 hours 4 minutes 5 seconds'), '2 days 03:04:05', 'days, hours, minutes, seconds');
SELECT is(tide._hms('1.5 seconds'), '00:00:01.5', 'a fraction of a second only when there is one');
SELECT is(tide._limit_at('2026-01-01 00:00:00+00', '1 day'), '2026-01-02 00:00:00+00'::timestamptz,
          'a day of a limit is 24 hours');

-- the due jobs are read through the partial index of running jobs with a limit
SET LOCAL enable_seqscan = off;
SELECT matches(pg_temp.plan_of($$SELECT j.id FROM tide.jobs j WHERE j.state = 'running' AND j.time_limit IS NOT NULL
                                 AND tide._limit_at(j.started_at, j.time_limit) <= clock_timestamp()$$),
               'jobs_limit_idx', 'the limit step''s condition is an index range of jobs_limit_idx');
SELECT matches(pg_temp.plan_of($$SELECT * FROM tide._limits_due(now(), '10 minutes')$$) || pg_temp.plan_of(
                   $$SELECT min(tide._limit_at(j.started_at, j.time_limit)) FROM tide.jobs j
                      WHERE j.state = 'running' AND j.time_limit IS NOT NULL$$),
               'Index Scan using jobs_limit_idx', 'the cycle''s check reads the earliest end from the index');
RESET enable_seqscan;

-- a running job within its limit is left alone
SELECT tide.submit('q1', 'gpu=1', time_limit => '1 hour', max_retries => 2) AS j1 \gset
SELECT tide.submit('q1', 'gpu=1') AS nolimit \gset
SELECT tide.run_cycle();
SELECT count(tide.started(a.id)) FROM tide.allocations a WHERE a.job_id IN (:j1, :nolimit);
SELECT is(pg_temp.jstate(:j1), 'running', 'the job runs');
SELECT tide.run_cycle();
SELECT is(pg_temp.jstate(:j1), 'running', 'within its limit it keeps running');

SELECT is((SELECT limits FROM tide._limits_due(clock_timestamp(), NULL)), false, 'nothing is due: the cycle runs no step');
SELECT is((SELECT limits FROM tide._limits_due(clock_timestamp() + interval '2 hours', NULL)), true,
          'the check sees a limit passed');

-- past its limit: evicted with goal fail, its allocations releasing, an eviction row
UPDATE tide.jobs SET started_at = now() - interval '61 minutes' WHERE id IN (:j1, :nolimit);
SELECT tide.run_cycle() AS c \gset
SELECT is((SELECT state || ' ' || evict_goal || ' | ' || state_reason FROM tide.jobs WHERE id = :j1),
          'evicting fail | time limit 01:00:00 reached', 'R-T1: past its limit the job is stopped, goal fail');
SELECT is((SELECT string_agg(state || ' ' || release_reason, ',') FROM tide.allocations WHERE job_id = :j1),
          'releasing time limit 01:00:00 reached', 'its allocations are released through the eviction path');
SELECT is((SELECT reason || ' ' || goal || ' ' || (cycle_id = :c) FROM tide.evictions WHERE job_id = :j1),
          'time limit 01:00:00 reached fail true', 'a tide.evictions row of this cycle says why');
SELECT is((SELECT jobs_evicted FROM tide.cycles WHERE id = :c), 1, 'the cycle counts the stopped job in jobs_evicted');
SELECT is(pg_temp.jstate(:nolimit), 'running', 'a job without a time limit is never stopped');
SELECT is((SELECT count(*)::int FROM tide.claim_evictions('n1')) + (SELECT count(*)::int FROM tide.claim_evictions('n2')), 1,
          'the launcher finds it among its evictions');

-- the launcher confirms: failed with the reason itself, no retry although retries are left
SELECT count(tide.evicted(a.id)) FROM tide.allocations a WHERE a.job_id = :j1 AND a.state = 'releasing';
SELECT is((SELECT state || ' | ' || state_reason FROM tide.jobs WHERE id = :j1),
          'failed | time limit 01:00:00 reached', 'R-T1: it ends failed, state_reason "time limit 01:00:00 reached"');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE retry_of = :j1), 0, 'R-T1: not retried, with max_retries 2');
SELECT is((SELECT max(reason) FROM tide.job_events WHERE job_id = :j1 AND new_state = 'failed'),
          'time limit 01:00:00 reached', 'the history says it too');
SELECT tide.run_cycle();
SELECT is((SELECT count(*)::int FROM tide.evictions WHERE job_id = :j1), 1, 'stopped once');

-- the limit counts from the job's started_at (all replicas running), not a replica's
SELECT tide.submit('q1', 'gpu=1', replicas => 2, time_limit => '10 minutes') AS g \gset
SELECT tide.run_cycle();
SELECT tide.started(min(a.id)) FROM tide.allocations a WHERE a.job_id = :g;
UPDATE tide.allocations SET started_at = now() - interval '1 hour' WHERE job_id = :g AND state = 'running';
SELECT tide.run_cycle();
SELECT is(pg_temp.jstate(:g), 'allocated', 'a job with a replica not started is not running: its limit has not begun');
SELECT tide.started(max(a.id)) FROM tide.allocations a WHERE a.job_id = :g;
SELECT tide.run_cycle();
SELECT is(pg_temp.jstate(:g), 'running', 'its limit counts from when the last replica started');

-- an administrator raises the limit of a running job: its end moves
UPDATE tide.jobs SET started_at = now() - interval '11 minutes' WHERE id = :g;
UPDATE tide.jobs SET time_limit = '1 hour' WHERE id = :g;
SELECT tide.run_cycle();
SELECT is(pg_temp.jstate(:g), 'running', 'a raised limit moves the end');
-- and lowers it into the past: stopped at the next cycle
UPDATE tide.jobs SET time_limit = '5 minutes' WHERE id = :g;
SELECT tide.run_cycle();
SELECT is((SELECT state || ' | ' || state_reason FROM tide.jobs WHERE id = :g), 'evicting | time limit 00:05:00 reached',
          'a limit lowered into the past stops the job at the next cycle, naming the new limit');
SELECT count(tide.evicted(a.id)) FROM tide.allocations a WHERE a.job_id = :g AND a.state = 'releasing';
SELECT is(pg_temp.jstate(:g), 'failed', 'and it fails');

-- a cancel under way when the limit passes: it ends cancelled, stopped once
SELECT tide.submit('q1', 'gpu=1', time_limit => '1 hour', max_retries => 1) AS c1 \gset
SELECT tide.run_cycle();
SELECT tide.started(a.id) FROM tide.allocations a WHERE a.job_id = :c1;
SELECT tide.cancel(:c1);
UPDATE tide.jobs SET started_at = now() - interval '2 hours' WHERE id = :c1;
SELECT tide.run_cycle();
SELECT is((SELECT evict_goal || ' ' || (SELECT count(*) FROM tide.evictions e WHERE e.job_id = :c1) FROM tide.jobs WHERE id = :c1),
          'cancel 1', 'a cancel under way is left as it is: no second stop');
SELECT count(tide.evicted(a.id)) FROM tide.allocations a WHERE a.job_id = :c1 AND a.state = 'releasing';
SELECT is(pg_temp.jstate(:c1), 'cancelled', 'it ends cancelled');

-- a cancel after the limit stop: the cancel wins, as for any eviction
SELECT tide.submit('q1', 'gpu=1', time_limit => '1 hour', max_retries => 1) AS c2 \gset
SELECT tide.run_cycle();
SELECT tide.started(a.id) FROM tide.allocations a WHERE a.job_id = :c2;
UPDATE tide.jobs SET started_at = now() - interval '2 hours' WHERE id = :c2;
SELECT tide.run_cycle();
SELECT tide.cancel(:c2);
SELECT count(tide.evicted(a.id)) FROM tide.allocations a WHERE a.job_id = :c2 AND a.state = 'releasing';
SELECT is((SELECT state || ' ' || (SELECT count(*) FROM tide.jobs r WHERE r.retry_of = :c2) FROM tide.jobs WHERE id = :c2),
          'cancelled 0', 'a cancel during the stop ends it cancelled, not retried');

-- an eviction under way (goal requeue) when the limit passes: it is requeued as it would be
SELECT tide.submit('q1', 'gpu=1', time_limit => '1 hour') AS r1 \gset
SELECT tide.run_cycle();
SELECT tide.started(a.id) FROM tide.allocations a WHERE a.job_id = :r1;
SELECT tide._evict(ARRAY[:r1]::bigint[], ARRAY['evicted for a test'], ARRAY['requeue']);
UPDATE tide.jobs SET started_at = now() - interval '2 hours' WHERE id = :r1;
SELECT tide.run_cycle();
SELECT is((SELECT evict_goal || ' | ' || state_reason FROM tide.jobs WHERE id = :r1), 'requeue | evicted for a test',
          'an eviction under way keeps its goal and reason');
SELECT count(tide.evicted(a.id)) FROM tide.allocations a WHERE a.job_id = :r1 AND a.state = 'releasing';
SELECT is((SELECT state || ' ' || (started_at IS NULL) FROM tide.jobs WHERE id = :r1), 'pending true',
          'it is requeued, its next run gets its whole limit');

-- a quiet cycle still stops what is due (the step comes before the quiet check)
SELECT tide.cancel(:r1);
SELECT tide.submit('q1', 'gpu=1', time_limit => '30 seconds') AS qj \gset
SELECT tide.run_cycle();
SELECT tide.started(a.id) FROM tide.allocations a WHERE a.job_id = :qj;
SELECT tide.run_cycle();
SELECT tide.run_cycle() AS quiet \gset
SELECT is(NOT EXISTS (SELECT 1 FROM tide.cycle_state s WHERE s.resource_group = '' AND s.cycle_id = :quiet),
          true, 'that cycle was quiet (it loaded nothing)');
UPDATE tide.jobs SET started_at = now() - interval '1 minute' WHERE id = :qj;
SELECT tide.run_cycle();
SELECT is(pg_temp.jstate(:qj), 'evicting', 'the job past its limit is stopped by the next cycle, quiet or not');
SELECT count(tide.evicted(a.id)) FROM tide.allocations a WHERE a.job_id = :qj AND a.state = 'releasing';

-- an exit of its own before the stop: succeeded as ever
SELECT tide.submit('q1', 'gpu=1', time_limit => '1 minute') AS ok1 \gset
SELECT tide.run_cycle();
SELECT tide.started(a.id) FROM tide.allocations a WHERE a.job_id = :ok1;
SELECT tide.exited(a.id, 0) FROM tide.allocations a WHERE a.job_id = :ok1;
UPDATE tide.jobs SET started_at = now() - interval '1 hour' WHERE id = :ok1;
SELECT tide.run_cycle();
SELECT is((SELECT state || ' ' || no_retry FROM tide.jobs WHERE id = :ok1), 'succeeded false', 'a job that ended is not stopped');

-- estimates: a running job past its limit, not stopped yet, ends now, never in the past
SELECT tide.cancel(:nolimit);
SELECT count(tide.evicted(a.id)) FROM tide.allocations a WHERE a.job_id = :nolimit AND a.state = 'releasing';
INSERT INTO tide.queues (name, quota) VALUES ('qt', 'gpu=32');
SELECT tide.submit('qt', 'gpu=8', time_limit => '1 hour') AS big1 \gset
SELECT tide.submit('qt', 'gpu=8', time_limit => '1 hour') AS big2 \gset
SELECT tide.run_cycle();
SELECT count(tide.started(a.id)) FROM tide.allocations a WHERE a.job_id IN (:big1, :big2);
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE id IN (:big1, :big2) AND state = 'running'), 2, 'both nodes full');
SELECT tide.submit('qt', 'gpu=8', reserve => true) AS waiter \gset
UPDATE tide.jobs SET started_at = now() - interval '2 hours' WHERE id IN (:big1, :big2);
UPDATE tide.allocations SET started_at = now() - interval '2 hours' WHERE job_id IN (:big1, :big2);
SELECT cmp_ok(tide.estimate_start(:waiter), '>=', now(), 'estimate_start: a job past its limit ends now, not in the past');
SELECT cmp_ok((SELECT min((r ->> 'ends_by')::timestamptz) FROM jsonb_array_elements(tide.explain(:waiter) -> 'blocking') b,
                      jsonb_array_elements(b -> 'next_to_end') r),
              '>=', now(), 'explain: its ends_by is now, not in the past');
SELECT ok((SELECT bool_and(ends_by >= now()) FROM tide._group_releases('default')), 'every release is now or later');
SELECT cmp_ok((SELECT min(substring(reason FROM 'expected to start at (.*)$')::timestamptz) FROM tide.dry_run()
                WHERE kind = 'hold' AND job_id = :waiter),
              '>=', now(), 'the engine''s reservation: expected start now, not in the past');
-- then the cycle stops them, and the waiter starts once they are confirmed
SELECT tide.run_cycle();
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE id IN (:big1, :big2) AND state = 'evicting'), 2, 'both are stopped');
SELECT count(tide.evicted(a.id)) FROM tide.allocations a WHERE a.job_id IN (:big1, :big2) AND a.state = 'releasing';
SELECT tide.run_cycle();
SELECT is(pg_temp.jstate(:waiter), 'allocated', 'the waiter is placed on what they freed');

-- a job stopped at its limit is no eviction by others: tide.evictions counts it, its reason is its own
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE state = 'failed' AND state_reason LIKE 'failed by eviction%'), 0,
          'no job stopped at its limit says "failed by eviction"');
SELECT is((SELECT array_agg(id ORDER BY id) FROM tide.jobs WHERE no_retry AND state = 'failed'),
          ARRAY[:j1, :g, :qj, :big1, :big2]::bigint[], 'no_retry marks the jobs stopped at their limit');

-- privileges: the steps are the cycle's
SELECT is(has_function_privilege('tap_alice', 'tide._stop_at_limits()', 'EXECUTE'), false, 'a submitter cannot run the limit step');
SELECT is(has_function_privilege('tap_admin', 'tide._stop_at_limits()', 'EXECUTE'), true, 'an administrator can');

SELECT * FROM finish();
ROLLBACK;
