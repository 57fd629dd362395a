-- Demand for autoscalers (docs/analysts.md#what-should-the-autoscaler-add):
-- per resource group, the pending work that the free resources of the
-- registered nodes cannot start now, by request shape, and how many nodes
-- of each registered node shape would start it.  What Ray's
-- request_resources (resource bundles with label selectors) and Kueue's
-- ProvisioningRequests (pod sets: a pod template and a count) hand to an
-- autoscaler, read from the tables now.
--
-- Which pending jobs count: those a cycle would consider (not waiting:
-- held, queue held, deferred, array throttled or a dependency unmet are
-- left out, R-P1..R-P5), not idle (idle work runs on what is free and never
-- asks for more, as the cluster autoscaler ignores pods below its priority
-- cutoff), not waiting for evictions made for them (R-E6: the room is being
-- freed), and not over a capability or owner limit of their queue or of
-- an ancestor (R-A1, R-A3, R-A4): a new node would not start them.  A job
-- over its quota counts: it borrows, and may run on what new nodes add.
--
-- The unit is a role's part of the job's minimum (its first min_available
-- replicas, roles in name order, as tide._job_minimum): a shape is one
-- replica's request with the job's gpu_type and node_selector.  The free
-- room of the ready matching nodes is dealt to the shape's units in order
-- (priority, age, id); the units past it are the demand.  Each shape is
-- dealt the free room alone (shapes that compete for the same free node
-- may each count it), and a gang that finds part of its room free still
-- asks for all of it: the figures are what fresh nodes must hold.

-- Copies of one replica's request that a vector holds: the least, over the
-- request's resources, of have / asked, whole GPUs for whole-GPU requests
-- (R-L6), and for a share of a GPU the shares of the whole free GPUs plus
-- those of what is left on shared ones (counted together, an estimate).
CREATE FUNCTION tide._copies(have tide.resvec, whole_gpus numeric, one tide.resvec) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT pg_catalog.min(CASE WHEN e.name <> 'gpu'
                           THEN pg_catalog.floor(coalesce(tide.get(have, e.name), 0) / e.quantity)
                           WHEN e.quantity >= 1
                           THEN pg_catalog.floor(whole_gpus / e.quantity)
                           ELSE whole_gpus * pg_catalog.floor(1 / e.quantity)
                                + pg_catalog.floor(GREATEST(coalesce(tide.get(have, 'gpu'), 0) - whole_gpus, 0) / e.quantity)
                      END)::bigint
  FROM tide.each(one) e
$$;
COMMENT ON FUNCTION tide._copies(tide.resvec, numeric, tide.resvec) IS
    'how many replicas of a request a vector holds: the least of have / asked over the request''s resources, whole GPUs (whole_gpus of them) for whole-GPU requests, shares of a GPU from whole and shared GPUs (R-L6)';

-- Does a node with these labels match this selector (R-L4)?  As the cycle
-- compares them: values as text ({"rack": 7} selects "rack": "7"), a null
-- in the selector asks nothing, a null label is no label.
CREATE FUNCTION tide._labels_match(labels jsonb, selector jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT labels @> selector
    OR NOT EXISTS (SELECT 1 FROM pg_catalog.jsonb_each_text(selector) s
                    WHERE s.value IS NOT NULL AND (labels ->> s.key) IS DISTINCT FROM s.value)
$$;
COMMENT ON FUNCTION tide._labels_match(jsonb, jsonb) IS
    'does a node''s labels object match a node_selector as the cycle compares them (R-L4): every non-null selector value equal as text';

-- The view's rows.  A function so that JIT stays off (the query's cost
-- estimate triggers it, and compiling took a second where the query takes
-- a few dozen milliseconds) and its plan is kept for the session.
CREATE FUNCTION tide._demand()
    RETURNS TABLE (resource_group text, request tide.resvec, gpu_type text, node_selector jsonb,
                   jobs bigint, replicas bigint,
                   node_capacity tide.resvec, node_gpu_type text, node_labels jsonb,
                   nodes_registered bigint, example_node text, replicas_per_node bigint,
                   nodes_needed bigint, never_fits boolean)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    AS $$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH RECURSIVE
-- every queue with itself and its ancestors (a capability caps a subtree)
anc AS (
    SELECT q.name AS queue, q.name AS ancestor, q.parent FROM tide.queues q
    UNION ALL
    SELECT a.queue, p.name, p.parent FROM anc a JOIN tide.queues p ON p.name = a.parent
),
cand AS (
    SELECT j.id, j.queue, j.owner, q.resource_group, j.gpu_type, j.node_selector, j.min_available,
           j.priority, j.created_at, q.owner_capability
      FROM tide.jobs j
      JOIN tide.queues q ON q.name = j.queue
     WHERE j.state = 'pending' AND NOT j.waiting AND NOT j.idle
       AND NOT EXISTS (SELECT 1 FROM tide.evictions e WHERE e.preemptor_job_id = j.id AND e.acked_at IS NULL)
),
-- each role's part of the minimum (the replicas of the roles before it by
-- name are taken first), and whether the job asks GPUs in another role
parts AS (
    SELECT c.*, t.role, t.request,
           CASE WHEN c.min_available IS NULL THEN t.replicas
                ELSE GREATEST(LEAST(t.replicas, c.min_available
                                    - (SELECT coalesce(pg_catalog.sum(x.replicas), 0) FROM tide.job_tasks x
                                        WHERE x.job_id = t.job_id AND x.role < t.role)), 0) END AS n,
           tide.get(t.request, 'gpu') > 0
           OR EXISTS (SELECT 1 FROM tide.job_tasks x
                       WHERE x.job_id = t.job_id AND x.role <> t.role AND tide.get(x.request, 'gpu') > 0) AS job_gpu
      FROM cand c JOIN tide.job_tasks t ON t.job_id = c.id
),
-- limits: what every queue with a capability (its subtree) and every owner
-- of a queue with an owner limit holds, per limited resource; a GPU on a
-- node with a card type counts as that type too (R-A1)
caps AS (
    SELECT q.name AS cap_queue, e.name AS key, e.quantity AS cap
      FROM tide.queues q, tide.each(q.capability) e
     WHERE q.capability IS NOT NULL
),
live AS (
    SELECT j.queue, j.owner, a.resources, n.gpu_type
      FROM tide.allocations a
      JOIN tide.jobs j ON j.id = a.job_id
      LEFT JOIN tide.nodes n ON n.name = a.node
     WHERE a.state <> 'released'
       AND (EXISTS (SELECT 1 FROM anc x JOIN caps k ON k.cap_queue = x.ancestor WHERE x.queue = j.queue)
            OR EXISTS (SELECT 1 FROM tide.queues q WHERE q.name = j.queue AND q.owner_capability IS NOT NULL))
),
cap_used AS (
    SELECT k.cap_queue, k.key, k.cap,
           coalesce(pg_catalog.sum(coalesce(tide.get(l.resources, k.key),
                                            CASE WHEN l.gpu_type = k.key THEN tide.get(l.resources, 'gpu') ELSE 0 END)), 0) AS used
      FROM caps k
      LEFT JOIN (live l JOIN anc a ON a.queue = l.queue) ON a.ancestor = k.cap_queue
     GROUP BY k.cap_queue, k.key, k.cap
),
owner_used AS (
    SELECT q.name AS queue, o.owner, e.name AS key, e.quantity AS cap,
           coalesce(pg_catalog.sum(coalesce(tide.get(l.resources, e.name),
                                            CASE WHEN l.gpu_type = e.name THEN tide.get(l.resources, 'gpu') ELSE 0 END)), 0) AS used
      FROM tide.queues q
      CROSS JOIN tide.each(q.owner_capability) e
      JOIN (SELECT DISTINCT p.queue, p.owner FROM parts p WHERE p.owner_capability IS NOT NULL) o ON o.queue = q.name
      LEFT JOIN live l ON l.queue = q.name AND l.owner = o.owner
     WHERE q.owner_capability IS NOT NULL
     GROUP BY q.name, o.owner, e.name, e.quantity
),
minimum AS (
    SELECT p.id, p.queue, p.owner, p.gpu_type, tide.sum(p.request OPERATOR(tide.*) p.n) AS need
      FROM parts p
     WHERE p.n > 0
       AND (p.owner_capability IS NOT NULL
            OR EXISTS (SELECT 1 FROM anc a JOIN caps k ON k.cap_queue = a.ancestor WHERE a.queue = p.queue))
     GROUP BY p.id, p.queue, p.owner, p.gpu_type
),
limited AS (
    SELECT m.id
      FROM minimum m
     WHERE EXISTS (SELECT 1 FROM anc a JOIN cap_used u ON u.cap_queue = a.ancestor
                    WHERE a.queue = m.queue
                      AND u.used + coalesce(tide.get(m.need, u.key),
                                            CASE WHEN m.gpu_type = u.key THEN tide.get(m.need, 'gpu') END, 0) > u.cap)
        OR EXISTS (SELECT 1 FROM owner_used u
                    WHERE u.queue = m.queue AND u.owner = m.owner
                      AND u.used + coalesce(tide.get(m.need, u.key),
                                            CASE WHEN m.gpu_type = u.key THEN tide.get(m.need, 'gpu') END, 0) > u.cap)
),
-- the units: a role's part of a job that a new node could help start;
-- cpu_only: a role without GPUs in a job without GPUs (R-L4: GPU nodes
-- take it only with allow_cpu_jobs).  gpu_type '' for none ('' is no card
-- type: tide.jobs checks it), so that shapes join by hash on =; numbering
-- them by a sort instead cost 1.7 times the CPU at 100k pending.
units AS (
    SELECT p.id, p.resource_group, p.request, coalesce(p.gpu_type, '') AS gpu_type, p.node_selector,
           NOT p.job_gpu AS cpu_only, p.n, p.priority, p.created_at
      FROM parts p
     WHERE p.n > 0 AND p.id NOT IN (SELECT l.id FROM limited l)
),
shapes AS (
    SELECT pg_catalog.row_number() OVER () AS sid, d.*
      FROM (SELECT DISTINCT u.resource_group, u.request, u.gpu_type, u.node_selector, u.cpu_only FROM units u) d
),
-- the ready nodes by what they have free now
free AS (
    SELECT u.resource_group, u.gpu_type, x.labels, tide.get(u.capacity, 'gpu') > 0 AS gpu_node, x.allow_cpu_jobs,
           u.free, tide.gpu_count(u.free_gpus) AS whole, pg_catalog.count(*) AS nodes
      FROM tide.node_usage u JOIN tide.nodes x ON x.name = u.node
     WHERE u.state = 'ready'
     GROUP BY 1, 2, 3, 4, 5, 6, 7
),
room AS (
    SELECT s.sid, coalesce(pg_catalog.sum(f.nodes * tide._copies(f.free, f.whole, s.request)), 0) AS copies
      FROM shapes s
      LEFT JOIN free f
        ON f.resource_group = s.resource_group
       AND (s.gpu_type = '' OR f.gpu_type = s.gpu_type)
       AND tide._labels_match(f.labels, s.node_selector)
       AND (NOT s.cpu_only OR NOT f.gpu_node OR f.allow_cpu_jobs)
       AND f.free OPERATOR(tide.@>) s.request
     GROUP BY s.sid
),
-- the free room dealt to the units of each shape in order; the rest wait
short AS (
    SELECT w.sid, pg_catalog.count(DISTINCT w.id) AS jobs, pg_catalog.sum(w.n) AS replicas
      FROM (SELECT s.sid, u.id, u.n, r.copies,
                   pg_catalog.sum(u.n) OVER (PARTITION BY s.sid ORDER BY u.priority DESC, u.created_at, u.id) AS upto
              FROM units u
              JOIN shapes s ON s.resource_group = u.resource_group AND s.request OPERATOR(tide.=) u.request
                           AND s.gpu_type = u.gpu_type AND s.node_selector = u.node_selector
                           AND s.cpu_only = u.cpu_only
              JOIN room r ON r.sid = s.sid) w
     WHERE w.upto > w.copies
     GROUP BY w.sid
),
-- registered nodes (any state) by capacity, card type and labels
node_shapes AS (
    SELECT n.resource_group, n.capacity, n.gpu_type, n.labels,
           pg_catalog.bool_and(n.allow_cpu_jobs) AS allow_cpu_jobs,
           pg_catalog.count(*) AS nodes, pg_catalog.min(n.name) AS example
      FROM tide.nodes n
     GROUP BY 1, 2, 3, 4
),
-- each short shape with every node shape that could hold a replica
fits AS (
    SELECT w.resource_group, w.request, w.gpu_type, w.node_selector, k.jobs, k.replicas,
           s.capacity, s.gpu_type AS node_gpu_type, s.labels, s.nodes, s.example,
           CASE WHEN s.capacity IS NOT NULL
                THEN tide._copies(s.capacity, coalesce(tide.get(s.capacity, 'gpu'), 0), w.request) END AS per_node
      FROM short k
      JOIN shapes w ON w.sid = k.sid
      LEFT JOIN node_shapes s
        ON s.resource_group = w.resource_group
       AND (w.gpu_type = '' OR s.gpu_type = w.gpu_type)
       AND tide._labels_match(s.labels, w.node_selector)
       AND (NOT w.cpu_only OR coalesce(tide.get(s.capacity, 'gpu'), 0) = 0 OR s.allow_cpu_jobs)
       AND s.capacity OPERATOR(tide.@>) w.request
       AND tide._copies(s.capacity, coalesce(tide.get(s.capacity, 'gpu'), 0), w.request) > 0
)
SELECT f.resource_group, f.request, NULLIF(f.gpu_type, ''), f.node_selector,
       pg_catalog.sum(f.jobs)::bigint, pg_catalog.sum(f.replicas)::bigint,
       f.capacity, f.node_gpu_type, f.labels, f.nodes, f.example, f.per_node,
       pg_catalog.ceil(pg_catalog.sum(f.replicas) / f.per_node)::bigint,
       f.capacity IS NULL
  FROM fits f
 GROUP BY f.resource_group, f.request, f.gpu_type, f.node_selector,
          f.capacity, f.node_gpu_type, f.labels, f.nodes, f.example, f.per_node;
