-- Accounting (docs/analysts.md): what sacct and sreport give Slurm users.
--
-- Per queue and owner and day: jobs submitted, started, finished by outcome,
-- waits, GPU-hours used and borrowed above quota, GPU-hours lost to
-- evictions, evictions suffered and caused.  Per node and day: GPU-hours of
-- capacity (as it was then: tide.node_capacity_history), allocated, idle and
-- fragmented.  GPU use per queue and owner in clock-aligned buckets.
-- Days are UTC days.  Finished days are rolled up by tide.maintain_history
-- into tide.accounting_daily and tide.node_daily, which the views read; the
-- *_raw functions compute any days (today) from the raw history.
-- Everything reads the hot tables and the archive (tide.*_all).

-- ---------------------------------------------------------------- capacity
CREATE TABLE tide.node_capacity_history (
    node           text NOT NULL,
    valid_from     timestamptz NOT NULL,
    valid_to       timestamptz,
    resource_group text NOT NULL,
    gpu_type       text,
    capacity       tide.resvec NOT NULL,
    gpus           numeric NOT NULL,
    state          text NOT NULL,
    PRIMARY KEY (node, valid_from)
);
CREATE INDEX node_capacity_history_time_idx ON tide.node_capacity_history (valid_from, valid_to);
COMMENT ON TABLE tide.node_capacity_history IS
    'each node''s capacity, GPU count, group, GPU type and state over time, one row per period [valid_from, valid_to) (NULL valid_to: now); written by a trigger on tide.nodes';
SELECT pg_catalog.pg_extension_config_dump('tide.node_capacity_history', '');
GRANT SELECT ON tide.node_capacity_history TO tide_admin, tide_reader;

CREATE FUNCTION tide._nodes_capacity_log() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE tide.node_capacity_history h SET valid_to = pg_catalog.now()
         WHERE h.node = OLD.name AND h.valid_to IS NULL;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        -- two changes in one transaction: the later one replaces the row
        DELETE FROM tide.node_capacity_history h
         WHERE h.node = NEW.name AND h.valid_from = pg_catalog.now();
        INSERT INTO tide.node_capacity_history (node, valid_from, resource_group, gpu_type, capacity, gpus, state)
        VALUES (NEW.name, pg_catalog.now(), NEW.resource_group, NEW.gpu_type, NEW.capacity,
                tide.get(NEW.capacity, 'gpu'), NEW.state);
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION tide._nodes_capacity_log() IS
    'trigger: closes a node''s open tide.node_capacity_history row and opens one with its new capacity, group, GPU type or state';
REVOKE ALL ON FUNCTION tide._nodes_capacity_log() FROM PUBLIC;
CREATE TRIGGER nodes_capacity_log_insert AFTER INSERT OR DELETE ON tide.nodes
    FOR EACH ROW EXECUTE FUNCTION tide._nodes_capacity_log();
-- heartbeats and label changes write nothing here
CREATE TRIGGER nodes_capacity_log_update AFTER UPDATE ON tide.nodes
    FOR EACH ROW
    WHEN (OLD.capacity OPERATOR(tide.<>) NEW.capacity OR OLD.state IS DISTINCT FROM NEW.state
          OR OLD.resource_group IS DISTINCT FROM NEW.resource_group OR OLD.gpu_type IS DISTINCT FROM NEW.gpu_type
          OR OLD.name IS DISTINCT FROM NEW.name)
    EXECUTE FUNCTION tide._nodes_capacity_log();

-- GPUs an allocation holds: its share of one GPU, or its whole GPUs.
CREATE FUNCTION tide._gpus_held(gpus tide.gpumask, gpu_milli integer) RETURNS numeric
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
SELECT CASE WHEN gpu_milli IS NOT NULL THEN gpu_milli OPERATOR(pg_catalog./) 1000.0
            ELSE tide.gpu_count(gpus)::pg_catalog.numeric END
$$;
COMMENT ON FUNCTION tide._gpus_held(tide.gpumask, integer) IS
    'GPUs an allocation holds: gpu_milli/1000 for a fractional share, else the GPUs in its mask';

