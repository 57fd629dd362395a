-- Why a job waits and when it should start (docs/analysts.md): computed
-- now from the current tables, not from the last cycle.  Like Slurm's sprio
-- (the parts of the order key) and squeue --start (an estimate from the
-- running jobs' time limits).  The walk order is that of docs/scheduling.md
-- (R-O1..R-O4) with each queue's dominant share as it is now (of its
-- usage averaged over tide.fair_share_half_life, R-O6: tide.fair_share); the cycle
-- recomputes shares after every placement, so positions deeper in the
-- order are estimates.
--
-- Administrators and readers get every job named.  A submitter may ask
-- about its own jobs only (another owner's answers as a missing one): its
-- answer is computed with every job counted, as the extension's owner, and
-- the jobs of other owners in it are counted, never named (Kueue's
-- visibility API does the same for queue users).

-- What a job needs at least: the request of its first min_available
-- replicas (roles in name order), all replicas without a gang minimum.
CREATE FUNCTION tide._job_minimum(job bigint) RETURNS tide.resvec
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
WITH t AS (
    SELECT x.role, x.replicas, x.request,
           coalesce(sum(x.replicas) OVER (ORDER BY x.role ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
      FROM tide.job_tasks x WHERE x.job_id = job
)
SELECT coalesce(tide.sum(t.request OPERATOR(tide.*) greatest(least(t.replicas, coalesce(j.min_available, 1000000) - t.before), 0)),
                ''::tide.resvec)
  FROM t, tide.jobs j WHERE j.id = job
$$;
COMMENT ON FUNCTION tide._job_minimum(bigint) IS
    'what a job needs at least: the request of its first min_available replicas, roles in name order (all replicas without a gang minimum)';

-- A queue's dominant share: the largest usage / quota over the resources
-- its quota names (R-O4); NULL without a quota.
CREATE FUNCTION tide._dominant_share(usage tide.resvec, quota tide.resvec) RETURNS numeric
    LANGUAGE sql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT max(coalesce((usage::jsonb ->> q.key)::numeric, 0) / q.value::numeric)
  FROM jsonb_each_text(quota::jsonb) q WHERE q.value::numeric > 0
$$;
COMMENT ON FUNCTION tide._dominant_share(tide.resvec, tide.resvec) IS
    'the largest usage/quota over the resources a quota names (DRF, R-O4); NULL without a quota';

-- One level of a job's order key (R-O5): its queue's priority (negated,
-- so that ascending order puts the higher first), whether it has no quota
-- (those go after the ones with one), its share and its name.  Arrays of
-- these, top level first, compare as the walk descends the tree.
CREATE TYPE tide._order_step AS (neg_priority integer, no_quota boolean, share numeric, queue text COLLATE "C");
COMMENT ON TYPE tide._order_step IS
    'one level of the walk order (R-O4 at every level of a queue tree, R-O5): -priority, no quota, share, queue name';

-- Every pending job of a resource group in walk order now, with the parts
-- of its order key: per level of its queue's path (R-O5), top first.
CREATE FUNCTION tide._group_order(rg text)
    RETURNS TABLE (job_id bigint, queue text, idle boolean, queue_priority integer, queue_share numeric,
                   retry boolean, priority integer, created_at timestamptz, walk_position bigint, minimum tide.resvec,
                   levels jsonb)
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
WITH path AS (
    SELECT t.leaf,
           pg_catalog.array_agg(ROW(-x.priority, fs.share IS NULL, coalesce(fs.share, 0), x.name)::tide._order_step
                                ORDER BY t.up DESC) AS key,
           pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('queue', x.name, 'priority', x.priority,
                                                              'share', round(fs.share, 4), 'decayed', fs.decayed)
                                ORDER BY t.up DESC) AS levels
      FROM tide._queue_ancestors() t
      JOIN tide.queues x ON x.name = t.queue
      LEFT JOIN tide.fair_share fs ON fs.queue = x.name
     WHERE x.resource_group = rg
     GROUP BY t.leaf
)
SELECT j.id, j.queue, j.idle, q.priority, round(fs.share, 4), j.retry_of IS NOT NULL,
       j.priority, j.created_at,
       row_number() OVER (ORDER BY j.idle, p.key, (j.retry_of IS NULL), j.priority DESC, h.owner_share NULLS LAST,
                                   j.created_at, j.id),
       tide._job_minimum(j.id),
       p.levels
  FROM tide.jobs j
  JOIN tide.queues q ON q.name = j.queue
  JOIN path p ON p.leaf = q.name
  LEFT JOIN tide.fair_share fs ON fs.queue = q.name
  -- R-O7: in a queue with owner_fair_share, the owner share at the job's turn
  LEFT JOIN tide._owner_head_shares(rg) h ON h.job_id = j.id
 WHERE j.state = 'pending' AND NOT j.unschedulable AND NOT j.waiting AND q.resource_group = rg
$$;
COMMENT ON FUNCTION tide._group_order(text) IS
    'pending schedulable jobs not waiting (R-P1..R-P5) of a resource group in the walk order now (idle last; then at every level of the queue''s path, top first: queue priority, dominant share of the decayed usage as tide.fair_share shows it (R-O6), queue name (R-O5); then retry lane, priority, the owner share at the job''s turn in a queue with owner_fair_share (R-O7), age, id) with their minimum and the levels of their order key';

-- The live jobs of a group with what they hold and when they must end by
-- their time limit (NULL: no limit; now for one past it, R-T1).
CREATE FUNCTION tide._group_releases(rg text)
    RETURNS TABLE (job_id bigint, queue text, held tide.resvec, gpus numeric, ends_by timestamptz)
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT j.id, j.queue, tide.sum(a.resources), sum(tide._gpus_held(a.gpus, a.gpu_milli)),
       -- past its limit and not stopped yet: it ends now (R-T1), not in the past
       CASE WHEN j.time_limit IS NOT NULL
            THEN greatest(coalesce(j.started_at, min(a.created_at)) + j.time_limit, pg_catalog.now()) END
  FROM tide.jobs j
  JOIN tide.allocations a ON a.job_id = j.id AND a.state <> 'released'
  JOIN tide.nodes n ON n.name = a.node
 WHERE n.resource_group = rg
 GROUP BY j.id
$$;
COMMENT ON FUNCTION tide._group_releases(text) IS
    'live jobs of a resource group: what they hold, their GPUs, and when their time limit ends them (NULL without one)';

CREATE FUNCTION tide._estimate(job bigint, OUT start_at timestamptz, OUT waits_for bigint[], OUT unknown_because bigint[])
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    j tide.jobs;
    rg text;
BEGIN
    SELECT * INTO j FROM tide.jobs x WHERE x.id = job;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF j.state <> 'pending' THEN
        start_at := j.started_at;
        IF j.state IN ('allocated', 'running') THEN
            start_at := coalesce(j.started_at, pg_catalog.now());
        END IF;
        RETURN;
    END IF;
    IF j.unschedulable OR j.waiting THEN
        RETURN;
    END IF;
    -- the engine's own forecast (tide.forecast), stopped once this job is placed
    SELECT f.start_at, f.unknown_because INTO start_at, unknown_because
      FROM tide._forecast(job) f WHERE f.job_id = job;
    -- the running jobs whose ends come before its start
    SELECT q.resource_group INTO rg FROM tide.queues q WHERE q.name = j.queue;
    waits_for := ARRAY(SELECT r.job_id FROM tide._group_releases(rg) r
                        WHERE r.ends_by <= coalesce(start_at, '-infinity') AND start_at > pg_catalog.now()
                        ORDER BY r.ends_by, r.job_id);
END
$$;
COMMENT ON FUNCTION tide._estimate(bigint) IS
    'the start estimate of a job with the running jobs it waits for and those without a time limit that make it unknown';

-- The error for a job that does not exist, and for one the caller may not
-- see: the two answer alike, so a submitter learns nothing of other owners'
-- jobs.
CREATE FUNCTION tide._no_such_job(job_id bigint) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    RAISE EXCEPTION 'job % does not exist', job_id
        USING ERRCODE = 'no_data_found',
              HINT = 'A submitter sees only its own jobs; old jobs leave the archive after tide.history_retention.';
END
$$;
COMMENT ON FUNCTION tide._no_such_job(bigint) IS
    'raises the error of a job that does not exist (P0002 job N does not exist), which a job the caller may not see gets too';

-- A job explain and estimate_start do not find: NULL refused, an archived
-- job's row (the caller answers from it), else the same error from both.
CREATE FUNCTION tide._job_not_found(job_id bigint) RETURNS tide.jobs_archive
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    a tide.jobs_archive;
BEGIN
    IF job_id IS NULL THEN
        RAISE EXCEPTION 'job_id must not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Give the id of a job, as tide.submit returned it.';
    END IF;
    SELECT * INTO a FROM tide.jobs_archive x WHERE x.id = _job_not_found.job_id LIMIT 1;
    IF NOT FOUND THEN
        PERFORM tide._no_such_job(job_id);
    END IF;
    RETURN a;
END
$$;
COMMENT ON FUNCTION tide._job_not_found(bigint) IS
    'for tide.explain and tide.estimate_start, a job id not in tide.jobs: its archived row, else the error both give (NULL refused, a missing job)';

CREATE FUNCTION tide.estimate_start(job_id bigint) RETURNS timestamptz
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF job_id IS NULL OR NOT EXISTS (SELECT 1 FROM tide.jobs j WHERE j.id = estimate_start.job_id) THEN
        -- as explain answers: an archived job's start, else its error
        RETURN (tide._job_not_found(job_id)).started_at;
    END IF;
    RETURN (tide._estimate(job_id)).start_at;
END
$$;
COMMENT ON FUNCTION tide.estimate_start(bigint) IS
    'when a pending job should start: its start_at in tide.forecast() (the engine''s own order, running jobs ending at their time limits); NULL when that depends on a job without a time limit or the job can never fit (tide.explain says which); the start of a placed job; an archived job''s start; a NULL or missing id refused as tide.explain refuses it';

-- An archived job's answer (explain finds it no more in tide.jobs), with
-- the caller's rights: its own row, else the missing job's error.
CREATE FUNCTION tide._explain_archived(job_id bigint) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    arch tide.jobs_archive;
BEGIN
    arch := tide._job_not_found(job_id);
    RETURN pg_catalog.jsonb_build_object('job_id', arch.id, 'state', arch.state, 'archived', true,
                                         'queue', arch.queue, 'finished_at', arch.finished_at);
END
$$;
COMMENT ON FUNCTION tide._explain_archived(bigint) IS
    'tide.explain''s answer for a job no more in tide.jobs: its archived row as the caller sees it, else the error of a missing job';

-- The answer with every job named, read with the caller's rights: for
-- administrators and readers, and for tide._explain_own as the owner.
CREATE FUNCTION tide._explain(job_id bigint) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    AS $$
DECLARE
    j tide.jobs;
    q tide.queues;
    u record;
    me record;
    need tide.resvec;
    held_all tide.resvec;
    reasons jsonb := '[]';
    ahead jsonb;
    est record;
    k record;
    t record;
    ord record;
    fs record;
    fits numeric;
    rooms integer;
    fit_total bigint;
    pending_reason text;
    frees jsonb;
BEGIN
    SELECT * INTO j FROM tide.jobs x WHERE x.id = _explain.job_id;
    IF NOT FOUND THEN
        RETURN tide._explain_archived(_explain.job_id);
    END IF;
    SELECT * INTO q FROM tide.queues x WHERE x.name = j.queue;
    SELECT * INTO u FROM tide.queue_usage x WHERE x.queue = j.queue;
    need := tide._job_minimum(j.id);
    SELECT p.position, p.pending_reason INTO me FROM tide.pending p WHERE p.job_id = j.id;
    pending_reason := me.pending_reason;

    IF j.state <> 'pending' THEN
        RETURN pg_catalog.jsonb_build_object(
            'job_id', j.id, 'state', j.state, 'queue', j.queue, 'state_reason', j.state_reason,
            'started_at', j.started_at, 'finished_at', j.finished_at,
            'evictions', (SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('eviction_id', e.id, 'reason', e.reason,
                                                                                    'preemptor_job_id', e.preemptor_job_id, 'acked_at', e.acked_at))
                            FROM tide.evictions e WHERE e.job_id = j.id),
            'blocking', '[]'::jsonb);
    END IF;

    SELECT o.* INTO ord FROM tide._group_order(q.resource_group) o WHERE o.job_id = j.id;
    SELECT x.* INTO fs FROM tide.fair_share x WHERE x.queue = j.queue;
    -- jobs ahead in the group's order that ask for a resource this job asks for
    SELECT coalesce(pg_catalog.jsonb_agg(o.job_id ORDER BY o.walk_position), '[]') INTO ahead
      FROM tide._group_order(q.resource_group) o
     WHERE o.walk_position < ord.walk_position
       AND EXISTS (SELECT 1 FROM jsonb_object_keys(o.minimum::jsonb) a(k) JOIN jsonb_object_keys(need::jsonb) b(k) ON a.k = b.k);

    -- R-A2: can never fit as things stand
    IF j.unschedulable THEN
        reasons := reasons || pg_catalog.jsonb_build_object(
            'rule', 'R-A2', 'reason', coalesce(pending_reason, 'no node could ever hold it'),
            'largest_matching_node_gpus', (SELECT max(tide.get(n.capacity, 'gpu')) FROM tide.nodes n
                                            WHERE n.resource_group = q.resource_group
                                              AND (j.gpu_type IS NULL OR n.gpu_type = j.gpu_type)
                                              AND n.labels @> j.node_selector),
            'capability', q.capability::text, 'needs', need::text,
            'unblock', 'change the request, or add a node (or capability) that can hold it; the mark clears when queues or nodes change');
    END IF;

    -- R-P1..R-P5: it waits, out of the set the cycle loads
    IF j.held THEN
        reasons := reasons || pg_catalog.jsonb_build_object(
            'rule', 'R-P2', 'reason', 'held', 'unblock', pg_catalog.format('tide.release(%s)', j.id));
    END IF;
    IF j.queue_held THEN
        reasons := reasons || pg_catalog.jsonb_build_object(
            'rule', 'R-P4', 'reason', pg_catalog.format('queue %s is held', coalesce(q.held_by, j.queue)),
            'unblock', pg_catalog.format('tide.release_queue(%L)', coalesce(q.held_by, j.queue)));
    END IF;
    IF j.dependencies_unmet > 0 THEN
        reasons := reasons || pg_catalog.jsonb_build_object(
            'rule', 'R-P1', 'reason', pg_catalog.format('%s dependencies not met', j.dependencies_unmet),
            'waits_for', (SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('job_id', d.depends_on, 'condition', d.condition,
                                                                                   'state', coalesce(x.state, 'deleted'))
                                                      ORDER BY d.depends_on)
                            FROM tide.job_dependencies d LEFT JOIN tide.jobs x ON x.id = d.depends_on
                           WHERE d.job_id = j.id AND NOT d.satisfied),
            'unblock', 'each job named ends as its condition says (judged on its last attempt)');
    END IF;
    IF j.deferred THEN
        reasons := reasons || pg_catalog.jsonb_build_object(
            'rule', 'R-P3', 'reason', pg_catalog.format('deferred until %s', j.begin_at), 'begin_at', j.begin_at,
            'unblock', 'the first cycle after begin_at');
    END IF;
    IF j.array_throttled THEN
        reasons := reasons || pg_catalog.jsonb_build_object(
            'rule', 'R-P5', 'reason', pg_catalog.format('array %s runs at most %s at a time', j.array_id,
                                                        (SELECT a.max_running FROM tide.job_arrays a WHERE a.id = j.array_id)),
            'array_id', j.array_id,
            'unblock', 'a member in play ends (members are let in by index)');
    END IF;

    -- R-A1: quota and capability of the queue
    held_all := coalesce(u.usage, '') OPERATOR(tide.+) coalesce(u.idle_usage, '');
    IF q.capability IS NOT NULL THEN
        FOR k IN SELECT c.key, c.value::numeric AS cap, coalesce((held_all::jsonb ->> c.key)::numeric, 0) AS used,
                        coalesce((need::jsonb ->> c.key)::numeric, 0) AS asked
                   FROM jsonb_each_text(q.capability::jsonb) c LOOP
            IF k.asked > 0 AND k.used + k.asked > k.cap THEN
                SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('job_id', r.job_id, 'frees', (r.held::jsonb ->> k.key)::numeric,
                                                                          'ends_by', r.ends_by) ORDER BY r.ends_by NULLS LAST)
                  INTO frees
                  FROM tide._group_releases(q.resource_group) r WHERE r.queue = j.queue AND (r.held::jsonb ? k.key);
                reasons := reasons || pg_catalog.jsonb_build_object(
                    'rule', 'R-A1', 'reason', pg_catalog.format('queue %s %s capability: %s used + %s asked > %s', q.name, k.key, k.used, k.asked, k.cap),
                    'resource', k.key, 'capability', k.cap, 'used', k.used, 'asked', k.asked,
                    'unblock', pg_catalog.format('%s %s of capability must free up: jobs of the queue that end', k.used + k.asked - k.cap, k.key),
                    'freed_by', coalesce(frees, '[]'));
            END IF;
        END LOOP;
    END IF;
    -- R-A3: the capability of every queue above the leaf caps its subtree
    FOR k IN SELECT anc.queue AS above, c.key, c.value::numeric AS cap,
                    coalesce(((x.usage OPERATOR(tide.+) x.idle_usage)::jsonb ->> c.key)::numeric, 0) AS used,
                    coalesce((need::jsonb ->> c.key)::numeric, 0) AS asked
               FROM tide._queue_ancestors() anc
               JOIN tide.queue_usage x ON x.queue = anc.queue
               CROSS JOIN LATERAL jsonb_each_text(coalesce(x.capability, '')::jsonb) c
              WHERE anc.leaf = j.queue AND anc.up > 1
              ORDER BY anc.up, c.key LOOP
        IF k.asked > 0 AND k.used + k.asked > k.cap THEN
            reasons := reasons || pg_catalog.jsonb_build_object(
                'rule', 'R-A3', 'reason', pg_catalog.format('queue %s (above %s) %s capability: %s used + %s asked > %s',
                                                            k.above, j.queue, k.key, k.used, k.asked, k.cap),
                'queue', k.above, 'resource', k.key, 'capability', k.cap, 'used', k.used, 'asked', k.asked,
                'unblock', pg_catalog.format('%s %s of %s''s capability must free up: jobs of its subtree that end',
                                             k.used + k.asked - k.cap, k.key, k.above));
        END IF;
    END LOOP;
    IF NOT j.idle THEN
        FOR k IN SELECT c.key, c.value::numeric AS quota, coalesce((u.usage::jsonb ->> c.key)::numeric, 0) AS used,
                        coalesce((need::jsonb ->> c.key)::numeric, 0) AS asked
                   FROM jsonb_each_text(coalesce(q.quota, '')::jsonb) c LOOP
            IF k.asked > 0 AND k.used + k.asked > k.quota THEN
                reasons := reasons || pg_catalog.jsonb_build_object(
                    'rule', 'R-A1', 'reason', pg_catalog.format('queue %s %s quota: %s used + %s asked > %s: the job borrows', q.name, k.key, k.used, k.asked, k.quota),
                    'resource', k.key, 'quota', k.quota, 'used', k.used, 'asked', k.asked,
                    'unblock', pg_catalog.format('%s %s of quota free up when jobs of the queue end; until then it gets only what no queue within its quota asks for',
                                                 k.used + k.asked - k.quota, k.key));
            END IF;
        END LOOP;
    END IF;

    -- R-A4: the owner limit of the queue, against what the job's owner
    -- holds in it (idle jobs included; on a node with a card type its GPUs
    -- count as that type too, as the engine charges them)
    IF q.owner_capability IS NOT NULL THEN
        FOR k IN SELECT c.key, c.value::numeric AS cap,
                        (SELECT coalesce(sum(coalesce((a.resources::jsonb ->> c.key)::numeric,
                                                      CASE WHEN n.gpu_type = c.key THEN tide.get(a.resources, 'gpu') ELSE 0 END)), 0)
                           FROM tide.allocations a JOIN tide.jobs x ON x.id = a.job_id
                           LEFT JOIN tide.nodes n ON n.name = a.node
                          WHERE a.state <> 'released' AND x.queue = j.queue AND x.owner = j.owner) AS used,
                        coalesce((need::jsonb ->> c.key)::numeric,
                                 CASE WHEN j.gpu_type = c.key THEN tide.get(need, 'gpu') ELSE 0 END) AS asked
                   FROM jsonb_each_text(q.owner_capability::jsonb) c LOOP
            IF k.asked > 0 AND k.used + k.asked > k.cap THEN
                reasons := reasons || pg_catalog.jsonb_build_object(
                    'rule', 'R-A4',
                    'reason', CASE WHEN k.asked > k.cap
                                   THEN pg_catalog.format('owner limit of queue %s is %s=%s, the job needs %s', q.name, k.key, k.cap, k.asked)
                                   ELSE pg_catalog.format('owner limit of queue %s is %s=%s; %s holds %s, the job needs %s',
                                                          q.name, k.key, k.cap, j.owner, k.used, k.asked) END,
                    'owner', j.owner, 'resource', k.key, 'limit', k.cap, 'used', k.used, 'asked', k.asked,
                    'unblock', CASE WHEN k.asked > k.cap
                                    THEN 'lower the job''s minimum, or raise the queue''s owner_capability'
                                    ELSE pg_catalog.format('%s %s of %s''s jobs in queue %s must end (or the queue''s owner_capability be raised)',
                                                           k.used + k.asked - k.cap, k.key, j.owner, q.name) END);
            END IF;
        END LOOP;
    END IF;

    -- R-L4 / R-L3: room on ready matching nodes now, per role
    IF NOT j.unschedulable THEN
        fit_total := 0;
        FOR t IN SELECT x.role, x.replicas, x.request, tide.get(x.request, 'gpu') AS gpu FROM tide.job_tasks x WHERE x.job_id = j.id ORDER BY x.role LOOP
            SELECT count(*) FILTER (WHERE n.free OPERATOR(tide.@>) t.request
                                       AND (t.gpu < 1 OR tide.gpu_count(n.free_gpus) >= t.gpu)),
                   coalesce(sum(CASE WHEN t.gpu >= 1 THEN least(floor(tide.gpu_count(n.free_gpus) / t.gpu), t.replicas)
                                     WHEN n.free OPERATOR(tide.@>) t.request THEN t.replicas ELSE 0 END), 0)
              INTO rooms, fits
              FROM tide.node_usage n JOIN tide.nodes x ON x.name = n.node
             WHERE n.resource_group = q.resource_group AND n.state = 'ready'
               AND (j.gpu_type IS NULL OR n.gpu_type = j.gpu_type)
               AND x.labels @> j.node_selector
               AND NOT (n.node = ANY (j.avoid_nodes))
               AND (t.gpu > 0 OR tide.get(n.capacity, 'gpu') = 0 OR x.allow_cpu_jobs);
            IF rooms = 0 THEN
                SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('job_id', r.job_id, 'gpus', r.gpus, 'ends_by', r.ends_by)
                                            ORDER BY r.ends_by NULLS LAST)
                  INTO frees FROM (SELECT * FROM tide._group_releases(q.resource_group) ORDER BY ends_by NULLS LAST LIMIT 5) r;
                reasons := reasons || pg_catalog.jsonb_build_object(
                    'rule', 'R-L4', 'reason', pg_catalog.format('no ready node has room for %s (role %s)', t.request, t.role),
                    -- of the nodes the job may use: its group, GPU type and node selector
                    'largest_free_gpus', (SELECT max(tide.gpu_count(n.free_gpus)) FROM tide.node_usage n
                                            JOIN tide.nodes x ON x.name = n.node
                                           WHERE n.resource_group = q.resource_group AND n.state = 'ready'
                                             AND (j.gpu_type IS NULL OR n.gpu_type = j.gpu_type)
                                             AND x.labels @> j.node_selector AND NOT (n.node = ANY (j.avoid_nodes))),
                    'unblock', 'a running job on a matching node ends', 'next_to_end', coalesce(frees, '[]'));
            END IF;
            fit_total := fit_total + fits::bigint;
        END LOOP;
        IF (SELECT sum(x.replicas) FROM tide.job_tasks x WHERE x.job_id = j.id) > 1
           AND fit_total < coalesce(j.min_available, (SELECT sum(x.replicas) FROM tide.job_tasks x WHERE x.job_id = j.id)) THEN
            reasons := reasons || pg_catalog.jsonb_build_object(
                'rule', 'R-L3', 'reason', pg_catalog.format('gang: %s replicas needed together, room for %s now', coalesce(j.min_available, (SELECT sum(x.replicas) FROM tide.job_tasks x WHERE x.job_id = j.id)), fit_total),
                'needs', coalesce(j.min_available, (SELECT sum(x.replicas) FROM tide.job_tasks x WHERE x.job_id = j.id)), 'room_for', fit_total,
                'unblock', 'all of its minimum must fit in one cycle');
        END IF;
    END IF;

    -- R-L2: resources held by a reservation (the cycle's reason says so)
    IF pending_reason ~ 'held for job' THEN
        reasons := reasons || pg_catalog.jsonb_build_object(
            'rule', 'R-L2', 'reason', pending_reason,
            'held_for', (regexp_match(pending_reason, 'held for job ([0-9]+)'))[1]::bigint,
            'unblock', 'the reserving job is placed or leaves');
    END IF;
    -- R-E6: evictions under way for it, and resources held for other preemptors
    IF EXISTS (SELECT 1 FROM tide.evictions e WHERE e.preemptor_job_id = j.id AND e.acked_at IS NULL) THEN
        reasons := reasons || pg_catalog.jsonb_build_object(
            'rule', 'R-E6', 'reason', 'evictions under way for this job',
            'evicting', (SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('eviction_id', e.id, 'job_id', e.job_id, 'reason', e.reason) ORDER BY e.id)
                           FROM tide.evictions e WHERE e.preemptor_job_id = j.id AND e.acked_at IS NULL),
            'unblock', 'the victims'' launchers stop them (tide.evicted); the place is held for this job meanwhile');
    END IF;

    est := tide._estimate(j.id);
    RETURN pg_catalog.jsonb_build_object(
        'job_id', j.id,
        'state', j.state,
        'queue', j.queue,
        'resource_group', q.resource_group,
        'needs', need::text,
        -- R-A1: within quota (guaranteed) or above it (borrowing: placed after
        -- every guaranteed job, from what none of them asks for)
        'admission', CASE WHEN j.idle THEN 'idle'
                          WHEN q.quota IS NULL OR q.quota::text = '' THEN 'borrowing'
                          WHEN EXISTS (SELECT 1 FROM jsonb_each_text(q.quota::jsonb) c
                                        WHERE coalesce((need::jsonb ->> c.key)::numeric, 0) > 0
                                          AND coalesce((u.usage::jsonb ->> c.key)::numeric, 0) + (need::jsonb ->> c.key)::numeric > c.value::numeric)
                               THEN 'borrowing'
                          ELSE 'guaranteed' END,
        'pending_reason', pending_reason,
        'unschedulable', j.unschedulable,
        'position_in_queue', me.position,
        'position_in_group', ord.walk_position,
        'order_key', pg_catalog.jsonb_build_object('idle', j.idle, 'levels', ord.levels,
                                                   'queue_priority', q.priority, 'queue_share', ord.queue_share,
                                                   'queue_decayed', fs.decayed, 'queue_rank', fs.rank_among_siblings,
                                                   'fair_share_half_life', fs.half_life,
                                                   -- R-O7: the owner's share in a queue that orders owners
                                                   'owner_share', CASE WHEN q.owner_fair_share THEN
                                                       (SELECT os.share FROM tide.owner_fair_share os
                                                         WHERE os.queue = j.queue AND os.owner = j.owner) END,
                                                   'retry_lane', j.retry_of IS NOT NULL, 'priority', j.priority,
                                                   'created_at', j.created_at, 'id', j.id),
        'jobs_ahead', ahead,
        'waiting', j.waiting,
        -- every dependency with the state of the job it names (R-P1)
        'dependencies', (SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                                    'job_id', d.depends_on, 'condition', d.condition, 'satisfied', d.satisfied,
                                    'state', coalesce(x.state, 'deleted')) ORDER BY d.depends_on), '[]')
                           FROM tide.job_dependencies d LEFT JOIN tide.jobs x ON x.id = d.depends_on
                          WHERE d.job_id = j.id),
        'blocking', reasons,
        'estimate_start', est.start_at,
        'waits_for_jobs', to_jsonb(est.waits_for),
        'estimate_unknown_because_no_time_limit', to_jsonb(est.unknown_because));
