-- Bounded history (docs/history.md#retention).
--
-- tide.job_events is partitioned by day (UTC), tide.cycles by month, and finished
-- jobs leave the hot tables for an archive partitioned by month of their
-- finish, with their tasks, allocations and evictions.  tide.maintain_history
-- makes partitions ahead of time, drains the default partitions into dated
-- ones, archives finished jobs, drops (or detaches) the partitions wholly
-- older than tide.history_retention and rolls up accounting days
-- (82_accounting.sql).  Only the default partitions are made here: dated
-- partitions belong to no extension, so pg_dump dumps them as ordinary
-- tables (definition, ATTACH, rows) and a restore re-creates them beside the
-- default partitions CREATE EXTENSION makes.

-- ---------------------------------------------------------------- settings
-- A custom setting (SET tide.history_retention = '30 days', per database with
-- ALTER DATABASE ... SET) or its default when unset or empty.
CREATE FUNCTION tide._setting(name text, fallback text) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT coalesce(nullif(pg_catalog.current_setting(name, true), ''), fallback) $$;
COMMENT ON FUNCTION tide._setting(text, text) IS
    'the value of a custom setting such as tide.history_retention, or the fallback when it is unset or empty';

CREATE FUNCTION tide.history_settings()
    RETURNS TABLE (name text, value text, default_value text, description text)
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT s.name, tide._setting(s.name, s.dflt), s.dflt, s.descr
  FROM (VALUES
    ('tide.history_retention', '90 days',
     'job events, cycles and archived jobs older than this are dropped, a whole partition (a day of events; a month of cycles or archive) at a time'),
    ('tide.history_detach', 'off',
     'on: detach expired partitions (they stay as tables named *_detached_*) instead of dropping them'),
    ('tide.archive_after', '1 day',
     'finished jobs (succeeded, failed, cancelled) this long ago move from tide.jobs to tide.jobs_archive'),
    ('tide.archive_batch', '100000',
     'at most this many jobs are archived by one tide.maintain_history call'),
    ('tide.history_premake', '3 days',
     'partitions are made this far ahead of now')) AS s(name, dflt, descr)
$$;
COMMENT ON FUNCTION tide.history_settings() IS
    'the settings of bounded history (tide.history_retention and friends): current value, default and meaning';

CREATE FUNCTION tide._setting_interval(name text, fallback text) RETURNS interval
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v text := tide._setting(name, fallback);
    r interval;
BEGIN
    BEGIN
        r := v::interval;
    EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR interval_field_overflow THEN
        r := NULL;
    END;
    IF r IS NULL OR r < interval '0' THEN
        RAISE EXCEPTION 'setting % is not a non-negative interval: "%"', name, tide._cut(v)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = pg_catalog.format('SET %s = %L, for example.', name, fallback);
    END IF;
    RETURN r;
END
$$;
COMMENT ON FUNCTION tide._setting_interval(text, text) IS
    'a custom setting read as a non-negative interval (an error naming the setting otherwise)';

-- Archiving deletes jobs from tide.jobs: each delete makes the foreign key
-- of tide.evictions.preemptor_job_id (ON DELETE SET NULL) look for
-- evictions the job caused, a scan of tide.evictions without this index.
CREATE INDEX evictions_preemptor_idx ON tide.evictions (preemptor_job_id);

-- ---------------------------------------------------------------- partitions
-- The partitioned tables of the history, how wide their partitions are and
-- which setting bounds them.
CREATE FUNCTION tide._history_tables(OUT parent regclass, OUT unit text)
    RETURNS SETOF record
    LANGUAGE sql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
VALUES ('tide.job_events'::regclass, 'day'), ('tide.cycles'::regclass, 'month'),
       ('tide.jobs_archive'::regclass, 'month'), ('tide.job_tasks_archive'::regclass, 'month'),
       ('tide.allocations_archive'::regclass, 'month'), ('tide.evictions_archive'::regclass, 'month')
$$;
COMMENT ON FUNCTION tide._history_tables() IS
    'the time-partitioned tables of the history and their partition width (day or month, UTC)';

CREATE FUNCTION tide._partition_bounds(part oid, OUT lo timestamptz, OUT hi timestamptz)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    SET timezone = 'UTC'
    AS $$
DECLARE
    m text[];
BEGIN
    m := pg_catalog.regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid), $re$FROM \('([^']*)'\) TO \('([^']*)'\)$re$)
      FROM pg_catalog.pg_class c WHERE c.oid = part;
    lo := m[1]::timestamptz;
    hi := m[2]::timestamptz;
