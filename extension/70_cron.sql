-- The cycle cadence: pg_cron runs tide.run_cycle() every few seconds.
--
-- pg_cron is optional (pg_tide does not require it: pg_cron lives in one
-- database only), so nothing here refers to the cron schema until it is
-- called, and every call checks first that pg_cron is there.
-- pg_cron >= 1.5 has native second schedules ('5 seconds'); older ones
-- (Debian 12 ships 1.4.2) have minute schedules only, so a job that runs
-- every minute CALLs tide.cycle_loop(), which runs a cycle, commits, sleeps
-- until the next tick and returns before the minute ends.  pg_cron never
-- runs two instances of one job, and tide.run_cycle() takes an advisory
-- lock, so cycles never overlap.  See docs/cadence.md.

-- The pg_cron job name that pg_tide owns.
CREATE FUNCTION tide.cron_job_name() RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT 'pg_tide_cycles'::text $$;
COMMENT ON FUNCTION tide.cron_job_name() IS
'name of the pg_cron job that tide.schedule_cycles() creates (pg_tide_cycles)';

-- ... and of a resource group's job (pg_tide_cycles:GROUP; NULL: the cluster's)
CREATE FUNCTION tide.cron_job_name(resource_group text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT tide.cron_job_name() OPERATOR(pg_catalog.||) coalesce(':' OPERATOR(pg_catalog.||) resource_group, '') $$;
COMMENT ON FUNCTION tide.cron_job_name(text) IS
'name of the pg_cron job of one resource group''s cycles (pg_tide_cycles:GROUP), or of the whole cluster''s when NULL';

-- Is pg_cron usable from this database?  Raises a clear error otherwise;
-- returns its version as (major, minor) when it is.
-- SECURITY DEFINER: reading cron.database_name takes a superuser or
-- pg_read_all_settings, and an administrator who may schedule should need
-- neither (pg_cron's own gate, USAGE on schema cron, still applies to the
-- calls that schedule).  Administrators only.
CREATE FUNCTION tide.cron_check(OUT major int, OUT minor int)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    cron_db text := pg_catalog.current_setting('cron.database_name', true);
    v text;
    m text[];
BEGIN
    IF cron_db IS NULL OR cron_db = '' THEN
        RAISE EXCEPTION 'pg_cron is not loaded in this server'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'tide.schedule_cycles() asks pg_cron to run tide.run_cycle() on a schedule.',
                  HINT = pg_catalog.format('Add pg_cron to shared_preload_libraries, set cron.database_name = %L, restart PostgreSQL, then run CREATE EXTENSION pg_cron in database %I.',
                                           pg_catalog.current_database(), pg_catalog.current_database());
    END IF;
    IF cron_db <> pg_catalog.current_database() THEN
        RAISE EXCEPTION 'pg_cron runs jobs in database "%", not in "%"', cron_db, pg_catalog.current_database()
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'pg_cron serves the one database named by cron.database_name, and its jobs run there.',
                  HINT = pg_catalog.format('Call tide.schedule_cycles() in database %I (with pg_tide installed there), or set cron.database_name = %L and restart PostgreSQL.',
                                           cron_db, pg_catalog.current_database());
    END IF;
    SELECT e.extversion INTO v FROM pg_catalog.pg_extension AS e WHERE e.extname = 'pg_cron';
    IF NOT FOUND THEN
        RAISE EXCEPTION 'extension pg_cron is not installed in database "%"', pg_catalog.current_database()
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Run CREATE EXTENSION pg_cron; in this database (pg_cron is loaded and serves it).';
    END IF;
    m := pg_catalog.regexp_match(v, '^(\d+)\.(\d+)');
    major := coalesce(m[1]::int, 0);
    minor := coalesce(m[2]::int, 0);
END
$$;
COMMENT ON FUNCTION tide.cron_check() IS
'checks that pg_cron is loaded and installed in this database (clear error with a hint otherwise) and returns its version';
REVOKE ALL ON FUNCTION tide.cron_check() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide.cron_check() TO tide_admin;

-- Was pg_tide loaded at server start (shared_preload_libraries)?  Without
-- it PostgreSQL 15 refuses ALTER SYSTEM SET tide.* ("unrecognized
-- configuration parameter") in a session that has not used pg_tide yet.
CREATE FUNCTION tide._preloaded() RETURNS boolean
    LANGUAGE c STABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'tide_preloaded_sql';
COMMENT ON FUNCTION tide._preloaded() IS
'true when pg_tide was loaded at server start (shared_preload_libraries), so that ALTER SYSTEM SET tide.* works in any session (docs/deployment.md)';

-- The WARNING that says how to preload pg_tide, with the exact command
-- (a NOTICE would not show: CREATE EXTENSION runs its script with
-- client_min_messages at least warning).
CREATE FUNCTION tide._preload_warning() RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    libs text;
BEGIN
    IF tide._preloaded() THEN
        RETURN;
    END IF;
    -- shared_preload_libraries is shown only to those who may read settings
    IF pg_has_role(CURRENT_USER, 'pg_read_all_settings', 'USAGE') THEN
        -- a list setting takes one literal per library in ALTER SYSTEM
        -- ('a,b' would be one library named "a,b")
        SELECT string_agg(format('%L', x.lib), ', ' ORDER BY x.n) INTO libs
          FROM (SELECT btrim(e, ' "') AS lib, n
                  FROM unnest(string_to_array(current_setting('shared_preload_libraries'), ',')) WITH ORDINALITY AS u(e, n)
                 WHERE btrim(e, ' "') <> ''
                UNION ALL SELECT 'pg_tide', 1e9) x;
    END IF;
    RAISE WARNING 'pg_tide is not in shared_preload_libraries'
        USING DETAIL = 'PostgreSQL 15 refuses ALTER SYSTEM SET tide.* ("unrecognized configuration parameter") in a session that has not loaded pg_tide. SET, ALTER DATABASE/ROLE ... SET and postgresql.conf work either way.',
              HINT = CASE WHEN libs IS NULL
                          THEN 'Add pg_tide to shared_preload_libraries (e.g. shared_preload_libraries = ''pg_cron,pg_tide'' in postgresql.conf) and restart PostgreSQL; until then run LOAD ''pg_tide'' before ALTER SYSTEM.'
                          ELSE pg_catalog.format('Run ALTER SYSTEM SET shared_preload_libraries = %s; and restart PostgreSQL; until then run LOAD ''pg_tide'' before ALTER SYSTEM.',
                                                 libs)
                     END;
END
$$;
COMMENT ON FUNCTION tide._preload_warning() IS
'raises a WARNING with the command that adds pg_tide to shared_preload_libraries, when it is not there (CREATE EXTENSION and tide.schedule_cycles() call it)';

-- Reads the configuration files again if a reload was signalled (true
-- then): the cycle loop never goes idle, where a backend would do it.
CREATE FUNCTION tide._apply_reload() RETURNS boolean
    LANGUAGE c VOLATILE PARALLEL UNSAFE
    AS 'MODULE_PATHNAME', 'tide_apply_reload';
COMMENT ON FUNCTION tide._apply_reload() IS
'applies a pending configuration reload (pg_reload_conf()) in this backend now; tide.cycle_loop() calls it before each cycle, so ALTER SYSTEM SET tide.* and a reload reach a running loop';

-- Starts tide.cycle_loop(every, NULL, resource_group) in a background
-- worker of pg_tide's own when the calling transaction commits (false if
-- it cannot: no worker free, a name too long for the worker's arguments).
CREATE FUNCTION tide._start_cycle_loop(every interval, resource_group text) RETURNS boolean
    LANGUAGE c VOLATILE PARALLEL UNSAFE
    AS 'MODULE_PATHNAME', 'tide_start_cycle_loop';
COMMENT ON FUNCTION tide._start_cycle_loop(interval, text) IS
'starts CALL tide.cycle_loop(every, NULL, resource_group) in a background worker as the calling role when this transaction commits, so that cycles need not wait for pg_cron < 1.5''s next whole minute';

-- The command of a minute-started loop.  IntervalStyle is pinned: a running
-- loop compares this text with its pg_cron job's to see whether it was
-- rescheduled.
CREATE FUNCTION tide._cycle_loop_command(every interval, resource_group text) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET intervalstyle = 'postgres'
AS $$
SELECT CASE WHEN resource_group IS NULL THEN pg_catalog.format('CALL tide.cycle_loop(%L)', every)
            ELSE pg_catalog.format('CALL tide.cycle_loop(%L, NULL, %L)', every, resource_group) END
$$;
COMMENT ON FUNCTION tide._cycle_loop_command(interval, text) IS
'the pg_cron command of the cycle loop of one resource group (the whole cluster''s when NULL) at cadence every';

-- One loop runs cycles per resource group (and one for the whole cluster):
-- the one holding the session advisory lock (1953064044 = 'tidl',
-- hashtext(group or '')).  A session cancelled inside a loop keeps that
-- lock until it disconnects: a holder idle in its session loops no more,
-- and is passed over.
CREATE FUNCTION tide._cycle_loop_taken(resource_group text) RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT EXISTS (
    SELECT 1 FROM pg_locks l
      LEFT JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE l.locktype = 'advisory' AND l.granted
       AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
       AND l.classid = 1953064044::oid
       AND l.objid = hashtext(coalesce(resource_group, ''))::oid
       AND l.objsubid = 2
       AND l.pid <> pg_backend_pid()
       AND a.state IS DISTINCT FROM 'idle'
       AND coalesce(NOT starts_with(a.state, 'idle in transaction'), true))
$$;
COMMENT ON FUNCTION tide._cycle_loop_taken(text) IS
'true while another backend runs the cycle loop of this resource group (the whole cluster''s when NULL): it holds the loop''s advisory lock and is not idle';

-- Run cycles every `every` until shortly before the end of the current
-- minute (or for `run_for` when given).  Started once a minute by pg_cron
-- < 1.5, which cannot schedule in seconds.  A procedure, because it
-- commits each cycle; so it cannot pin search_path with SET, and every name
-- in it is qualified instead, operators included: an operator whose argument
-- types match exactly wins over pg_catalog's cast-needing one, so a mixed
-- expression such as `step < 1` (float8 < int) could run a caller's own
-- operator as whoever CALLs this (pg_cron: usually a superuser).
CREATE PROCEDURE tide.cycle_loop(every interval, run_for interval, resource_group text)
LANGUAGE plpgsql
AS $$
DECLARE
    t0 timestamptz := pg_catalog.clock_timestamp();
    step float8 := pg_catalog.date_part('epoch', every);
    stop_at timestamptz;
    next_at timestamptz;
    k bigint := 0;
    watch_job boolean := run_for IS NULL AND pg_catalog.to_regclass('cron.job') IS NOT NULL;
    job_name text := tide.cron_job_name(resource_group);
    my_command text := tide._cycle_loop_command(every, resource_group);
    still_scheduled boolean;
    lock_key int := pg_catalog.hashtext(coalesce(resource_group, ''));
    got_lock boolean := false;
BEGIN
    IF step IS NULL OR step OPERATOR(pg_catalog.<) 1::float8 THEN
        RAISE EXCEPTION 'cycle interval must be at least 1 second, not %', every
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF run_for IS NULL THEN
        -- leave before pg_cron's next start, so that runs do not queue up
        stop_at := pg_catalog.date_trunc('minute', t0) OPERATOR(pg_catalog.+) interval '1 minute'
                   OPERATOR(pg_catalog.-) interval '0.5 seconds';
    ELSE
        stop_at := t0 OPERATOR(pg_catalog.+) run_for;
    END IF;
    LOOP
        -- one loop runs the cycles of a group: the first to take the lock;
        -- the others try again at each tick until it lets go (pg_cron's
        -- next minute, a loop pg_tide started, a restart's @reboot job)
        IF NOT got_lock THEN
            got_lock := pg_catalog.pg_try_advisory_lock(1953064044, lock_key);
        END IF;
        IF got_lock OR NOT tide._cycle_loop_taken(resource_group) THEN
            -- a backend applies pg_reload_conf() when idle, which a loop never is
            PERFORM tide._apply_reload();
            BEGIN
                IF resource_group IS NULL THEN
                    PERFORM tide.run_cycle();
                ELSE
                    PERFORM tide.run_cycle(resource_group);
                END IF;
            EXCEPTION WHEN OTHERS THEN
                -- one failed cycle must not stop the cadence for the rest of the minute
                RAISE WARNING 'pg_tide: scheduling cycle failed: % (SQLSTATE %)', SQLERRM, SQLSTATE;
            END;
        END IF;
        COMMIT;
        -- the next tick on the grid t0 + k * every; ticks missed by a slow cycle are skipped
        k := GREATEST(k OPERATOR(pg_catalog.+) 1::bigint,
                pg_catalog.ceil(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) t0)
                                OPERATOR(pg_catalog./) step)::bigint);
        next_at := t0 OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => k::float8 OPERATOR(pg_catalog.*) step);
        EXIT WHEN next_at OPERATOR(pg_catalog.>=) stop_at;
        IF watch_job THEN
            -- tide.unschedule_cycles() stops the loop at the next tick, and
            -- so does a new cadence (the loop of the new one takes over)
            EXECUTE 'SELECT EXISTS (SELECT 1 FROM cron.job WHERE jobname = $1 AND active AND command = $2)'
                INTO still_scheduled USING job_name, my_command;
            EXIT WHEN NOT still_scheduled;
        END IF;
        PERFORM pg_catalog.pg_sleep(GREATEST(0,
                    pg_catalog.date_part('epoch', next_at OPERATOR(pg_catalog.-) pg_catalog.clock_timestamp())));
        -- Inside a procedure a transaction starts right after COMMIT, so the
        -- sleep ran in the next cycle's transaction: end it, so that now()
        -- in the cycle (cycles.started_at, allocations.created_at, events)
        -- is the cycle's own start, not the previous cycle's end.
        COMMIT;
    END LOOP;
    IF got_lock THEN
        PERFORM pg_catalog.pg_advisory_unlock(1953064044, lock_key);
    END IF;
