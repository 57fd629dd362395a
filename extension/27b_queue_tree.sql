-- Queue trees (R-O5, R-A3, R-E7): a queue may sit under a parent queue of
-- the same resource group.  Jobs live only in leaves; a child's quota is
-- carved out of its parent's; a capability at any level caps the whole
-- subtree.  The column is added here, after the table, so that the concept
-- stays in one file; the checks on it follow below.

-- Not a foreign key: a key of tide.queues on itself makes pg_dump warn of
-- circular keys at every dump of the extension's data; the triggers below
-- do what the key would (the parent exists, a parent with children is not
-- deleted, a renamed parent's children follow), naming the queues.
ALTER TABLE tide.queues ADD COLUMN parent text;
COMMENT ON COLUMN tide.queues.parent IS
    'the queue this one sits under (same resource group); NULL: a top queue. Jobs live only in leaf queues; children''s quotas add up to at most their parent''s; a capability caps the whole subtree (R-O5, R-A3)';
CREATE INDEX queues_parent_idx ON tide.queues (parent);

-- A hold on an inner queue holds every leaf below it (R-P4): each queue
-- keeps the name of the held queue nearest above it (itself included), so
-- that a submission learns whether its queue is held in the one lookup it
-- makes already (src/submit.c), and a job's reason names the queue to
-- release.  Kept by the triggers below; a value written by hand is
-- replaced.
ALTER TABLE tide.queues ADD COLUMN held_by text;
COMMENT ON COLUMN tide.queues.held_by IS
    'the held queue whose hold keeps this queue''s jobs waiting: itself when held, else its nearest held ancestor; NULL: none (kept by triggers, R-P4)';

-- ---------------------------------------------------------------- limits
CREATE FUNCTION tide._queue_tree_lock_key() RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT 8388346165908733955::bigint $$;   -- 'tide' << 32 | 3
COMMENT ON FUNCTION tide._queue_tree_lock_key() IS
    'advisory lock key that serialises changes of the queue tree (parent, quota, resource_group): the check of each such statement runs under pg_advisory_xact_lock(tide._queue_tree_lock_key())';

-- The engine keeps a job's path from leaf to top in fixed arrays.
CREATE FUNCTION tide._queue_depth_max() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT 8 $$;
COMMENT ON FUNCTION tide._queue_depth_max() IS
    'the most levels a queue tree may have (a top queue is level 1): 8';

-- The names of a queue's children, for messages; NULL when it has none.
CREATE FUNCTION tide._child_queues(queue text) RETURNS text
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT pg_catalog.string_agg(k.name, ', ' ORDER BY k.name) FROM tide.queues k WHERE k.parent = _child_queues.queue $$;
COMMENT ON FUNCTION tide._child_queues(text) IS
    'the names of a queue''s child queues, comma separated, for messages; NULL when it has none';

-- ---------------------------------------------------------------- keys
-- A parent that does not exist, and a parent deleted while it has
-- children, are refused, naming the queues (23503, as a foreign key
-- would).  AFTER ROW triggers, so that one statement may insert a parent
-- with its children or delete a whole subtree in any row order: they fire
-- at the end of the statement.  They take the tree's advisory lock and
-- then read with a new snapshot (READ COMMITTED), so a child inserted and
-- its parent deleted at once in two sessions cannot both commit.
CREATE FUNCTION tide._queues_tree_keys() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    children text;
BEGIN
    IF tide._restoring() THEN
        RETURN NULL;
    END IF;
    PERFORM pg_catalog.pg_advisory_xact_lock(tide._queue_tree_lock_key());
    IF TG_OP = 'DELETE' THEN
        children := tide._child_queues(OLD.name);
        IF children IS NOT NULL THEN
            RAISE EXCEPTION 'queue "%" has child queues %', OLD.name, children
                USING ERRCODE = 'foreign_key_violation',
                      HINT = 'Move them under another queue (UPDATE tide.queues SET parent = ...) or delete them first; one statement may delete a whole subtree.';
        END IF;
    ELSIF NOT EXISTS (SELECT 1 FROM tide.queues p WHERE p.name = NEW.parent) THEN
        RAISE EXCEPTION 'parent "%" of queue "%" does not exist', NEW.parent, NEW.name
            USING ERRCODE = 'foreign_key_violation',
                  HINT = 'Name a queue of tide.queues as the parent, or NULL for a top queue.';
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION tide._queues_tree_keys() IS
    'trigger: a queue''s parent exists, and a queue with children is not deleted (23503), naming the queues';
CREATE TRIGGER "Queues_tree_keys" AFTER INSERT OR UPDATE OF parent ON tide.queues
    FOR EACH ROW WHEN (NEW.parent IS NOT NULL) EXECUTE FUNCTION tide._queues_tree_keys();
CREATE TRIGGER "Queues_tree_children" AFTER DELETE ON tide.queues
    FOR EACH ROW EXECUTE FUNCTION tide._queues_tree_keys();

-- A renamed queue's children follow it (what ON UPDATE CASCADE would do).
-- Named to fire before the lower-case triggers of the same event, so that
-- the children name their parent anew before held_by passes down to them.
CREATE FUNCTION tide._queues_tree_rename() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF tide._restoring() THEN
        RETURN NULL;
    END IF;
    UPDATE tide.queues SET parent = NEW.name WHERE parent = OLD.name;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION tide._queues_tree_rename() IS
    'trigger: a renamed queue''s child queues name it by its new name';
CREATE TRIGGER "Queues_tree_rename" AFTER UPDATE OF name ON tide.queues
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name) EXECUTE FUNCTION tide._queues_tree_rename();

