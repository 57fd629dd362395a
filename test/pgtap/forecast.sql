-- tide.forecast, tide.estimate_start and tide.explain agree on every
-- blocked case (the engine's own forecast, stepped from one time limit to
-- the next), a blocker past its limit ends now, a job without a limit ahead
-- makes the answer NULL and is named, and a what-if writes nothing.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(42);

-- A job running on the given nodes since now() - ago.
CREATE FUNCTION pg_temp.run(job bigint, nodes text[], ago interval DEFAULT '0') RETURNS bigint
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_temp.place(job, nodes);
    PERFORM set_config('session_replication_role', 'replica', true);
    UPDATE tide.allocations SET state = 'running', started_at = now() - ago WHERE job_id = job;
    UPDATE tide.jobs SET state = 'running', started_at = now() - ago WHERE id = job;
    PERFORM set_config('session_replication_role', 'origin', true);
    RETURN job;
END
$$;
-- The forecast's start of a job, its blockers, and whether estimate_start
-- and explain say the same.
CREATE FUNCTION pg_temp.fc(job bigint) RETURNS timestamptz
    LANGUAGE sql AS $$ SELECT f.start_at FROM tide.forecast() f WHERE f.job_id = job $$;
CREATE FUNCTION pg_temp.agree(job bigint) RETURNS boolean
    LANGUAGE sql AS $$
SELECT pg_temp.fc(job) IS NOT DISTINCT FROM tide.estimate_start(job)
   AND pg_temp.fc(job) IS NOT DISTINCT FROM (tide.explain(job) ->> 'estimate_start')::timestamptz
   AND EXISTS (SELECT 1 FROM tide.forecast() f WHERE f.job_id = job)
$$;

-- 1. Capability (R-A1): qc may hold 4 GPUs and holds 4 for an hour.
SAVEPOINT c;
INSERT INTO tide.queues (name, quota, capability) VALUES ('qc', 'gpu=4', 'gpu=4');
SELECT pg_temp.run(tide.submit('qc', 'gpu=4', time_limit => '1 hour'), ARRAY['n1']) \gset
SELECT tide.submit('qc', 'gpu=2') AS j \gset
SELECT pg_temp.fc(:j) - now() AS cap_in, pg_temp.agree(:j) AS cap_agree \gset
ROLLBACK TO SAVEPOINT c;
SELECT is(:'cap_in'::interval, interval '1 hour', 'capability-held: starts when the queue''s job ends by its limit');
SELECT ok(:'cap_agree', 'forecast, estimate_start and explain agree (capability)');

-- 1b. A card key (R-A1): qh may hold 4 H100 GPUs and holds 4 for an hour;
-- n2's free H100s do not count.
SAVEPOINT c;
INSERT INTO tide.queues (name, capability) VALUES ('qh', 'H100=4');
SELECT pg_temp.run(tide.submit('qh', 'gpu=4', time_limit => '1 hour'), ARRAY['n1']) \gset
SELECT tide.submit('qh', 'gpu=2') AS j \gset
SELECT pg_temp.fc(:j) - now() AS card_in, pg_temp.agree(:j) AS card_agree \gset
ROLLBACK TO SAVEPOINT c;
SELECT is(:'card_in'::interval, interval '1 hour', 'card key over the queue''s capability: starts when its H100 job ends');
SELECT ok(:'card_agree', 'forecast, estimate_start and explain agree (card key)');

-- 2. A node selector whose only node is full: n2 (zone b) for two hours.
SAVEPOINT c;
UPDATE tide.nodes SET labels = '{"zone": "b"}' WHERE name = 'n2';
SELECT pg_temp.run(tide.submit('q1', 'gpu=8', time_limit => '2 hours'), ARRAY['n2']) \gset
SELECT tide.submit('qi', 'gpu=1', node_selector => '{"zone": "b"}') AS j, tide.submit('qi', 'gpu=1') AS free \gset
SELECT pg_temp.fc(:j) - now() AS sel_in, pg_temp.fc(:free) - now() AS free_in, pg_temp.agree(:j) AS sel_agree \gset
ROLLBACK TO SAVEPOINT c;
SELECT is(:'sel_in'::interval, interval '2 hours', 'node selector: starts when its only node frees, not now');
SELECT is(:'free_in'::interval, interval '0', 'while a job without a selector starts now on n1');
SELECT ok(:'sel_agree', 'forecast, estimate_start and explain agree (node selector)');

