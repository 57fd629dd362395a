-- Random clusters and workloads through tide.run_cycle() (10 clusters x 12
-- cycles), with launchers simulated in
-- SQL (start some allocations, end some), checking the invariants after
-- every cycle:
--   R-C4  no node over capacity (live allocations summed);
--   R-L6  no GPU in two whole allocations, no fraction on a whole-allocated
--         GPU, no GPU shared above 1000 milli, masks inside the node;
--   R-L3  placed jobs hold at least their gang minimum, pending jobs none;
--   R-L4  placements on nodes matching the selector and gpu_type;
--   R-A1  no queue above its capability, card keys included;
--   R-A4  no owner above its queue's owner_capability, card keys included;
--   R-L1  no pending single-replica job (whole GPUs or none) fits a ready
--         node's free resources in a queue without limits.
-- Every other cluster runs with tide.fair_share_half_life = 1h (R-O6): the
-- order of queues changes, none of the invariants may; two queues order
-- their owners by their shares (R-O7), one of them without a quota.  Four
-- of the queues form a tree of depth 3 under two organisations (R-O5),
-- flat in every third cluster, with random capabilities at every level
-- and a random reclaimable flag (R-A3, R-E7): no queue's subtree may pass
-- its capability, and no inner queue holds anything of its own.
BEGIN;
CREATE EXTENSION pg_tide;
SET client_min_messages = warning;
SELECT plan(14);
SELECT setseed(0.4242);

INSERT INTO tide.queues (name) VALUES ('free1'), ('free2');
INSERT INTO tide.queues (name, quota, capability, owner_capability)
VALUES ('capped', 'gpu=8', 'gpu=12, NVIDIA-H100=8', 'gpu=6, NVIDIA-H100=4');
INSERT INTO tide.queues (name, quota, priority, owner_capability) VALUES ('vip', 'gpu=8, cpu=32', 5, 'gpu=4, cpu=24');
INSERT INTO tide.queues (name, quota) VALUES ('org_a', 'gpu=12, cpu=64'), ('org_b', 'gpu=8');
INSERT INTO tide.queues (name, quota) VALUES ('t_a1', 'gpu=6'), ('t_a2', 'gpu=6, cpu=32'), ('t_b1', 'gpu=8');
INSERT INTO tide.queues (name, quota) VALUES ('t_b1x', 'gpu=4'), ('t_b1y', NULL);

-- The tree (R-O5) with random limits, or the same queues flat.
CREATE FUNCTION pg_temp.random_tree(flat boolean) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE tide.queues SET parent = NULL WHERE parent IS NOT NULL;
    IF NOT flat THEN
        UPDATE tide.queues SET parent = 'org_a' WHERE name IN ('t_a1', 't_a2');
        UPDATE tide.queues SET parent = 'org_b' WHERE name = 't_b1';
        UPDATE tide.queues SET parent = 't_b1' WHERE name IN ('t_b1x', 't_b1y');
    END IF;
    UPDATE tide.queues SET capability = format('gpu=%s', 12 + floor(random() * 12))::tide.resvec,
                           reclaimable = random() < 0.7
     WHERE name IN ('org_a', 'org_b');
    UPDATE tide.queues SET capability = CASE WHEN random() < 0.5 THEN format('gpu=%s', 6 + floor(random() * 8))::tide.resvec END
     WHERE name IN ('t_a2', 't_b1', 't_b1y');
END $$;
UPDATE tide.queues SET owner_fair_share = true WHERE name IN ('free1', 'vip');

-- A random cluster of 3 to 12 nodes: CPU nodes, two card types, topology, zones.
CREATE FUNCTION pg_temp.random_cluster() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    n int := 3 + floor(random() * 10)::int;
    gpus int;
