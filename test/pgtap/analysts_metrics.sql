-- tide.metrics and tide.metrics_prometheus on a small scripted state:
-- the fixture's n1 and n2 (8 H100 each), q1 (quota gpu=8) holding 12 GPUs
-- in four 3-GPU jobs, a pending 3-GPU job, one unschedulable job, a node
-- down, the latest cycle's phases.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(16);

SELECT tide.submit('q1', 'gpu=3') AS a, tide.submit('q1', 'gpu=3') AS b, tide.submit('q1', 'gpu=3') AS c,
       tide.submit('q1', 'gpu=3') AS d, tide.submit('q1', 'gpu=3') AS p, tide.submit('q1', 'gpu=3') AS u \gset
SELECT pg_temp.place(:a, ARRAY['n1']), pg_temp.place(:b, ARRAY['n1']), pg_temp.place(:c, ARRAY['n2']), pg_temp.place(:d, ARRAY['n2']);
-- (a node change clears unschedulable: the node first)
INSERT INTO tide.nodes (name, capacity, gpu_type, state) VALUES ('n9', 'gpu=4', 'A100', 'down');
SET LOCAL session_replication_role = replica;
UPDATE tide.jobs SET unschedulable = true WHERE id = :u;
UPDATE tide.job_events SET at = now() - interval '90 seconds' WHERE job_id = :p;
UPDATE tide.jobs SET created_at = now() - interval '90 seconds' WHERE id = :p;
INSERT INTO tide.cycles (started_at, finished_at, jobs_considered, jobs_placed, load_ms, decide_ms, write_ms)
VALUES (now() - interval '2 seconds', now() - interval '1.9 seconds', 6, 4, 20, 30, 50);
SET LOCAL session_replication_role = DEFAULT;

CREATE FUNCTION pg_temp.m(n text, l jsonb DEFAULT '{}') RETURNS double precision
    LANGUAGE sql AS $$ SELECT value FROM tide.metrics WHERE name = n AND labels = l $$;
SELECT is(pg_temp.m('tide_jobs_pending', '{"queue": "q1"}'), 2::float8, 'pending jobs per queue');
SELECT is(pg_temp.m('tide_jobs_running', '{"queue": "q1"}'), 4::float8, 'placed jobs per queue');
SELECT is(pg_temp.m('tide_jobs_unschedulable', '{"queue": "q1"}'), 1::float8, 'unschedulable jobs per queue');
SELECT is(pg_temp.m('tide_jobs_pending', '{"queue": "qi"}'), 0::float8, 'a quiet queue reports zeros');
SELECT is(pg_temp.m('tide_oldest_pending_seconds', '{"queue": "q1"}'), 90::float8, 'the oldest pending job''s age');
SELECT is(pg_temp.m('tide_queue_gpus_used', '{"queue": "q1"}'), 12::float8, 'GPUs a queue holds');
SELECT is(pg_temp.m('tide_queue_gpus_borrowed', '{"queue": "q1"}'), 4::float8, 'of them borrowed above quota');
SELECT is(pg_temp.m('tide_queue_gpus_quota', '{"queue": "q1"}'), 8::float8, 'its quota');
SELECT results_eq($$SELECT name, value FROM tide.metrics WHERE labels = '{"resource_group": "default", "gpu_type": "H100"}' ORDER BY name$$,
                  $$VALUES ('tide_gpus_allocated'::text, 12::float8), ('tide_gpus_fragmented', 4), ('tide_gpus_free', 4), ('tide_gpus_total', 16)$$,
                  'GPUs per group and type: 2 free on each node, and no pending 3-GPU job fits there: fragmented');
SELECT is(pg_temp.m('tide_nodes', '{"state": "down"}'), 1::float8, 'nodes down');
SELECT is((SELECT count(*) FROM tide.metrics WHERE labels ->> 'gpu_type' = 'A100'), 0::bigint, 'a down node''s GPUs are not counted');
SELECT results_eq($$SELECT labels ->> 'phase', round(value::numeric, 3) FROM tide.metrics WHERE name = 'tide_last_cycle_duration_seconds' ORDER BY 1$$,
                  $$VALUES ('decide'::text, 0.030), ('load', 0.020), ('total', 0.100), ('write', 0.050)$$,
                  'the latest cycle''s duration and phases');
SELECT is(pg_temp.m('tide_last_cycle_jobs', '{"outcome": "placed"}'), 4::float8, 'and what it placed');

-- The text format.
SELECT matches(tide.metrics_prometheus(), E'# HELP tide_jobs_pending [^\n]+\n# TYPE tide_jobs_pending gauge\ntide_jobs_pending\\{queue="q1"\\} 2\n',
               'HELP, TYPE and samples with labels');
SELECT matches(tide.metrics_prometheus(), E'# TYPE tide_allocations_total counter\ntide_allocations_total [0-9]+\n', 'counters are typed counter');
INSERT INTO tide.queues (name) VALUES (E'we"ird\\q');
SELECT matches(tide.metrics_prometheus(), E'tide_jobs_pending\\{queue="we\\\\"ird\\\\\\\\q"\\} 0', 'label values are escaped');

SELECT * FROM finish();
ROLLBACK;
