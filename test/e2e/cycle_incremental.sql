-- Functions of test/e2e/cycle_incremental.sh (not a test by itself): a
-- random cluster, random change streams, and one round's check, in schema
-- inc of the test's own database.
CREATE SCHEMA inc;
SET client_min_messages = warning;

-- Queues: a guaranteed one that preempts (R-E1/R-E3), a reclaimable
-- borrower, a capped one with owner limits (R-A4), owners taking turns
-- (R-O7), and a small tree (R-O5).
INSERT INTO tide.queues (name, quota, capability, priority, reclaimable, owner_capability, owner_fair_share) VALUES
    ('online',  'gpu=16', NULL,     10, false, NULL, false),
    ('batch',   'gpu=8',  NULL,      0, true,  NULL, false),
    ('capped',  NULL,     'gpu=12',  0, true,  'gpu=6', false),
    ('shared',  NULL,     NULL,      0, true,  NULL, true),
    ('org',     'gpu=16', NULL,      0, true,  NULL, false);
INSERT INTO tide.queues (name, quota, parent, reclaimable) VALUES
    ('team_a', 'gpu=8', 'org', true), ('team_b', 'gpu=8', 'org', true);
UPDATE tide.queues SET preemption_within = 'lower_priority' WHERE name = 'shared';

SELECT setseed(0.25);
SELECT tide.register_node(format('n%s', i),
           format('cpu=%s, memory=%sGi, gpu=%s', 32 * (1 + i % 2), 128 * (1 + i % 3), g)::tide.resvec,
           CASE WHEN g = 0 THEN NULL WHEN i % 3 = 0 THEN 'NVIDIA-A100' ELSE 'NVIDIA-H100' END,
           format('{"zone": "%s"}', CASE WHEN i % 4 = 0 THEN 'a' ELSE 'b' END)::jsonb,
           CASE WHEN g = 8 THEN '{0,0,1,1,2,2,3,3}'::int[] END)
  FROM (SELECT i, (ARRAY[8, 8, 4, 0])[1 + i % 4] AS g FROM generate_series(1, 14) i) x;

-- What the last round did, for the driver's messages.
CREATE TABLE inc.rounds (round int PRIMARY KEY, cycle_id bigint, load text, changes text, diffs text);
CREATE TABLE inc.dry AS SELECT * FROM tide.dry_run() WITH NO DATA;

CREATE FUNCTION inc.random_job() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    shape int := floor(random() * 10);
    gpu text := CASE WHEN shape = 0 THEN '0' WHEN shape = 1 THEN '0.5' ELSE (2 ^ floor(random() * 4))::int::text END;
    parent bigint;
    jid bigint;
BEGIN
    IF random() < 0.1 THEN
        SELECT id INTO parent FROM tide.jobs WHERE state IN ('pending', 'allocated', 'running') ORDER BY random() LIMIT 1;
    END IF;
    jid := tide.submit(
        (ARRAY['online', 'batch', 'batch', 'capped', 'shared', 'team_a', 'team_b'])[1 + floor(random() * 7)::int],
        format('cpu=%s, memory=%sGi, gpu=%s', 1 + floor(random() * 8), 1 + floor(random() * 32), gpu)::tide.resvec,
        replicas => CASE WHEN random() < 0.15 THEN 2 + floor(random() * 2)::int ELSE 1 END,
        priority => floor(random() * 4)::int,
        idle => random() < 0.1,
        reserve => random() < 0.05,
        gpu_type => CASE WHEN random() < 0.1 THEN 'NVIDIA-H100' END,
        node_selector => CASE WHEN random() < 0.1 THEN '{"zone": "a"}'::jsonb ELSE '{}' END,
        time_limit => CASE WHEN random() < 0.3 THEN interval '1 hour' * (1 + floor(random() * 5)) END,
        max_retries => CASE WHEN random() < 0.3 THEN 1 ELSE 0 END,
        after => CASE WHEN parent IS NOT NULL THEN ARRAY[parent] END,
        hold => random() < 0.05);
    UPDATE tide.jobs x SET owner = (ARRAY['o1', 'o2', 'o3'])[1 + floor(random() * 3)::int] WHERE x.id = jid;
    RETURN jid;
