-- Synthetic history for the accounting benchmarks and the dashboard demo:
-- psql -v minutes=N -v jpm=R -v nodes=K -f bench/history_gen.sql
-- R jobs a minute for the last N minutes (ending now), on K nodes of 8 GPUs
-- in three queues (train: quota 32 GPUs, infer: 16, research: none) and
-- 20 owners.  Rows are written directly, triggers off, as the cycle and the
-- launchers would have written them: 4 events per job, one allocation,
-- 1 job in 50 evicted half-way by the job 4 later (train by infer), 1 in 20 cancelled while
-- pending, 1 in 20 failing.  Waits 0..10 min, run times 5..120 min, 1..4
-- GPUs, 1 job in 10 a half GPU.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
INSERT INTO tide.queues (name, quota, priority) VALUES ('train', 'gpu=32', 10), ('research', NULL, 0) ON CONFLICT DO NOTHING;
INSERT INTO tide.queues (name, quota, priority, service_type) VALUES ('infer', 'gpu=16', 100, 'inference') ON CONFLICT DO NOTHING;
SELECT count(tide.register_node('gn' || lpad(k::text, 4, '0'), 'cpu=96, memory=1Ti, gpu=8', 'H100'))
  FROM generate_series(1, :nodes) k;
BEGIN;
SET LOCAL session_replication_role = replica;
UPDATE tide.node_capacity_history SET valid_from = now() - (:minutes + 600) * interval '1 minute'
 WHERE node LIKE 'gn%' AND valid_to IS NULL;
CREATE TEMP TABLE gen ON COMMIT DROP AS
SELECT i + coalesce((SELECT max(id) FROM tide.jobs_all), 0) + 1000 AS id,
       CASE WHEN i % 10 < 6 THEN 'train' WHEN i % 10 < 8 THEN 'infer' ELSE 'research' END AS queue,
       'user' || lpad((i * 7 % 20)::text, 2, '0') AS owner,
       created,
       created + ((i * 37) % 600) * interval '1 second' AS placed,
       created + ((i * 37) % 600) * interval '1 second' + ((i * 13) % 116 + 5) * interval '1 minute' AS ended,
       CASE WHEN i % 20 = 7 THEN 'cancelled' WHEN i % 50 = 3 THEN 'evicted' WHEN i % 20 = 11 THEN 'failed' ELSE 'succeeded' END AS outcome,
       CASE WHEN i % 10 = 9 THEN 0 ELSE i % 4 + 1 END AS gpus,
       'gn' || lpad((i % :nodes + 1)::text, 4, '0') AS node
  FROM (SELECT i, now() - :minutes * interval '1 minute' + i * interval '1 minute' / :jpm AS created
          FROM generate_series(0, (:minutes * :jpm)::bigint - 1) i) s;
-- an evicted job stops half-way; still-running jobs have not ended
UPDATE gen SET ended = placed + (ended - placed) / 2 WHERE outcome = 'evicted';
-- what still runs now fits its node: GPUs dealt in id order, the rest (and
-- the half GPUs) ended a moment ago
ALTER TABLE gen ADD COLUMN first_gpu integer NOT NULL DEFAULT 0;
UPDATE gen g SET ended = CASE WHEN r.cs > 8 OR g.gpus = 0 THEN greatest(g.placed, now() - interval '1 minute') ELSE g.ended END,
                 first_gpu = CASE WHEN r.cs > 8 OR g.gpus = 0 THEN 0 ELSE r.cs - g.gpus END
  FROM (SELECT id, sum(gpus) OVER (PARTITION BY node ORDER BY id) AS cs FROM gen
         WHERE ended > now() AND placed <= now() AND outcome <> 'cancelled') r
 WHERE g.id = r.id;
INSERT INTO tide.jobs (id, queue, owner, created_at, service_type, state, started_at, finished_at)
SELECT id, queue, owner, created, CASE WHEN queue = 'infer' THEN 'inference' ELSE 'training' END,
       CASE WHEN outcome = 'cancelled' THEN 'cancelled' WHEN ended > now() THEN 'running'
            WHEN outcome = 'evicted' THEN 'failed' ELSE outcome END,
       CASE WHEN outcome <> 'cancelled' THEN placed END,
       CASE WHEN outcome = 'cancelled' THEN placed WHEN ended <= now() THEN ended END
  FROM gen WHERE created <= now();
INSERT INTO tide.job_tasks (job_id, role, replicas, request)
SELECT id, 'main', 1, CASE WHEN gpus = 0 THEN 'gpu=500m' ELSE ('gpu=' || gpus)::tide.resvec END FROM gen;
INSERT INTO tide.allocations (job_id, role, replica, node, resources, gpus, gpu_milli, state, created_at, started_at, released_at, release_reason, exit_code)
SELECT id, 'main', 0, node, CASE WHEN gpus = 0 THEN 'gpu=500m' ELSE ('gpu=' || gpus)::tide.resvec END,
       CASE WHEN gpus = 0 THEN '0' ELSE (first_gpu || '-' || (first_gpu + gpus - 1))::tide.gpumask END, CASE WHEN gpus = 0 THEN 500 END,
       CASE WHEN ended > now() THEN 'running' ELSE 'released' END, placed, placed,
       CASE WHEN ended <= now() THEN ended END,
       CASE WHEN ended > now() THEN NULL WHEN outcome = 'evicted' THEN 'evicted' ELSE 'exited' END,
       CASE WHEN ended > now() OR outcome = 'evicted' THEN NULL WHEN outcome = 'failed' THEN 1 ELSE 0 END
  FROM gen WHERE outcome <> 'cancelled' AND placed <= now();
INSERT INTO tide.evictions (job_id, reason, preemptor_job_id, goal, created_at, acked_at)
SELECT g.id, 'reclaimed for job ' || (g.id + 4), g.id + 4, 'fail', g.ended, g.ended
  FROM gen g WHERE g.outcome = 'evicted' AND g.ended <= now();
INSERT INTO tide.job_events (job_id, at, old_state, new_state, reason)
SELECT e.job_id, e.at, e.o, e.n, 'generated' FROM gen g CROSS JOIN LATERAL (VALUES
        (g.id, g.created, NULL, 'pending'),
        (g.id, g.placed, 'pending', CASE WHEN g.outcome = 'cancelled' THEN 'cancelled' ELSE 'allocated' END),
        (g.id, g.placed, 'allocated', CASE WHEN g.outcome = 'cancelled' THEN NULL ELSE 'running' END),
        (g.id, g.ended, 'running', CASE WHEN g.outcome IN ('evicted') THEN 'evicting' WHEN g.outcome = 'cancelled' THEN NULL ELSE g.outcome END),
        (g.id, g.ended, 'evicting', CASE WHEN g.outcome = 'evicted' THEN 'failed' END)) e(job_id, at, o, n)
 WHERE e.n IS NOT NULL AND e.at <= now()
 ORDER BY e.at;
-- cycles: one a second over the window, 40..120 ms
INSERT INTO tide.cycles (started_at, finished_at, jobs_considered, jobs_placed, load_ms, decide_ms, write_ms)
SELECT t, t + (40 + (s * 7919) % 80) * interval '1 millisecond', 100 + s % 50, :jpm / 60 + s % 3,
       10 + (s * 31) % 20, 5 + (s * 17) % 30, 25 + (s * 13) % 30
  FROM generate_series(0, :minutes * 60 - 1) s, LATERAL (SELECT now() - :minutes * interval '1 minute' + s * interval '1 second' AS t) x;
COMMIT;
ANALYZE tide.jobs, tide.allocations, tide.evictions, tide.job_events, tide.cycles, tide.job_tasks;
