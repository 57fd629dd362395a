-- Views for people: what waits, what each queue and node holds.
-- The usage views are security_invoker (row-level security applies); the
-- pending view filters rows itself.

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

-- Not security_invoker: positions count every owner's jobs, then the rows
-- are filtered to the caller's own (admins and readers see all).  The
-- security barrier keeps a caller's functions from seeing rows before the
-- filter.
CREATE VIEW tide.pending WITH (security_barrier = true) AS
SELECT p.job_id, p.name, p.queue, p.owner, p.priority, p.idle, p.retry, p.position,
       p.pending_reason, p.unschedulable, p.waiting_since, p.created_at
  FROM (SELECT j.id AS job_id,
               j.name,
               j.queue,
               j.owner,
               j.priority,
               j.idle,
               j.retry_of IS NOT NULL AS retry,
               pg_catalog.row_number() OVER (
                   PARTITION BY j.queue
                   ORDER BY j.idle, (j.retry_of IS NULL), j.priority DESC, j.created_at, j.id) AS position,
               -- a waiting job's reason is its own (R-P1..R-P5): the cycle did not see it
               CASE WHEN j.waiting THEN j.pending_reason ELSE coalesce(b.reason, j.pending_reason) END AS pending_reason,
               j.unschedulable,
               coalesce(w.since, j.created_at) AS waiting_since,
               j.created_at
          FROM tide.jobs j
          -- (a placement the cycle gave back, allocated -> pending, is no new wait)
          LEFT JOIN LATERAL (SELECT max(e.at) AS since FROM tide.job_events e
                              WHERE e.job_id = j.id AND e.new_state = 'pending'
                                AND e.old_state IS DISTINCT FROM 'allocated') w ON true
          -- the latest cycle's reason, when it is not in the job row yet
          LEFT JOIN (SELECT u.job_id, r.reason
                       FROM tide.reason_backlog r, pg_catalog.unnest(r.job_ids) AS u(job_id)) b
                 ON b.job_id = j.id
         WHERE j.state = 'pending') p
 WHERE p.owner = CURRENT_USER
    OR pg_catalog.pg_has_role('tide_admin', 'USAGE')
    OR pg_catalog.pg_has_role('tide_reader', 'USAGE');
COMMENT ON VIEW tide.pending IS
    'pending jobs with their position in their queue among every owner''s jobs (non-idle before idle, retry lane, then priority, age, id: R-O1..R-O3), the latest cycle''s reason they wait (R-C2, also when not yet in tide.jobs.pending_reason) and since when; a submitter sees its own rows';

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

GRANT SELECT ON tide.pending, tide.queue_usage, tide.node_usage TO tide_admin, tide_reader;
-- Submitters see their own pending jobs; usage sums over other owners' rows
-- would be partial for them (row-level security), so they are not granted.
GRANT SELECT ON tide.pending TO tide_submitter;