BEGIN
    UPDATE tide.allocations SET state = 'released', released_at = now(), release_reason = 'test'
     WHERE state <> 'released';
    DELETE FROM tide.jobs;
    DELETE FROM tide.allocations;
    DELETE FROM tide.nodes;
    FOR i IN 1..n LOOP
        gpus := (ARRAY[0, 4, 8, 8])[1 + floor(random() * 4)::int];
        PERFORM tide.register_node(format('n%s', i),
            format('cpu=%s, memory=%sGi, gpu=%s', 16 * (1 + floor(random() * 3)), 64 * (1 + floor(random() * 2)), gpus)::tide.resvec,
            CASE WHEN gpus = 0 THEN NULL WHEN random() < 0.5 THEN 'NVIDIA-A100' ELSE 'NVIDIA-H100' END,
            CASE WHEN random() < 0.3 THEN '{"zone": "a"}' ELSE '{"zone": "b"}' END::jsonb,
            CASE WHEN gpus = 8 AND random() < 0.7 THEN '{0,0,1,1,2,2,3,3}'::int[]
                 WHEN gpus = 4 THEN '{0,0,1,1}'::int[] END);
    END LOOP;
    UPDATE tide.nodes SET allow_cpu_jobs = true WHERE gpu_type IS NOT NULL AND random() < 0.2;
    UPDATE tide.nodes SET state = 'draining' WHERE random() < 0.1;
END $$;

CREATE TEMP TABLE violations (cycle int, what text);
-- allocations each cycle made in the tree's leaves (the clusters replace each other)
CREATE TEMP TABLE tree_placed (cycle int, n int);

