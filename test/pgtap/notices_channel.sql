-- Completion notices (R-C5): each role's channel is its own (another role
-- can neither compute nor ask for it), the jobs that start running or end
-- are announced once per statement and owner, in payloads below 8000
-- bytes naming only job ids and states.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(30);

-- code | message of the error sql raises
CREATE OR REPLACE FUNCTION pg_temp.err(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    s text;
    m text;
BEGIN
    EXECUTE sql;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT;
    RETURN s || ' | ' || m;
END $$;
GRANT EXECUTE ON FUNCTION pg_temp.err(text) TO PUBLIC;

-- ---------------------------------------------------------------- the channel
-- (SESSION AUTHORIZATION: the session's login role is the role itself, as
-- for a real client; SET ROLE keeps the superuser's)
SET SESSION AUTHORIZATION tap_alice;
SELECT tide.owner_channel() AS alice_ch \gset
SELECT matches(:'alice_ch'::text, '^tide_owner_[0-9a-f]{40}$', 'a channel name is tide_owner_ and 40 hex digits (LISTEN takes it unquoted)');
SELECT is(tide.owner_channel(), :'alice_ch'::text, 'the same name at every call');
SET SESSION AUTHORIZATION tap_bob;
SELECT tide.owner_channel() AS bob_ch \gset
SELECT isnt(:'bob_ch'::text, :'alice_ch'::text, 'another role has another channel');
SELECT is(pg_temp.err($$SELECT tide._channel_for('tap_alice')$$),
          '42501 | role "tap_bob" may not know the notice channel of role "tap_alice"',
          'a role cannot ask for another''s channel');
SELECT is(pg_temp.err($$SELECT tide._owner_channel_of('tap_alice')$$),
          '42501 | permission denied for function _owner_channel_of', 'nor compute it');
SELECT is(pg_temp.err($$SELECT secret FROM tide._notice_secret$$),
          '42501 | permission denied for table _notice_secret', 'nor read the secret it is made from');
SELECT is(pg_temp.err($$SELECT * FROM tide._job_notices('{tap_alice}', '{1}', '{running}')$$),
          '42501 | permission denied for function _job_notices', 'nor have notices made for it');
-- Readers and administrators read every job, but hear no other role's notices.
SET SESSION AUTHORIZATION tap_reader;
SELECT alike(pg_temp.err($$SELECT tide._channel_for('tap_alice')$$), '42501 | permission denied for function _channel_for', 'nor may a reader');
SELECT alike(pg_temp.err($$SELECT secret FROM tide._notice_secret$$), '42501 | permission denied%', '(nor read the secret)');
SET SESSION AUTHORIZATION tap_admin;
SELECT alike(pg_temp.err($$SELECT tide._channel_for('tap_alice')$$), '42501 | role "tap_admin" may not know%', 'nor an administrator');
SELECT alike(pg_temp.err($$SELECT secret FROM tide._notice_secret$$), '42501 | permission denied%', '(nor read the secret)');
SELECT alike(pg_temp.err($$SELECT tide._channel_for('no such role')$$), '42501 | role "tap_admin" may not know%',
             'a name that is no role: the same answer');
SELECT matches(tide.owner_channel(), '^tide_owner_', 'an administrator has a channel of its own');
RESET SESSION AUTHORIZATION;
-- A role that may become another (a member of it) may know its channel, as it could SET ROLE and ask.
GRANT tap_alice TO tap_admin;
SET SESSION AUTHORIZATION tap_admin;
SELECT is(tide._channel_for('tap_alice'), :'alice_ch'::text, 'a member of a role may ask for its channel');
SET ROLE tap_alice;
SELECT is(tide.owner_channel(), :'alice_ch'::text, 'and after SET ROLE, owner_channel() names the role''s');
RESET ROLE;
RESET SESSION AUTHORIZATION;
REVOKE tap_alice FROM tap_admin;
SELECT is(tide._owner_channel_of('tap_alice'), :'alice_ch'::text, 'the channel the notices go to is the one alice was given');
SELECT ok(NOT has_table_privilege(r, 'tide._notice_secret', 'SELECT'), 'no SELECT on the secret for ' || r)
  FROM unnest(ARRAY['public', 'tide_admin', 'tide_reader', 'tide_submitter', 'tide_launcher']) r;

-- ---------------------------------------------------------------- the payloads
-- 200 jobs of one owner: two payloads (150 and 50 jobs), each below 8000
-- bytes even with the longest ids and states; two owners: one each.
SELECT is((SELECT array_agg(pg_catalog.jsonb_array_length(payload::jsonb) ORDER BY channel, payload::jsonb->0->>'job')
             FROM tide._job_notices(array_fill('tap_alice'::text, ARRAY[200]),
                                    ARRAY(SELECT 9223372036854775807 - g FROM generate_series(1, 200) g),
                                    array_fill('succeeded'::text, ARRAY[200]))),
          ARRAY[150, 50], 'one owner''s 200 jobs: 150 and 50 per payload');
SELECT ok((SELECT max(octet_length(payload)) < 8000
             FROM tide._job_notices(array_fill('tap_alice'::text, ARRAY[200]),
                                    ARRAY(SELECT 9223372036854775807 - g FROM generate_series(1, 200) g),
                                    array_fill('cancelled'::text, ARRAY[200]))),
          'every payload below 8000 bytes, the longest ids and states included');
SELECT results_eq($$SELECT channel, payload FROM tide._job_notices('{tap_bob,tap_alice,tap_bob}', '{3,1,2}', '{failed,running,succeeded}')$$,
                  format($$VALUES (%L, '[{"job": 1, "state": "running"}]'),
                                  (%L, '[{"job": 2, "state": "succeeded"}, {"job": 3, "state": "failed"}]')$$,
                         :'alice_ch'::text, :'bob_ch'),
                  'one payload per owner, on its channel, jobs in id order, nothing but id and state');

-- ---------------------------------------------------------------- the trigger
-- What the trigger hands tide._job_notices, recorded by a stand-in that
-- forwards to it (rolled back with the test).
CREATE TEMP TABLE sent (call serial, channel text, payload text);
ALTER FUNCTION tide._job_notices(text[], bigint[], text[]) RENAME TO _job_notices_real;
CREATE FUNCTION tide._job_notices(owners text[], ids bigint[], states text[])
    RETURNS TABLE(channel text, payload text) LANGUAGE plpgsql AS $$
DECLARE
    n integer := nextval('pg_temp.sent_call_seq');
BEGIN
    RETURN QUERY INSERT INTO pg_temp.sent (call, channel, payload)
                 SELECT n, x.channel, x.payload FROM tide._job_notices_real(owners, ids, states) x
                 RETURNING sent.channel, sent.payload;
END $$;
-- (in call order, then by who heard it: the channels' order is the secret's)
CREATE FUNCTION pg_temp.heard() RETURNS text[] LANGUAGE sql AS $$
    SELECT coalesce(array_agg(h ORDER BY call, h), '{}')
      FROM (SELECT call, format('%s:%s', CASE channel WHEN tide._owner_channel_of('tap_alice') THEN 'alice'
                                                      WHEN tide._owner_channel_of('tap_bob') THEN 'bob' END,
                                payload) AS h
              FROM pg_temp.sent) s $$;

SET ROLE tap_alice;
SELECT tide.submit('q1', 'gpu=1', max_retries => 1) AS a1 \gset
SELECT tide.submit('q1', 'gpu=1') AS a2 \gset
SET ROLE tap_bob;
SELECT tide.submit('q1', 'gpu=1') AS b1 \gset
RESET ROLE;
SELECT pg_temp.place(:a1, ARRAY['n1']);
SELECT is(pg_temp.heard(), '{}', 'submitted and allocated: nothing heard');
SELECT tide.started(a) FROM unnest(pg_temp.allocs(:a1)) a;
SELECT is(pg_temp.heard(), ARRAY[format('alice:[{"job": %s, "state": "running"}]', :a1)], 'running: its owner hears it');
TRUNCATE pg_temp.sent;
UPDATE tide.jobs SET labels = '{"x": 1}' WHERE id = :a1;
SELECT is(pg_temp.heard(), '{}', 'a change that is no start or end: nothing');
SELECT tide.exited(a, 1) FROM unnest(pg_temp.allocs(:a1)) a;
SELECT is(pg_temp.heard(), ARRAY[format('alice:[{"job": %s, "state": "failed"}]', :a1)],
          'failed: heard (its retry is a new pending job, not announced)');
TRUNCATE pg_temp.sent;
UPDATE tide.jobs SET cancel_requested = true WHERE state = 'pending';
SELECT is(pg_temp.heard(),
          ARRAY[format('alice:[{"job": %s, "state": "cancelled"}, {"job": %s, "state": "cancelled"}]', :a2, (SELECT id FROM tide.jobs WHERE retry_of = :a1)),
                format('bob:[{"job": %s, "state": "cancelled"}]', :b1)],
          'one statement that ends jobs of two owners: one payload each, in one call');
SELECT is((SELECT count(DISTINCT call)::int FROM pg_temp.sent), 1, '(one call: one notifying statement)');

SELECT * FROM finish();
ROLLBACK;
