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

-- What the next cycle orders the owners of each owner_fair_share queue by,
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
), capacity AS (
    SELECT n.resource_group, tide.sum(n.capacity) AS capacity
      FROM tide.nodes n WHERE n.state = 'ready'
     GROUP BY n.resource_group
), w AS (
    -- the weight the kept average keeps (R-O6): 0 with no half-life (the
    -- usage now), 1 for an owner never averaged (it starts from 0 now)
    SELECT o.queue, o.owner, coalesce(l.usage, ''::tide.resvec) AS usage, f.decayed AS kept,
           CASE WHEN q.quota IS NOT NULL AND q.quota <> ''::tide.resvec THEN q.quota ELSE c.capacity END AS denom,
           (CASE WHEN h.secs <= 0 THEN 0
                 WHEN f.updated_at IS NULL THEN 1
                 WHEN extract(epoch FROM now() - f.updated_at)::float8 / h.secs > 1000 THEN 0
                 ELSE pg_catalog.power(2::float8, -greatest(extract(epoch FROM now() - f.updated_at)::float8, 0) / h.secs)
            END)::numeric AS f
      FROM owners o
      JOIN tide.queues q ON q.name = o.queue AND q.owner_fair_share
      CROSS JOIN h
      LEFT JOIN live l ON l.queue = o.queue AND l.owner = o.owner
      LEFT JOIN capacity c ON c.resource_group = q.resource_group
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