-- jit off in the checks alone (not in the cycles they check): the planner
-- guesses 100 capability keys for each of 229 queues, and compiling the
-- capability query took about 0.3 s of each check's 1 ms (38 s a run).
CREATE FUNCTION pg_temp.check(cyc int) RETURNS void LANGUAGE plpgsql SET jit = off AS $$
BEGIN
    -- R-C4 capacity
    INSERT INTO violations
    SELECT cyc, 'over capacity on ' || n.name
      FROM tide.nodes n
      JOIN (SELECT node, tide.sum(resources) AS s FROM tide.allocations WHERE state <> 'released' GROUP BY node) a
        ON a.node = n.name
     WHERE NOT (a.s OPERATOR(tide.<@) n.capacity);
    -- R-L6 GPUs
    INSERT INTO violations
    SELECT cyc, format('GPU %s of %s: %s whole, %s milli shared', g, node, nwhole, shared)
      FROM (SELECT a.node, g, count(*) FILTER (WHERE a.gpu_milli IS NULL) AS nwhole,
                   coalesce(sum(a.gpu_milli), 0) AS shared
              FROM tide.allocations a, unnest(tide.gpu_indices(a.gpus)) g
             WHERE a.state <> 'released'
             GROUP BY a.node, g) x
     WHERE nwhole > 1 OR (nwhole = 1 AND shared > 0) OR shared > 1000;
    INSERT INTO violations
    SELECT cyc, format('allocation %s: GPU %s outside node %s', a.id, g, a.node)
      FROM tide.allocations a JOIN tide.nodes n ON n.name = a.node, unnest(tide.gpu_indices(a.gpus)) g
     WHERE a.state <> 'released' AND g >= tide.get(n.capacity, 'gpu');
    INSERT INTO violations
    SELECT cyc, format('allocation %s: %s GPUs in the mask for %s', a.id, tide.gpu_count(a.gpus), tide.get(a.resources, 'gpu'))
      FROM tide.allocations a
     WHERE a.state <> 'released'
       AND CASE WHEN a.gpu_milli IS NULL THEN tide.gpu_count(a.gpus) <> tide.get(a.resources, 'gpu')
                ELSE tide.gpu_count(a.gpus) <> 1 OR a.gpu_milli <> tide.get(a.resources, 'gpu') * 1000 END;
    -- R-L3 gangs: what this cycle placed reaches the minimum; pending jobs hold nothing
    INSERT INTO violations
    SELECT cyc, format('job %s (%s) holds %s of min %s', j.id, j.state, coalesce(a.n, 0),
                       coalesce(j.min_available, t.total))
      FROM tide.jobs j
      JOIN (SELECT job_id, sum(replicas)::int AS total FROM tide.job_tasks GROUP BY job_id) t ON t.job_id = j.id
      LEFT JOIN (SELECT job_id, count(*)::int AS n FROM tide.allocations
                  WHERE state <> 'released' OR cycle_id = (SELECT max(id) FROM tide.cycles) GROUP BY job_id) a
        ON a.job_id = j.id
     WHERE (j.id IN (SELECT job_id FROM tide.allocations WHERE cycle_id = (SELECT max(id) FROM tide.cycles))
            AND coalesce(a.n, 0) < coalesce(j.min_available, t.total))
        OR (j.state = 'pending' AND EXISTS (SELECT 1 FROM tide.allocations x
                                             WHERE x.job_id = j.id AND x.state <> 'released'));
    -- R-L4 filters
    INSERT INTO violations
    SELECT cyc, format('job %s on %s breaks its selector or gpu_type', j.id, n.name)
      FROM tide.allocations a JOIN tide.jobs j ON j.id = a.job_id JOIN tide.nodes n ON n.name = a.node
     WHERE a.state <> 'released' AND a.cycle_id = (SELECT max(id) FROM tide.cycles)
       AND (NOT n.labels @> j.node_selector OR n.state <> 'ready'
            OR (j.gpu_type IS NOT NULL AND tide.get(a.resources, 'gpu') > 0 AND n.gpu_type IS DISTINCT FROM j.gpu_type)
            OR (tide.get(a.resources, 'gpu') = 0 AND n.gpu_type IS NOT NULL AND NOT n.allow_cpu_jobs
                AND NOT EXISTS (SELECT 1 FROM tide.job_tasks t WHERE t.job_id = j.id AND tide.get(t.request, 'gpu') > 0)));
    -- R-A1 capability, card keys charged by the node's gpu_type
    INSERT INTO violations
    SELECT cyc, format('queue %s %s: %s used > %s', q.name, c.key, u.used, c.value)
      FROM tide.queues q
      CROSS JOIN LATERAL jsonb_each_text(q.capability::jsonb) c
      CROSS JOIN LATERAL (
          SELECT coalesce(sum(tide.get(a.resources, c.key)
                              + CASE WHEN n.gpu_type = c.key THEN tide.get(a.resources, 'gpu') ELSE 0 END), 0) AS used
            FROM tide.allocations a JOIN tide.jobs j ON j.id = a.job_id JOIN tide.nodes n ON n.name = a.node
           WHERE a.state <> 'released'
             AND j.queue IN (SELECT t.leaf FROM tide._queue_ancestors() t WHERE t.queue = q.name)) u
     WHERE q.capability IS NOT NULL AND u.used > c.value::numeric;
    -- R-O5 jobs live in leaves: no inner queue holds anything of its own
    INSERT INTO violations
    SELECT cyc, format('inner queue %s runs job %s', j.queue, j.id)
      FROM tide.allocations a JOIN tide.jobs j ON j.id = a.job_id
     WHERE a.state <> 'released' AND EXISTS (SELECT 1 FROM tide.queues c WHERE c.parent = j.queue);
    -- R-A4 owner limits, card keys charged by the node's gpu_type
    INSERT INTO violations
    SELECT cyc, format('owner %s in queue %s %s: %s used > %s', o.owner, q.name, c.key, u.used, c.value)
      FROM tide.queues q
      CROSS JOIN LATERAL jsonb_each_text(q.owner_capability::jsonb) c
      CROSS JOIN LATERAL (SELECT DISTINCT j.owner FROM tide.jobs j WHERE j.queue = q.name) o
      CROSS JOIN LATERAL (
          SELECT coalesce(sum(tide.get(a.resources, c.key)
                              + CASE WHEN n.gpu_type = c.key THEN tide.get(a.resources, 'gpu') ELSE 0 END), 0) AS used
            FROM tide.allocations a JOIN tide.jobs j ON j.id = a.job_id JOIN tide.nodes n ON n.name = a.node
           WHERE a.state <> 'released' AND j.queue = q.name AND j.owner = o.owner) u
     WHERE q.owner_capability IS NOT NULL AND u.used > c.value::numeric;
    -- R-L1 nothing skipped that fits (simple jobs of unlimited queues)
    INSERT INTO violations
    SELECT cyc, format('pending job %s (%s) fits node %s: %s', j.id, t.request, n.name, j.pending_reason)
      FROM tide.jobs j
      JOIN tide.job_tasks t ON t.job_id = j.id
      JOIN tide.nodes n ON n.state = 'ready' AND n.labels @> j.node_selector
       AND (j.gpu_type IS NULL OR n.gpu_type = j.gpu_type)
       AND (n.gpu_type IS NULL) = (tide.get(t.request, 'gpu') = 0)
      LEFT JOIN LATERAL (
          SELECT coalesce(tide.sum(a.resources), '') AS used,
                 (SELECT count(DISTINCT g) FROM tide.allocations b, unnest(tide.gpu_indices(b.gpus)) g
                   WHERE b.node = n.name AND b.state <> 'released') AS gpus_touched
            FROM tide.allocations a WHERE a.node = n.name AND a.state <> 'released') u ON true
     WHERE j.state = 'pending' AND j.queue IN ('free1', 'free2') AND NOT j.reserve AND NOT j.unschedulable
       AND j.pending_reason NOT LIKE '%held for job%'   -- R-L2 explains it
       AND NOT EXISTS (SELECT 1 FROM tide.eviction_holds h WHERE h.node = n.name)   -- R-E6 explains it
       AND j.avoid_nodes = '{}'
       AND (SELECT count(*) FROM tide.job_tasks x WHERE x.job_id = j.id) = 1 AND t.replicas = 1
       AND tide.get(t.request, 'gpu') = trunc(tide.get(t.request, 'gpu'))
       AND tide.get(t.request, 'cpu') <= tide.get(n.capacity, 'cpu') - tide.get(u.used, 'cpu')
       AND tide.get(t.request, 'memory') <= tide.get(n.capacity, 'memory') - tide.get(u.used, 'memory')
       AND tide.get(t.request, 'gpu') <= tide.get(n.capacity, 'gpu') - u.gpus_touched;
