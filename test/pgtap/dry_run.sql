-- tide.dry_run(): the decisions the next cycle would make, writing nothing.
-- One cluster, three rounds; in each, dry_run must leave every row,
-- sequence and setting as it was, and the real tide.run_cycle() that
-- follows must make exactly the decisions it listed.
--   round 1: a placement on GPUs, an idle job evicted by R-E1 and the GPUs
--            held for its preemptor (R-E6), a reservation (R-L2), an
--            unschedulable job, a pending job;
--   round 2: the victim has stopped: the preemptor gets what was held;
--   round 3: a node whose launcher went silent is listed as lost (R-C3).
BEGIN;
CREATE EXTENSION pg_tide;
SET client_min_messages = warning;
SELECT plan(29);

INSERT INTO tide.queues (name, quota, priority, reclaimable) VALUES
    ('online', 'gpu=8', 10, false),
    ('offline', NULL, 10, false),
    ('cpu', NULL, 10, false);
SELECT tide.register_node('g1', 'cpu=16, gpu=8', 'H100');
SELECT tide.register_node('g2', 'cpu=16, gpu=8', 'H100');
SELECT tide.register_node('c1', 'cpu=4');

CREATE TEMP TABLE ids (name text PRIMARY KEY, id bigint);
CREATE FUNCTION pg_temp.jid(n text) RETURNS bigint LANGUAGE sql AS $$ SELECT id FROM ids WHERE name = n $$;

-- The launchers: start every assigned allocation.
CREATE FUNCTION pg_temp.start_all() RETURNS void LANGUAGE sql AS $$
    SELECT count(tide.started(a.id)) FROM tide.allocations a WHERE a.state = 'assigned';
$$;

-- Every row of every table the cycle reads or writes (with its ctid, so
-- that even an UPDATE to the same values shows), the sequences and the
-- cycle's setting, as one hash.
CREATE FUNCTION pg_temp.fingerprint() RETURNS text LANGUAGE sql AS $$
    SELECT md5(string_agg(x, E'\n' ORDER BY x)) FROM (
        SELECT 'jobs ' || j.ctid || j::text FROM tide.jobs j
        UNION ALL SELECT 'tasks ' || t.ctid || t::text FROM tide.job_tasks t
        UNION ALL SELECT 'allocations ' || a.ctid || a::text FROM tide.allocations a
        UNION ALL SELECT 'nodes ' || n.ctid || n::text FROM tide.nodes n
        UNION ALL SELECT 'queues ' || q.ctid || q::text FROM tide.queues q
        UNION ALL SELECT 'cycles ' || c.ctid || c::text FROM tide.cycles c
        UNION ALL SELECT 'evictions ' || e.ctid || e::text FROM tide.evictions e
        UNION ALL SELECT 'holds ' || h.ctid || h::text FROM tide.eviction_holds h
        UNION ALL SELECT 'backlog ' || b.ctid || b::text FROM tide.reason_backlog b
        UNION ALL SELECT 'events ' || e.ctid || e::text FROM tide.job_events e
        UNION ALL SELECT 'cycle seq ' || s.last_value || s.is_called FROM tide.cycles_id_seq s
        UNION ALL SELECT 'job seq ' || s.last_value || s.is_called FROM tide.jobs_id_seq s
        UNION ALL SELECT 'allocation seq ' || s.last_value || s.is_called FROM tide.allocations_id_seq s
        UNION ALL SELECT 'eviction seq ' || s.last_value || s.is_called FROM tide.evictions_id_seq s
        UNION ALL SELECT 'event seq ' || s.last_value || s.is_called FROM tide.job_events_id_seq s
        UNION ALL SELECT 'cycle_id ' || coalesce(current_setting('tide.cycle_id', true), '')) f(x)
$$;

