-- A submitter asks tide.explain and tide.estimate_start about its own jobs:
-- answers computed with every job counted, the jobs of other owners in
-- them counted, never named; another owner's job answers as a missing one.
-- Alice's and Bob's jobs block each other in every way explain reports:
-- jobs ahead, a capability freed by running jobs, no room until jobs end,
-- dependencies, a reservation, evictions for a preemptor, an eviction
-- suffered, the start estimate's running jobs and jobs without a limit.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(41);

-- the answer of query q as role r (the role reset after)
CREATE FUNCTION pg_temp.ask(r text, q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    said text;
BEGIN
    EXECUTE format('SET LOCAL ROLE %I', r);
    EXECUTE q INTO said;
    RESET ROLE;
    RETURN said;
END $$;
CREATE FUNCTION pg_temp.ex(r text, job bigint) RETURNS jsonb
    LANGUAGE sql AS $$ SELECT pg_temp.ask(r, format('SELECT tide.explain(%s)', job))::jsonb $$;
CREATE FUNCTION pg_temp.est(r text, job bigint) RETURNS timestamptz
    LANGUAGE sql AS $$ SELECT pg_temp.ask(r, format('SELECT tide.estimate_start(%s)', job))::timestamptz $$;
-- the blocking entry of a rule in an answer
CREATE FUNCTION pg_temp.rule(doc jsonb, r text) RETURNS jsonb
    LANGUAGE sql AS $$ SELECT b FROM jsonb_array_elements(doc -> 'blocking') b WHERE b ->> 'rule' = r LIMIT 1 $$;
-- the job ids of a list: numbers, or the objects' job_id
CREATE FUNCTION pg_temp.ids(list jsonb) RETURNS bigint[]
    LANGUAGE sql AS $$
SELECT coalesce(array_agg(coalesce(e ->> 'job_id', e #>> '{}')::bigint ORDER BY n), '{}')
  FROM jsonb_array_elements(coalesce(list, '[]')) WITH ORDINALITY x(e, n) $$;
-- ids of the given owner among ids, in their order
CREATE FUNCTION pg_temp.owned(ids bigint[], who text) RETURNS bigint[]
    LANGUAGE sql AS $$
SELECT coalesce(array_agg(i ORDER BY n), '{}') FROM unnest(ids) WITH ORDINALITY u(i, n)
 WHERE EXISTS (SELECT 1 FROM tide.jobs j WHERE j.id = i AND j.owner = who) $$;
-- ids that occur as whole numbers in a text
CREATE FUNCTION pg_temp.named(t text, ids bigint[]) RETURNS bigint[]
    LANGUAGE sql AS $$ SELECT coalesce(array_agg(i), '{}') FROM unnest(ids) i WHERE t ~ ('\m' || i || '\M') $$;

-- A queue capped at 8 GPUs.  Bob's job ids from 8200000, Alice's from
-- 7100000, so that no other number in an answer reads as one of them.
INSERT INTO tide.queues (name, quota, capability) VALUES ('qc', 'gpu=8', 'gpu=8');
SELECT setval('tide.jobs_id_seq', 8200000);
SELECT tide.submit('qc', 'gpu=4', time_limit => '1 hour') AS bob_run,
       tide.submit('q1', 'gpu=8', time_limit => '3 hours') AS bob_n2,
       tide.submit('qc', 'gpu=4', priority => 5, time_limit => '30 minutes') AS bob_pending \gset
SELECT setval('tide.jobs_id_seq', 7100000);
SELECT tide.submit('qc', 'gpu=2', time_limit => '2 hours') AS alice_run,
       tide.submit('qc', 'gpu=4', time_limit => '1 hour') AS alice_capped,
       tide.submit('qi', 'gpu=8', time_limit => '1 hour') AS alice_big,
       tide.submit('qi', 'gpu=1', time_limit => '10 minutes') AS alice_held,
       tide.submit('qi', 'gpu=1') AS alice_dep \gset
UPDATE tide.jobs SET owner = 'tap_bob' WHERE id IN (:bob_run, :bob_n2, :bob_pending);
UPDATE tide.jobs SET owner = 'tap_alice' WHERE id IN (:alice_run, :alice_capped, :alice_big, :alice_held, :alice_dep);
-- n1: bob_run (4 GPUs, 1 hour) and alice_run (2, 2 hours), 2 GPUs free;
-- n2: bob_n2 (8, 3 hours).  qc holds 6 of its 8.  The forecast: alice_held
-- now, bob_pending when bob_run ends (1 hour), alice_capped when bob_pending
-- ends (1.5 hours), after bob_run's end.
SELECT pg_temp.place(:bob_run, ARRAY['n1']), pg_temp.place(:alice_run, ARRAY['n1']), pg_temp.place(:bob_n2, ARRAY['n2']);
UPDATE tide.jobs SET started_at = now() WHERE id IN (:bob_run, :alice_run, :bob_n2);
-- alice_dep waits for bob's pending job and for her own
INSERT INTO tide.job_dependencies (job_id, depends_on, condition)
VALUES (:alice_dep, :bob_pending, 'succeeded'), (:alice_dep, :alice_capped, 'succeeded');
-- alice_held: the cycle found it fits only where bob's job is held for (R-L2)
SET LOCAL session_replication_role = replica;
UPDATE tide.jobs SET pending_reason = 'held for job ' || :bob_pending || ' (1 node)' WHERE id = :alice_held;
SET LOCAL session_replication_role = DEFAULT;
-- evictions under way for alice_big, of bob's job and of her own; and
-- alice_run evicted for bob's pending job as well
INSERT INTO tide.evictions (job_id, reason, preemptor_job_id)
VALUES (:bob_run, 'evicted for job ' || :alice_big || ' of queue qi (reclaim)', :alice_big),
       (:alice_run, 'evicted for job ' || :alice_big || ' of queue qi (reclaim)', :alice_big),
       (:alice_run, 'evicted for job ' || :bob_pending || ' of queue qc (preempt)', :bob_pending);

CREATE TEMP TABLE answers (who text, job bigint, doc jsonb);
INSERT INTO answers
SELECT w.who, j.id, pg_temp.ex(w.who, j.id)
  FROM (VALUES ('tap_admin'), ('tap_reader')) w(who), tide.jobs j
UNION ALL
SELECT j.owner, j.id, pg_temp.ex(j.owner, j.id) FROM tide.jobs j;
CREATE FUNCTION pg_temp.a(who text, job bigint) RETURNS jsonb
    LANGUAGE sql AS $$ SELECT doc FROM answers WHERE answers.who = a.who AND answers.job = a.job $$;
SELECT ARRAY[:bob_run, :bob_n2, :bob_pending]::bigint[] AS bobs,
       ARRAY[:alice_run, :alice_capped, :alice_big, :alice_held, :alice_dep]::bigint[] AS alices \gset

-- 1. Nobody's answer as a submitter names the other's jobs, anywhere.
SELECT is((SELECT pg_temp.named(string_agg(doc::text, ' '), :'bobs') FROM answers WHERE who = 'tap_alice'),
          '{}'::bigint[], 'no answer of alice''s names a job of bob''s');
SELECT is((SELECT pg_temp.named(string_agg(doc::text, ' '), :'alices') FROM answers WHERE who = 'tap_bob'),
          '{}'::bigint[], 'no answer of bob''s names a job of alice''s');
SELECT is((SELECT count(*) FROM answers WHERE who IN ('tap_alice', 'tap_bob') AND doc ->> 'job_id' IS NOT NULL), 8::bigint,
          'each answers for each of its own jobs');
-- ... while an administrator's and a reader's name them, with no counts
SELECT is((SELECT pg_temp.named(string_agg(doc::text, ' '), :'bobs') FROM answers WHERE who = 'tap_admin' AND job = ANY (:'alices')),
          :'bobs'::bigint[], 'an administrator''s answers about alice''s jobs name bob''s');
SELECT ok((SELECT bool_and(a.doc = r.doc AND a.doc = tide._explain(a.job) AND a.doc::text !~ '_other_owners')
             FROM answers a JOIN answers r ON r.job = a.job AND r.who = 'tap_reader' WHERE a.who = 'tap_admin'),
          'an administrator and a reader get the same whole answer, nothing counted');

-- 2. Jobs ahead: bob's higher-priority job in qc, alice's inference job.
SELECT ok(pg_temp.ids(pg_temp.a('tap_admin', :alice_capped) -> 'jobs_ahead') @> ARRAY[:bob_pending, :alice_big]::bigint[],
          'the administrator sees both jobs ahead of alice_capped');
SELECT is(pg_temp.ids(pg_temp.a('tap_alice', :alice_capped) -> 'jobs_ahead'),
          pg_temp.owned(pg_temp.ids(pg_temp.a('tap_admin', :alice_capped) -> 'jobs_ahead'), 'tap_alice'),
          'alice sees her own jobs ahead');
SELECT is((pg_temp.a('tap_alice', :alice_capped) ->> 'jobs_ahead_other_owners')::int,
          cardinality(pg_temp.ids(pg_temp.a('tap_admin', :alice_capped) -> 'jobs_ahead'))
          - cardinality(pg_temp.owned(pg_temp.ids(pg_temp.a('tap_admin', :alice_capped) -> 'jobs_ahead'), 'tap_alice')),
          'and the others counted');
SELECT is(pg_temp.ids(pg_temp.a('tap_bob', :bob_pending) -> 'jobs_ahead'), '{}'::bigint[], 'bob: alice''s job ahead not named');
SELECT is((pg_temp.a('tap_bob', :bob_pending) ->> 'jobs_ahead_other_owners')::int, 2, 'but counted (her two in qi)');
SELECT is((pg_temp.a('tap_alice', :alice_capped) ->> 'position_in_group')::int,
          (pg_temp.a('tap_admin', :alice_capped) ->> 'position_in_group')::int, 'her position counts every job');

-- 3. R-A1 capability: qc's running jobs free it.
SELECT is(pg_temp.ids(pg_temp.rule(pg_temp.a('tap_alice', :alice_capped), 'R-A1') -> 'freed_by'), ARRAY[:alice_run]::bigint[],
          'capability: alice sees her running job that frees it');
SELECT is((pg_temp.rule(pg_temp.a('tap_alice', :alice_capped), 'R-A1') ->> 'freed_by_other_owners')::int, 1, 'bob''s counted');
SELECT is(pg_temp.ids(pg_temp.rule(pg_temp.a('tap_bob', :bob_pending), 'R-A1') -> 'freed_by'), ARRAY[:bob_run]::bigint[],
          'bob sees his');
SELECT is((pg_temp.rule(pg_temp.a('tap_bob', :bob_pending), 'R-A1') ->> 'freed_by_other_owners')::int, 1, 'alice''s counted');
SELECT is(pg_temp.rule(pg_temp.a('tap_alice', :alice_capped), 'R-A1') ->> 'reason', 'queue qc gpu capability: 6 used + 4 asked > 8',
          'the queue''s numbers, as the cycle''s reason gives them');

-- 4. R-L4: no room on n1 (2 GPUs free) or n2; the group's next to end.
SELECT is(pg_temp.ids(pg_temp.rule(pg_temp.a('tap_alice', :alice_capped), 'R-L4') -> 'next_to_end'), ARRAY[:alice_run]::bigint[],
          'no room: alice sees her own job among the next to end');
SELECT is((pg_temp.rule(pg_temp.a('tap_alice', :alice_capped), 'R-L4') ->> 'next_to_end_other_owners')::int, 2,
          'bob''s two counted');
SELECT is(pg_temp.rule(pg_temp.a('tap_alice', :alice_capped), 'R-L4') ->> 'largest_free_gpus', '2', 'the free GPUs counted over every job');

-- 5. R-P1: dependencies on bob's job and on her own.
SELECT is(pg_temp.ids(pg_temp.rule(pg_temp.a('tap_alice', :alice_dep), 'R-P1') -> 'waits_for'), ARRAY[:alice_capped]::bigint[],
          'dependencies: her own job named');
SELECT is((pg_temp.rule(pg_temp.a('tap_alice', :alice_dep), 'R-P1') ->> 'waits_for_other_owners')::int, 1, 'bob''s counted');
SELECT is(pg_temp.ids(pg_temp.a('tap_alice', :alice_dep) -> 'dependencies'), ARRAY[:alice_capped]::bigint[],
          'in the list of dependencies too');
SELECT is((pg_temp.a('tap_alice', :alice_dep) ->> 'dependencies_other_owners')::int, 1, 'counted there too');

-- 6. R-L2: held for bob's job.
SELECT is(pg_temp.rule(pg_temp.a('tap_alice', :alice_held), 'R-L2') -> 'held_for', 'null'::jsonb, 'held for bob''s job: not named');
SELECT is((pg_temp.rule(pg_temp.a('tap_alice', :alice_held), 'R-L2') ->> 'held_for_other_owners')::int, 1, 'but counted');
SELECT is(pg_temp.a('tap_alice', :alice_held) ->> 'pending_reason', 'held for a job of another owner (1 node)',
          'the reason says a job of another owner');

-- 7. R-E6: evictions under way for alice_big, of bob's job and her own.
SELECT is(pg_temp.ids(pg_temp.rule(pg_temp.a('tap_alice', :alice_big), 'R-E6') -> 'evicting'), ARRAY[:alice_run]::bigint[],
          'evictions for her job: her own victim named');
SELECT is((pg_temp.rule(pg_temp.a('tap_alice', :alice_big), 'R-E6') ->> 'evicting_other_owners')::int, 1, 'bob''s counted');

-- 8. An eviction suffered: the preemptor, bob's job, not named.
SELECT is((SELECT array_agg(e ->> 'preemptor_job_id' ORDER BY e ->> 'eviction_id') FROM jsonb_array_elements(pg_temp.a('tap_alice', :alice_run) -> 'evictions') e),
          ARRAY[:alice_big::text, NULL], 'her running job''s evictions: her preemptor named, bob''s not');
SELECT ok((SELECT bool_or(e ->> 'reason' = 'evicted for a job of another owner of queue qc (preempt)' AND (e ->> 'preemptor_job_id_other_owners')::int = 1)
             FROM jsonb_array_elements(pg_temp.a('tap_alice', :alice_run) -> 'evictions') e),
          'but counted, and its reason says a job of another owner');

-- 9. The start estimate: the running jobs it waits for; the jobs without a
-- limit that make it unknown.
SELECT is(pg_temp.est('tap_alice', :alice_capped), tide.estimate_start(:alice_capped), 'estimate_start of her job: the administrator''s');
SELECT is((pg_temp.a('tap_alice', :alice_capped) ->> 'estimate_start')::timestamptz, tide.estimate_start(:alice_capped),
          'and explain''s');
SELECT ok(pg_temp.ids(pg_temp.a('tap_alice', :alice_capped) -> 'waits_for_jobs')
            = pg_temp.owned(pg_temp.ids(pg_temp.a('tap_admin', :alice_capped) -> 'waits_for_jobs'), 'tap_alice')
          AND (pg_temp.a('tap_alice', :alice_capped) ->> 'waits_for_jobs_other_owners')::int
            = cardinality(pg_temp.ids(pg_temp.a('tap_admin', :alice_capped) -> 'waits_for_jobs'))
              - cardinality(pg_temp.owned(pg_temp.ids(pg_temp.a('tap_admin', :alice_capped) -> 'waits_for_jobs'), 'tap_alice'))
          AND (pg_temp.a('tap_alice', :alice_capped) ->> 'waits_for_jobs_other_owners')::int > 0,
          'the running jobs it waits for: hers named, bob''s counted');
UPDATE tide.jobs SET time_limit = NULL WHERE id IN (:bob_run, :alice_run);
SELECT is((SELECT array_agg(i ORDER BY i) FROM unnest(pg_temp.ids(pg_temp.ex('tap_admin', :alice_capped) -> 'estimate_unknown_because_no_time_limit')) i),
          ARRAY[:alice_run, :bob_run]::bigint[],
          'behind qc''s running jobs without a limit, the administrator sees both named');
SELECT is(pg_temp.ids(pg_temp.ex('tap_alice', :alice_capped) -> 'estimate_unknown_because_no_time_limit'), ARRAY[:alice_run]::bigint[],
          'alice sees hers');
SELECT is((pg_temp.ex('tap_alice', :alice_capped) ->> 'estimate_unknown_because_no_time_limit_other_owners')::int, 1, 'and counts bob''s');

-- 10. Another owner's job answers as a missing one, on every path.
SELECT (SELECT max(id) FROM tide.jobs) + 1000 AS missing \gset
SET LOCAL ROLE tap_alice;
SELECT is(replace(pg_temp.err(format('SELECT tide.explain(%s)', :bob_pending)), :'bob_pending', 'N'),
          replace(pg_temp.err(format('SELECT tide.explain(%s)', :missing)), :'missing', 'N'),
          'explain of bob''s job: the error of a missing job');
SELECT is(replace(pg_temp.err(format('SELECT tide.estimate_start(%s)', :bob_run)), :'bob_run', 'N'),
          replace(pg_temp.err(format('SELECT tide.estimate_start(%s)', :missing)), :'missing', 'N'),
          'estimate_start of bob''s job: the same');
SELECT is(replace(pg_temp.err(format('SELECT tide._explain_own(%s, ''tap_alice'')', :bob_pending)), :'bob_pending', 'N'),
          replace(pg_temp.err(format('SELECT tide.explain(%s)', :missing)), :'missing', 'N'),
          'the helper asked directly about bob''s job: the same');
SELECT throws_ok(format('SELECT tide._explain(%s)', :alice_capped), '42501', NULL, 'the whole answer is not hers to call');
RESET ROLE;
-- a session that is alice may not ask the helper as bob
SET SESSION AUTHORIZATION tap_alice;
SELECT pg_temp.err(format('SELECT tide._explain_own(%s, ''tap_bob'')', :bob_pending)) AS acting \gset
RESET SESSION AUTHORIZATION;
SELECT is(:'acting'::text, '42501 | session role "tap_alice" may not act as role "tap_bob" | Call the public functions (tide.started, tide.explain, ...), which pass your own role.',
          'the helper refuses a role the session may not act as');

SELECT * FROM finish();
ROLLBACK;
