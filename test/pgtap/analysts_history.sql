-- Bounded history: partitions made ahead, the default partition drained,
-- retention drops exactly the days past it (or detaches them), finished jobs
-- move to the archive with what hangs off them and every view still sees
-- them.  One transaction: now() stands still, so rows are placed in time.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(25);

SELECT is((SELECT relkind::text FROM pg_class WHERE oid = 'tide.job_events'::regclass), 'p', 'job_events is partitioned');
SELECT is((SELECT relkind::text FROM pg_class WHERE oid = 'tide.cycles'::regclass), 'p', 'cycles is partitioned');
SELECT is((SELECT array_agg(partition::text ORDER BY partition::text) FROM tide.history_partitions WHERE parent = 'tide.job_events'::regclass),
          ARRAY['tide.job_events_default'], 'a fresh install has only the default partitions');
SELECT ok((SELECT bool_and(c = ANY (e.extconfig)) FROM pg_extension e,
                  unnest(ARRAY['tide.job_events_default'::regclass, 'tide.cycles_default'::regclass, 'tide.jobs_archive_default'::regclass]) c
            WHERE e.extname = 'pg_tide'),
          'pg_dump keeps the rows of the default partitions');

-- Events spread over the last 15 days, one an hour, land in the default
-- partition until maintenance runs.
SELECT tide.submit('q1', 'gpu=1') AS j \gset
SET LOCAL session_replication_role = replica;
INSERT INTO tide.job_events (job_id, at, old_state, new_state, reason)
SELECT :j, now() - h * interval '1 hour', 'pending', 'pending', 'scripted' FROM generate_series(1, 360) h;
SET LOCAL session_replication_role = DEFAULT;
SELECT is((SELECT count(*) FROM tide.job_events_default), 361::bigint, 'rows wait in the default partition');

SET LOCAL tide.history_retention = '10 days';
SELECT count(*) FILTER (WHERE at >= date_trunc('day', now() - interval '10 days', 'UTC')) AS keep10,
       count(*) FILTER (WHERE at >= date_trunc('day', now() - interval '5 days', 'UTC')) AS keep5,
       count(*) FILTER (WHERE at >= date_trunc('day', now() - interval '3 days', 'UTC')) AS keep3,
       count(*) FILTER (WHERE at < date_trunc('day', now() - interval '3 days', 'UTC')
                          AND at >= date_trunc('day', now() - interval '5 days', 'UTC')) AS detached
  FROM tide.job_events \gset
SELECT tide.maintain_history() AS r1 \gset
SELECT is((SELECT count(*) FROM tide.job_events), :keep10::bigint,
          'retention keeps exactly the rows from the start of the day retention reaches into');
SELECT is((SELECT min(at) FROM tide.job_events) >= date_trunc('day', now() - interval '10 days', 'UTC'), true,
          'and nothing older');
SELECT is((SELECT count(*) FROM tide.job_events_default), 0::bigint, 'the default partition is drained');
SELECT is((SELECT count(*)::int FROM tide.history_partitions WHERE parent = 'tide.job_events'::regclass AND range_from IS NOT NULL),
          (SELECT (date_trunc('day', now() + interval '3 days', 'UTC')::date - date_trunc('day', now() - interval '10 days', 'UTC')::date) + 1),
          'one partition a day from the oldest kept day to three days ahead');
SELECT ok((SELECT bool_and(range_to - range_from = interval '1 day') FROM tide.history_partitions
            WHERE parent = 'tide.job_events'::regclass AND range_from IS NOT NULL), 'each a day wide');
SELECT ok(NOT EXISTS (SELECT 1 FROM pg_depend d JOIN tide.history_partitions p ON d.objid = p.partition
                       WHERE d.deptype = 'e' AND p.range_from IS NOT NULL),
          'dated partitions belong to no extension: pg_dump dumps them as tables');
SELECT is(tide.maintain_history() -> 'partitions_made', '0'::jsonb, 'a second run makes nothing new');

-- Shorter retention drops whole days.
SET LOCAL tide.history_retention = '5 days';
SELECT ok(jsonb_array_length(tide.maintain_history() -> 'partitions_dropped') = 5, 'five more days dropped');
SELECT is((SELECT count(*) FROM tide.job_events), :keep5::bigint, 'retention drops exactly what is past it');
-- Detaching instead keeps the tables outside the history.
SET LOCAL tide.history_retention = '3 days';
SET LOCAL tide.history_detach = on;
SELECT ok(tide.maintain_history() ? 'partitions_detached', 'detach mode says so');
SELECT is((SELECT count(*) FROM tide.job_events), :keep3::bigint, 'detached days leave the history');
SELECT is((SELECT count(*)::int FROM pg_class WHERE relnamespace = 'tide'::regnamespace AND relname LIKE 'job_events_p%_detached'), 2,
          'and stay as tables named *_detached');
RESET tide.history_detach;
RESET tide.history_retention;

-- Settings are checked.
SET LOCAL tide.history_retention = 'soon';
SELECT throws_ok('SELECT tide.maintain_history()', '22023', NULL, 'a bad retention is refused');
RESET tide.history_retention;
SELECT is((SELECT value FROM tide.history_settings() WHERE name = 'tide.history_retention'), '90 days', 'retention defaults to 90 days');

-- Archive: finished jobs leave tide.jobs, their events stay, views see them.
\ir _analysts_history.psql
SELECT array_agg(q ORDER BY q::text) AS before FROM tide.queue_accounting_raw(:'D', :'D') q \gset
SELECT count(*) AS events_before FROM tide.job_events WHERE job_id BETWEEN 901 AND 908 \gset
SET LOCAL tide.archive_after = '1 hour';
SELECT is((tide.maintain_history() ->> 'jobs_archived')::int, 5, 'five finished jobs archived (j4 caused an eviction of a job still hot)');
SELECT is((SELECT array_agg(id ORDER BY id) FROM tide.jobs WHERE id BETWEEN 901 AND 909), ARRAY[904, 907, 908, 909]::bigint[],
          'the preemptor of a hot job, the running and the pending jobs stay');
SELECT results_eq($$SELECT count(*) FROM tide.job_events WHERE job_id BETWEEN 901 AND 908$$, ARRAY[:events_before::bigint],
          'archiving keeps the events');
SELECT is((SELECT array_agg(q ORDER BY q::text) FROM tide.queue_accounting_raw(:'D', :'D') q)::text, :'before',
          'accounting across the archive boundary is unchanged');
SELECT results_eq($$SELECT job_id, preemptor_job_id, preemptor_queue FROM tide.eviction_log ORDER BY job_id$$,
                  $$VALUES (903::bigint, 904::bigint, 'qi'::text), (907, 904, 'qi')$$,
                  'evictions keep who caused them');
SET LOCAL ROLE alice;
SELECT is((SELECT array_agg(name ORDER BY name) FROM tide.job_waits), ARRAY['j1', 'j3', 'j5', 'p1'],
          'a submitter still sees its archived jobs and their waits');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
