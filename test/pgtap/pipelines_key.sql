-- R-P6: idempotent submit.  One job (or array) per owner and key, as long
-- as its row exists; retries carry no key.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(11);

SELECT tide.submit('q1', 'gpu=1', key => 'exp-42/train', max_retries => 1) AS k1 \gset
SELECT count(*) AS jobs0 FROM tide.jobs \gset
SELECT count(*) AS events0 FROM tide.job_events \gset
SELECT is(tide.submit('q1', 'gpu=2', key => 'exp-42/train'), :k1::bigint, 'a second submit with the key returns the first id');
SELECT is((SELECT count(*) FROM tide.jobs), :jobs0::bigint, 'and writes no job');
SELECT is((SELECT count(*) FROM tide.job_events), :events0::bigint, 'nor any event');
SELECT is((SELECT key FROM tide.jobs WHERE id = :k1), 'exp-42/train', 'the key is on the job');
-- whatever state the first job is in
SELECT tide.cancel(:k1);
SELECT is(tide.submit('q1', 'gpu=1', key => 'exp-42/train'), :k1::bigint, 'a cancelled job still answers for its key');
-- another owner has its own keys
SET LOCAL ROLE tap_alice;
SELECT isnt(tide.submit('q1', 'gpu=1', key => 'exp-42/train'), :k1::bigint, 'another owner''s key is its own');
RESET ROLE;
-- a retry is not a second submit
SELECT tide.submit('q1', 'gpu=1', key => 'retried', max_retries => 1) AS kr \gset
SELECT pg_temp.place(:kr, ARRAY['n1']);
SELECT tide.exited((pg_temp.allocs(:kr))[1], 1);
SELECT results_eq(format('SELECT key FROM tide.jobs WHERE retry_of = %s', :kr), $$VALUES (NULL::text)$$, 'the retry carries no key');
SELECT is(tide.submit('q1', 'gpu=1', key => 'retried'), :kr::bigint, 'the key still names the job submitted');
-- arrays
SELECT tide.submit_array('q1', 'gpu=1', 3, key => 'sweep-7') AS a1 \gset
SELECT is(tide.submit_array('q1', 'gpu=1', 3, key => 'sweep-7'), :a1::bigint, 'an array''s key returns the first array');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE array_id = :a1), 3, 'with no new members');
SELECT throws_ok($$SELECT tide.submit('q1', 'gpu=1', key => '')$$, '22023', 'key must not be empty', 'an empty key');

SELECT * FROM finish();
ROLLBACK;