CREATE FUNCTION pg_temp.counts() RETURNS text LANGUAGE sql AS $$
    SELECT format('jobs %s, tasks %s, allocations %s, cycles %s, evictions %s, holds %s, backlog %s, events %s',
                  (SELECT count(*) FROM tide.jobs), (SELECT count(*) FROM tide.job_tasks),
                  (SELECT count(*) FROM tide.allocations), (SELECT count(*) FROM tide.cycles),
                  (SELECT count(*) FROM tide.evictions), (SELECT count(*) FROM tide.eviction_holds),
                  (SELECT count(*) FROM tide.reason_backlog), (SELECT count(*) FROM tide.job_events))
$$;

CREATE TEMP TABLE dry AS SELECT * FROM tide.dry_run() WITH NO DATA;

-- One round: dry_run, proof that it wrote nothing, the real cycle, and
-- its decisions against the listed ones.  Leaves the listed rows in dry.
CREATE FUNCTION pg_temp.round(label text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    fp text := pg_temp.fingerprint();
    cnt text := pg_temp.counts();
    unsched_before bigint[] := ARRAY(SELECT id FROM tide.jobs WHERE unschedulable);
    cid bigint;
BEGIN
    DELETE FROM dry;
    INSERT INTO dry SELECT * FROM tide.dry_run();
    RETURN NEXT is(pg_temp.counts(), cnt, label || ': dry_run leaves every row count as it was');
    RETURN NEXT is(pg_temp.fingerprint(), fp, label || ': and every row, sequence and setting (no cycle id taken)');

    cid := tide.run_cycle();
    RETURN NEXT set_eq(
        'SELECT job_id, role, replica, node, gpus::text, gpu_milli, resources::text FROM dry WHERE kind = ''place''',
        format('SELECT job_id, role, replica, node, gpus::text, gpu_milli, resources::text FROM tide.allocations WHERE cycle_id = %s', cid),
        label || ': the cycle places exactly the listed replicas (job, role, replica, node, GPUs)');
    RETURN NEXT set_eq(
        'SELECT job_id, preemptor_job_id, reason FROM dry WHERE kind = ''evict''',
        format('SELECT job_id, preemptor_job_id, reason FROM tide.evictions WHERE cycle_id = %s', cid),
        label || ': it evicts exactly the listed jobs, for the listed preemptors');
    RETURN NEXT set_eq(
        'SELECT job_id, role, replica, node, gpus::text, gpu_milli FROM dry WHERE kind = ''hold'' AND rule = ''R-E6''',
        format('SELECT job_id, role, replica, node, gpus::text, gpu_milli FROM tide.eviction_holds WHERE cycle_id = %s', cid),
        label || ': it holds exactly the listed resources for preemptors');
    RETURN NEXT is((SELECT count(*)::int FROM dry WHERE kind = 'hold' AND rule = 'R-L2'),
                   (SELECT holds FROM tide.cycles WHERE id = cid),
                   label || ': as many reservations as the cycle row counts');
    RETURN NEXT set_eq(
        'SELECT job_id, reason FROM dry WHERE kind = ''pending''',
        'SELECT id, pending_reason FROM tide.jobs WHERE state = ''pending'' AND NOT unschedulable AND NOT cancel_requested',
        label || ': every job left pending, with the reason the cycle wrote');
    RETURN NEXT set_eq(
        'SELECT job_id, reason FROM dry WHERE kind = ''unschedulable''',
        format('SELECT id, pending_reason FROM tide.jobs WHERE unschedulable AND id <> ALL (%L::bigint[])', unsched_before),
        label || ': the jobs found unschedulable, with the same reasons');
END $$;

-- ---------------------------------------------------------------- round 1
INSERT INTO ids VALUES
    ('idle', tide.submit('offline', 'cpu=1, gpu=8', idle => true)),
    ('half', tide.submit('offline', 'cpu=1, gpu=4')),
    ('filler', tide.submit('cpu', 'cpu=3', time_limit => '1 hour'));
SELECT tide.run_cycle();
SELECT pg_temp.start_all();
INSERT INTO ids VALUES
    ('preemptor', tide.submit('online', 'cpu=1, gpu=8')),
    ('gpu2', tide.submit('offline', 'cpu=1, gpu=2')),
    ('reserver', tide.submit('cpu', 'cpu=4', reserve => true)),
    ('waiter', tide.submit('cpu', 'cpu=2')),
    ('huge', tide.submit('offline', 'cpu=1, gpu=16'));

SELECT * FROM pg_temp.round('round 1');
SELECT is((SELECT node || ' ' || gpus::text FROM dry WHERE kind = 'place' AND job_id = pg_temp.jid('gpu2')),
          'g1 4,5', 'round 1: listed: the 2-GPU job on GPUs 4 and 5 of g1 (packed beside the 4-GPU job)');
SELECT is((SELECT count(*)::int FROM dry WHERE kind = 'place'), 1, 'round 1: listed: nothing else placed');
SELECT is((SELECT preemptor_job_id::text || ' ' || rule FROM dry WHERE kind = 'evict' AND job_id = pg_temp.jid('idle')),
          pg_temp.jid('preemptor') || ' R-E1 idle job', 'round 1: listed: the idle job evicted for the guaranteed one by R-E1');
SELECT is((SELECT node || ' ' || gpus::text FROM dry WHERE kind = 'hold' AND rule = 'R-E6' AND job_id = pg_temp.jid('preemptor')),
          'g2 0-7', 'round 1: listed: the 8 GPUs of g2 held for the preemptor');
SELECT ok((SELECT bool_or(node = 'c1') FROM dry WHERE kind = 'hold' AND rule = 'R-L2' AND job_id = pg_temp.jid('reserver')),
          'round 1: listed: c1 reserved for the reserving job');
SELECT alike((SELECT reason FROM dry WHERE kind = 'hold' AND rule = 'R-L2' AND node = 'c1'),
            'reserved for it, expected to start at %', 'round 1: listed: when the reservation should start (the filler''s time limit)');
SELECT is((SELECT array_agg(job_id) FROM dry WHERE kind = 'unschedulable'), ARRAY[pg_temp.jid('huge')],
          'round 1: listed: the 16-GPU job is unschedulable');
SELECT is((SELECT reason FROM dry WHERE kind = 'pending' AND job_id = pg_temp.jid('waiter')) IS NOT NULL, true,
          'round 1: listed: the waiting job with its reason');
SELECT is((SELECT state FROM tide.jobs WHERE id = pg_temp.jid('idle')), 'evicting', 'round 1: the cycle did evict the idle job');

-- ---------------------------------------------------------------- round 2
SELECT pg_temp.start_all();
SELECT count(tide.evicted(a.id)) FROM tide.allocations a WHERE a.job_id = pg_temp.jid('idle') AND a.state = 'releasing';
SELECT * FROM pg_temp.round('round 2');
SELECT is((SELECT node || ' ' || gpus::text FROM dry WHERE kind = 'place' AND job_id = pg_temp.jid('preemptor')),
          'g2 0-7', 'round 2: listed: the preemptor on the 8 GPUs held for it');
SELECT is((SELECT state FROM tide.jobs WHERE id = pg_temp.jid('preemptor')), 'allocated', 'round 2: the cycle did place it');

-- ---------------------------------------------------------------- round 3
UPDATE tide.nodes SET heartbeat_at = now() - interval '1 hour', state_since = now() - interval '1 hour' WHERE name = 'c1';
SELECT is((SELECT array_agg(d.node || ' ' || d.rule) FROM tide.dry_run() d WHERE d.kind = 'lost'),
          ARRAY['c1 R-C3'], 'round 3: listed: c1 is lost');
SELECT tide.run_cycle();
SELECT is((SELECT state FROM tide.nodes WHERE name = 'c1'), 'down', 'round 3: the cycle did mark it down');

SELECT * FROM finish();
ROLLBACK;
