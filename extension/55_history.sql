-- History for analysts: how long jobs waited, how busy the GPUs were.
-- Everything here is derived from the append-only tide.job_events and from
-- tide.allocations; nothing new is stored.  Views are security_invoker and
-- functions SECURITY INVOKER, so row-level security decides what a caller
-- sees (a submitter: its own jobs; readers and admins: all).

-- The archive: finished jobs leave the hot tables for these after
-- tide.archive_after (tide.maintain_history, 80_history_partitions.sql).
-- The views below read the hot tables and the archive together.
-- The archive tables take the columns of their hot tables as they are when
-- the extension is created, plus what partitions and filters them: the
-- job's finish time (job_finished_at; for jobs it is finished_at itself)
-- and, for the tables that hang off a job, its owner (row-level security).
-- Their indexes are on the default partitions, which every partition
-- copies (see tide.cycles in 20_tables.sql for why not on the parents).
CREATE TABLE tide.jobs_archive (LIKE tide.jobs, archived_at timestamptz NOT NULL DEFAULT pg_catalog.now())
    PARTITION BY RANGE (finished_at);
ALTER TABLE tide.jobs_archive ALTER COLUMN finished_at SET NOT NULL;
CREATE TABLE tide.jobs_archive_default PARTITION OF tide.jobs_archive DEFAULT;
CREATE INDEX jobs_archive_id_idx ON tide.jobs_archive_default (id);
CREATE INDEX jobs_archive_queue_idx ON tide.jobs_archive_default (queue, finished_at);
CREATE INDEX jobs_archive_owner_idx ON tide.jobs_archive_default (owner, id);
COMMENT ON TABLE tide.jobs_archive IS
    'finished jobs moved out of tide.jobs by tide.maintain_history after tide.archive_after; partitioned by month of finish; tide.jobs_all reads both';
COMMENT ON TABLE tide.jobs_archive_default IS 'archived jobs no monthly partition covers yet';

CREATE TABLE tide.job_tasks_archive (LIKE tide.job_tasks, owner text NOT NULL, job_finished_at timestamptz NOT NULL)
    PARTITION BY RANGE (job_finished_at);
CREATE TABLE tide.job_tasks_archive_default PARTITION OF tide.job_tasks_archive DEFAULT;
CREATE INDEX job_tasks_archive_job_idx ON tide.job_tasks_archive_default (job_id);
COMMENT ON TABLE tide.job_tasks_archive IS 'the tasks of archived jobs (see tide.jobs_archive)';
COMMENT ON TABLE tide.job_tasks_archive_default IS 'archived tasks no monthly partition covers yet';

CREATE TABLE tide.allocations_archive (LIKE tide.allocations, owner text NOT NULL, job_finished_at timestamptz NOT NULL)
    PARTITION BY RANGE (job_finished_at);
CREATE TABLE tide.allocations_archive_default PARTITION OF tide.allocations_archive DEFAULT;
CREATE INDEX allocations_archive_job_idx ON tide.allocations_archive_default (job_id);
CREATE INDEX allocations_archive_time_idx ON tide.allocations_archive_default (created_at);
COMMENT ON TABLE tide.allocations_archive IS 'the allocations of archived jobs (see tide.jobs_archive)';
COMMENT ON TABLE tide.allocations_archive_default IS 'archived allocations no monthly partition covers yet';

CREATE TABLE tide.evictions_archive (LIKE tide.evictions, owner text NOT NULL, job_finished_at timestamptz NOT NULL)
    PARTITION BY RANGE (job_finished_at);
CREATE TABLE tide.evictions_archive_default PARTITION OF tide.evictions_archive DEFAULT;
CREATE INDEX evictions_archive_job_idx ON tide.evictions_archive_default (job_id);
CREATE INDEX evictions_archive_time_idx ON tide.evictions_archive_default (created_at);
COMMENT ON TABLE tide.evictions_archive IS 'the evictions suffered by archived jobs (see tide.jobs_archive)';
COMMENT ON TABLE tide.evictions_archive_default IS 'archived evictions no monthly partition covers yet';

