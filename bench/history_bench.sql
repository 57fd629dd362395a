-- History and accounting query times (bench/history_bench.sh runs it in a
-- fresh database with pg_tide).  psql -v hours=H: H hours of raw history at
-- 2,000 jobs a minute (bench/history_gen.sql: 4-5 events, 1 allocation a
-- job; 1,000 nodes), then a year of daily rollups for 3 queues, 20 owners
-- and 1,000 nodes, and the analysts' queries over both.
\set ON_ERROR_STOP 1
\pset pager off
\timing on
\echo == generate :hours hours at 2000 jobs a minute
SELECT :hours * 60 AS minutes \gset
\set jpm 2000
\set nodes 1000
\ir history_gen.sql
SELECT (SELECT count(*) FROM tide.jobs) AS jobs, (SELECT count(*) FROM tide.job_events) AS events,
       (SELECT count(*) FROM tide.allocations) AS allocations, (SELECT count(*) FROM tide.cycles) AS cycles;
\echo == first maintenance: partitions made, default partitions drained, nothing archived
SELECT tide.maintain_history();
\echo == archive every finished job (tide.archive_after = 0)
SET tide.archive_after = '0';
SELECT tide.maintain_history() ->> 'jobs_archived' AS archived;
RESET tide.archive_after;
VACUUM ANALYZE;
\echo == raw history of the window: accounting of the day so far (queue, node)
SELECT count(*) FROM tide.queue_accounting_raw((now() - :hours * interval '1 hour')::date, now()::date);
SELECT count(*) FROM tide.node_accounting_raw((now() - :hours * interval '1 hour')::date, now()::date);
\echo == GPU use per queue and owner over the window: rollup (tide.gpu_usage), then from the allocations
SELECT count(*) FROM tide.gpu_usage(now() - :hours * interval '1 hour', now(), '10 minutes');
SELECT count(*) FROM tide._gpu_usage_raw(date_bin('10 minutes', now() - :hours * interval '1 hour', timestamptz '2000-01-01'), now(), '10 minutes');
SELECT count(*), sum(gpu_hours_lost) FROM tide.eviction_log WHERE at > now() - interval '1 hour';
SELECT * FROM tide.job_waits WHERE job_id = (SELECT max(id) FROM tide.jobs_archive) \gset
SELECT count(*) FROM tide.job_events WHERE at > now() - interval '10 minutes';
SELECT count(*) FROM tide.cycles WHERE started_at > now() - interval '1 hour';
SELECT length(tide.metrics_prometheus());
\echo == a year of rollups: 365 days x 3 queues x 21 rows, 365 days x 1000 nodes
BEGIN;
DELETE FROM tide.accounting_daily; DELETE FROM tide.node_daily;
INSERT INTO tide.accounting_daily
SELECT d::date, q, o, 960000 / 63, 900000 / 63, 910000 / 63, 850000 / 63, 40000 / 63, 20000 / 63,
       120 + random() * 60, 60, 400, 550, 600, 24000 / 63.0 * (1 + random()), 4000 / 63.0 * random(), 30 * random(), 30, 30
  FROM generate_series(now() - interval '365 days', now() - interval '1 day', interval '1 day') d,
       unnest(ARRAY['train', 'infer', 'research']) q,
       (SELECT NULL::text AS o UNION ALL SELECT 'user' || lpad(u::text, 2, '0') FROM generate_series(0, 19) u) os;
INSERT INTO tide.node_daily
SELECT d::date, 'gn' || lpad(n::text, 4, '0'), 'default', 'H100', 192, 150 + random() * 40, 10, 2 * random()
  FROM generate_series(now() - interval '365 days', now() - interval '1 day', interval '1 day') d, generate_series(1, 1000) n;
COMMIT;
ANALYZE tide.accounting_daily, tide.node_daily;
\echo == last month per queue
SELECT queue, sum(jobs_submitted), sum(gpu_hours), sum(borrowed_gpu_hours), max(wait_p99)
  FROM tide.queue_accounting WHERE owner IS NULL AND day >= now()::date - 30 GROUP BY queue;
\echo == a year by owner
SELECT owner, sum(gpu_hours), sum(lost_gpu_hours) FROM tide.queue_accounting
 WHERE owner IS NOT NULL AND day >= now()::date - 365 GROUP BY owner ORDER BY 2 DESC LIMIT 5;
\echo == nodes over the last month
SELECT node, sum(allocated_gpu_hours) / sum(capacity_gpu_hours) AS util FROM tide.node_daily
 WHERE day >= now()::date - 30 GROUP BY node ORDER BY util LIMIT 5;
SELECT count(*) FROM tide.node_accounting WHERE day >= now()::date - 30;
