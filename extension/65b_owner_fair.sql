-- Owners within a queue (R-O7, docs/scheduling.md): a queue may order its
-- jobs of equal priority by their owner's usage in it, averaged with
-- tide.fair_share_half_life like a queue's (R-O6), so that one owner's
-- thousand jobs take turns with a colleague's ten (Slurm's fair tree for
-- the users of an account).  Off by default: jobs stay in R-O3, R-O1
-- order.  The cycle keeps the owners' averages here (src/cycle_owner_fair.c),
-- one row per (queue, owner) of a queue with owner_fair_share; with the
-- half-life 0 the share is the owner's usage now and the rows are neither
-- read nor written.

ALTER TABLE tide.queues ADD COLUMN owner_fair_share boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN tide.queues.owner_fair_share IS
    'order the queue''s jobs of equal priority by their owner''s share (its usage in the queue averaged over tide.fair_share_half_life, over the quota), owners weighing equally (R-O7); false: by priority, age and id alone';

CREATE TABLE tide.owner_fair_usage (
    queue      text NOT NULL,
    owner      text NOT NULL,
    decayed    jsonb NOT NULL DEFAULT '{}' CHECK (pg_catalog.jsonb_typeof(decayed) = 'object'),
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (queue, owner)
);
COMMENT ON TABLE tide.owner_fair_usage IS
    'per owner of a queue with owner_fair_share: its non-idle usage in the queue averaged over tide.fair_share_half_life (R-O7), as the last cycle that loaded with a half-life left it; a row negligible in every resource and of an owner holding nothing is deleted';
COMMENT ON COLUMN tide.owner_fair_usage.decayed IS
    'the average per resource its share reads (the queue''s quota, or the group''s capacity without one), in their units ({"gpu": 2.5}); float';
COMMENT ON COLUMN tide.owner_fair_usage.updated_at IS
    'the time the average is as of: the next cycle decays it over the time since';
SELECT pg_catalog.pg_extension_config_dump('tide.owner_fair_usage', '');
GRANT SELECT, INSERT, UPDATE, DELETE ON tide.owner_fair_usage TO tide_admin;
GRANT SELECT ON tide.owner_fair_usage TO tide_reader, tide_submitter;
-- a submitter reads its own rows only: the others' usage is theirs
ALTER TABLE tide.owner_fair_usage ENABLE ROW LEVEL SECURITY;
CREATE POLICY admin_all ON tide.owner_fair_usage TO tide_admin USING (true) WITH CHECK (true);
CREATE POLICY reader_all ON tide.owner_fair_usage FOR SELECT TO tide_reader USING (true);
CREATE POLICY submitter_own ON tide.owner_fair_usage FOR SELECT TO tide_submitter
    USING (owner = CURRENT_USER);

-- A queue's owner rows follow it: renamed, deleted and truncated with it
-- (the trigger function of 65_fair_share.sql, on this table).
CREATE TRIGGER queues_owner_fair_rename AFTER UPDATE OF name ON tide.queues
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name)
    EXECUTE FUNCTION tide._queue_fair_follow('tide.owner_fair_usage');
CREATE TRIGGER queues_owner_fair_delete AFTER DELETE ON tide.queues
    FOR EACH ROW EXECUTE FUNCTION tide._queue_fair_follow('tide.owner_fair_usage');
CREATE TRIGGER queues_owner_fair_truncate AFTER TRUNCATE ON tide.queues
    FOR EACH STATEMENT EXECUTE FUNCTION tide._queue_fair_follow('tide.owner_fair_usage');

-- What an owner's share in a queue is taken over: the queue's quota, or
-- without one the capacity of the ready nodes of its resource group (as
-- the engine, src/engine/owner_order.c).
CREATE FUNCTION tide._owner_share_denom(queue text) RETURNS tide.resvec
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT CASE WHEN q.quota IS NOT NULL AND q.quota OPERATOR(tide.<>) ''::tide.resvec THEN q.quota
            ELSE (SELECT tide.sum(n.capacity) FROM tide.nodes n
                   WHERE n.resource_group = q.resource_group AND n.state = 'ready') END
  FROM tide.queues q WHERE q.name = queue
$$;
COMMENT ON FUNCTION tide._owner_share_denom(text) IS
    'what the owners'' shares in a queue divide by (R-O7): its quota, or the ready capacity of its resource group without one';