END
$$;
COMMENT ON FUNCTION tide._demand() IS
    'the rows of tide.demand, computed with the caller''s rights (JIT off: it compiles longer than the query runs)';
REVOKE ALL ON FUNCTION tide._demand() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide._demand() TO tide_admin, tide_reader;

CREATE VIEW tide.demand WITH (security_invoker = true) AS
SELECT d.* FROM tide._demand() d;
COMMENT ON VIEW tide.demand IS
    'per resource group and request shape (one replica''s request, gpu_type, node_selector): pending work the free resources of the ready nodes cannot start now, and for each registered node shape (capacity, gpu_type, labels) that could hold it how many fresh nodes of that shape would (an estimate); never_fits: no registered shape could hold one replica. Waiting, idle and limit-blocked jobs are left out (docs/analysts.md)';
COMMENT ON COLUMN tide.demand.request IS 'one replica''s request of the shape';
COMMENT ON COLUMN tide.demand.gpu_type IS 'the card type the jobs name; NULL: any';
COMMENT ON COLUMN tide.demand.node_selector IS 'the labels the jobs'' nodes must have';
COMMENT ON COLUMN tide.demand.jobs IS 'pending jobs of the shape the free resources cannot start now; the same on every node shape row of the shape (alternatives, not a sum)';
COMMENT ON COLUMN tide.demand.replicas IS 'their replicas of the shape to start: each job''s part of its minimum (min_available, roles in name order)';
COMMENT ON COLUMN tide.demand.node_capacity IS 'the node shape: capacity of registered nodes that could hold a replica; NULL when none could (never_fits)';
COMMENT ON COLUMN tide.demand.node_gpu_type IS 'the node shape: its card type';
COMMENT ON COLUMN tide.demand.node_labels IS 'the node shape: its labels';
COMMENT ON COLUMN tide.demand.nodes_registered IS 'registered nodes of the shape in the group, in any state';
COMMENT ON COLUMN tide.demand.example_node IS 'one of them (the first by name), a template to copy';
COMMENT ON COLUMN tide.demand.replicas_per_node IS 'replicas of the request an empty node of the shape holds';
COMMENT ON COLUMN tide.demand.nodes_needed IS 'fresh nodes of the shape that would hold the replicas: ceil(replicas / replicas_per_node), an estimate (identical replicas pack exactly; different shapes are counted apart)';
COMMENT ON COLUMN tide.demand.never_fits IS 'true: no registered node shape of the group could hold one replica (card type, labels, a resource or a size no node has); the node columns are NULL';

GRANT SELECT ON tide.demand TO tide_admin, tide_reader;