-- 3. Blockers past their time limit end now, and a second look says now too.
SAVEPOINT c;
SELECT pg_temp.run(tide.submit('q1', 'gpu=8', time_limit => '1 hour'), ARRAY['n1'], '3 hours'),
       pg_temp.run(tide.submit('q1', 'gpu=8', time_limit => '1 hour'), ARRAY['n2'], '2 hours') \gset
SELECT tide.submit('qi', 'gpu=8') AS j \gset
SELECT pg_temp.fc(:j) = now() AS past_now, tide.estimate_start(:j) = now() AS past_again, pg_temp.agree(:j) AS past_agree \gset
ROLLBACK TO SAVEPOINT c;
SELECT ok(:'past_now', 'a blocker past its time limit ends now: the job starts now');
SELECT ok(:'past_again', 'and estimate_start says now');
SELECT ok(:'past_agree', 'forecast, estimate_start and explain agree (past the limit)');

-- 4. Jobs without a time limit ahead: NULL, naming them.
SAVEPOINT c;
SELECT pg_temp.run(tide.submit('q1', 'gpu=8'), ARRAY['n1']) AS r1,
       pg_temp.run(tide.submit('q1', 'gpu=8', time_limit => '1 hour'), ARRAY['n2']) AS r2 \gset
SELECT tide.submit('qi', 'gpu=8') AS a, tide.submit('qi', 'gpu=8') AS b \gset
SELECT pg_temp.fc(:a) - now() AS nl_a, pg_temp.fc(:b) IS NULL AS nl_b_null,
       (SELECT f.unknown_because FROM tide.forecast() f WHERE f.job_id = :b) AS nl_blockers,
       tide.explain(:b) -> 'estimate_unknown_because_no_time_limit' AS nl_explain,
       pg_temp.agree(:a) AND pg_temp.agree(:b) AS nl_agree \gset
ROLLBACK TO SAVEPOINT c;
SELECT is(:'nl_a'::interval, interval '1 hour', 'the first job starts when the job with a limit ends');
SELECT ok(:'nl_b_null', 'the second depends on the job without a limit: NULL');
SELECT is(:'nl_blockers'::bigint[], ARRAY[:r1, :a]::bigint[], 'unknown_because names the jobs without a time limit still running (the first one started by then, having none)');
SELECT is(:'nl_explain'::jsonb, to_jsonb(ARRAY[:r1, :a]::bigint[]), 'explain names them too');
SELECT ok(:'nl_agree', 'forecast, estimate_start and explain agree (no time limit)');

-- 5. A gang of two 8-GPU replicas: starts when both nodes are free.
SAVEPOINT c;
SELECT pg_temp.run(tide.submit('q1', 'gpu=8', time_limit => '1 hour'), ARRAY['n1']),
       pg_temp.run(tide.submit('q1', 'gpu=8', time_limit => '2 hours'), ARRAY['n2']) \gset
SELECT tide.submit('qi', 'gpu=8', replicas => 2, min_available => 2) AS j \gset
SELECT pg_temp.fc(:j) - now() AS gang_in, pg_temp.agree(:j) AS gang_agree \gset
ROLLBACK TO SAVEPOINT c;
SELECT is(:'gang_in'::interval, interval '2 hours', 'gang: starts when its minimum fits at once');
SELECT ok(:'gang_agree', 'forecast, estimate_start and explain agree (gang)');

-- 6. A reservation (R-L2): the big job holds n1's free half; a later job
-- that would end after the big one's start must wait, a short one backfills.
SAVEPOINT c;
SELECT pg_temp.run(tide.submit('q1', 'gpu=4', time_limit => '1 hour'), ARRAY['n1']),
       pg_temp.run(tide.submit('q1', 'gpu=8', time_limit => '3 hours'), ARRAY['n2']) \gset
SELECT tide.submit('qi', 'gpu=8', reserve => true) AS big \gset
SELECT tide.submit('q1', 'gpu=4', time_limit => '2 hours') AS long, tide.submit('q1', 'gpu=4', time_limit => '30 minutes') AS short \gset
SELECT pg_temp.fc(:big) - now() AS res_big, pg_temp.fc(:long) - now() AS res_long, pg_temp.fc(:short) - now() AS res_short,
       pg_temp.agree(:big) AND pg_temp.agree(:long) AND pg_temp.agree(:short) AS res_agree \gset
ROLLBACK TO SAVEPOINT c;
SELECT is(:'res_big'::interval, interval '1 hour', 'reservation: the reserving job starts when n1 frees');
SELECT is(:'res_short'::interval, interval '0', 'a job ending before that backfills now');
SELECT is(:'res_long'::interval, interval '3 hours', 'one that would not waits past the reserving job, for n2');
SELECT ok(:'res_agree', 'forecast, estimate_start and explain agree (reservation)');