END
$$;
COMMENT ON FUNCTION tide._explain(bigint) IS
    'why a job waits, now: state, position in its queue and in its resource group''s order with the parts of the order key (R-O1..R-O4, the decayed share of R-O6, per level of a queue tree: R-O5), the jobs ahead competing for the same resources, every blocking reason with its rule (R-A1, R-A2, R-A3 at every level above the queue, R-A4, R-L2, R-L3, R-L4, R-E6, R-P1..R-P5), every dependency with the state of the job it names, numbers and what would unblock it, and the start estimate (NULL, with the jobs without time limit that make it unknown); every job named, read with the caller''s rights';
REVOKE ALL ON FUNCTION tide._explain(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide._explain(bigint) TO tide_admin, tide_reader;

-- Is job one of viewer's, live or archived?  Read as the owner by
-- tide._explain_own only (with row-level security a submitter would learn
-- nothing from it, but it has no use for it).
CREATE FUNCTION tide._job_of(job bigint, viewer text) RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT coalesce((SELECT j.owner = viewer FROM tide.jobs j WHERE j.id = job),
                (SELECT pg_catalog.bool_or(a.owner = viewer) FROM tide.jobs_archive a WHERE a.id = job),
                false)
$$;
COMMENT ON FUNCTION tide._job_of(bigint, text) IS
    'whether a job (live or archived) is owned by the role named';

-- explain's answer as viewer may have it: every job of another owner it
-- names is counted instead.  A list that names jobs (the ids of
-- jobs_ahead, waits_for_jobs and estimate_unknown_because_no_time_limit;
-- the objects with a job_id of any other list) keeps viewer's own and
-- gets a sibling <list>_other_owners with how many it left out; a single
-- reference (held_for, preemptor_job_id, job_id, depends_on) becomes NULL
-- with <key>_other_owners 1; "job N" in a text becomes "a job of another
-- owner".  Queue and node facts stay: a submitter reads queues and nodes,
-- and its job's pending reason gives the same numbers.
CREATE FUNCTION tide._others_counted(doc jsonb, viewer text) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    id_lists CONSTANT text[] := ARRAY['jobs_ahead', 'waits_for_jobs', 'estimate_unknown_because_no_time_limit'];
    job_lists CONSTANT text[] := ARRAY['freed_by', 'next_to_end', 'waits_for', 'evicting', 'dependencies'];
    id_keys CONSTANT text[] := ARRAY['job_id', 'held_for', 'preemptor_job_id', 'depends_on'];
    k text;
    v jsonb;
    kept jsonb;
    others bigint;
    said text;
    m text[];
    answer jsonb := '{}';
BEGIN
    CASE pg_catalog.jsonb_typeof(doc)
    WHEN 'object' THEN
        FOR k, v IN SELECT e.key, e.value FROM pg_catalog.jsonb_each(doc) e LOOP
            IF pg_catalog.jsonb_typeof(v) = 'array' THEN
                SELECT coalesce(pg_catalog.jsonb_agg(tide._others_counted(x.e, viewer) ORDER BY x.n) FILTER (WHERE x.mine), '[]'),
                       count(*) FILTER (WHERE NOT x.mine)
                  INTO kept, others
                  FROM (SELECT a.e, a.n,
                               CASE WHEN pg_catalog.jsonb_typeof(a.e) = 'number' AND k = ANY (id_lists)
                                    THEN tide._job_of((a.e #>> '{}')::bigint, viewer)
                                    WHEN pg_catalog.jsonb_typeof(a.e -> 'job_id') = 'number'
                                    THEN tide._job_of((a.e ->> 'job_id')::bigint, viewer)
                                    ELSE true END AS mine
                          FROM pg_catalog.jsonb_array_elements(v) WITH ORDINALITY a(e, n)) x;
                answer := answer || pg_catalog.jsonb_build_object(k, kept);
                IF others > 0 OR k = ANY (id_lists) OR k = ANY (job_lists) THEN
                    answer := answer || pg_catalog.jsonb_build_object(k || '_other_owners', others);
                END IF;
            ELSIF k = ANY (id_keys) AND pg_catalog.jsonb_typeof(v) = 'number'
                  AND NOT tide._job_of((v #>> '{}')::bigint, viewer) THEN
                answer := answer || pg_catalog.jsonb_build_object(k, NULL, k || '_other_owners', 1);
            ELSE
                answer := answer || pg_catalog.jsonb_build_object(k, tide._others_counted(v, viewer));
            END IF;
        END LOOP;
        RETURN answer;
    WHEN 'array' THEN
        RETURN (SELECT coalesce(pg_catalog.jsonb_agg(tide._others_counted(a.e, viewer) ORDER BY a.n), '[]')
                  FROM pg_catalog.jsonb_array_elements(doc) WITH ORDINALITY a(e, n));
    WHEN 'string' THEN
        said := doc #>> '{}';
        FOR m IN SELECT pg_catalog.regexp_matches(said, '\mjob ([0-9]{1,18})\M', 'g') LOOP
            IF NOT tide._job_of(m[1]::bigint, viewer) THEN
                said := pg_catalog.regexp_replace(said, '\mjob ' || m[1] || '\M', 'a job of another owner', 'g');
            END IF;
        END LOOP;
        RETURN pg_catalog.to_jsonb(said);
    ELSE
        RETURN doc;
    END CASE;
END
$$;
COMMENT ON FUNCTION tide._others_counted(jsonb, text) IS
    'tide.explain''s answer as a submitter may have it: the jobs of other owners it names left out of their lists and counted in <list>_other_owners (a single reference: NULL, <key>_other_owners 1), "job N" of another owner in a text said "a job of another owner"';
REVOKE ALL ON FUNCTION tide._job_of(bigint, text), tide._others_counted(jsonb, text) FROM PUBLIC;

-- A submitter's answer for its own job: computed as the extension's owner
-- (row-level security would hide the jobs the answer depends on), then
-- with other owners' jobs counted.  Inside a SECURITY DEFINER function
-- CURRENT_USER is the owner, so tide.explain passes the caller, and the
-- session must be able to act as it (its own role, or one it may SET ROLE
-- to: what it could read anyway).  Both checks come before anything else
-- is read; another owner's job gets the error of a missing one.
CREATE FUNCTION tide._explain_own(job_id bigint, viewer text) RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM tide._assert_acting_as(viewer);
    IF job_id IS NULL
       OR NOT EXISTS (SELECT 1 FROM tide.jobs j WHERE j.id = _explain_own.job_id AND j.owner = viewer) THEN
        PERFORM tide._no_such_job(job_id);
    END IF;
    RETURN tide._others_counted(tide._explain(job_id), viewer);
END
$$;
COMMENT ON FUNCTION tide._explain_own(bigint, text) IS
    'tide.explain for a submitter (viewer, a role the session may act as) of its own live job: computed with every job counted, other owners'' jobs counted, never named; any other job answers as a missing one';
REVOKE ALL ON FUNCTION tide._explain_own(bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide._explain_own(bigint, text) TO tide_submitter;

CREATE FUNCTION tide.explain(job_id bigint) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF pg_catalog.pg_has_role('tide_admin', 'USAGE') OR pg_catalog.pg_has_role('tide_reader', 'USAGE') THEN
        RETURN tide._explain(job_id);
    END IF;
    -- a submitter: row-level security shows it its own jobs only
    IF job_id IS NULL OR NOT EXISTS (SELECT 1 FROM tide.jobs j WHERE j.id = explain.job_id) THEN
        RETURN tide._explain_archived(job_id);
    END IF;
    RETURN tide._explain_own(job_id, CURRENT_USER);
END
$$;
COMMENT ON FUNCTION tide.explain(bigint) IS
    'why a job waits, now: state, position in its queue and in its resource group''s order with the parts of the order key (R-O1..R-O4, the decayed share of R-O6, per level of a queue tree: R-O5), the jobs ahead competing for the same resources, every blocking reason with its rule (R-A1, R-A2, R-A3 at every level above the queue, R-A4, R-L2, R-L3, R-L4, R-E6, R-P1..R-P5), every dependency with the state of the job it names, numbers and what would unblock it, and the start estimate (NULL, with the jobs without time limit that make it unknown); a submitter may ask about its own jobs only (another owner''s answers as a missing one), and the jobs of other owners in its answer are counted in <list>_other_owners, never named';
REVOKE ALL ON FUNCTION tide.explain(bigint), tide.estimate_start(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide.explain(bigint), tide.estimate_start(bigint) TO tide_admin, tide_reader, tide_submitter;
