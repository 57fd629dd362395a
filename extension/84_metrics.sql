-- Metrics for operators: tide.metrics (one row per metric and label set)
-- and tide.metrics_prometheus() (the same in the Prometheus text format,
-- for a scrape through any SQL exporter or a tiny HTTP wrapper).  Gauges
-- describe now; the *_total counters come from the identity sequences (the
-- jobs submitted: from the jobs and tide.jobs_removed), so they keep
-- counting when old history is dropped.  Operators' numbers:
-- the view runs with its owner's rights (row-level security does not cut
-- them down) and is granted to tide_admin and tide_reader only.

-- Jobs that left tide.jobs, archived or deleted, one row per statement
-- that removed some.  tide_jobs_submitted_total is these plus the jobs in
-- tide.jobs: it counts the jobs made, where the identity sequence also
-- counts the values that refused inserts drew, and it keeps counting when
-- the archive is dropped.  Written only by deletes (archiving runs in
-- batches), never by a submission: no row that every submit would lock.
CREATE TABLE tide.jobs_removed (
    at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    jobs bigint NOT NULL CONSTRAINT jobs_removed_jobs_check CHECK (jobs > 0)
);
COMMENT ON TABLE tide.jobs_removed IS
    'jobs that left tide.jobs (archived or deleted), one row per statement that removed some: with the jobs still in tide.jobs, the jobs ever submitted (tide_jobs_submitted_total)';
SELECT pg_catalog.pg_extension_config_dump('tide.jobs_removed', '');
GRANT SELECT ON tide.jobs_removed TO tide_admin, tide_reader;

CREATE FUNCTION tide._count_removed_jobs() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    INSERT INTO tide.jobs_removed (jobs) SELECT count(*) FROM old_jobs HAVING count(*) > 0;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION tide._count_removed_jobs() IS
    'statement trigger: records how many jobs a delete from tide.jobs removed (tide.jobs_removed), so that the submission counter does not go down';
REVOKE ALL ON FUNCTION tide._count_removed_jobs() FROM PUBLIC;
CREATE TRIGGER jobs_count_removed AFTER DELETE ON tide.jobs
    REFERENCING OLD TABLE AS old_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION tide._count_removed_jobs();