END $$;

-- A random job; shapes mix CPU, fractions, 1-8 GPUs, gangs, selectors, card types.
CREATE FUNCTION pg_temp.random_job() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    shape int := floor(random() * 10);
    gpu text;
    jid bigint;
BEGIN
    gpu := CASE WHEN shape = 0 THEN '0' WHEN shape = 1 THEN '0.25' WHEN shape = 2 THEN '0.5'
                ELSE (2 ^ floor(random() * 4))::int::text END;
    jid := tide.submit(
        (ARRAY['free1', 'free2', 'capped', 'vip', 't_a1', 't_a2', 't_b1x', 't_b1y'])[1 + floor(random() * 8)::int],
        format('cpu=%s, memory=%sGi, gpu=%s', 1 + floor(random() * 8), 1 + floor(random() * 32), gpu)::tide.resvec,
        replicas => CASE WHEN random() < 0.2 THEN 2 + floor(random() * 3)::int ELSE 1 END,
        priority => floor(random() * 5)::int,
        idle => random() < 0.15,
        reserve => random() < 0.05,
        gpu_type => CASE WHEN random() < 0.15 THEN 'NVIDIA-H100' END,
        node_selector => CASE WHEN random() < 0.15 THEN '{"zone": "a"}'::jsonb ELSE '{}' END);
    -- one of three owners (R-A4)
    UPDATE tide.jobs x SET owner = (ARRAY['o1', 'o2', 'o3'])[1 + floor(random() * 3)::int] WHERE x.id = jid;
    RETURN jid;