END $$;

-- One round's random changes, in one transaction, as a submitter, a
-- launcher and an administrator would make them.
CREATE FUNCTION inc.changes(r int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    did text[] := '{}';
    x bigint;
    n int;
BEGIN
    PERFORM setseed(r / 1000.0);
    n := floor(random() * 6)::int;
    PERFORM inc.random_job() FROM generate_series(1, n);
    IF n > 0 THEN did := did || format('%s submitted', n); END IF;
    IF random() < 0.6 THEN
        SELECT count(tide.started(a.id)) INTO n FROM tide.allocations a WHERE a.state = 'assigned';
        did := did || format('%s started', n);
    END IF;
    IF random() < 0.5 THEN
        SELECT count(tide.exited(a.id, CASE WHEN random() < 0.3 THEN 1 ELSE 0 END)) INTO n
          FROM (SELECT id FROM tide.allocations WHERE state = 'running' ORDER BY random() LIMIT 3) a;
        did := did || format('%s exited', n);
    END IF;
    IF random() < 0.5 THEN
        SELECT count(tide.evicted(a.id)) INTO n FROM tide.allocations a WHERE a.state = 'releasing';
        did := did || format('%s evictions acknowledged', n);
    END IF;
    IF random() < 0.2 THEN
        SELECT id INTO x FROM tide.jobs WHERE state = 'pending' ORDER BY random() LIMIT 1;
        IF x IS NOT NULL THEN PERFORM tide.cancel(x); did := did || format('job %s cancelled', x); END IF;
    END IF;
    IF random() < 0.2 THEN
        UPDATE tide.jobs SET priority = floor(random() * 4)::int
         WHERE id = (SELECT id FROM tide.jobs WHERE state = 'pending' ORDER BY random() LIMIT 1) RETURNING id INTO x;
        IF x IS NOT NULL THEN did := did || format('job %s priority', x); END IF;
    END IF;
    IF random() < 0.1 THEN
        SELECT id INTO x FROM tide.jobs WHERE state = 'pending' AND NOT held ORDER BY random() LIMIT 1;
        IF x IS NOT NULL THEN PERFORM tide.hold(x); did := did || format('job %s held', x); END IF;
    END IF;
    IF random() < 0.15 THEN
        SELECT id INTO x FROM tide.jobs WHERE held AND state = 'pending' ORDER BY random() LIMIT 1;
        IF x IS NOT NULL THEN PERFORM tide.release(x); did := did || format('job %s released', x); END IF;
    END IF;
    IF random() < 0.1 THEN
        UPDATE tide.nodes SET state = CASE WHEN state = 'ready' THEN 'draining' ELSE 'ready' END
         WHERE name = (SELECT name FROM tide.nodes WHERE state <> 'down' ORDER BY random() LIMIT 1);
        did := did || 'a node drained or back'::text;
    END IF;
    IF random() < 0.1 THEN
        UPDATE tide.queues SET quota = format('gpu=%s', 4 + floor(random() * 8))::tide.resvec WHERE name = 'batch';
        did := did || 'batch quota'::text;
    END IF;
    -- what changes how a kept job converts (cycle_jobs.c's memo): owners
    -- looked at or not, names nothing offers, new queues and resources
    IF random() < 0.08 THEN
        UPDATE tide.queues SET owner_fair_share = NOT owner_fair_share WHERE name = 'batch';
        did := did || 'batch owner order switched'::text;
    END IF;
    IF random() < 0.08 THEN
        x := tide.submit('batch', CASE WHEN random() < 0.5 THEN 'cpu=1, fpga=1' ELSE 'cpu=1, gpu=1' END::tide.resvec,
                         gpu_type => CASE WHEN random() < 0.5 THEN 'NVIDIA-B200' END);
        did := did || format('job %s asks for what no node has', x);
    END IF;
    IF random() < 0.04 THEN
        INSERT INTO tide.queues (name, quota) VALUES (format('q%s', r), 'gpu=2');
        did := did || format('queue q%s', r);
    END IF;
    IF random() < 0.03 THEN
        PERFORM tide.register_node(format('x%s', r), 'cpu=8, memory=32Gi, gpu=1, fpga=1'::tide.resvec, 'NVIDIA-B200');
        did := did || format('node x%s with an fpga', r);
    END IF;
    RETURN array_to_string(did, ', ');
END $$;

-- One round: the decisions a full load makes (tide.dry_run() never uses
-- kept rows), then the real cycle in this backend (incremental when it
-- can be), and every difference between them ('' when none).
CREATE FUNCTION inc.check(r int, what text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    unsched_before bigint[] := ARRAY(SELECT id FROM tide.jobs WHERE unschedulable);
    cid bigint;
    diffs text;
BEGIN
    DELETE FROM inc.dry;
    INSERT INTO inc.dry SELECT * FROM tide.dry_run();
    cid := tide.run_cycle();
    WITH listed AS (
        SELECT 'place ' || concat_ws(' ', job_id, role, replica, node, gpus::text, gpu_milli, resources::text) AS d
          FROM inc.dry WHERE kind = 'place'
        UNION ALL SELECT 'evict ' || concat_ws(' ', job_id, preemptor_job_id, reason) FROM inc.dry WHERE kind = 'evict'
        UNION ALL SELECT 'hold ' || concat_ws(' ', job_id, role, replica, node, gpus::text, gpu_milli)
          FROM inc.dry WHERE kind = 'hold' AND rule = 'R-E6'
        UNION ALL SELECT 'pending ' || concat_ws(' ', job_id, reason) FROM inc.dry WHERE kind = 'pending'
        UNION ALL SELECT 'unschedulable ' || concat_ws(' ', job_id, reason) FROM inc.dry WHERE kind = 'unschedulable'),
    done AS (
        SELECT 'place ' || concat_ws(' ', job_id, role, replica, node, gpus::text, gpu_milli, resources::text) AS d
          FROM tide.allocations WHERE cycle_id = cid
        UNION ALL SELECT 'evict ' || concat_ws(' ', job_id, preemptor_job_id, reason) FROM tide.evictions WHERE cycle_id = cid
        UNION ALL SELECT 'hold ' || concat_ws(' ', job_id, role, replica, node, gpus::text, gpu_milli)
          FROM tide.eviction_holds WHERE cycle_id = cid
        UNION ALL SELECT 'pending ' || concat_ws(' ', id, pending_reason) FROM tide.jobs
         WHERE state = 'pending' AND NOT unschedulable AND NOT cancel_requested AND NOT waiting
        UNION ALL SELECT 'unschedulable ' || concat_ws(' ', id, pending_reason) FROM tide.jobs
         WHERE unschedulable AND id <> ALL (unsched_before)),
    diff AS ((SELECT 'listed only: ' || d FROM listed EXCEPT ALL SELECT 'listed only: ' || d FROM done)
             UNION ALL
             (SELECT 'done only: ' || d FROM done EXCEPT ALL SELECT 'done only: ' || d FROM listed))
    SELECT string_agg(x, '; ' ORDER BY x) INTO diffs FROM (SELECT * FROM diff LIMIT 6) t(x);
    IF diffs IS NOT NULL THEN
        -- what the dry run said of the first job named, and its row
        diffs := diffs || coalesce(' || dry run of that job: ' || (
            SELECT string_agg(concat_ws(' ', d.kind, d.rule, d.node, d.reason), ' / ')
              FROM inc.dry d WHERE d.job_id = substring(diffs FROM '(?:pending|place|unschedulable|evict|hold) ([0-9]+)')::bigint), '')
          || coalesce(' || its row: ' || (
            SELECT concat_ws(' ', j.state, j.held, j.waiting, j.reserve, j.idle, j.avoid_nodes::text, j.queue)
              FROM tide.jobs j WHERE j.id = substring(diffs FROM '(?:pending|place|unschedulable|evict|hold) ([0-9]+)')::bigint), '');
    END IF;
    INSERT INTO inc.rounds VALUES (r, cid, (SELECT c.load FROM tide.cycles c WHERE c.id = cid), what, coalesce(diffs, ''));
    RETURN coalesce(diffs, '');
END $$;