ALTER TABLE tide.jobs_archive ENABLE ROW LEVEL SECURITY;
ALTER TABLE tide.job_tasks_archive ENABLE ROW LEVEL SECURITY;
ALTER TABLE tide.allocations_archive ENABLE ROW LEVEL SECURITY;
ALTER TABLE tide.evictions_archive ENABLE ROW LEVEL SECURITY;
DO $policies$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['jobs_archive', 'job_tasks_archive', 'allocations_archive', 'evictions_archive'] LOOP
        EXECUTE pg_catalog.format('CREATE POLICY admin_all ON tide.%I TO tide_admin USING (true) WITH CHECK (true)', t);
        EXECUTE pg_catalog.format('CREATE POLICY reader_all ON tide.%I FOR SELECT TO tide_reader USING (true)', t);
        EXECUTE pg_catalog.format('CREATE POLICY submitter_own ON tide.%I FOR SELECT TO tide_submitter USING (owner = CURRENT_USER)', t);
        EXECUTE pg_catalog.format('GRANT SELECT ON tide.%I TO tide_admin, tide_reader, tide_submitter', t);
    END LOOP;
END
$policies$;
-- A submitter keeps seeing the events of its jobs once they are archived.
CREATE POLICY submitter_archived ON tide.job_events FOR SELECT TO tide_submitter
    USING (EXISTS (SELECT 1 FROM tide.jobs_archive j WHERE j.id = job_id AND j.owner = CURRENT_USER));

SELECT pg_catalog.pg_extension_config_dump('tide.jobs_archive_default', '');
SELECT pg_catalog.pg_extension_config_dump('tide.job_tasks_archive_default', '');
SELECT pg_catalog.pg_extension_config_dump('tide.allocations_archive_default', '');
SELECT pg_catalog.pg_extension_config_dump('tide.evictions_archive_default', '');

-- Views over the hot table and its archive, with the hot table's columns
-- (whatever they are when the extension is created) and `archived`.
DO $views$
DECLARE
    t text;
    cols text;
BEGIN
    FOREACH t IN ARRAY ARRAY['jobs', 'job_tasks', 'allocations', 'evictions'] LOOP
        SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO cols
          FROM pg_catalog.pg_attribute a
         WHERE a.attrelid = pg_catalog.format('tide.%I', t)::regclass AND a.attnum > 0 AND NOT a.attisdropped;
        EXECUTE pg_catalog.format(
            'CREATE VIEW tide.%I WITH (security_invoker = true) AS '
            'SELECT %s, false AS archived FROM tide.%I UNION ALL SELECT %s, true FROM tide.%I',
            t || '_all', cols, t, cols, t || '_archive');
        EXECUTE pg_catalog.format(
            'COMMENT ON VIEW tide.%I IS %L', t || '_all',
            pg_catalog.format('tide.%s and tide.%s_archive together (archived tells which); what a caller sees follows row-level security', t, t));
        EXECUTE pg_catalog.format('GRANT SELECT ON tide.%I TO tide_admin, tide_reader, tide_submitter', t || '_all');
    END LOOP;
END
$views$;

-- Deleting a job deletes its events (tide._jobs_after_delete); archiving
-- deletes the job from the hot table but keeps its history.  The WHEN
-- clause costs nothing to other deletes.
CREATE FUNCTION tide._job_events_keep() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$ BEGIN RETURN NULL; END $$;
COMMENT ON FUNCTION tide._job_events_keep() IS
    'trigger: keeps the events of jobs being archived (tide.archiving is on only inside tide.maintain_history)';
CREATE TRIGGER job_events_keep_archived BEFORE DELETE ON tide.job_events
    FOR EACH ROW WHEN (pg_catalog.current_setting('tide.archiving', true) = 'on')
    EXECUTE FUNCTION tide._job_events_keep();