-- 7. Queue tree (R-A3): org may hold 4 GPUs across its teams.
SAVEPOINT c;
INSERT INTO tide.queues (name, quota, capability) VALUES ('org', 'gpu=4', 'gpu=4');
INSERT INTO tide.queues (name, quota, parent) VALUES ('team-a', 'gpu=2', 'org'), ('team-b', 'gpu=2', 'org');
SELECT pg_temp.run(tide.submit('team-a', 'gpu=4', time_limit => '90 minutes'), ARRAY['n1']) \gset
SELECT tide.submit('team-b', 'gpu=2') AS j \gset
SELECT pg_temp.fc(:j) - now() AS tree_in, pg_temp.agree(:j) AS tree_agree \gset
ROLLBACK TO SAVEPOINT c;
SELECT is(:'tree_in'::interval, interval '90 minutes', 'queue tree: the parent''s capability frees when its subtree''s job ends');
SELECT ok(:'tree_agree', 'forecast, estimate_start and explain agree (queue tree)');

-- 8. Waiting jobs are not forecast: NULL with why.
SELECT tide.submit('qi', 'gpu=1', hold => true) AS held \gset
SELECT is((SELECT f.start_at FROM tide.forecast() f WHERE f.job_id = :held), NULL, 'a held job has no forecast');
SELECT is((SELECT f.why FROM tide.forecast() f WHERE f.job_id = :held), 'held (R-P2)', 'and says why');

-- 8b. And the three agree on every kind of waiting job: held, a dependency
-- not met (R-P1), a begin_at to come (R-P3).
SELECT tide.submit('qi', 'gpu=1', after => ARRAY[:held]) AS dep,
       tide.submit('qi', 'gpu=1', begin_at => now() + interval '1 hour') AS later \gset
SELECT is((SELECT f.why FROM tide.forecast() f WHERE f.job_id = :dep), 'dependencies not met (R-P1)',
          'a job whose dependency is not met has no forecast, and says why');
SELECT ok((SELECT f.start_at IS NULL AND f.why LIKE 'deferred until %' FROM tide.forecast() f WHERE f.job_id = :later),
          'a job deferred by begin_at has none, and says until when');
SELECT ok(pg_temp.agree(:held) AND pg_temp.agree(:dep) AND pg_temp.agree(:later),
          'forecast, estimate_start and explain agree on waiting jobs: NULL');

-- 8c. An owner limit (R-A4): tap_alice may hold 4 GPUs of qo and holds 4
-- for an hour; her next job waits for it, tap_bob's starts now.
SAVEPOINT c;
INSERT INTO tide.queues (name, owner_capability) VALUES ('qo', 'gpu=4');
SELECT pg_temp.run(tide.submit('qo', 'gpu=4', time_limit => '1 hour'), ARRAY['n1']) AS o_run \gset
SELECT tide.submit('qo', 'gpu=2') AS o_alice, tide.submit('qo', 'gpu=2') AS o_bob \gset
UPDATE tide.jobs SET owner = 'tap_alice' WHERE id IN (:o_run, :o_alice);
UPDATE tide.jobs SET owner = 'tap_bob' WHERE id = :o_bob;
SELECT pg_temp.fc(:o_alice) - now() AS owner_in, pg_temp.fc(:o_bob) - now() AS owner_bob,
       pg_temp.agree(:o_alice) AND pg_temp.agree(:o_bob) AS owner_agree \gset
ROLLBACK TO SAVEPOINT c;
SELECT is(:'owner_in'::interval, interval '1 hour', 'owner limit: her job starts when her running job ends by its limit');
SELECT is(:'owner_bob'::interval, interval '0', 'another owner''s job starts now');
SELECT ok(:'owner_agree', 'forecast, estimate_start and explain agree (owner limit)');

-- 8d. A job no node could ever hold (R-A2): NULL, saying so, everywhere.
SAVEPOINT c;
SELECT tide.submit('qi', 'gpu=16') AS never \gset
SELECT (SELECT f.start_at IS NULL AND f.why LIKE 'unschedulable%' FROM tide.forecast() f WHERE f.job_id = :never) AS never_why,
       pg_temp.agree(:never) AS never_agree \gset