-- ---------------------------------------------------------------- buckets
-- GPUs held per queue and owner (NULL owner: the queue's total) in buckets
-- of step from lo (aligned by the caller) until hi, from the raw
-- allocations: time-weighted, a fractional share counted as its share.
-- And of them borrowed: what the queue held above its GPU quota (all of it
-- without a quota; nothing when the quota names no GPUs: a quota limits
-- only what it names), exactly in time however short (a mean of the
-- bucket would hide 5 minutes at twice the quota next to 5 idle ones),
-- shared among the allocations held then by their GPUs.
CREATE FUNCTION tide._gpu_usage_raw(lo timestamptz, hi timestamptz, step interval)
    RETURNS TABLE (bucket_start timestamptz, queue text, owner text, gpus_used double precision,
                   gpus_borrowed double precision)
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    -- generate_series is costed at 1000 rows: JIT would compile for seconds
    SET jit = off
    AS $$
WITH held AS MATERIALIZED (
    -- each allocation once (its job looked up once, not once per bucket);
    -- g: thousandths of a GPU, whole numbers that add up fast and exactly
    SELECT j.queue AS q, j.owner AS o, coalesce(a.gpu_milli, tide.gpu_count(a.gpus) * 1000)::bigint AS g,
           greatest(a.created_at, lo) AS s, least(coalesce(a.released_at, pg_catalog.now()), hi) AS e
      FROM tide.allocations_all a
      JOIN tide.jobs_all j ON j.id = a.job_id
     WHERE a.created_at < hi AND (a.released_at IS NULL OR a.released_at > lo)
       AND (a.gpu_milli IS NOT NULL OR tide.gpu_count(a.gpus) > 0)
), parts AS (
    -- each allocation's part of each bucket
    SELECT b, h.q, h.o, h.g, greatest(h.s, b) AS s, least(h.e, b + step) AS e
      FROM held h
     CROSS JOIN LATERAL pg_catalog.generate_series(pg_catalog.date_bin(step, h.s, lo), h.e - interval '1 microsecond', step) b
     WHERE h.e > h.s
), steps AS (
    -- what a queue holds changes only where a part starts or ends
    SELECT p.q, t.at, sum(t.d) AS d
      FROM parts p CROSS JOIN LATERAL (VALUES (p.s, p.g), (p.e, -p.g)) t(at, d)
     GROUP BY p.q, t.at
), levels AS (
    SELECT st.q, st.at, pg_catalog.lead(st.at) OVER w AS next_at,
           sum(st.d) OVER (w ROWS UNBOUNDED PRECEDING) AS level
      FROM steps st
    WINDOW w AS (PARTITION BY st.q ORDER BY st.at)
), shares AS (
    -- r: the borrowed share of a held GPU integrated from the first change
    -- to this one (seconds): a part held from s to e borrowed g * (r(e) - r(s))
    SELECT l.q, l.at,
           coalesce(sum(l.ratio * date_part('epoch', l.next_at - l.at))
                        OVER (PARTITION BY l.q ORDER BY l.at ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS r
      FROM (SELECT v.q, v.at, v.next_at,
                   CASE WHEN v.level <= 0 THEN 0
                        WHEN qq.quota IS NULL THEN 1
                        WHEN NOT (qq.quota::jsonb ? 'gpu') THEN 0
                        ELSE greatest(v.level - tide.get(qq.quota, 'gpu') * 1000, 0)::float8 / v.level END AS ratio
              FROM levels v LEFT JOIN tide.queues qq ON qq.name = v.q) l
)
SELECT p.b, p.q, p.o,
       sum(p.g * date_part('epoch', p.e - p.s)) / 1000 / date_part('epoch', step),
       sum(p.g * (re.r - rs.r)) / 1000 / date_part('epoch', step)
  FROM parts p
  JOIN shares rs ON rs.q = p.q AND rs.at = p.s
  JOIN shares re ON re.q = p.q AND re.at = p.e
 GROUP BY GROUPING SETS ((p.b, p.q), (p.b, p.q, p.o))
$$;
COMMENT ON FUNCTION tide._gpu_usage_raw(timestamptz, timestamptz, interval) IS
    'GPUs held per queue and owner (NULL owner: queue total) per bucket of step in [lo, hi), time-weighted, from the raw allocations, and of them borrowed above the queue''s GPU quota (exactly in time)';

-- The same in 10-minute buckets, kept by tide.maintain_history for every
-- finished bucket: tide.gpu_usage reads these instead of the allocations.
CREATE TABLE tide.usage_buckets (
    bucket_start timestamptz NOT NULL,
    queue        text NOT NULL,
    owner        text,
    gpus_used    double precision NOT NULL,
    -- of them above the queue's GPU quota (tide._gpu_usage_raw)
    gpus_borrowed double precision NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX usage_buckets_key ON tide.usage_buckets (bucket_start, queue, coalesce(owner, ''));
COMMENT ON TABLE tide.usage_buckets IS
    'GPUs held per 10-minute bucket (on the clock), queue and owner (NULL owner: the queue''s total), time-weighted, and of them borrowed above the queue''s GPU quota; the rollup tide.gpu_usage reads';
SELECT pg_catalog.pg_extension_config_dump('tide.usage_buckets', '');
GRANT SELECT ON tide.usage_buckets TO tide_admin, tide_reader;

-- What the rollups cover: tide.usage_buckets holds [done_from, done_until).
CREATE TABLE tide.rollup_marks (
    name       text PRIMARY KEY,
    done_from  timestamptz NOT NULL,
    done_until timestamptz NOT NULL
);
COMMENT ON TABLE tide.rollup_marks IS 'the time range each rollup covers (usage_buckets: [done_from, done_until))';
SELECT pg_catalog.pg_extension_config_dump('tide.rollup_marks', '');
GRANT SELECT ON tide.rollup_marks TO tide_admin, tide_reader;

-- Roll up the finished 10-minute buckets after the last one rolled up (at
-- most a week a call; the first call starts at the oldest live or archived
-- allocation, at most a week back).  Returns the buckets rolled up.
CREATE FUNCTION tide._rollup_buckets() RETURNS integer
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    AS $$
DECLARE
    step constant interval := interval '10 minutes';
    origin constant timestamptz := timestamptz '2000-01-01 00:00:00+00';
    lo timestamptz;
    hi timestamptz := pg_catalog.date_bin(step, pg_catalog.now() - interval '5 minutes', origin);
    first timestamptz;
BEGIN
    SELECT m.done_until INTO lo FROM tide.rollup_marks m WHERE m.name = 'usage_buckets';
    IF lo IS NULL THEN
        SELECT least((SELECT min(a.created_at) FROM tide.allocations a),
                     (SELECT min(a.created_at) FROM tide.allocations_archive a)) INTO first;
        first := greatest(coalesce(first, hi), hi - interval '7 days');
        lo := pg_catalog.date_bin(step, first, origin);
        INSERT INTO tide.rollup_marks (name, done_from, done_until) VALUES ('usage_buckets', lo, lo);
    END IF;
    hi := least(hi, lo + interval '7 days');
    IF hi <= lo THEN
        RETURN 0;
    END IF;
    DELETE FROM tide.usage_buckets u WHERE u.bucket_start >= lo;
    INSERT INTO tide.usage_buckets (bucket_start, queue, owner, gpus_used, gpus_borrowed)
    SELECT r.bucket_start, r.queue, r.owner, r.gpus_used, r.gpus_borrowed FROM tide._gpu_usage_raw(lo, hi, step) r;
    UPDATE tide.rollup_marks SET done_until = hi WHERE name = 'usage_buckets';
    RETURN (extract(epoch FROM hi - lo) / 600)::integer;
END
$$;
COMMENT ON FUNCTION tide._rollup_buckets() IS
    'adds the finished 10-minute buckets since the last call to tide.usage_buckets (at most a week a call); returns how many';
REVOKE ALL ON FUNCTION tide._rollup_buckets() FROM PUBLIC;

-- GPUs held per queue and owner in buckets aligned to the clock (a
-- 10-minute bucket starts at :00, :10, ...), time-weighted, against the GPU
-- capacity of the queue's resource group then (nodes not down).  Rows with
-- a NULL owner are the queue's totals.  Buckets that are whole multiples of
-- 10 minutes read the rollup where it covers the window, the allocations
-- elsewhere.
CREATE FUNCTION tide.gpu_usage(since timestamptz DEFAULT pg_catalog.now() - interval '1 day',
                               until timestamptz DEFAULT pg_catalog.now(),
                               bucket interval DEFAULT interval '10 minutes')
    RETURNS TABLE (bucket_start timestamptz, queue text, owner text, resource_group text,
                   gpus_used numeric, gpus_total numeric, utilisation numeric, gpus_borrowed numeric)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    AS $$
DECLARE
    origin constant timestamptz := timestamptz '2000-01-01 00:00:00+00';
    lo timestamptz;
    fine interval;
    r_from timestamptz;
    r_until timestamptz;
    ok boolean;
BEGIN
    IF bucket IS NULL OR bucket <= interval '0' OR bucket > interval '1 day' THEN
        RAISE EXCEPTION 'bucket must be a positive interval of at most a day, not %', coalesce(bucket::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    ok := tide._check_window(since, until);
    lo := pg_catalog.date_bin(bucket, since, origin);
    IF extract(epoch FROM until - lo) / extract(epoch FROM bucket) > 100000 THEN
        RAISE EXCEPTION 'the window holds more than 100000 buckets of %', bucket
            USING ERRCODE = 'program_limit_exceeded', HINT = 'Use a larger bucket or a shorter window.';
    END IF;
    fine := bucket;
    IF extract(epoch FROM bucket)::numeric % 600 = 0 THEN
        fine := interval '10 minutes';
        SELECT m.done_from, m.done_until INTO r_from, r_until FROM tide.rollup_marks m WHERE m.name = 'usage_buckets';
    END IF;
    -- without a rollup (or one beside the window) everything is raw
    IF r_from IS NULL OR r_until <= lo OR r_from >= until THEN
        r_from := until;
        r_until := until;
    END IF;
    -- a rolled-up bucket that until cuts is read raw, up to until
    r_until := least(r_until, greatest(r_from, pg_catalog.date_bin(interval '10 minutes', until, origin)));
    RETURN QUERY
    WITH parts AS (
        SELECT u.bucket_start AS b, u.queue AS q, u.owner AS o, u.gpus_used AS used, u.gpus_borrowed AS borrowed
          FROM tide.usage_buckets u
         WHERE u.bucket_start >= greatest(lo, r_from) AND u.bucket_start < least(until, r_until)
        UNION ALL
        SELECT x.bucket_start, x.queue, x.owner, x.gpus_used, x.gpus_borrowed FROM tide._gpu_usage_raw(lo, least(until, r_from), fine) x
        UNION ALL
        SELECT x.bucket_start, x.queue, x.owner, x.gpus_used, x.gpus_borrowed FROM tide._gpu_usage_raw(greatest(lo, r_until), until, fine) x
         WHERE r_until < until
    ), per AS (
        -- GPU-seconds held in each bucket
        SELECT pg_catalog.date_bin(bucket, p.b, origin) AS bs, p.q, p.o,
               sum(p.used) * date_part('epoch', fine) AS held,
               sum(p.borrowed) * date_part('epoch', fine) AS borrowed
          FROM parts p
         GROUP BY 1, 2, 3
    ), cap AS (
        -- GPU-seconds of capacity in each bucket, until the window's end
        SELECT b AS bs, c.resource_group AS rg,
               sum(c.gpus::float8 * date_part('epoch', least(coalesce(c.valid_to, pg_catalog.now()), b + bucket, until)
                                                         - greatest(c.valid_from, b))) AS total
          FROM tide.node_capacity_history c
         CROSS JOIN LATERAL pg_catalog.generate_series(pg_catalog.date_bin(bucket, greatest(c.valid_from, lo), lo),
                                                       least(coalesce(c.valid_to, pg_catalog.now()), until) - interval '1 microsecond', bucket) b
         WHERE c.state <> 'down' AND c.gpus > 0
           AND c.valid_from < until AND (c.valid_to IS NULL OR c.valid_to > lo)
         GROUP BY b, c.resource_group
    )
    -- the means over the part of each bucket the window covers: the last
    -- one is cut by until, the one in progress by now (divided by the
    -- whole bucket, a 32-GPU cluster showed 29.01 GPUs nine minutes into
    -- one)
    SELECT p.bs, p.q, p.o, qq.resource_group, round((p.held / s.secs)::numeric, 3),
           round(coalesce(c.total / s.secs, 0)::numeric, 3),
           CASE WHEN c.total > 0 THEN round((p.held / c.total)::numeric, 4) END,
           round((p.borrowed / s.secs)::numeric, 3)
      FROM per p
     CROSS JOIN LATERAL (SELECT date_part('epoch', least(p.bs + bucket, until, pg_catalog.now()) - p.bs) AS secs) s
      LEFT JOIN tide.queues qq ON qq.name = p.q
      LEFT JOIN cap c ON c.bs = p.bs AND c.rg = qq.resource_group
     WHERE p.bs < least(until, pg_catalog.now())
     ORDER BY p.bs, p.q, p.o NULLS FIRST;
END
$$;
COMMENT ON FUNCTION tide.gpu_usage(timestamptz, timestamptz, interval) IS
    'GPUs held per queue and owner (NULL owner: the queue''s total) in clock-aligned buckets, time-weighted (a bucket the window cuts short: over the part it covers), fractional shares counted, against the GPUs of the queue''s resource group then (tide.node_capacity_history, nodes not down), and of them borrowed above the queue''s GPU quota (exactly in time); reads tide.usage_buckets where it covers the window';

-- ---------------------------------------------------------------- evictions
CREATE VIEW tide.eviction_log WITH (security_invoker = true) AS
SELECT e.id AS eviction_id,
       e.created_at AS at,
       e.job_id,
       v.queue,
       v.owner,
       e.reason,
       e.goal,
       e.preemptor_job_id,
       p.queue AS preemptor_queue,
       p.owner AS preemptor_owner,
       e.cycle_id,
       e.acked_at,
       l.gpus AS gpus,
       l.gpu_hours_lost
  FROM tide.evictions_all e
  JOIN tide.jobs_all v ON v.id = e.job_id
  LEFT JOIN tide.jobs_all p ON p.id = e.preemptor_job_id
  LEFT JOIN LATERAL (
        SELECT sum(tide._gpus_held(a.gpus, a.gpu_milli)) AS gpus,
               round(sum(tide._gpus_held(a.gpus, a.gpu_milli)
                         * extract(epoch FROM coalesce(a.released_at, pg_catalog.now()) - coalesce(a.started_at, a.created_at)))
                     / 3600, 3) AS gpu_hours_lost
          FROM tide.allocations_all a
         WHERE a.job_id = e.job_id AND a.created_at <= e.created_at
           AND (a.released_at IS NULL OR a.released_at >= e.created_at)) l ON true;
COMMENT ON VIEW tide.eviction_log IS
    'every eviction with the victim''s queue and owner, who caused it (preemptor job, queue, owner; NULL for a lost node or a cancel), the GPUs it stopped and the GPU-hours of work thrown away (run time of those allocations until released)';
GRANT SELECT ON tide.eviction_log TO tide_admin, tide_reader, tide_submitter;

-- ---------------------------------------------------------------- fragmentation
-- Per node now: GPUs, GPUs held (fractional shares count), free whole GPUs
-- and of those the fragmented ones: free GPUs that no pending GPU request
-- of the node's group could use (its request per replica does not fit what
-- is free there, or the node's GPU type or labels do not match).  While no
-- GPU request is pending in the group, free GPUs are idle, not fragmented.
CREATE FUNCTION tide.node_fragmentation()
    RETURNS TABLE (node text, resource_group text, gpu_type text, state text, gpus numeric,
                   gpus_held numeric, gpus_free integer, gpus_fragmented integer)
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
WITH live AS (
    SELECT a.node, sum(tide._gpus_held(a.gpus, a.gpu_milli)) AS held,
           tide.union(a.gpus) AS used, tide.sum(a.resources) AS res
      FROM tide.allocations a WHERE a.state <> 'released' GROUP BY a.node
), n AS (
    SELECT x.name, x.resource_group, x.gpu_type, x.state, x.labels, tide.get(x.capacity, 'gpu') AS gpus,
           coalesce(l.held, 0) AS held,
           tide.gpu_count(tide._all_gpus(tide.get(x.capacity, 'gpu')) OPERATOR(tide.-) coalesce(l.used, ''::tide.gpumask)) AS free,
           x.capacity OPERATOR(tide.-) coalesce(l.res, ''::tide.resvec) AS free_res
      FROM tide.nodes x LEFT JOIN live l ON l.node = x.name
     WHERE tide.get(x.capacity, 'gpu') > 0
), wants AS (
    SELECT q.resource_group, j.gpu_type, j.node_selector, t.request
      FROM tide.jobs j
      JOIN tide.queues q ON q.name = j.queue
      JOIN tide.job_tasks t ON t.job_id = j.id
     WHERE j.state = 'pending' AND NOT j.unschedulable AND NOT j.waiting AND tide.get(t.request, 'gpu') > 0
)
SELECT n.name, n.resource_group, n.gpu_type, n.state, n.gpus, round(n.held, 3), n.free,
       CASE WHEN n.state <> 'ready' OR n.free = 0
                 OR NOT EXISTS (SELECT 1 FROM wants w WHERE w.resource_group = n.resource_group) THEN 0
            WHEN EXISTS (SELECT 1 FROM wants w
                          WHERE w.resource_group = n.resource_group
                            AND (w.gpu_type IS NULL OR w.gpu_type = n.gpu_type)
                            AND n.labels @> w.node_selector
                            AND n.free_res OPERATOR(tide.@>) w.request
                            AND (tide.get(w.request, 'gpu') < 1 OR tide.get(w.request, 'gpu') <= n.free)) THEN 0
            ELSE n.free END
  FROM n
$$;
COMMENT ON FUNCTION tide.node_fragmentation() IS
    'per GPU node now: GPUs, GPUs held, free whole GPUs and how many of them are fragmented (no pending GPU request of the group fits there; 0 while none is pending: idle)';

-- Samples of fragmentation, taken by every tide.maintain_history call: the
-- past of what tide.node_fragmentation says now.
CREATE TABLE tide.node_samples (
    at              timestamptz NOT NULL,
    node            text NOT NULL,
    gpus            numeric NOT NULL,
    gpus_held       numeric NOT NULL,
    gpus_free       integer NOT NULL,
    gpus_fragmented integer NOT NULL,
    PRIMARY KEY (node, at)
);
CREATE INDEX node_samples_at_idx ON tide.node_samples (at);
COMMENT ON TABLE tide.node_samples IS
    'per GPU node at each tide.maintain_history call: GPUs, held, free and fragmented (tide.node_fragmentation); fragmented GPU-hours of tide.node_daily come from these';
SELECT pg_catalog.pg_extension_config_dump('tide.node_samples', '');
GRANT SELECT ON tide.node_samples TO tide_admin, tide_reader;

CREATE FUNCTION tide._sample_nodes() RETURNS integer
    LANGUAGE sql
    SET search_path = pg_catalog, pg_temp
    AS $$
WITH ins AS (
    INSERT INTO tide.node_samples (at, node, gpus, gpus_held, gpus_free, gpus_fragmented)
    SELECT pg_catalog.now(), f.node, f.gpus, f.gpus_held, f.gpus_free, f.gpus_fragmented
      FROM tide.node_fragmentation() f
    ON CONFLICT DO NOTHING
    RETURNING 1)
SELECT count(*)::integer FROM ins
$$;
COMMENT ON FUNCTION tide._sample_nodes() IS 'records tide.node_fragmentation() in tide.node_samples; returns the rows written';

-- ---------------------------------------------------------------- per queue and day
-- Computed from the raw history for the UTC days d0 .. d1.  Rows with a
-- NULL owner are the queue's totals.  Waits (in seconds) are those of the
-- jobs first placed that day, from submission to first placement.
CREATE FUNCTION tide.queue_accounting_raw(d0 date, d1 date)
    RETURNS TABLE (day date, queue text, owner text,
                   jobs_submitted bigint, jobs_placed bigint, jobs_started bigint,
                   jobs_succeeded bigint, jobs_failed bigint, jobs_cancelled bigint,
                   wait_mean double precision, wait_p50 double precision, wait_p95 double precision,
                   wait_p99 double precision, wait_max double precision,
                   gpu_hours numeric, borrowed_gpu_hours numeric, lost_gpu_hours numeric,
                   evictions_suffered bigint, evictions_caused bigint)
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    -- generate_series is costed at 1000 rows: JIT would compile for seconds
    SET jit = off
    SET timezone = 'UTC'
    AS $$
WITH b AS (
    SELECT d0::timestamptz AS lo, (d1 + 1)::timestamptz AS hi
), ev AS (
    SELECT e.at::date AS day, j.queue, j.owner, e.old_state, e.new_state, e.job_id, e.id, e.at, j.created_at
      FROM b, tide.job_events e
      JOIN tide.jobs_all j ON j.id = e.job_id
     WHERE e.at >= b.lo AND e.at < b.hi
       AND (e.old_state IS NULL OR e.new_state IN ('allocated', 'running', 'succeeded', 'failed', 'cancelled'))
), firsts AS (
    SELECT DISTINCT ON (ev.job_id) ev.day, ev.queue, ev.owner, extract(epoch FROM ev.at - ev.created_at)::float8 AS wait
      FROM ev, b
     WHERE ev.new_state = 'allocated'
       AND (ev.created_at >= b.lo
            OR NOT EXISTS (SELECT 1 FROM tide.job_events x
                            WHERE x.job_id = ev.job_id AND x.new_state = 'allocated' AND x.id < ev.id))
     ORDER BY ev.job_id, ev.id
), counts AS (
    SELECT ev.day, ev.queue, ev.owner,
           count(*) FILTER (WHERE ev.old_state IS NULL) AS submitted,
           count(*) FILTER (WHERE ev.new_state = 'running') AS started,
           count(*) FILTER (WHERE ev.new_state = 'succeeded') AS succeeded,
           count(*) FILTER (WHERE ev.new_state = 'failed') AS failed,
           count(*) FILTER (WHERE ev.new_state = 'cancelled') AS cancelled
      FROM ev GROUP BY GROUPING SETS ((ev.day, ev.queue), (ev.day, ev.queue, ev.owner))
), waits AS (
    SELECT f.day, f.queue, f.owner, count(*) AS placed, avg(f.wait) AS mean,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY f.wait) AS p50,
           percentile_cont(0.95) WITHIN GROUP (ORDER BY f.wait) AS p95,
           percentile_cont(0.99) WITHIN GROUP (ORDER BY f.wait) AS p99,
           max(f.wait) AS mx
      FROM firsts f GROUP BY GROUPING SETS ((f.day, f.queue), (f.day, f.queue, f.owner))
), buckets AS MATERIALIZED (
    SELECT g.* FROM b, tide.gpu_usage(b.lo, least(b.hi, pg_catalog.now()), interval '10 minutes') g
     WHERE b.lo < pg_catalog.now()
), use AS (
    -- each bucket's means over the part of it that has passed; borrowed
    -- exactly in time, each owner's share of it by what it held then
    -- (tide._gpu_usage_raw)
    SELECT u.bucket_start::date AS day, u.queue, u.owner,
           sum(u.gpus_used * s.secs) / 3600 AS gpu_hours,
           sum(u.gpus_borrowed * s.secs) / 3600 AS borrowed
      FROM buckets u
     CROSS JOIN LATERAL (SELECT extract(epoch FROM least(u.bucket_start + interval '10 minutes', pg_catalog.now())
                                                   - u.bucket_start) AS secs) s
     GROUP BY u.bucket_start::date, u.queue, u.owner
), evs AS (
    SELECT l.at::date AS day, l.queue, l.owner, count(*) AS suffered, sum(l.gpu_hours_lost) AS lost
      FROM b, tide.eviction_log l
     WHERE l.at >= b.lo AND l.at < b.hi AND l.goal <> 'cancel'
     GROUP BY GROUPING SETS ((l.at::date, l.queue), (l.at::date, l.queue, l.owner))
), caused AS (
    SELECT l.at::date AS day, l.preemptor_queue AS queue, l.preemptor_owner AS owner, count(*) AS caused
      FROM b, tide.eviction_log l
     WHERE l.at >= b.lo AND l.at < b.hi AND l.goal <> 'cancel' AND l.preemptor_queue IS NOT NULL
     GROUP BY GROUPING SETS ((l.at::date, l.preemptor_queue), (l.at::date, l.preemptor_queue, l.preemptor_owner))
), keys AS (
    SELECT c.day, c.queue, c.owner FROM counts c
    UNION SELECT u.day, u.queue, u.owner FROM use u
    UNION SELECT e.day, e.queue, e.owner FROM evs e
    UNION SELECT c.day, c.queue, c.owner FROM caused c
)
SELECT k.day, k.queue, k.owner,
       coalesce(c.submitted, 0), coalesce(w.placed, 0), coalesce(c.started, 0),
       coalesce(c.succeeded, 0), coalesce(c.failed, 0), coalesce(c.cancelled, 0),
       w.mean, w.p50, w.p95, w.p99, w.mx,
       round(coalesce(u.gpu_hours, 0), 3), round(coalesce(u.borrowed, 0), 3), round(coalesce(e.lost, 0), 3),
       coalesce(e.suffered, 0), coalesce(x.caused, 0)
  FROM keys k
  LEFT JOIN counts c ON (c.day, c.queue) = (k.day, k.queue) AND c.owner IS NOT DISTINCT FROM k.owner
  LEFT JOIN waits w ON (w.day, w.queue) = (k.day, k.queue) AND w.owner IS NOT DISTINCT FROM k.owner
  LEFT JOIN use u ON (u.day, u.queue) = (k.day, k.queue) AND u.owner IS NOT DISTINCT FROM k.owner
  LEFT JOIN evs e ON (e.day, e.queue) = (k.day, k.queue) AND e.owner IS NOT DISTINCT FROM k.owner
  LEFT JOIN caused x ON (x.day, x.queue) = (k.day, k.queue) AND x.owner IS NOT DISTINCT FROM k.owner
$$;
COMMENT ON FUNCTION tide.queue_accounting_raw(date, date) IS
    'per UTC day, queue and owner (NULL owner: queue total), computed from the raw history: jobs submitted, placed, started, finished by outcome, wait statistics (seconds), GPU-hours used and borrowed above quota, GPU-hours lost to evictions, evictions suffered and caused';

CREATE TABLE tide.accounting_daily (
    day                date NOT NULL,
    queue              text NOT NULL,
    owner              text,
    jobs_submitted     bigint NOT NULL,
    jobs_placed        bigint NOT NULL,
    jobs_started       bigint NOT NULL,
    jobs_succeeded     bigint NOT NULL,
    jobs_failed        bigint NOT NULL,
    jobs_cancelled     bigint NOT NULL,
    wait_mean          double precision,
    wait_p50           double precision,
    wait_p95           double precision,
    wait_p99           double precision,
    wait_max           double precision,
    gpu_hours          numeric NOT NULL,
    borrowed_gpu_hours numeric NOT NULL,
    lost_gpu_hours     numeric NOT NULL,
    evictions_suffered bigint NOT NULL,
    evictions_caused   bigint NOT NULL
);
CREATE UNIQUE INDEX accounting_daily_key ON tide.accounting_daily (day, queue, coalesce(owner, ''));
CREATE INDEX accounting_daily_owner_idx ON tide.accounting_daily (owner, day) WHERE owner IS NOT NULL;
COMMENT ON TABLE tide.accounting_daily IS
    'finished UTC days of tide.queue_accounting_raw, rolled up by tide.maintain_history and kept after the raw history is gone; read through tide.queue_accounting';
SELECT pg_catalog.pg_extension_config_dump('tide.accounting_daily', '');

-- ---------------------------------------------------------------- per node and day
-- GPU-hours of capacity (nodes not down, as they were), allocated, idle
-- (capacity - allocated) and fragmented (from tide.node_samples: each
-- sample counts until the next one, at most an hour).
CREATE FUNCTION tide.node_accounting_raw(d0 date, d1 date)
    RETURNS TABLE (day date, node text, resource_group text, gpu_type text,
                   capacity_gpu_hours numeric, allocated_gpu_hours numeric,
                   idle_gpu_hours numeric, fragmented_gpu_hours numeric)
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    -- generate_series is costed at 1000 rows: JIT would compile for seconds
    SET jit = off
    SET timezone = 'UTC'
    AS $$
WITH b AS (
    SELECT d0::timestamptz AS lo, least((d1 + 1)::timestamptz, pg_catalog.now()) AS hi
), days AS (
    SELECT dd::date AS day, dd AS s, least(dd + interval '1 day', b.hi) AS e
      FROM b, pg_catalog.generate_series(b.lo, b.hi - interval '1 microsecond', interval '1 day') dd
), cap AS (
    SELECT d.day, c.node, max(c.resource_group) AS rg, max(c.gpu_type) AS gt,
           sum(c.gpus * extract(epoch FROM least(coalesce(c.valid_to, d.e), d.e) - greatest(c.valid_from, d.s))) / 3600 AS h
      FROM days d JOIN tide.node_capacity_history c
        ON c.valid_from < d.e AND (c.valid_to IS NULL OR c.valid_to > d.s)
     WHERE c.state <> 'down'
     GROUP BY d.day, c.node
), alloc AS (
    SELECT d.day, a.node,
           sum(tide._gpus_held(a.gpus, a.gpu_milli)
               * extract(epoch FROM least(coalesce(a.released_at, d.e), d.e) - greatest(a.created_at, d.s))) / 3600 AS h
      FROM days d JOIN tide.allocations_all a
        ON a.created_at < d.e AND (a.released_at IS NULL OR a.released_at > d.s)
     WHERE a.gpu_milli IS NOT NULL OR tide.gpu_count(a.gpus) > 0
     GROUP BY d.day, a.node
), frag AS (
    SELECT d.day, s.node,
           sum(s.gpus_fragmented * extract(epoch FROM least(s.nxt, s.at + interval '1 hour', d.e) - s.at)) / 3600 AS h
      FROM days d
      JOIN (SELECT x.*, coalesce(lead(x.at) OVER (PARTITION BY x.node ORDER BY x.at), pg_catalog.now()) AS nxt
              FROM tide.node_samples x, b WHERE x.at >= b.lo - interval '1 hour' AND x.at < b.hi) s
        ON s.at >= d.s AND s.at < d.e
     GROUP BY d.day, s.node
)
SELECT c.day, c.node, c.rg, c.gt, round(c.h, 3), round(coalesce(a.h, 0), 3),
       round(greatest(c.h - coalesce(a.h, 0), 0), 3), round(coalesce(f.h, 0), 3)
  FROM cap c
  LEFT JOIN alloc a ON a.day = c.day AND a.node = c.node
  LEFT JOIN frag f ON f.day = c.day AND f.node = c.node
 WHERE c.h > 0
$$;
COMMENT ON FUNCTION tide.node_accounting_raw(date, date) IS
    'per UTC day and GPU node, from the raw history: GPU-hours of capacity (as it was, nodes not down), allocated, idle and fragmented (sampled)';

CREATE TABLE tide.node_daily (
    day                  date NOT NULL,
    node                 text NOT NULL,
    resource_group       text,
    gpu_type             text,
    capacity_gpu_hours   numeric NOT NULL,
    allocated_gpu_hours  numeric NOT NULL,
    idle_gpu_hours       numeric NOT NULL,
    fragmented_gpu_hours numeric NOT NULL,
    PRIMARY KEY (day, node)
);
COMMENT ON TABLE tide.node_daily IS
    'finished UTC days of tide.node_accounting_raw, rolled up by tide.maintain_history; read through tide.node_accounting';
SELECT pg_catalog.pg_extension_config_dump('tide.node_daily', '');

-- Roll up every finished day (ended at least 5 minutes ago, so that the
-- transactions of its last moments have committed) not rolled up yet,
-- from the oldest day with history.  Returns the days rolled up.
CREATE FUNCTION tide._rollup_days() RETURNS integer
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    -- generate_series is costed at 1000 rows: JIT would compile for seconds
    SET jit = off
    SET timezone = 'UTC'
    AS $$
DECLARE
    last_done date;
    first_day date;
    last_day date := ((pg_catalog.now() - interval '5 minutes')::date) - 1;
BEGIN
    PERFORM tide._sample_nodes();
    PERFORM tide._rollup_buckets();
    SELECT max(x.day) INTO last_done FROM tide.accounting_daily x;
    IF last_done IS NULL THEN
        SELECT least((SELECT min(e.at) FROM tide.job_events e),
                     (SELECT min(c.valid_from) FROM tide.node_capacity_history c))::date INTO first_day;
    ELSE
        first_day := last_done + 1;
    END IF;
    first_day := greatest(first_day, last_day - 400);
    IF first_day IS NULL OR first_day > last_day THEN
        RETURN 0;
    END IF;
    DELETE FROM tide.accounting_daily x WHERE x.day BETWEEN first_day AND last_day;
    INSERT INTO tide.accounting_daily SELECT * FROM tide.queue_accounting_raw(first_day, last_day);
    DELETE FROM tide.node_daily x WHERE x.day BETWEEN first_day AND last_day;
    INSERT INTO tide.node_daily SELECT * FROM tide.node_accounting_raw(first_day, last_day);
    -- a day without any queue activity still counts as rolled up
    INSERT INTO tide.accounting_daily (day, queue, owner, jobs_submitted, jobs_placed, jobs_started, jobs_succeeded,
                                       jobs_failed, jobs_cancelled, gpu_hours, borrowed_gpu_hours, lost_gpu_hours,
                                       evictions_suffered, evictions_caused)
    SELECT last_day, '', NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
     WHERE NOT EXISTS (SELECT 1 FROM tide.accounting_daily x WHERE x.day = last_day);
    RETURN last_day - first_day + 1;
END
$$;
COMMENT ON FUNCTION tide._rollup_days() IS
    'samples node fragmentation, then rolls up the finished UTC days not in tide.accounting_daily and tide.node_daily yet; returns how many days';
REVOKE ALL ON FUNCTION tide._rollup_days(), tide._sample_nodes() FROM PUBLIC;

-- The views read the rollups only: a year of them answers in milliseconds,
-- while the raw history of one busy day takes a minute to add up
-- (docs/benchmarks.md).  The day in progress: tide.queue_accounting_raw and
-- tide.node_accounting_raw.
CREATE VIEW tide.queue_accounting WITH (security_invoker = true) AS
SELECT a.* FROM tide.accounting_daily a WHERE a.queue <> '';
COMMENT ON VIEW tide.queue_accounting IS
    'per finished UTC day (rolled up by tide.maintain_history), queue and owner (NULL owner: the queue''s total): jobs submitted, placed, started, succeeded, failed, cancelled; mean, p50, p95, p99 and max wait in seconds; GPU-hours used, borrowed above quota and lost to evictions; evictions suffered and caused (sacct/sreport); today: tide.queue_accounting_raw';
CREATE VIEW tide.node_accounting WITH (security_invoker = true) AS
SELECT a.* FROM tide.node_daily a;
COMMENT ON VIEW tide.node_accounting IS
    'per finished UTC day (rolled up by tide.maintain_history) and GPU node: GPU-hours of capacity (as it was then, nodes not down), allocated, idle and fragmented (free GPUs no pending request could use, sampled by tide.maintain_history); today: tide.node_accounting_raw';
GRANT SELECT ON tide.accounting_daily, tide.node_daily, tide.queue_accounting, tide.node_accounting TO tide_admin, tide_reader;
REVOKE ALL ON FUNCTION tide.queue_accounting_raw(date, date), tide.node_accounting_raw(date, date) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide.queue_accounting_raw(date, date), tide.node_accounting_raw(date, date) TO tide_admin, tide_reader;