-- ---------------------------------------------------------------- waits
-- One row per job: when it was submitted, first placed, started, finished,
-- and how long each step took.  A requeued job (R-E5) keeps its first
-- placement here; tide.job_events has every step.
CREATE VIEW tide.job_waits WITH (security_invoker = true) AS
SELECT j.id AS job_id,
       j.name,
       j.queue,
       j.owner,
       j.priority,
       j.idle,
       j.retry_of,
       j.state,
       e.submitted_at,
       e.placed_at,
       e.running_at,
       e.finished_at,
       coalesce(e.placed_at, pg_catalog.now()) - e.submitted_at AS wait,
       e.finished_at - e.running_at AS run_time,
       e.placements,
       e.evictions
  FROM tide.jobs_all j
  JOIN LATERAL (
        SELECT min(ev.at) AS submitted_at,
               min(ev.at) FILTER (WHERE ev.new_state = 'allocated') AS placed_at,
               min(ev.at) FILTER (WHERE ev.new_state = 'running') AS running_at,
               max(ev.at) FILTER (WHERE ev.new_state IN ('succeeded', 'failed', 'cancelled')) AS finished_at,
               count(*) FILTER (WHERE ev.new_state = 'allocated') AS placements,
               count(*) FILTER (WHERE ev.new_state = 'evicting') AS evictions
          FROM tide.job_events ev
         WHERE ev.job_id = j.id) e ON true;
COMMENT ON VIEW tide.job_waits IS
    'one row per job: submitted, first placed, first running and finished times from tide.job_events, the wait until first placement (still growing while pending), run time, and how often it was placed and evicted';

-- The window [since, until) of a history function: both given and since
-- first.  A reversed window is refused, not swapped: since and until name
-- their ends, and arguments given the wrong way round are more likely a
-- mistake (a sign, an interval subtracted twice) than a question.
CREATE FUNCTION tide._check_window(since timestamptz, until timestamptz) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF since IS NULL OR until IS NULL THEN
        RAISE EXCEPTION '% must not be NULL', CASE WHEN since IS NULL THEN 'since' ELSE 'until' END
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Leave it out for its default (since: a day ago, until: now).';
    END IF;
    IF until < since THEN
        RAISE EXCEPTION 'the window [%, %) is empty: since is later than until', since, until
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass since < until (swap the two).';
    END IF;
    IF until = since THEN
        RAISE EXCEPTION 'the window [%, %) is empty', since, until
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass since < until.';
    END IF;
    RETURN true;
END
$$;
COMMENT ON FUNCTION tide._check_window(timestamptz, timestamptz) IS
    'refuses the window [since, until) of a history function unless both are given and since < until (a reversed window is refused, not swapped)';

-- Waits per queue over the jobs first placed in a window.  A job still
-- pending counts in pending_now with its wait so far, not in the
-- percentiles (those describe jobs that got resources).
CREATE FUNCTION tide.wait_stats(since timestamptz DEFAULT pg_catalog.now() - interval '1 day',
                                until timestamptz DEFAULT pg_catalog.now())
    RETURNS TABLE (queue text, jobs_placed bigint, mean_wait interval, p50_wait interval,
                   p99_wait interval, max_wait interval, pending_now bigint, longest_pending interval)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
#variable_conflict use_column
DECLARE
    ok boolean := tide._check_window(since, until);
BEGIN
    RETURN QUERY
WITH placed AS (
    SELECT w.queue, extract(epoch FROM w.wait) AS s
      FROM tide.job_waits w
     WHERE w.placed_at >= since AND w.placed_at < until
), waiting AS (
    SELECT w.queue, count(*) AS n, max(w.wait) AS longest
      FROM tide.job_waits w
     WHERE w.state = 'pending'
     GROUP BY w.queue
)
SELECT q.name,
       coalesce(p.n, 0),
       p.mean * interval '1 second',
       p.p50 * interval '1 second',
       p.p99 * interval '1 second',
       p.mx * interval '1 second',
       coalesce(wt.n, 0),
       wt.longest
  FROM tide.queues q
  LEFT JOIN (SELECT placed.queue, count(*) AS n, avg(s) AS mean,
                    percentile_cont(0.5) WITHIN GROUP (ORDER BY s) AS p50,
                    percentile_cont(0.99) WITHIN GROUP (ORDER BY s) AS p99,
                    max(s) AS mx
               FROM placed GROUP BY placed.queue) p ON p.queue = q.name
  LEFT JOIN waiting wt ON wt.queue = q.name
 ORDER BY q.name;
