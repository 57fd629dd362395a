-- History for analysts: tide.job_waits, tide.wait_stats, tide.gpu_utilisation.
-- Everything runs in one transaction, where now() stands still, so the test
-- moves history rows back in time by hand (with the append-only and
-- frozen-row triggers off, inside the rolled-back transaction) to get waits
-- and utilisation it can predict.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(22);

CREATE FUNCTION pg_temp.backdate_submission(job bigint, by_ interval) RETURNS void
    LANGUAGE sql SET session_replication_role = replica AS $$
    UPDATE tide.job_events SET at = at - by_ WHERE job_id = job AND old_state IS NULL
$$;

-- Three jobs placed after 10, 20 and 30 seconds; one still pending for 5 minutes.
SELECT tide.submit('q1', 'gpu=2', name => 'a') AS a, tide.submit('q1', 'gpu=2', name => 'b') AS b,
       tide.submit('q1', 'gpu=2', name => 'c') AS c, tide.submit('q1', 'gpu=1', name => 'p') AS p \gset
SELECT pg_temp.backdate_submission(:a, '10 seconds'), pg_temp.backdate_submission(:b, '20 seconds'),
       pg_temp.backdate_submission(:c, '30 seconds'), pg_temp.backdate_submission(:p, '5 minutes');

SELECT is((SELECT count(*) FROM tide.job_waits WHERE queue = 'q1'), 4::bigint, 'job_waits: one row per job');
SELECT is((SELECT placed_at FROM tide.job_waits WHERE job_id = :p), NULL, 'a pending job has no placement time');
SELECT is((SELECT wait FROM tide.job_waits WHERE job_id = :p), interval '5 minutes', 'its wait grows until it is placed');

SELECT pg_temp.place(:a, ARRAY['n1']), pg_temp.place(:b, ARRAY['n1']), pg_temp.place(:c, ARRAY['n2']);
SELECT is((SELECT wait FROM tide.job_waits WHERE job_id = :a), interval '10 seconds', 'wait = first placement - submission');
SELECT is((SELECT placements FROM tide.job_waits WHERE job_id = :a), 1::bigint, 'placed once');
SELECT is((SELECT running_at FROM tide.job_waits WHERE job_id = :a), NULL, 'not running before the launcher starts it');

SELECT tide.started((pg_temp.allocs(:a))[1]);
SELECT tide.exited((pg_temp.allocs(:a))[1], 0);
SELECT ok((SELECT running_at IS NOT NULL AND finished_at IS NOT NULL FROM tide.job_waits WHERE job_id = :a),
          'a finished job has running and finished times');
SELECT is((SELECT state FROM tide.job_waits WHERE job_id = :a), 'succeeded', 'and its final state');

-- wait_stats over the jobs placed in the window.
SELECT results_eq(
    $$SELECT jobs_placed, mean_wait, p50_wait, max_wait, pending_now, longest_pending
        FROM tide.wait_stats(now() - interval '1 hour', now() + interval '1 second') WHERE queue = 'q1'$$,
    $$VALUES (3::bigint, interval '20 seconds', interval '20 seconds', interval '30 seconds', 1::bigint, interval '5 minutes')$$,
    'wait_stats: count, mean, median and longest wait of placed jobs; what still waits');
SELECT is((SELECT p99_wait FROM tide.wait_stats(now() - interval '1 hour', now() + interval '1 second') WHERE queue = 'q1'),
          interval '29.8 seconds', 'p99 interpolates between the waits');
SELECT results_eq(
    $$SELECT jobs_placed, mean_wait, pending_now FROM tide.wait_stats(now() - interval '1 hour', now() + interval '1 second')
       WHERE queue = 'qi'$$,
    $$VALUES (0::bigint, NULL::interval, 0::bigint)$$,
    'a queue without jobs still has its row');
