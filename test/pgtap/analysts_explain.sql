-- tide.explain and tide.estimate_start: the right rule for each blocked
-- case, the order key and the jobs ahead, the start estimate from time
-- limits (NULL, with the job to blame, without one).
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(23);

CREATE FUNCTION pg_temp.rules(job bigint) RETURNS text[]
    LANGUAGE sql AS $$ SELECT array_agg(b ->> 'rule' ORDER BY b ->> 'rule') FROM jsonb_array_elements(tide.explain(job) -> 'blocking') b $$;
CREATE FUNCTION pg_temp.reason(job bigint, r text) RETURNS jsonb
    LANGUAGE sql AS $$ SELECT b FROM jsonb_array_elements(tide.explain(job) -> 'blocking') b WHERE b ->> 'rule' = r LIMIT 1 $$;

-- n1 fully used by a 8-GPU job of q1 ending in 2 hours; n2 holds a 4-GPU
-- job of qi ending in 1 hour: 4 GPUs free, on n2.
SELECT tide.submit('q1', 'gpu=8', time_limit => '2 hours') AS big, tide.submit('qi', 'gpu=4', time_limit => '1 hour') AS inf \gset
SELECT pg_temp.place(:big, ARRAY['n1']), pg_temp.place(:inf, ARRAY['n2']);
UPDATE tide.jobs SET started_at = now() WHERE id IN (:big, :inf);

-- A job that fits now and is within nothing's way: nothing blocks it.
SELECT tide.submit('qi', 'gpu=2') AS fits \gset
SELECT is(tide.explain(:fits) -> 'blocking', '[]'::jsonb, 'a job that fits has no blocking reason');
SELECT is(tide.estimate_start(:fits), now(), 'and starts now');

-- R-A1, quota: q1 holds its 8 of quota; one more GPU borrows.
SELECT tide.submit('q1', 'gpu=1') AS borrow \gset
SELECT is(pg_temp.reason(:borrow, 'R-A1') ->> 'quota', '8', 'above quota: R-A1 with the quota');
SELECT is(pg_temp.reason(:borrow, 'R-A1') ->> 'used', '8', 'what the queue uses');
SELECT is(tide.explain(:borrow) ->> 'admission', 'borrowing', 'admission: borrowing');

-- R-A1, capability: a queue limited to 4 GPUs that holds 4.
INSERT INTO tide.queues (name, quota, capability) VALUES ('qc', 'gpu=4', 'gpu=4');
SELECT tide.submit('qc', 'gpu=4', time_limit => '30 minutes') AS capped_run \gset
SELECT pg_temp.place(:capped_run, ARRAY['n2']);
SELECT tide.submit('qc', 'gpu=2') AS capped \gset
SELECT ok((SELECT bool_or(b ->> 'reason' LIKE 'queue qc gpu capability: 4 used + 2 asked > 4') FROM jsonb_array_elements(tide.explain(:capped) -> 'blocking') b),
          'above capability: R-A1 with the numbers');
SELECT is((SELECT b -> 'freed_by' -> 0 ->> 'job_id' FROM jsonb_array_elements(tide.explain(:capped) -> 'blocking') b WHERE b ? 'capability'),
          :capped_run::text, 'and the job whose end frees it');

-- R-L4: an 8-GPU job within quota finds no ready node with room.
SELECT tide.submit('qi', 'gpu=8') AS noroom \gset
SELECT is(pg_temp.rules(:noroom), ARRAY['R-L4'], 'no node with room: R-L4');
SELECT is(pg_temp.reason(:noroom, 'R-L4') ->> 'largest_free_gpus', '0', 'the largest free GPU count');

-- R-L3: a gang of two 2-GPU replicas where only... room for 0 now.
INSERT INTO tide.jobs (id, queue, service_type, min_available) VALUES (5001, 'qi', 'inference', 2);
INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (5001, 'worker', 2, 'gpu=2');
SELECT ok('R-L3' = ANY (pg_temp.rules(5001)), 'a gang without room for its minimum: R-L3');

-- R-A2: unschedulable.
SELECT tide.submit('qi', 'gpu=16') AS never, tide.submit('qi', 'gpu=1') AS held \gset
SET LOCAL session_replication_role = replica;
UPDATE tide.jobs SET unschedulable = true,
       pending_reason = 'gpu=16 per replica: gpu 16 is more than any matching node has (largest 8)' WHERE id = :never;
-- R-L2: the cycle found it fits only on resources held by a reservation.
UPDATE tide.jobs SET pending_reason = 'held for job ' || :big || ' (1 node)' WHERE id = :held;
SET LOCAL session_replication_role = DEFAULT;
SELECT is(pg_temp.rules(:never), ARRAY['R-A2'], 'unschedulable: R-A2 only');
SELECT is(pg_temp.reason(:never, 'R-A2') ->> 'largest_matching_node_gpus', '8', 'with the largest matching node');
SELECT is(tide.estimate_start(:never), NULL, 'an unschedulable job has no start estimate');
SELECT is(pg_temp.reason(:held, 'R-L2') ->> 'held_for', :big::text, 'held for a reservation: R-L2 and the job it is held for');

-- R-E6: evictions under way for it.
INSERT INTO tide.evictions (job_id, reason, preemptor_job_id) VALUES (:big, 'reclaimed', :noroom);
SELECT ok('R-E6' = ANY (pg_temp.rules(:noroom)), 'evictions under way for it: R-E6');
SELECT is(pg_temp.reason(:noroom, 'R-E6') -> 'evicting' -> 0 ->> 'job_id', :big::text, 'naming the victim');
DELETE FROM tide.evictions WHERE preemptor_job_id = :noroom;

-- Order: qi (priority 100) before q1; inside qi by priority, age, id.
SELECT is((tide.explain(:noroom) -> 'order_key' ->> 'queue_priority')::int, 100, 'the order key has the queue priority');
SELECT ok((tide.explain(:noroom) -> 'jobs_ahead') @> to_jsonb(ARRAY[:fits]), 'jobs ahead in the group''s order asking for GPUs too');

-- Start estimate: 8 GPUs for :noroom need the ahead jobs' GPUs too; ends by
-- time limits: inf (4 GPUs) in 1 hour, capped_run in 30 minutes, big in 2 hours.
SELECT ok(tide.estimate_start(:noroom) BETWEEN now() + interval '1 hour' AND now() + interval '2 hours',
          'estimate_start: when enough running jobs end by their time limits');
-- (it needs 2 + 8 GPUs: capped_run and inf free 8 by their limits, then big)
UPDATE tide.jobs SET time_limit = NULL WHERE id = :big;
SELECT is(tide.estimate_start(:noroom), NULL, 'NULL when a job it waits for has no time limit');
SELECT ok(tide.explain(:noroom) -> 'estimate_unknown_because_no_time_limit' @> to_jsonb(ARRAY[:big]),
          'and explain names it (with the jobs without a limit the forecast starts before it)');

-- Who may ask: readers; submitters about their own jobs, other owners'
-- jobs counted, not named (test/pgtap/submitter_answers.sql).
SELECT ok(has_function_privilege('tide_reader', 'tide.explain(bigint)', 'EXECUTE'), 'readers may explain');
SELECT ok(has_function_privilege('tide_submitter', 'tide.explain(bigint)', 'EXECUTE')
          AND NOT has_function_privilege('public', 'tide.estimate_start(bigint)', 'EXECUTE'),
          'submitters may too, not everybody');

SELECT * FROM finish();
ROLLBACK;