CREATE VIEW tide.metrics WITH (security_barrier = true) AS
WITH jobs AS (
    SELECT j.queue,
           count(*) FILTER (WHERE j.state = 'pending') AS pending,
           count(*) FILTER (WHERE j.state IN ('allocated', 'running')) AS running,
           count(*) FILTER (WHERE j.state = 'evicting') AS evicting,
           count(*) FILTER (WHERE j.state = 'pending' AND j.unschedulable) AS unschedulable,
           min(j.created_at) FILTER (WHERE j.state = 'pending') AS oldest_pending
      FROM tide.jobs j
     WHERE j.state IN ('pending', 'allocated', 'running', 'evicting')
     GROUP BY j.queue
), frag AS (
    SELECT f.resource_group, coalesce(f.gpu_type, '') AS gpu_type,
           sum(f.gpus) AS total, sum(f.gpus_held) AS held,
           sum(f.gpus_free) FILTER (WHERE f.state = 'ready') AS free,
           sum(f.gpus_fragmented) AS fragmented
      FROM tide.node_fragmentation() f
     WHERE f.state <> 'down'
     GROUP BY f.resource_group, coalesce(f.gpu_type, '')
), last_cycle AS (
    SELECT c.* FROM tide.cycles c WHERE c.finished_at IS NOT NULL ORDER BY c.started_at DESC LIMIT 1
), recent AS (
    SELECT count(*) AS n, avg(extract(epoch FROM c.finished_at - c.started_at)) AS mean,
           max(extract(epoch FROM c.finished_at - c.started_at)) AS mx
      FROM tide.cycles c
     WHERE c.started_at > pg_catalog.now() - interval '5 minutes' AND c.finished_at IS NOT NULL
)
SELECT m.name, m.labels, m.value::double precision AS value
  FROM (
    SELECT 'tide_jobs_pending' AS name, pg_catalog.jsonb_build_object('queue', q.name) AS labels, coalesce(j.pending, 0)::numeric AS value
      FROM tide.queues q LEFT JOIN jobs j ON j.queue = q.name
    UNION ALL
    SELECT 'tide_jobs_running', pg_catalog.jsonb_build_object('queue', q.name), coalesce(j.running, 0)
      FROM tide.queues q LEFT JOIN jobs j ON j.queue = q.name
    UNION ALL
    SELECT 'tide_jobs_evicting', pg_catalog.jsonb_build_object('queue', q.name), coalesce(j.evicting, 0)
      FROM tide.queues q LEFT JOIN jobs j ON j.queue = q.name
    UNION ALL
    SELECT 'tide_jobs_unschedulable', pg_catalog.jsonb_build_object('queue', q.name), coalesce(j.unschedulable, 0)
      FROM tide.queues q LEFT JOIN jobs j ON j.queue = q.name
    UNION ALL
    SELECT 'tide_oldest_pending_seconds', pg_catalog.jsonb_build_object('queue', q.name),
           coalesce(extract(epoch FROM pg_catalog.now() - j.oldest_pending), 0)
      FROM tide.queues q LEFT JOIN jobs j ON j.queue = q.name
    UNION ALL
    SELECT 'tide_queue_gpus_used', pg_catalog.jsonb_build_object('queue', u.queue), tide.get(u.usage, 'gpu')
      FROM tide.queue_usage u
    UNION ALL
    SELECT 'tide_queue_gpus_borrowed', pg_catalog.jsonb_build_object('queue', u.queue), tide.get(u.borrowed, 'gpu')
      FROM tide.queue_usage u
    UNION ALL
    SELECT 'tide_queue_gpus_quota', pg_catalog.jsonb_build_object('queue', u.queue), tide.get(u.quota, 'gpu')
      FROM tide.queue_usage u WHERE u.quota IS NOT NULL
    UNION ALL
    SELECT 'tide_gpus_total', pg_catalog.jsonb_build_object('resource_group', f.resource_group, 'gpu_type', f.gpu_type), f.total FROM frag f
    UNION ALL
    SELECT 'tide_gpus_allocated', pg_catalog.jsonb_build_object('resource_group', f.resource_group, 'gpu_type', f.gpu_type), f.held FROM frag f
    UNION ALL
    SELECT 'tide_gpus_free', pg_catalog.jsonb_build_object('resource_group', f.resource_group, 'gpu_type', f.gpu_type), coalesce(f.free, 0) FROM frag f
    UNION ALL
    SELECT 'tide_gpus_fragmented', pg_catalog.jsonb_build_object('resource_group', f.resource_group, 'gpu_type', f.gpu_type), f.fragmented FROM frag f
    UNION ALL
    SELECT 'tide_nodes', pg_catalog.jsonb_build_object('state', s.state), count(n.name)
      FROM (VALUES ('ready'), ('draining'), ('down')) s(state)
      LEFT JOIN tide.nodes n ON n.state = s.state
     GROUP BY s.state
    UNION ALL
    SELECT 'tide_last_cycle_duration_seconds', pg_catalog.jsonb_build_object('phase', p.phase), p.seconds
      FROM last_cycle c
     CROSS JOIN LATERAL (VALUES ('total', extract(epoch FROM c.finished_at - c.started_at)),
                                ('load', (c.load_ms / 1000)::numeric), ('decide', (c.decide_ms / 1000)::numeric),
                                ('write', (c.write_ms / 1000)::numeric)) p(phase, seconds)
     WHERE p.seconds IS NOT NULL
    UNION ALL
    SELECT 'tide_last_cycle_jobs', pg_catalog.jsonb_build_object('outcome', p.outcome), p.n
      FROM last_cycle c
     CROSS JOIN LATERAL (VALUES ('considered', c.jobs_considered), ('placed', c.jobs_placed), ('evicted', c.jobs_evicted),
                                ('unschedulable', c.jobs_unschedulable)) p(outcome, n)
    UNION ALL
    SELECT 'tide_last_cycle_age_seconds', '{}'::jsonb, extract(epoch FROM pg_catalog.now() - c.finished_at) FROM last_cycle c
    UNION ALL
    SELECT 'tide_cycles_5m', '{}'::jsonb, r.n FROM recent r
    UNION ALL
    SELECT 'tide_cycle_duration_5m_seconds', pg_catalog.jsonb_build_object('stat', 'mean'), r.mean FROM recent r WHERE r.n > 0
    UNION ALL
    SELECT 'tide_cycle_duration_5m_seconds', pg_catalog.jsonb_build_object('stat', 'max'), r.mx FROM recent r WHERE r.n > 0
    UNION ALL
    SELECT 'tide_cycles_total', '{}'::jsonb, coalesce(pg_catalog.pg_sequence_last_value('tide.cycles_id_seq'), 0)
    UNION ALL
    SELECT 'tide_allocations_total', '{}'::jsonb, coalesce(pg_catalog.pg_sequence_last_value('tide.allocations_id_seq'), 0)
    UNION ALL
    SELECT 'tide_evictions_total', '{}'::jsonb, coalesce(pg_catalog.pg_sequence_last_value('tide.evictions_id_seq'), 0)
    UNION ALL
    SELECT 'tide_jobs_submitted_total', '{}'::jsonb,
           (SELECT count(*) FROM tide.jobs) + (SELECT coalesce(sum(r.jobs), 0) FROM tide.jobs_removed r)
  ) m;