END
$$;
COMMENT ON FUNCTION tide.wait_stats(timestamptz, timestamptz) IS
    'per queue: jobs first placed in [since, until) with mean, median, p99 and longest wait, plus how many wait right now and the longest of those; a reversed window is refused';

-- GPU utilisation in time buckets: the share of the GPUs of non-down nodes
-- held by live allocations (from creation until release: a held GPU is
-- unavailable to others whether or not its process has started yet).
-- A fractional allocation counts its share.  The denominator is today's
-- GPU capacity: nodes' past capacities are not kept.
CREATE FUNCTION tide.gpu_utilisation(since timestamptz DEFAULT pg_catalog.now() - interval '1 hour',
                                     until timestamptz DEFAULT pg_catalog.now(),
                                     bucket interval DEFAULT interval '1 minute',
                                     resource_group text DEFAULT NULL)
    RETURNS TABLE (bucket_start timestamptz, gpus_total numeric, gpus_allocated numeric, utilisation numeric)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    ok boolean;
BEGIN
    IF bucket IS NULL OR bucket <= interval '0' THEN
        RAISE EXCEPTION 'bucket must be a positive interval, not %', coalesce(bucket::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    ok := tide._check_window(since, until);
    IF (extract(epoch FROM until - since) / extract(epoch FROM bucket)) > 100000 THEN
        RAISE EXCEPTION 'the window holds more than 100000 buckets of %', bucket
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'Use a larger bucket or a shorter window.';
    END IF;
    RETURN QUERY
    WITH buckets AS (
        SELECT b AS lo, least(b + bucket, until) AS hi
          FROM generate_series(since, until - interval '1 microsecond', bucket) b
    ), total AS (
        SELECT coalesce(sum(tide.get(n.capacity, 'gpu')), 0) AS gpus
          FROM tide.nodes n
         WHERE n.state <> 'down'
           AND (gpu_utilisation.resource_group IS NULL OR n.resource_group = gpu_utilisation.resource_group)
    ), held AS (
        SELECT a.created_at AS lo, coalesce(a.released_at, 'infinity'::timestamptz) AS hi,
               CASE WHEN a.gpu_milli IS NOT NULL THEN a.gpu_milli / 1000.0
                    ELSE tide.gpu_count(a.gpus)::numeric END AS gpus
          FROM tide.allocations_all a
          JOIN tide.nodes n ON n.name = a.node
         WHERE a.created_at < until
           AND (a.released_at IS NULL OR a.released_at > since)
           AND tide.gpu_count(a.gpus) > 0
           AND (gpu_utilisation.resource_group IS NULL OR n.resource_group = gpu_utilisation.resource_group)
    )
    SELECT bk.lo,
           t.gpus,
           round(coalesce(sum(h.gpus * extract(epoch FROM least(h.hi, bk.hi) - greatest(h.lo, bk.lo)))
                          / extract(epoch FROM bk.hi - bk.lo), 0), 3),
           CASE WHEN t.gpus > 0 THEN
               round(coalesce(sum(h.gpus * extract(epoch FROM least(h.hi, bk.hi) - greatest(h.lo, bk.lo)))
                              / extract(epoch FROM bk.hi - bk.lo), 0) / t.gpus, 4)
           END
      FROM buckets bk
     CROSS JOIN total t
      LEFT JOIN held h ON h.lo < bk.hi AND h.hi > bk.lo
     GROUP BY bk.lo, bk.hi, t.gpus
     ORDER BY bk.lo;
END
$$;
COMMENT ON FUNCTION tide.gpu_utilisation(timestamptz, timestamptz, interval, text) IS
    'GPUs held by live allocations per time bucket (time-weighted mean, fractional shares counted), against the GPUs of nodes not down today, optionally for one resource group';

-- The functions stay executable by PUBLIC: they read through the caller's
-- own privileges and row-level security.
GRANT SELECT ON tide.job_waits TO tide_admin, tide_reader, tide_submitter;
