-- Cycle-per-group benchmark setup: groups g1 and g2 of :jobs pending x
-- :nodes nodes each, a huge group of ten times that, and a small group of a
-- tenth.  Run by bench/cycle_groups_bench.sh.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_tide CASCADE;
CREATE EXTENSION pg_tide;
SELECT setseed(0.5);
CREATE TEMP TABLE g (name text, jobs int, nodes int);
INSERT INTO g VALUES ('g1', :jobs, :nodes), ('g2', :jobs, :nodes),
                     ('huge', 10 * :jobs, 10 * :nodes), ('small', :jobs / 10, :nodes / 10);
INSERT INTO tide.nodes (name, capacity, gpu_type, resource_group)
SELECT format('%s-node-%s', g.name, lpad(i::text, 6, '0')), 'cpu=96, memory=1Ti, gpu=8', 'NVIDIA-H100', g.name
  FROM g, generate_series(1, g.nodes) i;
INSERT INTO tide.queues (name, resource_group, quota)
SELECT format('%s-q%s', g.name, q), g.name, format('gpu=%s', g.nodes * 8 / 4)::tide.resvec
  FROM g, generate_series(0, 3) q;
BEGIN;
CREATE TEMP TABLE shapes AS
SELECT row_number() OVER () AS i, g.name AS grp, floor(random() * 4)::int AS q, floor(random() * 8)::int AS shape
  FROM g, generate_series(1, g.jobs);
INSERT INTO tide.jobs (id, queue, priority, created_at) OVERRIDING SYSTEM VALUE
SELECT i, format('%s-q%s', grp, q), 0, now() - i * interval '1 second' FROM shapes;
INSERT INTO tide.job_tasks (job_id, role, replicas, request)
SELECT i, 'main', 1, format('cpu=4, memory=32Gi, gpu=%s', (ARRAY[1, 1, 1, 2, 2, 4, 8, 8])[shape + 1])::tide.resvec
  FROM shapes;
COMMIT;
SELECT setval('tide.jobs_id_seq', (SELECT max(id) FROM tide.jobs) + 1) \g /dev/null
ANALYZE;