-- ---------------------------------------------------------------- the tree
-- The rules of the tree, checked once per statement over the queues it
-- put in a new place, gave a new quota or moved to another resource
-- group, and over their parents and children: no cycle, at most
-- tide._queue_depth_max() levels, one resource group per tree, a quota
-- only under a parent with one, children's quotas within their parent's on
-- every resource the parent's quota names, and children only for a queue
-- without live jobs.  Once per statement, so that a subtree moves to
-- another group, or quotas are moved between siblings, in one UPDATE.
--
-- Two sessions changing the tree at once are serialised by an advisory
-- lock held to the end of the transaction; the checks that follow it read
-- with a new snapshot (READ COMMITTED: each statement of this volatile
-- function takes one), so the second sees what the first committed.  A
-- queue gets children only under a SHARE lock on tide.jobs (as a rename:
-- 27_queue_checks.sql): a submission in flight commits first and its job
-- is seen, a later one waits and then finds the queue has children
-- (tide._admit_job).  Under REPEATABLE READ or SERIALIZABLE the snapshot
-- is the transaction's: a change that touches a tree is refused there.
-- A statement that changes none of these columns costs one comparison
-- of its transition tables.
CREATE FUNCTION tide._queues_tree_check() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    changed text[];     -- queues given a place, a quota or a group
    moved text[];       -- queues put under a parent they did not have
    depth_max constant integer := tide._queue_depth_max();
    bad record;
