-- Retry backoff (R-T5): a retry of a command that failed waits
-- tide.retry_backoff, doubled per attempt and capped by
-- tide.retry_backoff_max, as a deferred job (R-P3: not loaded meanwhile)
-- whose reason says so; an interrupted attempt (a lost node, an eviction)
-- comes back at once; 0 turns it off; a dependency on the job waits for
-- the retry's end.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(16);

-- fail the current attempt of a job's chain with an exit code; returns the retry
CREATE FUNCTION pg_temp.fail_last(first bigint, code integer) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    j bigint := first;
    nxt bigint;
BEGIN
    LOOP
        SELECT id INTO nxt FROM tide.jobs WHERE retry_of = j;
        EXIT WHEN nxt IS NULL;
        j := nxt;
    END LOOP;
    UPDATE tide.jobs SET deferred = false, begin_at = NULL, pending_reason = NULL WHERE id = j AND deferred;
    PERFORM pg_temp.place(j, ARRAY['n1']);
    PERFORM tide.started(a) FROM unnest(pg_temp.allocs(j)) a;
    PERFORM tide.exited(a, code) FROM unnest(pg_temp.allocs(j)) a;
    RETURN (SELECT id FROM tide.jobs WHERE retry_of = j);
END $$;

SET tide.retry_backoff = '10s';
SET tide.retry_backoff_max = '25s';
SELECT tide.submit('q1', 'gpu=1', max_retries => 4) AS j \gset
SELECT pg_temp.fail_last(:j, 3) AS r2 \gset
SELECT is((SELECT begin_at - now() FROM tide.jobs WHERE id = :r2), interval '10 seconds',
          'the first retry of a failed command waits tide.retry_backoff');
SELECT is((SELECT deferred AND waiting FROM tide.jobs WHERE id = :r2), true, 'as a deferred job, out of the cycle''s load');
SELECT is((SELECT pending_reason FROM tide.jobs WHERE id = :r2),
          format('retry backs off until %s+00 (attempt 2)', to_char((now() + interval '10 seconds') AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')),
          'its reason says until when and which attempt');
SELECT is((SELECT pending_reason FROM tide.pending WHERE job_id = :r2), (SELECT pending_reason FROM tide.jobs WHERE id = :r2),
          'tide.pending shows it');
SELECT pg_temp.fail_last(:j, 3) AS r3 \gset
SELECT is((SELECT begin_at - now() FROM tide.jobs WHERE id = :r3), interval '20 seconds', 'the second waits twice as long');
SELECT pg_temp.fail_last(:j, 3) AS r4 \gset
SELECT is((SELECT begin_at - now() FROM tide.jobs WHERE id = :r4), interval '25 seconds', 'capped by tide.retry_backoff_max');
SELECT is((SELECT created_at FROM tide.jobs WHERE id = :r4), (SELECT created_at FROM tide.jobs WHERE id = :j),
          'a retry keeps its place in the order (R-O1, R-O3)');

-- due: the cycle's step for due deferred jobs lets it in (R-P3)
UPDATE tide.jobs SET begin_at = now() - interval '1 second' WHERE id = :r4;
SELECT tide._wake_due();
SELECT is((SELECT deferred OR waiting FROM tide.jobs WHERE id = :r4), false, 'once due, it is considered again');

-- an interrupted attempt is retried at once
SELECT tide.submit('q1', 'gpu=1', max_retries => 2) AS k \gset
SELECT pg_temp.place(:k, ARRAY['n2']);
SELECT tide.started(a) FROM unnest(pg_temp.allocs(:k)) a;
SELECT tide._nodes_lost(ARRAY['n2'], 'gone', true);
SELECT is((SELECT begin_at FROM tide.jobs WHERE retry_of = :k), NULL::timestamptz, 'a retry after a lost node does not wait');
SELECT is((SELECT waiting FROM tide.jobs WHERE retry_of = :k), false, 'and is considered at once');
SELECT tide.heartbeat('n2');

-- exit 0 is no failure; 0 turns backoff off
SET tide.retry_backoff = 0;
SELECT tide.submit('q1', 'gpu=1', max_retries => 1) AS z \gset
SELECT pg_temp.fail_last(:z, 1) AS z2 \gset
SELECT is((SELECT begin_at FROM tide.jobs WHERE id = :z2), NULL::timestamptz, 'tide.retry_backoff = 0: no wait');
RESET tide.retry_backoff;
SELECT is(current_setting('tide.retry_backoff'), '10s', 'the default is 10 s');
SELECT is(current_setting('tide.retry_backoff_max'), '25s', '(the cap as set in this test)');

-- a dependency on the job waits for its retry (R-P1: the last attempt)
SELECT tide.submit('q1', 'gpu=1', max_retries => 1) AS a \gset
SELECT tide.submit('q1', 'gpu=1', after => ARRAY[:a]::bigint[]) AS b \gset
SELECT pg_temp.fail_last(:a, 2) AS a2 \gset
SELECT is((SELECT pending_reason FROM tide.jobs WHERE id = :a2) LIKE 'retry backs off until %', true, 'the retry backs off');
SELECT is((SELECT state || ' ' || dependencies_unmet FROM tide.jobs WHERE id = :b), 'pending 1',
          'the job after it still waits: the retry may yet succeed');

-- a held retry: the hold comes first in its reason, the backoff still applies
SELECT tide.hold(:a2);
SELECT is((SELECT pending_reason FROM tide.jobs WHERE id = :a2), 'held', 'held while backing off: held first');

SELECT * FROM finish();
ROLLBACK;
