-- Labels for analysts: "GPU-hours of experiment e42" is one query
-- (docs/analysts.md, copied here), served by the labels index, counting
-- fractional shares by their share, running allocations up to now, and
-- the retries that carry a labelled job's labels.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(5);

-- Jobs of e42 (one of them a retry), of e43 and unlabelled; one
-- allocation each, started and released at fixed times.
CREATE FUNCTION pg_temp.ran(labels jsonb, request tide.resvec, hours numeric, still_running boolean DEFAULT false)
    RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    j bigint;
BEGIN
    j := tide.submit('q1', request);
    UPDATE tide.jobs SET labels = ran.labels WHERE id = j;
    PERFORM pg_temp.place(j, ARRAY['n1']);
    UPDATE tide.allocations SET state = 'running', started_at = now() - make_interval(secs => hours * 3600)
     WHERE job_id = j;
    IF NOT still_running THEN
        UPDATE tide.allocations SET state = 'released', release_reason = 'exited', exit_code = 0, released_at = now()
         WHERE job_id = j;
    END IF;
    RETURN j;
END $$;
SELECT FROM pg_temp.ran('{"experiment": "e42", "trial": 1}', 'gpu=2', 3);           -- 6 GPU-hours
SELECT FROM pg_temp.ran('{"experiment": "e42", "trial": 2}', 'gpu=500m', 4);        -- 2
SELECT FROM pg_temp.ran('{"experiment": "e42", "trial": 3}', 'gpu=1', 1.5, true);   -- 1.5, still running
SELECT FROM pg_temp.ran('{"experiment": "e43"}', 'gpu=4', 10);                      -- not e42
SELECT FROM pg_temp.ran('{}', 'gpu=4', 10);                                         -- unlabelled

-- The query of docs/analysts.md.
CREATE TEMP VIEW e42 AS
SELECT count(DISTINCT j.id) AS jobs,
       round(sum(coalesce(a.gpu_milli / 1000.0, tide.gpu_count(a.gpus))
                 * extract(epoch FROM coalesce(a.released_at, now()) - a.started_at) / 3600), 2) AS gpu_hours
  FROM tide.jobs j
  JOIN tide.allocations a ON a.job_id = j.id AND a.started_at IS NOT NULL
 WHERE j.labels @> '{"experiment": "e42"}';

SELECT results_eq('SELECT jobs, gpu_hours FROM e42', $$VALUES (3::bigint, 9.50)$$,
                  'e42: 3 jobs, 6 + 2 (half a GPU) + 1.5 (running, up to now) GPU-hours');

-- A failed e42 job's retry carries its labels and counts.
SELECT pg_temp.ran('{"experiment": "e42", "trial": 4}', 'gpu=1', 1, true) AS f \gset
UPDATE tide.jobs SET max_retries = 1 WHERE id = :f;
SELECT tide.exited(a, 1) FROM unnest(pg_temp.allocs(:f)) a;
SELECT is((SELECT labels FROM tide.jobs WHERE retry_of = :f), '{"experiment": "e42", "trial": 4}'::jsonb,
          'a retry has its failed job''s labels');
SELECT pg_temp.place(id, ARRAY['n2']) FROM tide.jobs WHERE retry_of = :f;
UPDATE tide.allocations SET state = 'running', started_at = now() - interval '2 hours'
 WHERE job_id = (SELECT id FROM tide.jobs WHERE retry_of = :f);
SELECT results_eq('SELECT jobs, gpu_hours FROM e42', $$VALUES (5::bigint, 12.50)$$,
                  'the failed attempt (1) and its retry (2, running) count');

-- The labels index serves it (as it would among millions of jobs).
CREATE FUNCTION pg_temp.explain_lines() RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    l text;
BEGIN
    FOR l IN EXECUTE 'EXPLAIN SELECT * FROM e42' LOOP
        RETURN NEXT l;
    END LOOP;
END $$;
SET LOCAL enable_seqscan = off;
SELECT ok((SELECT string_agg(l, E'\n') FROM (SELECT * FROM pg_temp.explain_lines()) x(l)) ~ 'jobs_labels_idx',
          'the query reads the experiment''s jobs through tide.jobs_labels_idx');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE labels @> '{"trial": 2}'), 1, 'any label is a filter');

SELECT * FROM finish();
ROLLBACK;