COMMENT ON VIEW tide.metrics IS
    'operator metrics, one row per name and label set (Prometheus names): jobs pending, running, evicting, unschedulable and the oldest pending age per queue; quota, use and borrowing per queue; GPUs total, allocated, free and fragmented per resource group and GPU type; nodes per state; the last cycle''s phases and outcomes; counters of cycles, allocations, evictions, jobs';
GRANT SELECT ON tide.metrics TO tide_admin, tide_reader;

CREATE FUNCTION tide._metric_help(OUT name text, OUT kind text, OUT help text)
    RETURNS SETOF record
    LANGUAGE sql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
VALUES ('tide_jobs_pending', 'gauge', 'Jobs waiting to be placed.'),
       ('tide_jobs_running', 'gauge', 'Jobs placed (allocated or running).'),
       ('tide_jobs_evicting', 'gauge', 'Jobs being evicted.'),
       ('tide_jobs_unschedulable', 'gauge', 'Pending jobs that can never fit as things stand (R-A2).'),
       ('tide_oldest_pending_seconds', 'gauge', 'Age of the oldest pending job.'),
       ('tide_queue_gpus_used', 'gauge', 'GPUs held by the queue''s non-idle jobs.'),
       ('tide_queue_gpus_borrowed', 'gauge', 'GPUs the queue holds above its quota.'),
       ('tide_queue_gpus_quota', 'gauge', 'GPUs the queue''s quota guarantees.'),
       ('tide_gpus_total', 'gauge', 'GPUs of nodes that are not down.'),
       ('tide_gpus_allocated', 'gauge', 'GPUs held by live allocations (fractional shares counted).'),
       ('tide_gpus_free', 'gauge', 'Whole GPUs no allocation holds on ready nodes.'),
       ('tide_gpus_fragmented', 'gauge', 'Free GPUs no pending request could use.'),
       ('tide_nodes', 'gauge', 'Nodes per state.'),
       ('tide_last_cycle_duration_seconds', 'gauge', 'Duration of the latest finished cycle and of its phases.'),
       ('tide_last_cycle_jobs', 'gauge', 'Jobs the latest finished cycle considered, placed, evicted, found unschedulable.'),
       ('tide_last_cycle_age_seconds', 'gauge', 'Time since the latest cycle finished.'),
       ('tide_cycles_5m', 'gauge', 'Cycles finished in the last 5 minutes.'),
       ('tide_cycle_duration_5m_seconds', 'gauge', 'Mean and max cycle duration over the last 5 minutes.'),
       ('tide_cycles_total', 'counter', 'Cycles run.'),
       ('tide_allocations_total', 'counter', 'Allocations made (placed replicas).'),
       ('tide_evictions_total', 'counter', 'Evictions ordered.'),
       ('tide_jobs_submitted_total', 'counter', 'Jobs submitted (a refused submission does not count).')
$$;
COMMENT ON FUNCTION tide._metric_help() IS 'the Prometheus type and help text of each tide.metrics name';

-- A label value in the text format: backslash, double quote and newline escaped.
CREATE FUNCTION tide._prom_labels(labels jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT coalesce('{' || string_agg(l.key || '="' || replace(replace(replace(l.value, '\', '\\'), '"', '\"'), E'\n', '\n') || '"',
                                  ',' ORDER BY l.key) || '}', '')
  FROM jsonb_each_text(labels) l
$$;
COMMENT ON FUNCTION tide._prom_labels(jsonb) IS 'labels as {k="v",...} in the Prometheus text format, values escaped';

CREATE FUNCTION tide.metrics_prometheus() RETURNS text
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT coalesce(string_agg(block, '' ORDER BY name), '')
  FROM (SELECT m.name,
               '# HELP ' || m.name || ' ' || coalesce(h.help, m.name) || E'\n'
               || '# TYPE ' || m.name || ' ' || coalesce(h.kind, 'gauge') || E'\n'
               || string_agg(m.name || tide._prom_labels(m.labels) || ' '
                             || CASE WHEN m.value = 'Infinity' THEN '+Inf' WHEN m.value = '-Infinity' THEN '-Inf'
                                     ELSE coalesce(m.value::text, 'NaN') END || E'\n',
                             '' ORDER BY tide._prom_labels(m.labels)) AS block
          FROM tide.metrics m
          LEFT JOIN tide._metric_help() h ON h.name = m.name
         GROUP BY m.name, h.help, h.kind) b
$$;
COMMENT ON FUNCTION tide.metrics_prometheus() IS
    'tide.metrics in the Prometheus text exposition format (# HELP, # TYPE, one sample a line)';
REVOKE ALL ON FUNCTION tide.metrics_prometheus() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide.metrics_prometheus() TO tide_admin, tide_reader;
