-- Views for people: what each queue and node holds (what waits:
-- 66_pending.sql).  The usage views are security_invoker (row-level
-- security applies).

-- The part of a usage vector that a quota covers: per resource the quota
-- names, the smaller of the two; resources it does not name are not limited
-- by it (R-A1), so they are covered whole.  Everything else is borrowed.
CREATE FUNCTION tide._covered(usage tide.resvec, quota tide.resvec) RETURNS tide.resvec
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT coalesce(
         (SELECT pg_catalog.jsonb_object_agg(u.key,
                     CASE WHEN q.key IS NULL THEN u.value::numeric
                          ELSE LEAST(u.value::numeric, q.value::numeric) END)
            FROM pg_catalog.jsonb_each(usage::jsonb) u
            LEFT JOIN pg_catalog.jsonb_each(quota::jsonb) q ON q.key = u.key)::tide.resvec,
         ''::tide.resvec)
$$;
COMMENT ON FUNCTION tide._covered(tide.resvec, tide.resvec) IS
    'the part of a usage vector covered by a quota: per resource the quota names the smaller of both, other resources whole (a quota limits only what it names, R-A1)';

-- Every queue with itself and each queue above it (R-O5): (leaf, queue,
-- up) with up = 1 for the queue itself, 2 for its parent, ...; at most 8
-- levels (the tree checks refuse deeper ones and loops).
CREATE FUNCTION tide._queue_ancestors() RETURNS TABLE (leaf text, queue text, up integer)
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
WITH RECURSIVE a AS (
    SELECT q.name AS leaf, q.name AS queue, q.parent, 1 AS up FROM tide.queues q
    UNION ALL
    SELECT a.leaf, p.name, p.parent, a.up + 1
      FROM a JOIN tide.queues p ON p.name = a.parent
     WHERE a.up < 8
)
SELECT a.leaf, a.queue, a.up FROM a
$$;
COMMENT ON FUNCTION tide._queue_ancestors() IS
    'every queue paired with itself (up = 1) and each queue above it in its tree (2: its parent, ...), R-O5';

CREATE VIEW tide.queue_usage WITH (security_invoker = true) AS
WITH live AS (
    -- an inner queue's usage is its subtree's (R-O5), as the engine counts it
    SELECT t.queue,
           tide.sum(a.resources) FILTER (WHERE NOT j.idle) AS usage,
           tide.sum(a.resources) FILTER (WHERE j.idle) AS idle_usage
      FROM tide.allocations a JOIN tide.jobs j ON j.id = a.job_id
      JOIN tide._queue_ancestors() t ON t.leaf = j.queue
     WHERE a.state <> 'released'
     GROUP BY t.queue
), counts AS (
    SELECT t.queue,
           count(*) FILTER (WHERE j.state = 'pending') AS pending,
           count(*) FILTER (WHERE j.state IN ('allocated', 'running')) AS running,
           count(*) FILTER (WHERE j.state = 'evicting') AS evicting
      FROM tide.jobs j
      JOIN tide._queue_ancestors() t ON t.leaf = j.queue
     WHERE j.state IN ('pending', 'allocated', 'running', 'evicting')
     GROUP BY t.queue
), u AS (
    SELECT q.name AS queue, q.resource_group, q.priority, q.quota, q.capability, q.parent,
           coalesce(l.usage, ''::tide.resvec) AS usage,
           coalesce(l.idle_usage, ''::tide.resvec) AS idle_usage,
           coalesce(c.pending, 0) AS pending,
           coalesce(c.running, 0) AS running,
           coalesce(c.evicting, 0) AS evicting
      FROM tide.queues q
      LEFT JOIN live l ON l.queue = q.name
      LEFT JOIN counts c ON c.queue = q.name
)
SELECT u.queue, u.resource_group, u.priority, u.quota, u.capability,
       u.usage,
       g.guaranteed,
       u.usage OPERATOR(tide.-) g.guaranteed AS borrowed,
       u.idle_usage,
       u.pending, u.running, u.evicting,
       u.parent
  FROM u
 CROSS JOIN LATERAL (SELECT CASE WHEN u.quota IS NULL THEN ''::tide.resvec
                                 ELSE tide._covered(u.usage, u.quota) END AS guaranteed) g;
COMMENT ON VIEW tide.queue_usage IS
    'per queue: quota, capability, non-idle usage split into guaranteed (within quota) and borrowed, idle usage, job counts, and its parent queue; an inner queue''s usage and counts are its subtree''s (R-O5)';

CREATE VIEW tide.node_usage WITH (security_invoker = true) AS
WITH live AS (
    SELECT a.node,
           tide.sum(a.resources) AS allocated,
           tide.union(a.gpus) AS used_gpus,
           count(*) AS allocations
      FROM tide.allocations a
     WHERE a.state <> 'released'
     GROUP BY a.node
)
SELECT n.name AS node, n.resource_group, n.state, n.gpu_type, n.capacity,
       coalesce(l.allocated, ''::tide.resvec) AS allocated,
       n.capacity OPERATOR(tide.-) coalesce(l.allocated, ''::tide.resvec) AS free,
       tide._all_gpus(tide.get(n.capacity, 'gpu')) OPERATOR(tide.-) coalesce(l.used_gpus, ''::tide.gpumask) AS free_gpus,
       coalesce(l.used_gpus, ''::tide.gpumask) AS used_gpus,
       coalesce(l.allocations, 0) AS allocations,
       n.heartbeat_at
  FROM tide.nodes n
  LEFT JOIN live l ON l.node = n.name;
COMMENT ON VIEW tide.node_usage IS
    'per node: capacity, what live allocations hold, what is free, and the GPUs no allocation uses (free_gpus)';

GRANT SELECT ON tide.queue_usage, tide.node_usage TO tide_admin, tide_reader;
-- (usage sums over other owners' rows would be partial for submitters,
-- row-level security, so they are not granted; tide.pending is in
-- 66_pending.sql, after the owners' order it follows)