END
$$;
COMMENT ON FUNCTION tide._partition_bounds(oid) IS
    'the range [lo, hi) of a time partition; NULLs for a default partition';

-- Every partition of those tables with its bounds (NULL for a default).
CREATE VIEW tide.history_partitions AS
SELECT h.parent,
       c.oid::regclass AS partition,
       b.lo AS range_from,
       b.hi AS range_to,
       c.reltuples::bigint AS rows_estimate,
       pg_catalog.pg_total_relation_size(c.oid) AS bytes
  FROM tide._history_tables() h
  JOIN pg_catalog.pg_inherits i ON i.inhparent = h.parent
  JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
 CROSS JOIN LATERAL tide._partition_bounds(c.oid) b;
COMMENT ON VIEW tide.history_partitions IS
    'every partition of the time-partitioned history tables: its range (NULL for the default partition), estimated rows and size';
GRANT SELECT ON tide.history_partitions TO tide_admin, tide_reader;

-- The partition of parent for the day or month that starts at lo, made if
-- missing.  Rows of that range waiting in the default partition move into
-- it first (ATTACH would refuse them); the default partition is locked
-- meanwhile so that none arrive.  Returns whether it made one.
CREATE FUNCTION tide._make_partition(parent regclass, unit text, lo timestamptz) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    SET timezone = 'UTC'
    AS $$
DECLARE
    hi timestamptz := lo + ('1 ' || unit)::interval;
    base text;
    part text;
    keycol text;
    dflt regclass;
BEGIN
    SELECT c.relname INTO base FROM pg_catalog.pg_class c WHERE c.oid = parent;
    part := base || '_p' || pg_catalog.to_char(lo, CASE unit WHEN 'day' THEN 'YYYYMMDD' ELSE 'YYYYMM' END);
    IF pg_catalog.to_regclass(pg_catalog.format('tide.%I', part)) IS NOT NULL THEN
        RETURN false;
    END IF;
    SELECT a.attname INTO keycol
      FROM pg_catalog.pg_partitioned_table p
      JOIN pg_catalog.pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0]
     WHERE p.partrelid = parent;
    SELECT i.inhrelid::regclass INTO dflt
      FROM pg_catalog.pg_inherits i JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = parent AND pg_catalog.pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT';
    -- the default partition's columns, checks, key and indexes
    EXECUTE pg_catalog.format('CREATE TABLE tide.%I (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES)', part, dflt);
    EXECUTE pg_catalog.format('COMMENT ON TABLE tide.%I IS %L', part,
                              pg_catalog.format('partition of %s for [%s, %s), made by tide.maintain_history', parent, lo, hi));
    IF dflt IS NOT NULL THEN
        EXECUTE pg_catalog.format('LOCK TABLE %s IN EXCLUSIVE MODE', dflt);
        EXECUTE pg_catalog.format(
            'WITH moved AS (DELETE FROM %s WHERE %I >= $1 AND %I < $2 RETURNING *) INSERT INTO tide.%I SELECT * FROM moved',
            dflt, keycol, keycol, part) USING lo, hi;
    END IF;
    EXECUTE pg_catalog.format('ALTER TABLE %s ATTACH PARTITION tide.%I FOR VALUES FROM (%L) TO (%L)', parent, part, lo, hi);
    RETURN true;
END
$$;
COMMENT ON FUNCTION tide._make_partition(regclass, text, timestamptz) IS
    'makes the day or month partition of a history table starting at lo (moving its rows out of the default partition); false when it exists';

-- Jobs finished before `before` move to the archive with their tasks,
-- allocations and evictions.  A job that caused an eviction of a job that
-- stays hot stays too: deleting it would clear that eviction's
-- preemptor_job_id (ON DELETE SET NULL).  Returns the number archived.
CREATE FUNCTION tide._archive_jobs(before timestamptz, batch integer) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    ids bigint[];
    kept bigint[];
    jcols text;
    fin text := 'coalesce(j.finished_at, (SELECT max(e.at) FROM tide.job_events e WHERE e.job_id = j.id), j.created_at)';
