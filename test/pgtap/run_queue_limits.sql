-- A queue's time limits (R-T1, the queue part), warn_before (R-T2) and
-- grace_period (R-T3) at submission: the queue's default given to a job
-- without a limit, a limit above its maximum refused, by every path
-- (tide.submit, tide.submit_array, tide.submit_many, a plain INSERT) and
-- for every role; retries keep theirs; changing the queue leaves jobs as
-- they are; an UPDATE of a job's limits is checked as a submission is.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(26);

INSERT INTO tide.queues (name, default_time_limit, max_time_limit) VALUES ('lim', '1 hour', '4 hours');
INSERT INTO tide.queues (name, max_time_limit) VALUES ('strict', '2 hours');

-- the default
SET ROLE tap_alice;
SELECT tide.submit('lim', 'gpu=1') AS d1 \gset
SELECT tide.submit_array('lim', 'gpu=1', 2) AS arr \gset
SELECT tide.submit_many('lim', ARRAY['gpu=1']::tide.resvec[]) AS many \gset
INSERT INTO tide.jobs (queue) VALUES ('lim') RETURNING id AS ins \gset
RESET ROLE;
SELECT is((SELECT time_limit FROM tide.jobs WHERE id = :d1), interval '1 hour', 'tide.submit: no time_limit takes the queue''s default');
SELECT is((SELECT array_agg(DISTINCT time_limit)::text FROM tide.jobs WHERE array_id = :arr), '{01:00:00}', 'tide.submit_array: every member too');
SELECT is((SELECT time_limit FROM tide.jobs WHERE id = (:'many'::bigint[])[1]), interval '1 hour', 'tide.submit_many too');
SELECT is((SELECT time_limit FROM tide.jobs WHERE id = :ins), interval '1 hour', 'a plain INSERT too');
SELECT tide.submit('lim', 'gpu=1', time_limit => '30 minutes') AS own \gset
SELECT tide.submit('q1', 'gpu=1') AS none \gset
SELECT is((SELECT time_limit FROM tide.jobs WHERE id = :own), interval '30 minutes', 'a job''s own limit is kept');
SELECT is((SELECT time_limit FROM tide.jobs WHERE id = :none), NULL::interval, 'a queue without a default gives none');

-- the maximum
SELECT is(pg_temp.err($$SELECT tide.submit('lim', 'gpu=1', time_limit => '5 hours')$$),
          '23514 | time_limit 05:00:00 is above the maximum 04:00:00 of queue "lim" | Give a shorter time_limit, or submit to a queue that allows it.',
          'tide.submit: a limit above the queue''s maximum is refused, naming both and the queue');
SELECT is(pg_temp.err($$SELECT tide.submit('lim', 'gpu=1', time_limit => '4 hours')$$), 'no error', 'the maximum itself is accepted');
SELECT is(pg_temp.err($$SELECT tide.submit('strict', 'gpu=1')$$),
          '23514 | queue "strict" needs a time_limit of at most 02:00:00 | Give the job a time_limit, e.g. time_limit => ''1 hour''.',
          'no limit in a queue with a maximum and no default is refused');
SELECT alike(pg_temp.err($$SELECT tide.submit_array('lim', 'gpu=1', 3, time_limit => '1 day')$$),
             '23514 | time_limit 1 day is above the maximum 04:00:00 of queue "lim"%', 'tide.submit_array too');
SELECT alike(pg_temp.err($$SELECT tide.submit_many('lim', ARRAY['gpu=1']::tide.resvec[], time_limit => '1 day')$$),
             '23514 | time_limit 1 day is above the maximum%', 'tide.submit_many too');
SELECT alike(pg_temp.err($$INSERT INTO tide.jobs (queue, time_limit) VALUES ('strict', '3 hours')$$),
             '23514 | time_limit 03:00:00 is above the maximum 02:00:00 of queue "strict"%', 'a plain INSERT too');
SET ROLE tap_admin;
SELECT alike(pg_temp.err($$SELECT tide.submit('strict', 'gpu=1', time_limit => '3 hours')$$),
             '23514 | time_limit 03:00:00 is above the maximum%', 'an administrator too: the queue is changed, not the rule');
RESET ROLE;

-- warn_before and grace_period
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', warn_before => '5 minutes')$$),
          '23514 | warn_before 00:05:00 needs a time_limit to come before | Give the job a time_limit, or leave warn_before NULL.',
          'warn_before without a time_limit is refused');
SELECT alike(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', time_limit => '10 minutes', warn_before => '10 minutes')$$),
             '23514 | warn_before 00:10:00 is not shorter than the time_limit 00:10:00%', 'warn_before as long as the limit is refused');
SELECT is(pg_temp.err($$SELECT tide.submit('lim', 'gpu=1', warn_before => '5 minutes')$$), 'no error',
          'warn_before before the queue''s default limit is accepted');
SELECT alike(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', grace_period => '-1 second')$$),
             '23514 | grace_period must be between 0 and 1 day, not -00:00:01%', 'a negative grace_period is refused');
SELECT alike(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', grace_period => '2 days')$$),
             '23514 | grace_period must be between 0 and 1 day, not 2 days%', 'and one over a day');
SELECT tide.submit('lim', 'gpu=1', time_limit => '2 hours', warn_before => '2 minutes', grace_period => '30 seconds') AS wg \gset
SELECT is((SELECT warn_before || ' ' || grace_period FROM tide.jobs WHERE id = :wg), '00:02:00 00:00:30', 'both are kept as given');

-- changing the queue leaves submitted jobs as they are
UPDATE tide.queues SET default_time_limit = '2 hours', max_time_limit = '3 hours' WHERE name = 'lim';
SELECT is((SELECT time_limit FROM tide.jobs WHERE id = :d1), interval '1 hour', 'a new default does not touch submitted jobs');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE queue = 'lim' AND time_limit = '4 hours'), 1,
          'nor does a lower maximum');
SELECT throws_ok($$UPDATE tide.queues SET default_time_limit = '5 hours' WHERE name = 'lim'$$, '23514', NULL,
                 'a default above the maximum is refused');

-- an administrator's UPDATE
SELECT alike(pg_temp.err(format($$UPDATE tide.jobs SET time_limit = '3 hours 1 second' WHERE id = %s$$, :d1)),
             '23514 | time_limit 03:00:01 is above the maximum 03:00:00 of queue "lim"%', 'an UPDATE above the maximum is refused');
SELECT is(pg_temp.err(format($$UPDATE tide.jobs SET time_limit = '3 hours' WHERE id = %s$$, :d1)), 'no error',
          'within it, accepted');

-- a retry keeps its job's limit, even when the queue no longer allows it
SELECT tide.submit('lim', 'gpu=1', time_limit => '3 hours', max_retries => 1) AS r \gset
UPDATE tide.queues SET max_time_limit = '2 hours', default_time_limit = NULL WHERE name = 'lim';
SELECT pg_temp.place(:r, ARRAY['n1']);
SELECT tide.started(a) FROM unnest(pg_temp.allocs(:r)) a;
SELECT tide.exited(a, 1) FROM unnest(pg_temp.allocs(:r)) a;
SELECT is((SELECT time_limit FROM tide.jobs WHERE retry_of = :r), interval '3 hours', 'a retry keeps its job''s limit');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE retry_of = :r), 1, 'and exists');

SELECT * FROM finish();
ROLLBACK;
