-- A start timeout of a whole first cycle (R-T4), timed; run through
-- bench/cycle_timeout.sh, or:
--   psql -v jobs=10000 -v nodes=1000 -f bench/cycle_timeout.sql DB
\ir bench_start.psql
SET client_min_messages = notice;
SET jit = off;
-- No launchers here: no heartbeats, so no node may time out (R-C3).
SET tide.node_timeout = 0;
\ir cycle_cluster.psql
DROP TABLE shapes;
-- the statistics of before the first cycle, as a cluster has them then
ANALYZE tide.jobs, tide.job_tasks, tide.nodes, tide.queues, tide.allocations;

CREATE FUNCTION pg_temp.cycle_line(label text, c bigint) RETURNS text LANGUAGE sql AS $$
SELECT format('%s: placed=%s evicted=%s ms=%s load_ms=%s decide_ms=%s write_ms=%s', label, jobs_placed, jobs_evicted,
              round(1000 * extract(epoch FROM finished_at - started_at)), round(load_ms::numeric),
              round(decide_ms::numeric), round(write_ms::numeric))
  FROM tide.cycles WHERE id = c
$$;

SELECT pg_temp.cycle_line('first cycle', tide.run_cycle());
SELECT format('placed, not started: %s jobs, %s allocations', count(DISTINCT job_id), count(*))
  FROM tide.allocations WHERE state = 'assigned';
-- No launcher starts them: the placements are moved past the timeout.
UPDATE tide.allocations SET created_at = created_at - (current_setting('tide.start_timeout')::interval + interval '1 minute')
 WHERE state = 'assigned';
SELECT pg_temp.cycle_line('timeout cycle', tide.run_cycle());
-- The launchers confirm the evictions (one call, as a launcher reports a batch).
SELECT clock_timestamp() AS t0 \gset
SELECT count(*) FROM tide.report_evicted((SELECT array_agg(id ORDER BY id) FROM tide.allocations WHERE state = 'releasing')) \g /dev/null
SELECT format('evictions confirmed in %s ms', round(1000 * extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)));
SELECT pg_temp.cycle_line('cycle after', tide.run_cycle());
SELECT pg_temp.cycle_line('cycle after', tide.run_cycle());
SELECT pg_temp.cycle_line('cycle after', tide.run_cycle());

-- A fifth of the backlog avoids a node (R-L4), in a full cluster.
UPDATE tide.jobs SET avoid_nodes = ARRAY[format('node-%s', lpad((1 + id % :nodes)::text, 6, '0'))]
 WHERE state = 'pending' AND id % 5 = 0;
SELECT format('pending=%s of which avoiding a node=%s', count(*), count(*) FILTER (WHERE cardinality(avoid_nodes) > 0))
  FROM tide.jobs WHERE state = 'pending';
SELECT pg_temp.cycle_line('cycle with avoided nodes', tide.run_cycle());
SELECT pg_temp.cycle_line('cycle with avoided nodes', tide.run_cycle());
SELECT pg_temp.cycle_line('cycle with avoided nodes', tide.run_cycle());