-- now: each owner's average decayed up to now with its usage now (as the
-- engine does at the load), its share (largest average over the quota on
-- what the quota names; without a quota, over the capacity of the ready
-- nodes of the queue's resource group) and its rank among the owners of
-- the queue (share, then name: equal shares go by the jobs' age in the
-- walk).  The owners are those with a kept average, or with jobs in the
-- queue.  Row-level security applies: a submitter sees its own rows, its
-- rank among them.
CREATE VIEW tide.owner_fair_share WITH (security_invoker = true) AS
WITH h AS (
    SELECT extract(epoch FROM tide._fair_share_half_life())::float8 AS secs
), owners AS (
    SELECT f.queue, f.owner FROM tide.owner_fair_usage f
    UNION
    SELECT j.queue, j.owner FROM tide.jobs j
     WHERE j.state IN ('pending', 'allocated', 'running', 'evicting')
), live AS (
    SELECT j.queue, j.owner, tide.sum(a.resources) AS usage
      FROM tide.allocations a JOIN tide.jobs j ON j.id = a.job_id
     WHERE a.state <> 'released' AND NOT j.idle
     GROUP BY j.queue, j.owner
), w AS (
    -- the weight the kept average keeps (R-O6): 0 with no half-life (the
    -- usage now), 1 for an owner never averaged (it starts from 0 now)
    SELECT o.queue, o.owner, coalesce(l.usage, ''::tide.resvec) AS usage, f.decayed AS kept,
           tide._owner_share_denom(q.name) AS denom,
           (CASE WHEN h.secs <= 0 THEN 0
                 WHEN f.updated_at IS NULL THEN 1
                 WHEN extract(epoch FROM now() - f.updated_at)::float8 / h.secs > 1000 THEN 0
                 ELSE pg_catalog.power(2::float8, -greatest(extract(epoch FROM now() - f.updated_at)::float8, 0) / h.secs)
            END)::numeric AS f
      FROM owners o
      JOIN tide.queues q ON q.name = o.queue AND q.owner_fair_share
      CROSS JOIN h
      LEFT JOIN live l ON l.queue = o.queue AND l.owner = o.owner
      LEFT JOIN tide.owner_fair_usage f ON f.queue = o.queue AND f.owner = o.owner
), d AS (
    SELECT w.queue, w.owner, w.usage, x.decayed, x.share
      FROM w
      CROSS JOIN LATERAL (
          SELECT pg_catalog.jsonb_object_agg(c.key, pg_catalog.trim_scale(round(c.d, 6))) AS decayed,
                 coalesce(max(c.d / c.q) FILTER (WHERE c.q > 0), 0) AS share
            FROM (SELECT k.key, k.value::numeric AS q,
                         w.f * coalesce((w.kept ->> k.key)::numeric, 0)
                         + (1 - w.f) * coalesce((w.usage::jsonb ->> k.key)::numeric, 0) AS d
                    FROM pg_catalog.jsonb_each_text(coalesce(w.denom::jsonb, '{}')) k) c) x
)
SELECT d.queue, d.owner, d.usage,
       coalesce(d.decayed, '{}') AS decayed,
       pg_catalog.trim_scale(round(d.share, 12)) AS share,
       pg_catalog.row_number() OVER (PARTITION BY d.queue ORDER BY d.share, d.owner COLLATE "C") AS rank
  FROM d;
COMMENT ON VIEW tide.owner_fair_share IS
    'per owner of a queue with owner_fair_share: its non-idle usage in the queue now, its usage averaged over tide.fair_share_half_life up to now (decayed), the share that orders its jobs among the others'' of equal priority (largest decayed / quota, or / the group''s ready capacity without a quota) and its rank in the queue (share, then owner), R-O7; a submitter sees its own rows';
GRANT SELECT ON tide.owner_fair_share TO tide_admin, tide_reader, tide_submitter;

-- The owner share each pending job of an owner_fair_share queue will be
-- taken at (R-O7), for an order of the queue's jobs without the engine:
-- its owner's average now plus the requests of the owner's jobs before it
-- in the queue (retry lane, priority, age, id), over the denominator.
-- The walk takes the head of the owner with the least (retry lane,
-- priority, share, created_at, id) and grows its share by what the job is
-- given, so sorting the jobs by that key with this share is the walk's
-- order exactly when every job it considers is placed or set aside to
-- borrow; one that fits nowhere adds nothing in the walk.
CREATE FUNCTION tide._owner_head_shares(rg text)
    RETURNS TABLE (job_id bigint, owner_share numeric)
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
WITH fq AS (
    -- once per queue, not per job
    SELECT q.name, tide._owner_share_denom(q.name) AS denom
      FROM tide.queues q
     WHERE q.owner_fair_share AND (rg IS NULL OR q.resource_group = rg)
), fk AS (
    -- the resources a queue's owner shares divide by
    SELECT fq.name, k.key, k.value::numeric AS denom
      FROM fq CROSS JOIN LATERAL pg_catalog.jsonb_each_text(coalesce(fq.denom::jsonb, '{}')) k
     WHERE k.value::numeric > 0
), x AS (
    SELECT j.id, j.queue, j.owner, (j.retry_of IS NULL) AS not_retry, j.priority, j.created_at
      FROM tide.jobs j JOIN fq ON fq.name = j.queue
     WHERE j.state = 'pending' AND NOT j.unschedulable AND NOT j.waiting AND NOT j.idle
), asks AS (
    -- per job and such resource, what all its replicas ask of it
    SELECT x.id, fk.key, fk.denom,
           coalesce(sum(tide.get(t.request, fk.key) * t.replicas), 0) AS asked
      FROM x JOIN fk ON fk.name = x.queue
      LEFT JOIN tide.job_tasks t ON t.job_id = x.id
     GROUP BY x.id, fk.key, fk.denom
), b AS (
    -- what the owner's jobs before it in the queue ask (numbers, not
    -- vectors: a running sum per resource)
    SELECT x.id, a.key, a.denom,
           coalesce(sum(a.asked) OVER (PARTITION BY x.queue, x.owner, a.key
                                       ORDER BY x.not_retry, x.priority DESC, x.created_at, x.id
                                       ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
      FROM x JOIN asks a ON a.id = x.id
)
SELECT x.id,
       pg_catalog.trim_scale(round(coalesce(max((coalesce((s.decayed ->> b.key)::numeric, 0) + b.before) / b.denom), 0), 12))
  FROM x
  LEFT JOIN b ON b.id = x.id
  LEFT JOIN tide.owner_fair_share s ON s.queue = x.queue AND s.owner = x.owner
 GROUP BY x.id
$$;
COMMENT ON FUNCTION tide._owner_head_shares(text) IS
    'per pending non-idle job of an owner_fair_share queue of a resource group (NULL: all), the owner share it will be taken at (R-O7): the owner''s average now plus its jobs before it, over the quota; the walk''s order within the queue is (retry lane, priority, this share, created_at, id)';

-- tide.pending's positions in the queues with owner_fair_share (R-O7):
-- every pending job of such a queue in the order the cycle walks it
-- (non-idle before idle, the retry lane, priority, the owner share at the
-- job's turn, age, id; a job the cycle does not load after those of its
-- priority), counted over every owner's jobs.  tide.pending is not
-- security_invoker, but a function it calls runs as its caller, under
-- row-level security; this one runs as its owner.  It answers for the
-- role the session acts as (its SET ROLE, else its login), not for an
-- argument, so a caller cannot ask for another: that role's own jobs, or
-- every job for an administrator or reader.  (Called as the owner inside
-- another SECURITY DEFINER function, it still answers for the session's
-- role.)  No jit: the estimates of an empty order are large.
CREATE FUNCTION tide._owner_fair_positions() RETURNS TABLE (job_id bigint, queue_position bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    ROWS 100
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    AS $$
WITH me AS (
    SELECT v.viewer,
           pg_catalog.pg_has_role(v.viewer, 'tide_admin', 'USAGE')
           OR pg_catalog.pg_has_role(v.viewer, 'tide_reader', 'USAGE') AS sees_all
      FROM (SELECT CASE WHEN pg_catalog.current_setting('role') = 'none' THEN SESSION_USER
                        ELSE pg_catalog.current_setting('role')::name END AS viewer) v
), p AS (
    SELECT j.id, j.owner,
           pg_catalog.row_number() OVER (
               PARTITION BY j.queue
               ORDER BY j.idle, (j.retry_of IS NULL), j.priority DESC, h.owner_share NULLS LAST,
                        j.created_at, j.id) AS position
      FROM tide.jobs j
      JOIN tide.queues q ON q.name = j.queue AND q.owner_fair_share
      LEFT JOIN tide._owner_head_shares(NULL) h ON h.job_id = j.id
     WHERE j.state = 'pending'
)
SELECT p.id, p.position FROM p, me WHERE me.sees_all OR p.owner = me.viewer
$$;
COMMENT ON FUNCTION tide._owner_fair_positions() IS
    'for tide.pending: the positions of the pending jobs of queues with owner_fair_share in the cycle''s order (R-O7: retry lane, priority, owner share at the job''s turn, age, id), counted over every owner''s jobs; the rows of the role the session acts as, every row for an administrator or reader';
REVOKE ALL ON FUNCTION tide._owner_fair_positions() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide._owner_fair_positions() TO tide_admin, tide_reader, tide_submitter;