BEGIN
    SELECT pg_catalog.array_agg(j.id ORDER BY j.id) INTO ids
      FROM (SELECT j.id FROM tide.jobs j
             WHERE j.state IN ('succeeded', 'failed', 'cancelled')
               AND coalesce(j.finished_at, j.created_at) < before
             ORDER BY j.id LIMIT batch
               FOR UPDATE SKIP LOCKED) j;
    IF ids IS NULL THEN
        RETURN 0;
    END IF;
    -- (joins, not = ANY: a batch holds up to tide.archive_batch ids)
    LOOP
        SELECT pg_catalog.array_agg(DISTINCT e.preemptor_job_id) INTO kept
          FROM tide.evictions e
          JOIN pg_catalog.unnest(ids) p(id) ON p.id = e.preemptor_job_id
         WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.unnest(ids) v(id) WHERE v.id = e.job_id);
        EXIT WHEN kept IS NULL;
        ids := ARRAY(SELECT x FROM pg_catalog.unnest(ids) x EXCEPT SELECT y FROM pg_catalog.unnest(kept) y);
        IF pg_catalog.cardinality(ids) = 0 THEN
            RETURN 0;
        END IF;
    END LOOP;

    SELECT pg_catalog.string_agg(CASE WHEN a.attname = 'finished_at' THEN fin
                                      ELSE 'j.' || pg_catalog.quote_ident(a.attname) END, ', ' ORDER BY a.attnum) INTO jcols
      FROM pg_catalog.pg_attribute a
     WHERE a.attrelid = 'tide.jobs'::regclass AND a.attnum > 0 AND NOT a.attisdropped;
    EXECUTE pg_catalog.format(
        'WITH moved AS (INSERT INTO tide.jobs_archive SELECT %s FROM pg_catalog.unnest($1) i(id) JOIN tide.jobs j ON j.id = i.id'
        ' RETURNING id, owner, finished_at),'
        ' t AS (INSERT INTO tide.job_tasks_archive SELECT x.*, m.owner, m.finished_at FROM moved m JOIN tide.job_tasks x ON x.job_id = m.id),'
        ' a AS (INSERT INTO tide.allocations_archive SELECT x.*, m.owner, m.finished_at FROM moved m JOIN tide.allocations x ON x.job_id = m.id)'
        ' INSERT INTO tide.evictions_archive SELECT x.*, m.owner, m.finished_at FROM moved m JOIN tide.evictions x ON x.job_id = m.id',
        jcols) USING ids;

    PERFORM pg_catalog.set_config('tide.archiving', 'on', true);
    DELETE FROM tide.jobs j WHERE j.id = ANY (ids);
    PERFORM pg_catalog.set_config('tide.archiving', 'off', true);
    RETURN pg_catalog.cardinality(ids);
END
$$;
COMMENT ON FUNCTION tide._archive_jobs(timestamptz, integer) IS
    'moves up to batch jobs finished before a time, with their tasks, allocations and evictions, to the archive tables (their events stay); returns how many';

CREATE FUNCTION tide._history_lock_key() RETURNS bigint
    LANGUAGE sql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT 7165616696800001::bigint $$;
COMMENT ON FUNCTION tide._history_lock_key() IS
    'advisory lock key that keeps tide.maintain_history calls from overlapping';

-- One pass of history maintenance; NULL when another is running.
CREATE FUNCTION tide.maintain_history() RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    SET timezone = 'UTC'
    SET lock_timeout = '10s'
    SET jit = off
    AS $$
DECLARE
    retention interval := tide._setting_interval('tide.history_retention', '90 days');
    premake interval := tide._setting_interval('tide.history_premake', '3 days');
    archive_after interval := tide._setting_interval('tide.archive_after', '1 day');
    batch integer;
    detach boolean;
    cutoff timestamptz := pg_catalog.now() - retention;
    h record;
    p record;
    lo timestamptz;
    top timestamptz;
    keycol text;
    dflt regclass;
    oldest timestamptz;
    newest timestamptz;
    made integer := 0;
    dropped text[] := '{}';
    purged bigint := 0;
    n bigint;
    archived bigint;
    rolled integer := 0;