END $$;

DO $$
DECLARE
    c int := 0;
BEGIN
    FOR cluster IN 1..10 LOOP
    PERFORM pg_temp.random_cluster();
    PERFORM pg_temp.random_tree(cluster % 3 = 1);
    PERFORM pg_catalog.set_config('tide.fair_share_half_life', CASE WHEN cluster % 2 = 0 THEN '1h' ELSE '0' END, true);
    FOR k IN 1..12 LOOP
        c := c + 1;
        PERFORM pg_temp.random_job() FROM generate_series(1, floor(random() * 12)::int);
        PERFORM tide.run_cycle();
        PERFORM pg_temp.check(c);
        INSERT INTO tree_placed
        SELECT c, count(*) FROM tide.allocations a JOIN tide.jobs j ON j.id = a.job_id
         WHERE a.cycle_id = (SELECT max(id) FROM tide.cycles) AND j.queue IN ('t_a1', 't_a2', 't_b1x', 't_b1y');
        -- launchers: start about half of the assigned, end about a third of the running
        UPDATE tide.allocations SET state = 'running', started_at = now()
         WHERE state = 'assigned' AND random() < 0.5;
        PERFORM tide.exited(a.id, 0)
           FROM tide.allocations a WHERE a.state = 'running' AND random() < 0.3;
    END LOOP;
    END LOOP;
END $$;

SELECT is((SELECT count(*)::int FROM tide.cycles), 120, '120 cycles ran over 10 random clusters');
SELECT is((SELECT array_agg(queue ORDER BY queue) FROM tide.queue_fair_usage),
          ARRAY['capped', 'org_a', 'org_b', 't_a1', 't_a2', 't_b1', 't_b1x', 'vip'],
          'R-O6: the cycles with a half-life kept the averages of the queues with a quota, inner ones too');
SELECT is((SELECT array_agg(DISTINCT queue ORDER BY queue) FROM tide.owner_fair_usage), ARRAY['free1', 'vip'],
          'R-O7: and the owners'' averages of the queues that order owners');
SELECT cmp_ok((SELECT sum(n)::int FROM tree_placed), '>', 50, 'R-O5: the tree''s leaves ran jobs');
SELECT is((SELECT count(*)::int FROM violations WHERE what LIKE 'inner%'), 0, 'R-O5: no inner queue ran a job of its own');
SELECT cmp_ok((SELECT sum(allocations_made)::int FROM tide.cycles), '>', 100, 'more than 100 allocations were made');
SELECT cmp_ok((SELECT sum(jobs_considered - jobs_placed)::int FROM tide.cycles), '>', 100, 'and jobs were left waiting');
SELECT is((SELECT count(*)::int FROM violations WHERE what LIKE 'over capacity%'), 0, 'R-C4: no node over capacity after any cycle');
SELECT is((SELECT count(*)::int FROM violations WHERE what LIKE '%GPU%' OR what LIKE '%mask%'), 0,
          'R-L6: no GPU given twice or shared above 1000, masks match requests');
SELECT is((SELECT count(*)::int FROM violations WHERE what LIKE '%holds%'), 0, 'R-L3: gangs all or nothing');
SELECT is((SELECT count(*)::int FROM violations WHERE what LIKE '%breaks%'), 0, 'R-L4: placements respect the node filter');
SELECT is((SELECT count(*)::int FROM violations WHERE what LIKE 'queue%'), 0,
          'R-A1, R-A3: no queue above its capability, an inner queue''s counting its subtree');
SELECT is((SELECT count(*)::int FROM violations WHERE what LIKE 'owner%'), 0, 'R-A4: no owner above its queue''s owner limit');
SELECT is((SELECT string_agg(what, '; ') FROM (SELECT what FROM violations LIMIT 5) v), NULL,
          'no violation at all (R-L1: no simple pending job fits a ready node)');

SELECT * FROM finish();
ROLLBACK;