BEGIN
    IF tide._restoring() THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        SELECT pg_catalog.array_agg(n.name) INTO changed FROM new_queues n WHERE n.parent IS NOT NULL;
        moved := changed;
    ELSE
        SELECT pg_catalog.array_agg(c.name) INTO changed
          FROM (SELECT n.name, n.parent, n.quota, n.resource_group FROM new_queues n
                EXCEPT
                SELECT o.name, o.parent, o.quota, o.resource_group FROM old_queues o) c;
        IF changed IS NULL THEN
            RETURN NULL;
        END IF;
        SELECT pg_catalog.array_agg(c.name) INTO moved
          FROM (SELECT n.name, n.parent FROM new_queues n WHERE n.parent IS NOT NULL
                EXCEPT
                SELECT o.name, o.parent FROM old_queues o) c;
    END IF;
    IF changed IS NULL THEN
        RETURN NULL;
    END IF;
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        SELECT q.name INTO bad FROM tide.queues q
         WHERE q.name = ANY (changed)
           AND (q.parent IS NOT NULL OR EXISTS (SELECT 1 FROM tide.queues k WHERE k.parent = q.name))
         ORDER BY q.name LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'the place, quota or resource group of queue "%" in a tree can be changed only in a READ COMMITTED transaction', bad.name
                USING ERRCODE = 'feature_not_supported',
                      HINT = 'The tree is checked with a snapshot taken once concurrent changes of it have ended, which this isolation level does not take.';
        END IF;
        RETURN NULL;
    END IF;
    IF moved IS NOT NULL THEN
        LOCK TABLE tide.jobs IN SHARE MODE;
    END IF;
    PERFORM pg_catalog.pg_advisory_xact_lock(tide._queue_tree_lock_key());

    -- no queue under itself: walk up from each queue placed
    WITH RECURSIVE up AS (
        SELECT q.name AS start, q.parent AS name, 1 AS steps
          FROM tide.queues q WHERE q.name = ANY (changed) AND q.parent IS NOT NULL
        UNION ALL
        SELECT u.start, p.parent, u.steps + 1
          FROM up u JOIN tide.queues p ON p.name = u.name
         WHERE p.parent IS NOT NULL AND u.name <> u.start AND u.steps < 100)
    SELECT q.name, q.parent INTO bad
      FROM up u JOIN tide.queues q ON q.name = u.start
     WHERE u.name = u.start
     ORDER BY q.name LIMIT 1;
    IF FOUND THEN
        IF bad.name = bad.parent THEN
            RAISE EXCEPTION 'queue "%" cannot be its own parent', bad.name
                USING ERRCODE = 'invalid_recursion',
                      HINT = 'Name another queue as the parent, or NULL for a top queue.';
        END IF;
        RAISE EXCEPTION 'queue "%" cannot be under "%": "%" is under "%"', bad.name, bad.parent, bad.parent, bad.name
            USING ERRCODE = 'invalid_recursion',
                  HINT = 'Queues form a tree: move the lower queue out first, or choose another parent.';
    END IF;

    -- depth: the levels above each queue placed, plus those of its subtree
    WITH RECURSIVE up AS (
        SELECT q.name AS start, q.parent AS name, 1 AS steps
          FROM tide.queues q WHERE q.name = ANY (changed) AND q.parent IS NOT NULL
        UNION ALL
        SELECT u.start, p.parent, u.steps + 1
          FROM up u JOIN tide.queues p ON p.name = u.name
         WHERE p.parent IS NOT NULL AND u.steps < 100),
    down AS (
        SELECT c.name AS top, c.name, 0 AS below
          FROM pg_catalog.unnest(changed) c(name)
        UNION ALL
        SELECT d.top, k.name, d.below + 1
          FROM down d JOIN tide.queues k ON k.parent = d.name
         WHERE d.below < 100)
    SELECT d.name, 1 + coalesce((SELECT max(u.steps) FROM up u WHERE u.start = d.top), 0) + d.below AS depth INTO bad
      FROM down d
     ORDER BY 2 DESC, 1 LIMIT 1;
    IF bad.depth > depth_max THEN
        RAISE EXCEPTION 'queue "%" would be % levels deep, at most % are supported', bad.name, bad.depth, depth_max
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'A top queue is level 1: attach the subtree higher up, or leave a level out.';
    END IF;

    -- one resource group per tree
    SELECT k.name, k.resource_group AS grp, p.name AS parent, p.resource_group AS parent_grp INTO bad
      FROM tide.queues k JOIN tide.queues p ON p.name = k.parent
     WHERE (k.name = ANY (changed) OR p.name = ANY (changed)) AND k.resource_group <> p.resource_group
     ORDER BY k.name LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'queue "%" is in resource group "%" but its parent "%" is in "%"', bad.name, bad.grp, bad.parent, bad.parent_grp
            USING ERRCODE = 'check_violation',
                  HINT = 'A tree lies in one resource group: move a whole subtree in one statement (UPDATE tide.queues SET resource_group = ... WHERE name IN (...)).';
    END IF;

    -- jobs live in leaves: a queue with live jobs gets no children
    IF moved IS NOT NULL THEN
        SELECT p.name, x.n INTO bad
          FROM tide.queues p
         CROSS JOIN LATERAL (SELECT pg_catalog.count(*) AS n FROM tide.jobs j
                              WHERE j.queue = p.name AND j.state IN ('pending', 'allocated', 'running', 'evicting')) x
         WHERE p.name IN (SELECT q.parent FROM tide.queues q WHERE q.name = ANY (moved)) AND x.n > 0
         ORDER BY p.name LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'queue "%" has jobs and cannot have child queues', bad.name
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = pg_catalog.format('Jobs of it pending, allocated, running or evicting: %s.', bad.n),
                      HINT = 'Jobs live in leaf queues: create the child as a queue of its own, move the jobs to it (UPDATE tide.jobs SET queue = ...), then give it this parent.';
        END IF;
    END IF;

    -- owner limits are a leaf's (R-A3): a queue with one gets no children
    IF moved IS NOT NULL THEN
        SELECT p.name, CASE WHEN p.owner_capability IS NOT NULL
                            THEN pg_catalog.format('an owner_capability (%s)', p.owner_capability)
                            ELSE 'owner_fair_share set' END AS what INTO bad
          FROM tide.queues p
         WHERE p.name IN (SELECT q.parent FROM tide.queues q WHERE q.name = ANY (moved))
           AND (p.owner_capability IS NOT NULL OR p.owner_fair_share)
         ORDER BY p.name LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'queue "%" has % and cannot have child queues', bad.name, bad.what
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      HINT = 'Owner limits and owner order are kept in leaf queues, where the jobs are: set them on the children, then clear them here.';
        END IF;
    END IF;

    -- quotas are carved: a child has one only if its parent has one ...
    SELECT k.name, p.name AS parent INTO bad
      FROM tide.queues k JOIN tide.queues p ON p.name = k.parent
     WHERE (k.name = ANY (changed) OR p.name = ANY (changed)) AND k.quota IS NOT NULL AND p.quota IS NULL
     ORDER BY k.name LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'queue "%" has a quota but its parent "%" has none', bad.name, bad.parent
            USING ERRCODE = 'check_violation',
                  HINT = pg_catalog.format('A child''s quota is carved out of its parent''s: give %s a quota first, or leave %s without one (its jobs then borrow).',
                                           bad.parent, bad.name);
    END IF;
    -- ... and the children's quotas add up to at most the parent's on every
    -- resource the parent's quota names
    SELECT p.name, p.quota, s.children,
           (SELECT pg_catalog.jsonb_object_agg(r.key, tide.get(s.total, r.key))
              FROM pg_catalog.jsonb_object_keys(p.quota::jsonb) r(key))::tide.resvec AS total INTO bad
      FROM tide.queues p
     CROSS JOIN LATERAL (SELECT tide.sum(k.quota) AS total,
                                pg_catalog.string_agg(pg_catalog.format('%s (%s)', k.name, k.quota), ', ' ORDER BY k.name) AS children
                           FROM tide.queues k WHERE k.parent = p.name AND k.quota IS NOT NULL) s
     WHERE p.quota IS NOT NULL
       AND (p.name = ANY (changed) OR p.name IN (SELECT q.parent FROM tide.queues q WHERE q.name = ANY (changed)))
       AND EXISTS (SELECT 1 FROM pg_catalog.jsonb_object_keys(p.quota::jsonb) r(key)
                    WHERE tide.get(s.total, r.key) > tide.get(p.quota, r.key))
     ORDER BY p.name LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'quotas of the children of queue "%" add up to %, more than its quota %', bad.name, bad.total, bad.quota
            USING ERRCODE = 'check_violation',
                  DETAIL = pg_catalog.format('The children''s quotas: %s.', bad.children),
                  HINT = 'A child''s quota is carved out of its parent''s: lower a child''s quota or raise the parent''s (both in one statement when they must change together).';
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION tide._queues_tree_check() IS
    'statement trigger: the queue tree after a change of parent, quota or resource_group: no cycle (42P19), at most 8 levels (54000), one resource group (23514), children only for a queue without live jobs and without an owner_capability (55000), a child''s quota only under a parent''s, children''s quotas within the parent''s (23514); serialised by an advisory lock, READ COMMITTED only (0A000)';
