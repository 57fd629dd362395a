-- Fair share over time (R-O6, docs/scheduling.md): queues of equal
-- priority are ordered by their non-idle usage averaged with the half-life
-- tide.fair_share_half_life, over their quota.  The cycle keeps the
-- averages here (src/cycle_fair.c): read at its load, decayed in the
-- engine up to the cycle's time (D := f D + (1 - f) U, f = 2^(-dt/h)),
-- written back, one row per queue with a quota; never recomputed from
-- history.  With the half-life 0 the share is the usage now and the rows
-- are neither read nor written.

CREATE TABLE tide.queue_fair_usage (
    queue      text PRIMARY KEY,
    decayed    jsonb NOT NULL DEFAULT '{}' CHECK (pg_catalog.jsonb_typeof(decayed) = 'object'),
    updated_at timestamptz NOT NULL
);
COMMENT ON TABLE tide.queue_fair_usage IS
    'per queue with a quota: its non-idle usage averaged over tide.fair_share_half_life (R-O6), as the last cycle that loaded with a half-life left it';
COMMENT ON COLUMN tide.queue_fair_usage.decayed IS
    'the average per resource its quota names, in the units of the quota ({"gpu": 7.9931}); float, so that slow decay is not rounded away';
COMMENT ON COLUMN tide.queue_fair_usage.updated_at IS
    'the time the average is as of: the next cycle decays it over the time since, with the half-life then set';
SELECT pg_catalog.pg_extension_config_dump('tide.queue_fair_usage', '');
GRANT SELECT, INSERT, UPDATE, DELETE ON tide.queue_fair_usage TO tide_admin;
GRANT SELECT ON tide.queue_fair_usage TO tide_reader;

-- A queue's row follows it: renamed with it, deleted with it, gone when
-- tide.queues is truncated.  Triggers rather than a foreign key, so that
-- TRUNCATE tide.queues keeps behaving as it does without this table.  The
-- table is the trigger's argument (tide.owner_fair_usage's rows follow
-- their queue the same way, 65b_owner_fair.sql).
CREATE FUNCTION tide._queue_fair_follow() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    t regclass := TG_ARGV[0]::regclass;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        EXECUTE format('DELETE FROM %s', t);
    ELSIF TG_OP = 'DELETE' THEN
        EXECUTE format('DELETE FROM %s f WHERE f.queue = $1', t) USING OLD.name;
    ELSE
        EXECUTE format('DELETE FROM %s f WHERE f.queue = $1', t) USING NEW.name;
        EXECUTE format('UPDATE %s f SET queue = $1 WHERE f.queue = $2', t) USING NEW.name, OLD.name;
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION tide._queue_fair_follow() IS
    'trigger on tide.queues: a queue''s rows of the table named by the argument (tide.queue_fair_usage, tide.owner_fair_usage) are renamed, deleted and truncated with it (R-O6, R-O7)';
REVOKE ALL ON FUNCTION tide._queue_fair_follow() FROM PUBLIC;
CREATE TRIGGER queues_fair_rename AFTER UPDATE OF name ON tide.queues
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name) EXECUTE FUNCTION tide._queue_fair_follow('tide.queue_fair_usage');
CREATE TRIGGER queues_fair_delete AFTER DELETE ON tide.queues
    FOR EACH ROW EXECUTE FUNCTION tide._queue_fair_follow('tide.queue_fair_usage');
CREATE TRIGGER queues_fair_truncate AFTER TRUNCATE ON tide.queues
    FOR EACH STATEMENT EXECUTE FUNCTION tide._queue_fair_follow('tide.queue_fair_usage');

-- The setting as an interval: the library shows it in its unit ('7d',
-- '1h', '0'); a session without the library has what was set, as text.
CREATE FUNCTION tide._fair_share_half_life() RETURNS interval
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT coalesce(nullif(current_setting('tide.fair_share_half_life', true), '')::interval, interval '0')
$$;
COMMENT ON FUNCTION tide._fair_share_half_life() IS
    'tide.fair_share_half_life as an interval (0 when unset): the half-life of the usage that orders queues of equal priority (R-O6)';