ROLLBACK TO SAVEPOINT c;
SELECT ok(:'never_why', 'a job no node could hold: no start, unschedulable');
SELECT ok(:'never_agree', 'forecast, estimate_start and explain agree (unschedulable)');

-- 9. What-if: a change in a transaction is seen, and the forecast writes nothing.
SELECT pg_temp.run(tide.submit('q1', 'gpu=8', time_limit => '1 hour'), ARRAY['n1']),
       pg_temp.run(tide.submit('q1', 'gpu=8', time_limit => '2 hours'), ARRAY['n2']) \gset
SELECT tide.submit('q1', 'gpu=4') AS w \gset
CREATE TEMP TABLE before_fc AS
SELECT (SELECT count(*) FROM tide.cycles) AS cycles,
       (SELECT string_agg(format('%s %s %s', id, state, node), ',' ORDER BY id) FROM tide.allocations) AS allocs,
       (SELECT string_agg(format('%s %s %s', id, state, pending_reason), ',' ORDER BY id) FROM tide.jobs) AS jobs;
SELECT is(pg_temp.fc(:w) - now(), interval '1 hour', 'what-if: before, q1''s job starts in an hour');
SAVEPOINT w;
UPDATE tide.queues SET capability = 'gpu=8' WHERE name = 'q1';
SELECT is(pg_temp.fc(:w) - now(), interval '2 hours', 'with q1 capped at 8 GPUs, it waits for both q1 jobs to end');
ROLLBACK TO SAVEPOINT w;
SELECT is(pg_temp.fc(:w) - now(), interval '1 hour', 'rolled back: as before');
SELECT ok((SELECT b.cycles = (SELECT count(*) FROM tide.cycles)
              AND b.allocs = (SELECT string_agg(format('%s %s %s', id, state, node), ',' ORDER BY id) FROM tide.allocations)
              AND b.jobs = (SELECT string_agg(format('%s %s %s', id, state, pending_reason), ',' ORDER BY id) FROM tide.jobs)
             FROM before_fc b),
          'forecast wrote nothing: cycles, allocations and jobs unchanged');

-- 10. Who may call it: readers see every job; a submitter its own, with
-- every job counted and other owners' jobs it waits on counted, not named.
SET LOCAL ROLE tap_reader;
SELECT ok((SELECT count(*) FROM tide.forecast()) > 0, 'a reader may call forecast');
RESET ROLE;
SAVEPOINT c;
SET LOCAL session_replication_role = replica;
DELETE FROM tide.allocations;   -- the what-if's running jobs, out of the way
SET LOCAL session_replication_role = DEFAULT;
SELECT pg_temp.run(tide.submit('q1', 'gpu=8'), ARRAY['n1']) AS bob_run \gset
UPDATE tide.jobs SET owner = 'tap_bob' WHERE id = :bob_run;
SELECT pg_temp.run(tide.submit('q1', 'gpu=8', time_limit => '1 hour'), ARRAY['n2']) AS bob_run2 \gset
UPDATE tide.jobs SET owner = 'tap_bob' WHERE id = :bob_run2;
SELECT tide.submit('qi', 'gpu=8') AS bob_first \gset
UPDATE tide.jobs SET owner = 'tap_bob' WHERE id = :bob_first;
SELECT tide.submit('qi', 'gpu=4') AS alice_job \gset
UPDATE tide.jobs SET owner = 'tap_alice' WHERE id = :alice_job;
SELECT (SELECT f.unknown_because FROM tide.forecast() f WHERE f.job_id = :alice_job) AS admin_sees \gset
SET LOCAL ROLE tap_alice;
SELECT (SELECT array_agg(f.job_id) FROM tide.forecast() f) AS alice_rows,
       (SELECT f.unknown_because FROM tide.forecast() f WHERE f.job_id = :alice_job) AS alice_blockers,
       (SELECT f.why FROM tide.forecast() f WHERE f.job_id = :alice_job) AS alice_why \gset
RESET ROLE;
ROLLBACK TO SAVEPOINT c;
SELECT is(:'admin_sees'::bigint[], ARRAY[:bob_run, :bob_first]::bigint[], 'behind bob''s jobs without a limit, an admin sees them named');
SELECT is(:'alice_rows'::bigint[], ARRAY[:alice_job]::bigint[], 'a submitter gets the rows of its own jobs only');
SELECT is(:'alice_blockers'::bigint[], '{}'::bigint[], 'other owners'' jobs it waits on are not named');
SELECT ok(:'alice_why' LIKE '%and 2 jobs of other owners', 'but counted');

SELECT * FROM finish();
ROLLBACK;