CREATE TRIGGER queues_tree_check_insert AFTER INSERT ON tide.queues
    REFERENCING NEW TABLE AS new_queues
    FOR EACH STATEMENT EXECUTE FUNCTION tide._queues_tree_check();
CREATE TRIGGER queues_tree_check_update AFTER UPDATE ON tide.queues
    REFERENCING OLD TABLE AS old_queues NEW TABLE AS new_queues
    FOR EACH STATEMENT EXECUTE FUNCTION tide._queues_tree_check();

-- Jobs moved by hand into a queue with children: refused as a submission
-- to it is (tide._admit_job).  The mover's lock on tide.jobs orders it
-- with a concurrent change that gives the queue children.
CREATE FUNCTION tide._jobs_queue_leaf() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    children text;
BEGIN
    children := tide._child_queues(NEW.queue);
    IF children IS NOT NULL THEN
        RAISE EXCEPTION 'queue "%" has child queues: move job % to one of them (%)', NEW.queue, NEW.id, children
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'Jobs live in leaf queues, the queues without children.';
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION tide._jobs_queue_leaf() IS
    'trigger: a job moved to another queue (an UPDATE of tide.jobs.queue) goes to a leaf queue (42809)';
CREATE TRIGGER jobs_queue_leaf BEFORE UPDATE OF queue ON tide.jobs
    FOR EACH ROW WHEN (OLD.queue IS DISTINCT FROM NEW.queue)
    EXECUTE FUNCTION tide._jobs_queue_leaf();