BEGIN
    BEGIN
        batch := tide._setting('tide.archive_batch', '100000')::integer;
        detach := tide._setting('tide.history_detach', 'off')::boolean;
    EXCEPTION WHEN invalid_text_representation OR numeric_value_out_of_range THEN
        RAISE EXCEPTION 'tide.archive_batch must be an integer and tide.history_detach a boolean'
            USING ERRCODE = 'invalid_parameter_value';
    END;
    IF NOT pg_catalog.pg_try_advisory_xact_lock(tide._history_lock_key()) THEN
        RETURN NULL;
    END IF;

    FOR h IN SELECT * FROM tide._history_tables() LOOP
        SELECT a.attname INTO keycol
          FROM pg_catalog.pg_partitioned_table pt
          JOIN pg_catalog.pg_attribute a ON a.attrelid = pt.partrelid AND a.attnum = pt.partattrs[0]
         WHERE pt.partrelid = h.parent;
        SELECT i.inhrelid::regclass INTO dflt
          FROM pg_catalog.pg_inherits i JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = h.parent AND pg_catalog.pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT';
        -- rows of the default partition that are past retention go at once
        EXECUTE pg_catalog.format('DELETE FROM %s WHERE %I < $1', dflt, keycol)
          USING pg_catalog.date_trunc(h.unit, cutoff);
        GET DIAGNOSTICS n = ROW_COUNT;
        purged := purged + n;
        EXECUTE pg_catalog.format('SELECT min(%I), max(%I) FROM %s', keycol, keycol, dflt) INTO oldest, newest;
        lo := pg_catalog.date_trunc(h.unit, least(oldest, pg_catalog.now()));
        top := greatest(CASE WHEN newest IS NOT NULL THEN least(newest, pg_catalog.now() + interval '1 year') END,
                        pg_catalog.now() + premake);
        WHILE lo <= top LOOP
            IF tide._make_partition(h.parent, h.unit, lo) THEN
                made := made + 1;
            END IF;
            lo := lo + ('1 ' || h.unit)::interval;
        END LOOP;
        -- whole partitions past retention
        FOR p IN SELECT x.partition, x.range_to FROM tide.history_partitions x
                  WHERE x.parent = h.parent AND x.range_to <= cutoff ORDER BY x.range_to LOOP
            IF detach THEN
                EXECUTE pg_catalog.format('ALTER TABLE %s DETACH PARTITION %s', h.parent, p.partition);
                EXECUTE pg_catalog.format('ALTER TABLE %s RENAME TO %I', p.partition,
                                          pg_catalog.replace(p.partition::text, 'tide.', '') || '_detached');
            ELSE
                EXECUTE pg_catalog.format('DROP TABLE %s', p.partition);
            END IF;
            dropped := dropped || p.partition::text;
        END LOOP;
    END LOOP;

    -- after the partitions: archived jobs land in their month's partition
    archived := tide._archive_jobs(pg_catalog.now() - archive_after, batch);
    rolled := tide._rollup_days();

    RETURN pg_catalog.jsonb_build_object(
        'partitions_made', made,
        CASE WHEN detach THEN 'partitions_detached' ELSE 'partitions_dropped' END, pg_catalog.to_jsonb(dropped),
        'default_rows_purged', purged,
        'jobs_archived', archived,
        'days_rolled_up', rolled,
        'retention', retention::text);
END
$$;
COMMENT ON FUNCTION tide.maintain_history() IS
    'bounded history: archives finished jobs older than tide.archive_after, makes partitions tide.history_premake ahead, drops (or with tide.history_detach detaches) those wholly older than tide.history_retention, rolls up finished accounting days; NULL when another call runs; returns what it did';
REVOKE ALL ON FUNCTION tide.maintain_history() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide.maintain_history() TO tide_admin;
REVOKE ALL ON FUNCTION tide._make_partition(regclass, text, timestamptz), tide._archive_jobs(timestamptz, integer) FROM PUBLIC;

-- ---------------------------------------------------------------- pg_cron
CREATE FUNCTION tide.schedule_maintenance(schedule text DEFAULT '*/10 * * * *') RETURNS bigint
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    job_id bigint;
BEGIN
    PERFORM tide.cron_check();
    EXECUTE 'SELECT cron.schedule($1, $2, $3)' INTO job_id
      USING 'pg_tide_history', schedule, 'SELECT tide.maintain_history()';
    RETURN job_id;
END
$$;
COMMENT ON FUNCTION tide.schedule_maintenance(text) IS
    'has pg_cron run tide.maintain_history() on a cron schedule (every 10 minutes by default) as the pg_cron job pg_tide_history; returns its job id';

CREATE FUNCTION tide.unschedule_maintenance() RETURNS boolean
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    existed boolean;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'pg_cron') THEN
        RETURN false;
    END IF;
    -- cron.unschedule(name) refuses an unknown name: ask first
    EXECUTE 'SELECT EXISTS (SELECT 1 FROM cron.job WHERE jobname = $1)' INTO existed USING 'pg_tide_history';
    IF existed THEN
        EXECUTE 'SELECT cron.unschedule($1::text)' USING 'pg_tide_history';
    END IF;
    RETURN existed;
END
$$;
COMMENT ON FUNCTION tide.unschedule_maintenance() IS
    'removes the pg_cron job of tide.schedule_maintenance(); returns whether there was one';
REVOKE ALL ON FUNCTION tide.schedule_maintenance(text), tide.unschedule_maintenance() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide.schedule_maintenance(text), tide.unschedule_maintenance() TO tide_admin;
