-- The cycle at the size of the largest GPU clusters: the synthetic cluster
-- of cycle_bench.sql (cycle_cluster.psql), then the first cycle from empty
-- with its contract floor, the settle (cycles until the reason backlog is
-- empty and a cycle is quiet, however many that takes), ten quiet cycles
-- and `busy` busy cycles (10 arrivals of varied shapes into varied queues
-- and 10 exits before each); each cycle is committed as tide.cycle_loop()
-- commits them.  With -v feature=NAME, busy cycles with that feature on
-- against off instead, alternated in this one session.  Run through
-- bench/cycle_scale.sh, or:
--   psql -v jobs=100000 -v nodes=10000 -v run=NAME -f bench/cycle_scale.sql DB
-- Needs a superuser (it reads /proc/self with pg_read_file) and
-- pg_buffercache.  Milliseconds; every result line ends with the load
-- average of the machine (/proc/loadavg) when it was taken.
\set ON_ERROR_STOP 1
\pset tuples_only on
\pset format unaligned
SET client_min_messages = warning;
\if :{?busy}
\else
\set busy 20
\endif
\if :{?first_only}
\else
\set first_only 0
\endif
\if :{?feature}
\else
\set feature ''
\endif
\if :{?pipelines}
\else
\set pipelines 0
\endif
\if :{?run}
\else
\set run scale
\endif
DROP EXTENSION IF EXISTS pg_tide CASCADE;
DROP TABLE IF EXISTS floor_alloc, floor_jobs_placed, floor_events;
CREATE EXTENSION pg_tide;
CREATE EXTENSION IF NOT EXISTS pg_buffercache;
-- The arrivals and exits stand in for other sessions: no JIT for them, as
-- the cycle itself runs without (60_cycle.sql).  No launchers send
-- heartbeats here and the first cycle's placements are started only by the
-- busy steps' exits: the node and start timeouts (R-C3, R-T4) are set above
-- the run's length, so that they are checked by every cycle as in
-- deployment but never fire.
SET jit = off;
SET tide.node_timeout = '6h';
SET tide.start_timeout = '6h';
\ir cycle_cluster.psql
\ir cycle_extras.psql
-- With -v feature=owner_fair_share: the jobs belong to 40 owners (one
-- submitter's jobs are all alike to an owner order).
SELECT :'feature' = 'owner_fair_share' AS with_owners \gset
\if :with_owners
UPDATE tide.jobs SET owner = format('user-%s', id % 40) WHERE state = 'pending';
\endif
VACUUM ANALYZE tide.jobs, tide.job_tasks, tide.nodes, tide.queues, tide.allocations;

-- What the machine was doing: the load average (1, 5, 15 minutes).
CREATE FUNCTION pg_temp.loadavg() RETURNS text LANGUAGE sql AS $$
SELECT 'load ' || array_to_string((string_to_array(pg_read_file('/proc/loadavg'), ' '))[1:3], ' ')
$$;
-- The size of pg_tide's main relations, MB: heap, and with indexes and
-- TOAST (a partitioned table's partitions added up); how much of each
-- (indexes and TOAST included) is in shared buffers now; all of pg_tide's
-- relations together.
-- (pg_partition_tree() has no row for a table that is not partitioned)
CREATE FUNCTION pg_temp.leaves(r regclass) RETURNS SETOF oid LANGUAGE sql AS $$
SELECT p.relid::oid FROM pg_partition_tree(r) p WHERE p.isleaf
UNION
SELECT r::oid FROM pg_class c WHERE c.oid = r AND c.relkind <> 'p'
$$;
CREATE FUNCTION pg_temp.rel_oids(r regclass) RETURNS SETOF oid LANGUAGE sql AS $$
SELECT l FROM pg_temp.leaves(r) l
UNION ALL
SELECT i.indexrelid FROM pg_temp.leaves(r) l JOIN pg_index i ON i.indrelid = l
UNION ALL
SELECT x FROM pg_temp.leaves(r) l JOIN pg_class c ON c.oid = l,
       LATERAL (SELECT c.reltoastrelid UNION ALL SELECT i.indexrelid FROM pg_index i WHERE i.indrelid = c.reltoastrelid) t(x)
 WHERE c.reltoastrelid <> 0
$$;
CREATE FUNCTION pg_temp.sizes(label text) RETURNS text LANGUAGE sql AS $$
WITH buf AS (
    SELECT b.relfilenode, count(*) AS n FROM pg_buffercache b
     WHERE b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
     GROUP BY b.relfilenode),
rels AS (
    SELECT u.ord, u.r,
           (SELECT sum(pg_relation_size(l)) FROM pg_temp.leaves(u.r::regclass) l) AS heap,
           (SELECT sum(pg_total_relation_size(l)) FROM pg_temp.leaves(u.r::regclass) l) AS total,
           (SELECT coalesce(sum(buf.n), 0) * current_setting('block_size')::bigint
              FROM pg_temp.rel_oids(u.r::regclass) o JOIN buf ON buf.relfilenode = pg_relation_filenode(o)) AS cached
      FROM unnest(ARRAY['tide.jobs', 'tide.job_tasks', 'tide.allocations', 'tide.job_events', 'tide.cycles',
                        'tide.nodes', 'tide.reason_backlog']) WITH ORDINALITY u(r, ord))
SELECT format('sizes %s, MB heap / with indexes and TOAST (in shared buffers): %s; all of tide %s (%s); shared_buffers %s; %s',
              label,
              string_agg(format('%s %s / %s (%s)', substr(r, 6), round(heap / 1048576.0, 1), round(total / 1048576.0, 1),
                                round(cached / 1048576.0, 1)), ', ' ORDER BY ord),
              (SELECT round(sum(pg_total_relation_size(c.oid)) / 1048576.0, 1)
                 FROM pg_class c WHERE c.relnamespace = 'tide'::regnamespace AND c.relkind IN ('r', 'm')),
              (SELECT round(coalesce(sum(buf.n), 0) * current_setting('block_size')::bigint / 1048576.0, 1)
                 FROM pg_class c JOIN buf ON buf.relfilenode = pg_relation_filenode(c.oid)
                WHERE c.relnamespace = 'tide'::regnamespace),
              current_setting('shared_buffers'), pg_temp.loadavg())
  FROM rels
$$;

-- The first cycle from empty against its contract floor, in the same
-- backend.  The floor's copies are built before it and a checkpoint
-- writes out the setup, so that neither pays for the other's writes.
\ir cycle_floor.psql
CHECKPOINT;
SELECT count(*) FROM tide.jobs \g /dev/null
SELECT count(*) FROM tide.job_tasks \g /dev/null
SELECT format('== %s: %s pending x %s nodes, %s queues%s; shared_buffers %s; %s', :'run', :jobs, :nodes,
              (SELECT count(*) FROM tide.queues), CASE WHEN :'feature' <> '' THEN ', feature ' || :'feature' ELSE '' END,
              current_setting('shared_buffers'), pg_temp.loadavg());
-- (with the cycle's debug lines: where its time went)
SET client_min_messages = debug1;
\ir cycle_first.psql
SET client_min_messages = warning;
SELECT format('floor select_ms=%s insert_ms=%s placed_ms=%s total_ms=%s; cycle / contract floor = %s by wall, %s by CPU; %s',
              round(f.select_ms::numeric, 1), round(f.insert_ms::numeric, 1), round(f.placed_ms::numeric, 1),
              round((f.select_ms + f.insert_ms + f.placed_ms)::numeric, 1),
              round((1000 * extract(epoch FROM c.finished_at - c.started_at)
                     / (f.select_ms + f.insert_ms + f.placed_ms))::numeric, 2),
              round(:cycle_cpu_ms / nullif(:floor_cpu_ms, 0)::numeric, 2), pg_temp.loadavg())
  FROM floor_run f, (SELECT * FROM tide.cycles ORDER BY id DESC LIMIT 1) c;
DROP TABLE floor_alloc, floor_jobs_placed, floor_events;
SELECT pg_temp.sizes('after the first cycle');
\if :first_only
\quit
\endif

-- One row per timed cycle: the whole cycle (finished_at - started_at)
-- and its phases from tide.cycles, the backend's CPU time around
-- tide.run_cycle().
CREATE TEMP TABLE cycle_times (kind text, arm text, at timestamptz, cpu_ms float8, ms float8,
                               load_ms float8, decide_ms float8, write_ms float8, considered int, placed int);
-- A busy step, as submitters and launchers between two cycles: `arrivals`
-- jobs of the cluster's shapes (fractions, 1 to 8 GPUs, gangs, CPU-only)
-- into the queues in turn, and `exits` assigned allocations (the oldest)
-- started and exited by their launcher.
CREATE TEMP SEQUENCE arrival_seq;
CREATE FUNCTION pg_temp.busy_step(arrivals int, exits int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    queues text[] := (SELECT array_agg(name ORDER BY name) FROM tide.queues WHERE name LIKE 'queue-%');
    k int;
    a bigint;
BEGIN
    FOR n IN 1 .. arrivals LOOP
        k := nextval('arrival_seq');
        PERFORM tide.submit(queues[1 + (k * 7) % cardinality(queues)],
                            (CASE WHEN k % 20 = 0 THEN 'cpu=4, memory=32Gi, gpu=250m'
                                  WHEN k % 20 < 3 THEN 'cpu=4, memory=32Gi, gpu=0.5'
                                  WHEN k % 20 < 8 THEN 'cpu=4, memory=32Gi, gpu=1'
                                  WHEN k % 20 < 12 THEN 'cpu=4, memory=32Gi, gpu=2'
                                  WHEN k % 20 < 15 THEN 'cpu=4, memory=32Gi, gpu=4'
                                  WHEN k % 20 < 19 THEN 'cpu=4, memory=32Gi, gpu=8'
                                  ELSE 'cpu=4, memory=32Gi' END)::tide.resvec,
                            CASE k % 20 WHEN 17 THEN 2 WHEN 18 THEN 4 ELSE 1 END, k % 10);
    END LOOP;
    FOR a IN SELECT id FROM tide.allocations WHERE state = 'assigned' ORDER BY id LIMIT exits LOOP
        PERFORM tide.started(a);
        PERFORM tide.exited(a, 0);
    END LOOP;
END $$;
-- n cycles, each after a busy step (none with 0 arrivals and 0 exits),
-- each step and each cycle committed.
CREATE PROCEDURE pg_temp.cycles(kind text, arm text, n int, arrivals int, exits int) LANGUAGE plpgsql AS $$
DECLARE
    c0 bigint;
    c bigint;
    cpu float8;
BEGIN
    FOR i IN 1 .. n LOOP
        IF arrivals + exits > 0 THEN
            PERFORM pg_temp.busy_step(arrivals, exits);
            COMMIT;
        END IF;
        c0 := pg_temp.cpu_ns();
        c := tide.run_cycle();
        cpu := (pg_temp.cpu_ns() - c0) / 1e6;
        COMMIT;
        INSERT INTO cycle_times
        SELECT kind, arm, clock_timestamp(), cpu, 1000 * extract(epoch FROM y.finished_at - y.started_at),
               y.load_ms, y.decide_ms, y.write_ms, y.jobs_considered, y.jobs_placed
          FROM tide.cycles y WHERE y.id = c;
        COMMIT;
    END LOOP;
END $$;
-- min / median / max of one kind (and arm) of cycles.
CREATE FUNCTION pg_temp.mmm(k text, a text, col text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    r text;
BEGIN
    EXECUTE format('SELECT format(''%%s / %%s / %%s'', round(min(%1$I)::numeric, 1),
                                  round((percentile_cont(0.5) WITHIN GROUP (ORDER BY %1$I))::numeric, 1),
                                  round(max(%1$I)::numeric, 1))
                      FROM cycle_times WHERE kind = $1 AND arm = $2', col)
       INTO r USING k, a;
    RETURN r;
END $$;
CREATE FUNCTION pg_temp.report(k text, a text) RETURNS text LANGUAGE sql AS $$
SELECT format('%s%s cycles=%s, min / median / max: whole %s, cpu %s, load %s, decide %s, write %s; jobs considered %s, placed %s; pending %s; %s',
              k, CASE WHEN a <> '' THEN ' ' || a ELSE '' END, count(*),
              pg_temp.mmm(k, a, 'ms'), pg_temp.mmm(k, a, 'cpu_ms'), pg_temp.mmm(k, a, 'load_ms'),
              pg_temp.mmm(k, a, 'decide_ms'), pg_temp.mmm(k, a, 'write_ms'),
              percentile_disc(0.5) WITHIN GROUP (ORDER BY considered), sum(placed),
              (SELECT count(*) FROM tide.jobs WHERE state = 'pending'), pg_temp.loadavg())
  FROM cycle_times WHERE kind = k AND arm = a
$$;

-- Settle: cycles until the reason backlog is empty and a cycle is quiet
-- (it loaded nothing: tide.cycle_state still names an earlier cycle).  The
-- first cycle's pending reasons reach the job rows
-- tide.reason_updates_per_cycle at a time, so this takes about
-- (pending - placed) / 1,000 cycles.  The cap is far above that; hitting
-- it is said loudly.
CREATE TEMP TABLE settle_result (cycles int, settled boolean, backlog bigint, ms float8, cpu_ms float8);
CREATE PROCEDURE pg_temp.settle(cap int) LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
    c0 bigint := pg_temp.cpu_ns();
    c bigint;
    ok boolean := false;
    i int := 0;
BEGIN
    WHILE i < cap AND NOT ok LOOP
        i := i + 1;
        c := tide.run_cycle();
        COMMIT;
        ok := NOT EXISTS (SELECT 1 FROM tide.reason_backlog b WHERE cardinality(b.job_ids) > 0)
              AND NOT EXISTS (SELECT 1 FROM tide.cycle_state s WHERE s.resource_group = '' AND s.cycle_id = c);
    END LOOP;
    INSERT INTO settle_result
    SELECT i, ok, (SELECT coalesce(sum(cardinality(b.job_ids)), 0) FROM tide.reason_backlog b),
           1000 * extract(epoch FROM clock_timestamp() - t0), (pg_temp.cpu_ns() - c0) / 1e6;
    COMMIT;
END $$;
SELECT (3 * :jobs / current_setting('tide.reason_updates_per_cycle')::int + 200) AS settle_cap \gset
CALL pg_temp.settle(:settle_cap);
SELECT CASE WHEN settled
            THEN format('settled after %s cycles (cap %s): %s s, cpu %s s; %s', cycles, :settle_cap,
                        round(ms::numeric / 1000, 1), round(cpu_ms::numeric / 1000, 1), pg_temp.loadavg())
            ELSE format('!!! NOT SETTLED: the cap of %s cycles was reached with %s jobs still in the reason backlog (%s s); the figures below are not those of a settled cluster; %s',
                        cycles, backlog, round(ms::numeric / 1000, 1), pg_temp.loadavg()) END
  FROM settle_result;
SELECT pg_temp.sizes('settled');
-- The settle rewrote every pending job's row (its reason): a deployment's
-- autovacuum cleans those versions up within minutes; here they would
-- slow the first twenty or so busy cycles' reads and the busy steps, and
-- a feature's arm that happened to fall on them.  Measured: the steady
-- state.
VACUUM (ANALYZE) tide.jobs, tide.job_tasks, tide.allocations, tide.job_events;

\if :{?feature_off}
-- A feature on against off: rounds of `per` busy cycles with it off, then
-- on (the next round on, then off), each after one busy cycle not counted
-- (the switch itself may change what the next cycle writes).
CREATE PROCEDURE pg_temp.ab(feature text, off_sql text, on_sql text, rounds int, per int) LANGUAGE plpgsql AS $$
DECLARE
    arm text;
BEGIN
    FOR r IN 1 .. rounds LOOP
        FOREACH arm IN ARRAY CASE WHEN r % 2 = 1 THEN ARRAY['off', 'on'] ELSE ARRAY['on', 'off'] END LOOP
            EXECUTE CASE arm WHEN 'on' THEN on_sql ELSE off_sql END;
            COMMIT;
            CALL pg_temp.cycles('switch', arm, 1, 10, 10);
            CALL pg_temp.cycles(feature, arm, per, 10, 10);
        END LOOP;
    END LOOP;
    EXECUTE off_sql;
    COMMIT;
END $$;
SELECT :busy / 4 + (:busy % 4 > 0)::int AS per \gset
CALL pg_temp.ab(:'feature', :'feature_off', :'feature_on', 4, :per);
SELECT pg_temp.report(:'feature', 'off');
SELECT pg_temp.report(:'feature', 'on');
SELECT format('%s on / off: median whole %s, median cpu %s, min cpu %s', :'feature',
              round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE arm = 'on')
                     / percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE arm = 'off'))::numeric, 3),
              round((percentile_cont(0.5) WITHIN GROUP (ORDER BY cpu_ms) FILTER (WHERE arm = 'on')
                     / percentile_cont(0.5) WITHIN GROUP (ORDER BY cpu_ms) FILTER (WHERE arm = 'off'))::numeric, 3),
              round((min(cpu_ms) FILTER (WHERE arm = 'on') / min(cpu_ms) FILTER (WHERE arm = 'off'))::numeric, 3))
  FROM cycle_times WHERE kind = :'feature';
\else
-- Ten quiet cycles, then the busy ones.
CALL pg_temp.cycles('quiet', '', 10, 0, 0);
SELECT pg_temp.report('quiet', '');
CALL pg_temp.cycles('busy', '', :busy, 10, 10);
SELECT pg_temp.report('busy', '');
\endif
SELECT pg_temp.sizes('after the busy cycles');

-- Where one more busy cycle's time goes: the cycle's own debug lines
-- (each load query's time, the write's steps).
SELECT pg_temp.busy_step(10, 10);
SET client_min_messages = debug1;
SELECT tide.run_cycle() \g /dev/null
SET client_min_messages = warning;
SELECT format('that cycle: whole %s, load %s, decide %s, write %s',
              round(1000 * extract(epoch FROM finished_at - started_at)::numeric, 1), round(load_ms::numeric, 1),
              round(decide_ms::numeric, 1), round(write_ms::numeric, 1))
  FROM tide.cycles ORDER BY id DESC LIMIT 1;
-- This backend's memory (kB): peak and now, its own (RssAnon) and the
-- shared buffers it touched (RssShmem).
SELECT format('memory backend hwm_kb=%s rss_kb=%s anon_kb=%s shmem_kb=%s', (regexp_match(s, 'VmHWM:\s+(\d+)'))[1],
              (regexp_match(s, 'VmRSS:\s+(\d+)'))[1], (regexp_match(s, 'RssAnon:\s+(\d+)'))[1],
              (regexp_match(s, 'RssShmem:\s+(\d+)'))[1])
  FROM pg_read_file('/proc/self/status') s;
-- Keep this run's cycles for the driver's comparisons across sessions.
CREATE TABLE IF NOT EXISTS public.scale_cycles (run text, LIKE cycle_times);
INSERT INTO public.scale_cycles SELECT :'run', * FROM cycle_times;