END
$$;
COMMENT ON PROCEDURE tide.cycle_loop(interval, interval, text) IS
'runs tide.run_cycle(resource_group) (all groups when NULL) every `every`, committing each, until shortly before the minute ends (or for run_for); pg_cron < 1.5 CALLs it every minute';
REVOKE ALL ON PROCEDURE tide.cycle_loop(interval, interval, text) FROM PUBLIC;
GRANT EXECUTE ON PROCEDURE tide.cycle_loop(interval, interval, text) TO tide_admin;

CREATE PROCEDURE tide.cycle_loop(every interval DEFAULT '1 second', run_for interval DEFAULT NULL)
LANGUAGE plpgsql
AS $$
BEGIN
    CALL tide.cycle_loop(every, run_for, NULL::text);
END
$$;
COMMENT ON PROCEDURE tide.cycle_loop(interval, interval) IS
'runs tide.run_cycle() every `every`, committing each, until shortly before the minute ends (or for run_for); pg_cron < 1.5 CALLs it every minute';
REVOKE ALL ON PROCEDURE tide.cycle_loop(interval, interval) FROM PUBLIC;
GRANT EXECUTE ON PROCEDURE tide.cycle_loop(interval, interval) TO tide_admin;

-- The cycle loop of pg_cron < 1.5 is a backend: a crash or restart of the
-- server ends it, and the minute schedule starts it again only at the next
-- whole minute, so every restart cost up to a minute without cycles (a few
-- restarts in a row: minutes, with the backlog waiting and GPUs idle).  A
-- second job with pg_cron's @reboot schedule runs the same loop as soon as
-- pg_cron starts after a restart; it returns before the minute ends, when
-- the minute job takes over (tide.run_cycle() takes an advisory lock, so
-- the two never run cycles at once).  Native second schedules (pg_cron
-- >= 1.5) and minute or hour cadences need none.
CREATE FUNCTION tide._cron_restart_job_name(job_name text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT job_name OPERATOR(pg_catalog.||) '@reboot' $$;
COMMENT ON FUNCTION tide._cron_restart_job_name(text) IS
'name of the @reboot pg_cron job that restarts the cycle loop of job job_name when the server starts (pg_tide_cycles@reboot, pg_tide_cycles:GROUP@reboot)';

CREATE FUNCTION tide._schedule_restart_loop(job_name text, cmd text) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j bigint;
BEGIN
    IF starts_with(cmd, 'CALL tide.cycle_loop(') THEN
        EXECUTE 'SELECT cron.schedule($1, $2, $3)'
            USING tide._cron_restart_job_name(job_name), '@reboot', cmd;
    ELSE
        -- a cadence that needs no loop replaces one that had it
        FOR j IN EXECUTE 'SELECT jobid FROM cron.job WHERE jobname = $1'
                   USING tide._cron_restart_job_name(job_name) LOOP
            EXECUTE 'SELECT cron.unschedule($1)' USING j;
        END LOOP;
    END IF;
END
$$;
COMMENT ON FUNCTION tide._schedule_restart_loop(text, text) IS
'for a minute-started cycle loop (pg_cron < 1.5), also has pg_cron run it at server start (@reboot), so a restart does not leave the cluster without cycles until the next whole minute; for any other command removes that @reboot job';

-- pg_cron < 1.5 starts a minute job when the next minute begins: start its
-- loop now in pg_tide's own background worker (it runs until the minute
-- ends, when pg_cron's job takes over), unless the same loop already runs.
CREATE FUNCTION tide._start_loop_now(cmd text, old_cmds text[], secs numeric, resource_group text) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NOT starts_with(cmd, 'CALL tide.cycle_loop(') THEN
        RETURN;                 -- native seconds, or a minute cadence: no loop
    END IF;
    IF cmd = ANY (old_cmds) AND tide._cycle_loop_taken(resource_group) THEN
        RETURN;                 -- scheduled again as it was: its loop runs on
    END IF;
    PERFORM tide._start_cycle_loop(make_interval(secs => secs), resource_group);
END
$$;
COMMENT ON FUNCTION tide._start_loop_now(text, text[], numeric, text) IS
'for a minute-started cycle loop (pg_cron < 1.5), starts that loop at once in a background worker, unless the same loop runs already';

CREATE FUNCTION tide.schedule_cycles(every interval, per_group boolean) RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    g text;
    groups text[];
    v record;
    secs numeric;
    sched text;
    cmd text;
    cmd_g text;
    job_id bigint;
    old_cmds text[];
BEGIN
    v := tide.cron_check();
    secs := pg_catalog.date_part('epoch', every)::numeric;
    IF secs IS NULL OR secs <= 0 THEN
        RAISE EXCEPTION 'cycle interval must be positive, not %', coalesce(every::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass an interval such as ''1 second'' (the default) or ''5 seconds''.';
    END IF;
    IF secs < 1 THEN
        RAISE EXCEPTION 'cycle interval % is shorter than one second', every
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'pg_cron cannot run a job more often than once a second.',
                  HINT = 'Use 1 second: launchers are woken by NOTIFY as soon as a cycle commits, so a faster cadence rarely shortens waits; or call tide.run_cycle() yourself.';
    END IF;
    IF secs <> pg_catalog.trunc(secs) THEN
        RAISE EXCEPTION 'cycle interval % is not a whole number of seconds', every
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use 1 to 59 seconds, 1 to 59 minutes, or 1 hour.';
    END IF;

    IF secs < 60 THEN
        IF (v.major, v.minor) >= (1, 5) THEN
            sched := pg_catalog.format('%s seconds', secs);
            cmd := 'SELECT tide.run_cycle()';
        ELSE
            sched := '* * * * *';
            cmd := tide._cycle_loop_command(pg_catalog.make_interval(secs => secs), NULL);
        END IF;
    ELSIF secs % 60 = 0 AND secs / 60 < 60 THEN
        sched := CASE WHEN secs = 60 THEN '* * * * *' ELSE pg_catalog.format('*/%s * * * *', (secs / 60)::int) END;
        cmd := 'SELECT tide.run_cycle()';
    ELSIF secs = 3600 THEN
        sched := '0 * * * *';
        cmd := 'SELECT tide.run_cycle()';
    ELSE
        RAISE EXCEPTION 'cycle interval % is not supported', every
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use 1 to 59 seconds, 1 to 59 whole minutes, or 1 hour.';
    END IF;

    -- the loops running now, and which commands started them
    EXECUTE 'SELECT array_agg(command) FROM cron.job WHERE jobname = $1 OR starts_with(jobname, $1 || '':'')'
        INTO old_cmds USING tide.cron_job_name();
    PERFORM tide._preload_warning();

    -- named jobs: scheduling again replaces them (pg_cron upserts by name);
    -- a whole-cluster job and group jobs never run side by side
    PERFORM tide._unschedule_cycles(per_group, true);
    IF NOT per_group THEN
        EXECUTE 'SELECT cron.schedule($1, $2, $3)' INTO job_id
            USING tide.cron_job_name(), sched, cmd;
        PERFORM tide._schedule_restart_loop(tide.cron_job_name(), cmd);
        PERFORM tide._start_loop_now(cmd, old_cmds, secs, NULL);
        RETURN job_id;
    END IF;
    SELECT pg_catalog.array_agg(DISTINCT x.g ORDER BY x.g) INTO groups
      FROM (SELECT n.resource_group AS g FROM tide.nodes n
            UNION SELECT q.resource_group FROM tide.queues q) x;
    IF groups IS NULL THEN
        RAISE EXCEPTION 'no resource group to schedule cycles for'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Register nodes and create queues first (each names its resource_group); schedule again when groups are added.';
    END IF;
    FOREACH g IN ARRAY groups LOOP
        cmd_g := CASE WHEN cmd = 'SELECT tide.run_cycle()' THEN pg_catalog.format('SELECT tide.run_cycle(%L)', g)
                      ELSE tide._cycle_loop_command(pg_catalog.make_interval(secs => secs), g) END;
        EXECUTE 'SELECT cron.schedule($1, $2, $3)' INTO job_id
            USING tide.cron_job_name(g), sched, cmd_g;
        PERFORM tide._schedule_restart_loop(tide.cron_job_name(g), cmd_g);
        PERFORM tide._start_loop_now(cmd_g, old_cmds, secs, g);
    END LOOP;
    RETURN job_id;
END
$$;
COMMENT ON FUNCTION tide.schedule_cycles(interval, boolean) IS
'has pg_cron run cycles at this cadence: per_group false, one tide.run_cycle() job; true, one tide.run_cycle(GROUP) job per resource group of the nodes and queues now (run in parallel; schedule again when groups are added); replaces any earlier schedule; returns the (last) pg_cron job id';

CREATE FUNCTION tide.schedule_cycles(every interval DEFAULT '1 second') RETURNS bigint
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT tide.schedule_cycles(every, false) $$;
COMMENT ON FUNCTION tide.schedule_cycles(interval) IS
'has pg_cron run tide.run_cycle() at this cadence (native second schedules on pg_cron >= 1.5, a looping procedure on older ones); calling it again replaces the schedule; returns the pg_cron job id';

-- Removes pg_tide's cycle jobs: the whole cluster's (whole) and/or the
-- resource groups' (groups); true if there was one.
CREATE FUNCTION tide._unschedule_cycles(whole boolean, groups boolean) RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j bigint;
    existed boolean := false;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'pg_cron') THEN
        RETURN false;           -- nothing can be scheduled without pg_cron here
    END IF;
    -- a group's @reboot job (pg_tide_cycles:GROUP@reboot) goes with the groups'
    FOR j IN EXECUTE 'SELECT jobid FROM cron.job WHERE ($2 AND jobname IN ($1, $4)) OR ($3 AND starts_with(jobname, $1 || '':''))'
               USING tide.cron_job_name(), whole, groups, tide._cron_restart_job_name(tide.cron_job_name()) LOOP
        EXECUTE 'SELECT cron.unschedule($1)' USING j;
        existed := true;
    END LOOP;
    RETURN existed;
END
$$;
COMMENT ON FUNCTION tide._unschedule_cycles(boolean, boolean) IS
'removes the pg_cron jobs of the whole cluster''s cycles and/or of the resource groups'' cycles; returns whether there was one';

CREATE FUNCTION tide.unschedule_cycles() RETURNS boolean
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT tide._unschedule_cycles(true, true) $$;
COMMENT ON FUNCTION tide.unschedule_cycles() IS
'removes the pg_cron jobs of tide.schedule_cycles() (the whole cluster''s, or one per resource group); returns whether there was one (a running cycle loop stops at its next tick)';
-- Scheduling is administration, like tide.schedule_maintenance: the cycle's
-- pg_cron jobs run as whoever scheduled them.
REVOKE ALL ON FUNCTION tide.schedule_cycles(interval, boolean), tide.schedule_cycles(interval),
    tide._unschedule_cycles(boolean, boolean), tide.unschedule_cycles(),
    tide._schedule_restart_loop(text, text), tide._start_loop_now(text, text[], numeric, text),
    tide._start_cycle_loop(interval, text), tide._apply_reload() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide.schedule_cycles(interval, boolean), tide.schedule_cycles(interval),
    tide._unschedule_cycles(boolean, boolean), tide.unschedule_cycles(),
    tide._schedule_restart_loop(text, text), tide._start_loop_now(text, text[], numeric, text),
    tide._start_cycle_loop(interval, text), tide._apply_reload() TO tide_admin;

-- CREATE EXTENSION warns when pg_tide is not preloaded
SELECT tide._preload_warning();