-- ---------------------------------------------------------------- holds
-- held_by of a queue written (inserted, held or released, moved, renamed):
-- itself when held, else its parent's.
CREATE FUNCTION tide._queues_held_by() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF tide._restoring() THEN
        RETURN NEW;
    END IF;
    NEW.held_by := CASE WHEN NEW.held THEN NEW.name
                        WHEN NEW.parent IS NULL THEN NULL
                        ELSE (SELECT p.held_by FROM tide.queues p WHERE p.name = NEW.parent) END;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION tide._queues_held_by() IS
    'trigger: sets a queue''s held_by: its own name when held, else its parent''s held_by (R-P4)';
CREATE TRIGGER queues_held_by BEFORE INSERT OR UPDATE OF held, parent, name, held_by ON tide.queues
    FOR EACH ROW EXECUTE FUNCTION tide._queues_held_by();

-- ... and its children follow, down the tree (each child's own triggers
-- take it one level further, and mark its jobs: tide._queues_hold_changed).
-- After the key's cascade (trigger names: lower case after upper), so a
-- renamed queue's children already name it.
CREATE FUNCTION tide._queues_held_by_down() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    UPDATE tide.queues c SET held_by = NEW.held_by
     WHERE c.parent = NEW.name AND NOT c.held AND c.held_by IS DISTINCT FROM NEW.held_by;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION tide._queues_held_by_down() IS
    'trigger: a queue''s changed held_by passes to its children that are not held themselves (R-P4)';
-- (no column list: held_by changes when a BEFORE trigger sets it, which an
-- UPDATE OF trigger does not see)
CREATE TRIGGER queues_held_by_down AFTER UPDATE ON tide.queues
    FOR EACH ROW WHEN (OLD.held_by IS DISTINCT FROM NEW.held_by) EXECUTE FUNCTION tide._queues_held_by_down();
CREATE TRIGGER queues_held_by_down_insert AFTER INSERT ON tide.queues
    FOR EACH ROW WHEN (NEW.held_by IS NOT NULL) EXECUTE FUNCTION tide._queues_held_by_down();

REVOKE ALL ON FUNCTION tide._queues_tree_keys(), tide._queues_tree_rename(), tide._queues_tree_check(), tide._jobs_queue_leaf(),
    tide._queues_held_by(), tide._queues_held_by_down() FROM PUBLIC;