-- What the next cycle orders by, now: each queue's average decayed up to
-- now with its current usage (as the engine does at the load), its share
-- and its ranks (the walk's order of queues when each has a job waiting:
-- priority, share, name, at every level of a tree, R-O5).  The averages
-- are kept per leaf, on every resource a quota on its path names; an
-- inner queue's usage and average are its subtree's sums (the average is
-- linear).  A flat set of queues is a tree of depth 1: each queue is a
-- leaf and its own subtree.
CREATE VIEW tide.fair_share WITH (security_invoker = true) AS
WITH RECURSIVE h AS (
    SELECT tide._fair_share_half_life() AS half_life,
           extract(epoch FROM tide._fair_share_half_life())::float8 AS secs
), w AS (
    -- the weight the kept average keeps (R-O6): 0 with no half-life (the
    -- usage now), 1 for a queue never averaged (it starts from 0 now).
    -- Every queue has its own average, of its own usage: an inner queue's
    -- is its subtree's (tide.queue_usage), as the cycle keeps it (R-O5).
    SELECT u.queue, u.resource_group, u.priority, u.quota, u.usage, u.parent,
           f.decayed AS kept, f.updated_at, h.half_life,
           (CASE WHEN h.secs <= 0 THEN 0
                 WHEN f.updated_at IS NULL THEN 1
                 WHEN extract(epoch FROM now() - f.updated_at)::float8 / h.secs > 1000 THEN 0
                 ELSE pg_catalog.power(2::float8, -greatest(extract(epoch FROM now() - f.updated_at)::float8, 0) / h.secs)
            END)::numeric AS f
      FROM tide.queue_usage u CROSS JOIN h
      LEFT JOIN tide.queue_fair_usage f ON f.queue = u.queue
), d AS (
    SELECT w.*, x.decayed, x.share
      FROM w
      CROSS JOIN LATERAL (
          SELECT pg_catalog.jsonb_object_agg(c.key, pg_catalog.trim_scale(round(c.d, 6))) AS decayed,
                 max(c.d / c.q) FILTER (WHERE c.q > 0) AS share
            FROM (SELECT k.key, k.value::numeric AS q,
                         w.f * coalesce((w.kept ->> k.key)::numeric, 0)
                         + (1 - w.f) * coalesce((w.usage::jsonb ->> k.key)::numeric, 0) AS d
                    FROM pg_catalog.jsonb_each_text(w.quota::jsonb) k) c) x
), r AS (
    -- R-O4 among siblings (R-O5): priority, share, name
    SELECT d.*, pg_catalog.row_number() OVER (PARTITION BY d.resource_group, d.parent
                                              ORDER BY d.priority DESC, d.share NULLS LAST, d.queue COLLATE "C") AS rank
      FROM d
), walk AS (
    -- the ranks among siblings from the top down: the walk's order
    SELECT r.queue, 1 AS depth, ARRAY[r.rank] AS path FROM r WHERE r.parent IS NULL
    UNION ALL
    SELECT c.queue, p.depth + 1, p.path || c.rank
      FROM walk p JOIN r c ON c.parent = p.queue
     WHERE p.depth < 8
)
SELECT r.queue, r.resource_group, r.priority, r.quota, r.usage,
       coalesce(r.decayed, '{}') AS decayed,
       pg_catalog.trim_scale(round(r.share, 12)) AS share,
       r.rank AS rank_among_siblings,
       r.updated_at, r.half_life,
       r.parent, k.depth,
       -- the group's order: by the ranks among siblings, top down, a parent
       -- before its children (for a flat set of queues, rank_among_siblings)
       pg_catalog.row_number() OVER (PARTITION BY r.resource_group ORDER BY k.path) AS rank_in_group
  FROM r JOIN walk k ON k.queue = r.queue;
COMMENT ON VIEW tide.fair_share IS
    'per queue: its usage now, its usage averaged over tide.fair_share_half_life up to now (decayed, units of the quota), the share that orders it among its siblings of equal priority (largest decayed/quota over what the quota names; NULL without quota), its rank among its siblings (priority, share, name: R-O4 at every level, R-O5), its parent and depth, and its place in its resource group''s order (rank_in_group: a parent before its children); an inner queue''s usage and average are its subtree''s (R-O6)';
GRANT SELECT ON tide.fair_share TO tide_admin, tide_reader;
