-- Least-harm evictions (R-E4) on the quick start's own workload
-- (tools/quickstart.sh): 4 nodes x 8 GPUs, queues online (inference,
-- priority 80000) and offline (training, reclaimable); training fills the
-- cluster (a 2 x 8-GPU pretrain gang, three 4-GPU finetunes, 1-GPU sweeps),
-- then six services of 1, 1, 2, 1, 1 and 2 GPUs (8 in all) arrive.  The
-- gang started last, the sweeps first: the old order (most recently placed
-- first) evicted the gang, 16 GPUs for one 1-GPU service.  Launchers are
-- simulated in SQL.
BEGIN;
CREATE EXTENSION pg_tide;
SET client_min_messages = warning;
SELECT plan(8);

-- the launchers: start every assigned allocation
CREATE FUNCTION pg_temp.start_all() RETURNS void LANGUAGE sql AS $$
    SELECT count(tide.started(a.id)) FROM tide.allocations a WHERE a.state = 'assigned';
$$;

-- the quick start's cluster (setup_cluster)
INSERT INTO tide.queues (name, quota, capability, priority, reclaimable, service_type)
VALUES ('online',  'gpu=12', 'gpu=16', 80000, false, 'inference'),
       ('offline', 'gpu=20', NULL,     20000, true,  'training');
SELECT tide.register_node(n, 'cpu=96, memory=768Gi, gpu=8', gpu_type => 'NVIDIA-H100',
                          labels => jsonb_build_object('rack', r),
                          gpu_topology => '{0,0,0,0,1,1,1,1}')
  FROM (VALUES ('gpu-a1', 'a'), ('gpu-a2', 'a'), ('gpu-b1', 'b'), ('gpu-b2', 'b')) AS v(n, r);

-- its training (submit_workload), placed in one cycle; then the gang is
-- made the most recently started (as when sweeps and finetunes started
-- before it), the sweeps the oldest
SELECT tide.submit('offline', 'cpu=16, memory=128Gi, gpu=8', replicas => 2, name => 'pretrain');
SELECT tide.submit('offline', 'cpu=8, memory=64Gi, gpu=4', name => format('finetune-%s', i))
  FROM generate_series(1, 3) AS i;
SELECT tide.submit('offline', 'cpu=2, memory=16Gi, gpu=1', name => format('sweep-%s', i))
  FROM generate_series(1, 8) AS i;
SELECT tide.run_cycle();
SELECT pg_temp.start_all();
UPDATE tide.allocations a
   SET started_at = now() - CASE WHEN j.name = 'pretrain' THEN interval '1 minute'
                                 WHEN j.name LIKE 'finetune%' THEN interval '10 minutes'
                                 ELSE interval '15 minutes' END
  FROM tide.jobs j WHERE j.id = a.job_id AND a.state = 'running';

SELECT is((SELECT sum(tide.get(resources, 'gpu'))::int FROM tide.allocations WHERE state = 'running'), 32,
          'the cluster is full of training: the 2 x 8-GPU gang, 3 finetunes, 4 sweeps (32 GPUs)');

-- its services: 1, 1, 2, 1, 1, 2 GPUs
SELECT tide.submit('online', format('cpu=4, memory=32Gi, gpu=%s', g)::tide.resvec, priority => 100,
                   name => format('serve-%s', i))
  FROM generate_series(1, 6) AS i, LATERAL (SELECT CASE WHEN i % 3 = 0 THEN 2 ELSE 1 END AS g) AS x;
SELECT tide.run_cycle();

CREATE TEMP VIEW evicted AS
SELECT j.id, j.name,
       (SELECT sum(tide.get(a.resources, 'gpu')) FROM tide.allocations a WHERE a.job_id = j.id) AS gpus
  FROM tide.evictions e JOIN tide.jobs j ON j.id = e.job_id;

SELECT cmp_ok((SELECT coalesce(sum(gpus), 0) FROM evicted), '<=', 8::numeric,
              '8 GPUs of services evict at most 8 GPUs of training');
SELECT is((SELECT count(*)::int FROM evicted WHERE name = 'pretrain'), 0,
          'the 2 x 8-GPU gang, placed last, is not evicted');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE queue = 'online' AND state = 'pending'
              AND pending_reason NOT LIKE 'evicting % to make room for it'
              AND pending_reason NOT LIKE 'waiting for the jobs evicted for it%'), 0,
          'every service that waits waits for what was evicted for it');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE queue = 'online' AND state IN ('allocated', 'running'))
        + (SELECT count(DISTINCT job_id)::int FROM tide.eviction_holds), 6,
          'every service is placed or holds what was freed for it');

-- the victims stop; the services start on what was freed for them (R-E6)
SELECT count(tide.evicted(a.id)) FROM tide.allocations a WHERE a.state = 'releasing';
SELECT tide.run_cycle();
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE queue = 'online' AND state = 'allocated'), 6,
          'once the victims stopped, all six services are placed');
SELECT is((SELECT count(*)::int FROM tide.evictions), (SELECT count(*)::int FROM evicted),
          'and nothing more was evicted');

-- the setting: a restart costs at least this GPU-time per GPU
SELECT is(current_setting('tide.eviction_restart_cost'), '5min', 'tide.eviction_restart_cost defaults to 5 minutes');

SELECT * FROM finish();
ROLLBACK;
