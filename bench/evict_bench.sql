-- Eviction benchmark: a full cluster (every GPU held by preemptable
-- training jobs of a reclaimable queue, a backlog of pending training jobs)
-- and a stream of high-priority inference arrivals: each step submits
-- :arrivals inference jobs, runs one cycle (which evicts for them), then the
-- launchers confirm every eviction and start what was placed, and the next
-- cycle places the preemptors.  Run through bench/evict_bench.sh, or:
--   psql -v nodes=1000 -v backlog=10000 -v arrivals=20 -v steps=5 -f bench/evict_bench.sql DB
-- Prints one line per cycle: what it did and its load, decide and write
-- times (ms), then the same cluster's cycle without arrivals.
\ir bench_start.psql
SELECT setseed(0.25);

INSERT INTO tide.nodes (name, capacity, gpu_type, gpu_topology)
SELECT format('node-%s', lpad(i::text, 6, '0')), 'cpu=96, memory=1Ti, gpu=8', 'NVIDIA-H100', '{0,0,1,1,2,2,3,3}'
  FROM generate_series(1, :nodes) i;
INSERT INTO tide.queues (name, quota, priority, reclaimable, service_type)
VALUES ('online', format('gpu=%s', :nodes * 2)::tide.resvec, 80000, false, 'inference'),
       ('train', format('gpu=%s', :nodes * 8)::tide.resvec, 20000, true, 'training');

-- Fill the cluster: training jobs of 1, 2, 4 or 8 GPUs, priorities 0..9.
CREATE TEMP TABLE fill AS
SELECT i, (ARRAY[1, 2, 4, 8])[1 + floor(random() * 4)::int] AS g, floor(random() * 10)::int AS prio
  FROM generate_series(1, :nodes * 4) i;
BEGIN;
INSERT INTO tide.jobs (id, queue, priority, created_at) OVERRIDING SYSTEM VALUE
SELECT i, 'train', prio, now() - interval '2 days' FROM fill;
INSERT INTO tide.job_tasks (job_id, role, replicas, request)
SELECT i, 'main', 1, format('cpu=4, memory=32Gi, gpu=%s', g)::tide.resvec FROM fill;
COMMIT;
SELECT setval('tide.jobs_id_seq', :nodes * 4 + 1) \g /dev/null
SELECT tide.run_cycle() AS cid \gset
SELECT 'fill cycle: placed ' || jobs_placed || ' in ' || round((load_ms + decide_ms + write_ms)::numeric, 1) || ' ms'
  FROM tide.cycles WHERE id = :cid;
UPDATE tide.allocations SET state = 'running', started_at = now() - interval '1 day' WHERE state = 'assigned';
-- What did not fit stays pending, and a backlog of more training jobs.
BEGIN;
INSERT INTO tide.jobs (queue, priority, created_at)
SELECT 'train', floor(random() * 10)::int, now() - interval '1 day' FROM generate_series(1, :backlog);
INSERT INTO tide.job_tasks (job_id, role, replicas, request)
SELECT j.id, 'main', 1, format('cpu=4, memory=32Gi, gpu=%s', (ARRAY[1, 2, 4, 8])[1 + (j.id % 4)::int])::tide.resvec
  FROM tide.jobs j WHERE NOT EXISTS (SELECT 1 FROM tide.job_tasks t WHERE t.job_id = j.id);
COMMIT;
ANALYZE tide.jobs, tide.job_tasks, tide.nodes, tide.queues, tide.allocations;
SELECT 'cluster: ' || (SELECT count(*) FROM tide.nodes) || ' nodes, '
       || (SELECT sum(tide.get(resources, 'gpu')) FROM tide.allocations WHERE state <> 'released') || ' of '
       || (SELECT sum(tide.get(capacity, 'gpu')) FROM tide.nodes) || ' GPUs used, '
       || (SELECT count(*) FROM tide.jobs WHERE state = 'pending') || ' pending';

SELECT tide.run_cycle() AS cid \gset
SELECT 'steady cycle (no arrivals): considered ' || jobs_considered || ', evicted ' || jobs_evicted
       || ', load ' || round(load_ms::numeric, 1) || ', decide ' || round(decide_ms::numeric, 1)
       || ', write ' || round(write_ms::numeric, 1)
  FROM tide.cycles WHERE id = :cid;

CREATE TEMP TABLE steps (step int, kind text, id bigint);
SELECT set_config('bench.steps', :'steps', false), set_config('bench.arrivals', :'arrivals', false) \g /dev/null
DO $$
DECLARE
    c bigint;
BEGIN
    FOR s IN 1 .. current_setting('bench.steps')::int LOOP
        INSERT INTO tide.jobs (queue, priority, service_type)
        SELECT 'online', floor(random() * 3)::int, 'inference' FROM generate_series(1, current_setting('bench.arrivals')::int);
        INSERT INTO tide.job_tasks (job_id, role, replicas, request)
        SELECT j.id, 'main', 1, format('cpu=2, memory=16Gi, gpu=%s', (ARRAY[1, 2, 4, 8])[1 + (j.id % 4)::int])::tide.resvec
          FROM tide.jobs j WHERE j.queue = 'online' AND NOT EXISTS (SELECT 1 FROM tide.job_tasks t WHERE t.job_id = j.id);
        c := tide.run_cycle();
        INSERT INTO steps VALUES (s, 'evict', c);
        -- the launchers: every eviction confirmed, set-based
        UPDATE tide.allocations SET state = 'released', released_at = now(), release_reason = 'evicted'
         WHERE state = 'releasing';
        c := tide.run_cycle();
        INSERT INTO steps VALUES (s, 'place', c);
        UPDATE tide.allocations SET state = 'running', started_at = now() WHERE state = 'assigned';
    END LOOP;
END $$;
SELECT format('step %s %s: considered %s, placed %s, evicted %s; load %s, decide %s, write %s',
              s.step, s.kind, c.jobs_considered, c.jobs_placed, c.jobs_evicted,
              round(c.load_ms::numeric, 1), round(c.decide_ms::numeric, 1), round(c.write_ms::numeric, 1))
  FROM steps s JOIN tide.cycles c ON c.id = s.id ORDER BY s.step, s.kind;
SELECT 'inference jobs placed ' || count(*) FILTER (WHERE state <> 'pending') || ' of ' || count(*)
  FROM tide.jobs WHERE queue = 'online';