SELECT is((SELECT jobs_placed FROM tide.wait_stats(now() - interval '2 hours', now() - interval '1 hour') WHERE queue = 'q1'),
          0::bigint, 'placements outside the window do not count');

-- GPU utilisation: n1 and n2 have 8 GPUs each (n3 none): 16 GPUs.
-- b holds 2 GPUs of n1 and c 2 of n2 for the whole first minute of the
-- window; a held 2 GPUs for its first 30 seconds only; a half GPU for the
-- second half of minute two.
UPDATE tide.allocations SET created_at = '2026-01-01 00:00:00+00'
 WHERE job_id IN (:b, :c);
SET LOCAL session_replication_role = replica;   -- released rows are frozen: triggers off
UPDATE tide.allocations SET created_at = '2026-01-01 00:00:00+00', released_at = '2026-01-01 00:00:30+00'
 WHERE job_id = :a;
SET LOCAL session_replication_role = origin;
SELECT tide.submit('q1', 'gpu=0.5', name => 'f') AS f \gset
SELECT pg_temp.place(:f, ARRAY['n2']);
UPDATE tide.allocations SET created_at = '2026-01-01 00:01:30+00' WHERE job_id = :f;
SELECT results_eq(
    $$SELECT bucket_start, gpus_total, gpus_allocated, utilisation
        FROM tide.gpu_utilisation('2026-01-01 00:00:00+00', '2026-01-01 00:02:00+00', '1 minute')$$,
    $$VALUES ('2026-01-01 00:00:00+00'::timestamptz, 16::numeric, 5.000::numeric, 0.3125::numeric),
             ('2026-01-01 00:01:00+00'::timestamptz, 16::numeric, 4.250::numeric, 0.2656::numeric)$$,
    'gpu_utilisation: time-weighted GPUs held per bucket, fractional shares counted');
SELECT is((SELECT count(*) FROM tide.gpu_utilisation('2026-01-01 00:00:00+00', '2026-01-01 00:01:00+00', '7 seconds')),
          9::bigint, 'a last partial bucket is still a bucket');
SELECT is((SELECT gpus_allocated FROM tide.gpu_utilisation('2026-01-01 00:00:00+00', '2026-01-01 00:00:10+00', '1 minute')),
          6.000::numeric, 'a window shorter than a bucket is one short bucket');
SELECT is((SELECT gpus_total FROM tide.gpu_utilisation('2026-01-01 00:00:00+00', '2026-01-01 00:01:00+00', '1 minute', 'elsewhere')),
          0::numeric, 'an unknown resource group has no GPUs');
SELECT is((SELECT utilisation FROM tide.gpu_utilisation('2026-01-01 00:00:00+00', '2026-01-01 00:01:00+00', '1 minute', 'elsewhere')),
          NULL, 'and no utilisation rather than a division by zero');

SELECT throws_ok($$SELECT * FROM tide.gpu_utilisation(now() - interval '1 hour', now(), '0 seconds')$$,
                 '22023', 'bucket must be a positive interval, not 00:00:00', 'a zero bucket is refused');
SELECT throws_ok($$SELECT * FROM tide.gpu_utilisation(now(), now() - interval '1 hour')$$,
                 '22023', NULL, 'an empty window is refused');
SELECT throws_ok($$SELECT * FROM tide.gpu_utilisation(now() - interval '1 year', now(), '1 second')$$,
                 '54000', 'the window holds more than 100000 buckets of 00:00:01', 'too many buckets are refused');

-- Row-level security applies: a submitter sees its own jobs only.
SET LOCAL ROLE tap_alice;
SELECT tide.submit('q1', 'gpu=1', name => 'alice') AS mine \gset
SELECT is((SELECT array_agg(name) FROM tide.job_waits), ARRAY['alice'], 'a submitter sees only its own waits');
SELECT is((SELECT pending_now FROM tide.wait_stats() WHERE queue = 'q1'), 1::bigint,
          'and wait_stats counts only what it may see');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
