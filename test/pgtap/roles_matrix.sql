-- Every role against every operation, allowed and refused.  Each operation
-- runs as the role in a subtransaction that is always rolled back, so every
-- one starts from the same fixture.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(5 * 70 + 6);

-- Alice's pending job, Bob's pending job, Alice's job running on n1 (one
-- allocation running, one releasing) and one on n3 (launcher_role tap_l3).
SELECT tide.submit('q1', 'gpu=1') AS ja, tide.submit('q1', 'gpu=1', replicas => 2) AS jr,
       tide.submit('q1', 'cpu=1') AS j3, tide.submit('q1', 'gpu=1') AS jb \gset
UPDATE tide.jobs SET owner = 'tap_alice' WHERE id IN (:ja, :jr, :j3);
UPDATE tide.jobs SET owner = 'tap_bob' WHERE id = :jb;
SELECT pg_temp.place(:jr, ARRAY['n1']);
SELECT pg_temp.place(:j3, ARRAY['n3']);
SELECT (pg_temp.allocs(:jr))[1] AS a1, (pg_temp.allocs(:jr))[2] AS a2, (pg_temp.allocs(:j3))[1] AS a3 \gset
SELECT tide.started(:a1);
UPDATE tide.allocations SET state = 'releasing' WHERE id = :a2;

-- Run sql as role: 'allowed', or 'refused' when it raises.  must_see()
-- turns "sees nothing" into a refusal.
CREATE FUNCTION pg_temp.as_role(r text, sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        EXECUTE format('SET LOCAL ROLE %I', r);
        EXECUTE sql;
        RAISE EXCEPTION 'undo' USING ERRCODE = 'P0099';
    EXCEPTION WHEN SQLSTATE 'P0099' THEN
        RESET ROLE;
        RETURN 'allowed';
    WHEN OTHERS THEN
        RESET ROLE;
        RETURN 'refused';
    END;
END $$;
CREATE FUNCTION pg_temp.must_see(q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM (%s) s', q) INTO n;
    IF n = 0 THEN
        RAISE EXCEPTION 'sees nothing' USING ERRCODE = 'insufficient_privilege';
    END IF;
END $$;
CREATE FUNCTION pg_temp.must_change(q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    EXECUTE q;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n = 0 THEN
        RAISE EXCEPTION 'changes nothing' USING ERRCODE = 'insufficient_privilege';
    END IF;
END $$;
-- The batch launcher reports answer refused per allocation instead of raising.
CREATE FUNCTION pg_temp.must_be_changed(q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE why text;
BEGIN
    EXECUTE format('SELECT min(reason) FILTER (WHERE outcome <> ''changed'') FROM (%s) s', q) INTO why;
    IF why IS NOT NULL THEN
        RAISE EXCEPTION 'refused: %', why USING ERRCODE = 'insufficient_privilege';
    END IF;
END $$;
-- Refused only for want of a privilege: any other error means the role got
-- past pg_tide's gate (maintenance and pg_cron calls may fail for other
-- reasons in a test transaction).
CREATE FUNCTION pg_temp.gate(q text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
EXCEPTION WHEN insufficient_privilege THEN
    RAISE;
WHEN OTHERS THEN
    NULL;
END $$;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA pg_temp TO PUBLIC;
-- pg_cron open to every role, as a site may have it: only pg_tide's own
-- grants then keep the scheduling calls to administrators, and a
-- non-superuser administrator schedules without pg_read_all_settings
-- (tide.cron_check reads cron.database_name for it).
CREATE EXTENSION IF NOT EXISTS pg_cron;
GRANT USAGE ON SCHEMA cron TO PUBLIC;

CREATE TEMP TABLE ops (n serial, op text, sql text, allowed text[]);
GRANT SELECT ON ops TO PUBLIC;
INSERT INTO ops (op, sql, allowed) VALUES
 ('submit',                       $$SELECT tide.submit('q1', 'gpu=1')$$,                                        '{tap_admin,tap_alice}'),
 ('insert a job with its tasks',  $o$DO $d$ DECLARE i bigint; BEGIN INSERT INTO tide.jobs (queue) VALUES ('q1') RETURNING id INTO i; INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (i, 'main', 1, 'cpu=1'); END $d$$o$, '{tap_admin,tap_alice}'),
 ('insert a job for someone else',$$INSERT INTO tide.jobs (queue, owner) VALUES ('q1', 'tap_bob')$$,            '{tap_admin}'),
 ('insert a job with created_at', $$INSERT INTO tide.jobs (queue, created_at) VALUES ('q1', '2000-01-01')$$,    '{tap_admin}'),
 ('add a task to another''s job', format($$INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (%s, 'x', 1, 'cpu=1')$$, :jb), '{tap_admin}'),
 ('cancel own job',               format('SELECT tide.cancel(%s)', :ja),                                         '{tap_admin,tap_alice}'),
 ('cancel another''s job',        format('SELECT tide.cancel(%s)', :jb),                                         '{tap_admin}'),
 ('cancel own running job',       format('SELECT tide.cancel(%s)', :jr),                                         '{tap_admin,tap_alice}'),
 ('request cancel by UPDATE',     format('UPDATE tide.jobs SET cancel_requested = true WHERE id = %s', :ja),     '{tap_admin,tap_alice}'),
 ('change own job''s priority',   format('UPDATE tide.jobs SET priority = 99 WHERE id = %s', :ja),               '{tap_admin}'),
 ('change a job''s state',        format($$UPDATE tide.jobs SET state = 'cancelled' WHERE id = %s$$, :ja),       '{tap_admin}'),
 ('delete a job',                 format('DELETE FROM tide.jobs WHERE id = %s', :ja),                            '{tap_admin}'),
 ('see own jobs',                 format('SELECT pg_temp.must_see($q$SELECT 1 FROM tide.jobs WHERE id = %s$q$)', :ja), '{tap_admin,tap_alice,tap_reader}'),
 ('see another''s job',           format('SELECT pg_temp.must_see($q$SELECT 1 FROM tide.jobs WHERE id = %s$q$)', :jb), '{tap_admin,tap_reader}'),
 ('see another''s tasks',         format('SELECT pg_temp.must_see($q$SELECT 1 FROM tide.job_tasks WHERE job_id = %s$q$)', :jb), '{tap_admin,tap_reader}'),
 ('see another''s events',        format('SELECT pg_temp.must_see($q$SELECT 1 FROM tide.job_events WHERE job_id = %s$q$)', :jb), '{tap_admin,tap_reader}'),
 ('see own allocations',          format('SELECT pg_temp.must_see($q$SELECT 1 FROM tide.allocations WHERE job_id = %s$q$)', :jr), '{tap_admin,tap_alice,tap_reader,tap_l1}'),
 ('see own events',               format('SELECT pg_temp.must_see($q$SELECT 1 FROM tide.job_events WHERE job_id = %s$q$)', :jr), '{tap_admin,tap_alice,tap_reader}'),
 ('see the command of a job on n1', format('SELECT pg_temp.must_see($q$SELECT command FROM tide.jobs WHERE id = %s$q$)', :jr), '{tap_admin,tap_alice,tap_reader,tap_l1}'),
 ('see pending view',             $$SELECT pg_temp.must_see('SELECT 1 FROM tide.pending')$$,                     '{tap_admin,tap_alice,tap_reader}'),
 ('see queue_usage',              $$SELECT pg_temp.must_see('SELECT 1 FROM tide.queue_usage')$$,                 '{tap_admin,tap_reader}'),
 ('see node_usage',               $$SELECT pg_temp.must_see('SELECT 1 FROM tide.node_usage')$$,                  '{tap_admin,tap_reader}'),
 ('create a queue',               $$INSERT INTO tide.queues (name) VALUES ('q9')$$,                             '{tap_admin}'),
 ('change a queue',               $$UPDATE tide.queues SET priority = 5 WHERE name = 'q1'$$,                    '{tap_admin}'),
 ('register a node',              $$SELECT tide.register_node('n9', 'cpu=1')$$,                                  '{tap_admin}'),
 ('drain a node',                 $$SELECT tide.drain_node('n1')$$,                                              '{tap_admin}'),
 ('resume a node',                $$SELECT tide.resume_node('n1')$$,                                             '{tap_admin}'),
 ('claim for n1',                 $$SELECT * FROM tide.claim('n1')$$,                                            '{tap_admin,tap_l1}'),
 ('claim for n3',                 $$SELECT * FROM tide.claim('n3')$$,                                            '{tap_admin}'),
 ('claim_evictions for n1',       $$SELECT * FROM tide.claim_evictions('n1')$$,                                  '{tap_admin,tap_l1}'),
 ('started on n3',                format('SELECT tide.started(%s)', :a3),                                        '{tap_admin}'),
 ('exited on n1',                 format('SELECT tide.exited(%s, 0)', :a1),                                      '{tap_admin,tap_l1}'),
 ('evicted on n1',                format('SELECT tide.evicted(%s)', :a2),                                        '{tap_admin,tap_l1}'),
 ('heartbeat n1',                 $$SELECT tide.heartbeat('n1')$$,                                               '{tap_admin,tap_l1}'),
 ('release n3''s allocation by UPDATE', format($$SELECT pg_temp.must_change('UPDATE tide.allocations SET state = ''released'', released_at = now() WHERE id = %s')$$, :a3), '{tap_admin}'),
 ('release n1''s allocation by UPDATE', format($$SELECT pg_temp.must_change('UPDATE tide.allocations SET state = ''released'', released_at = now(), release_reason = ''exited'', exit_code = 0 WHERE id = %s')$$, :a1), '{tap_admin,tap_l1}'),
 ('request cancel of another''s job by UPDATE', format($$SELECT pg_temp.must_change('UPDATE tide.jobs SET cancel_requested = true WHERE id = %s')$$, :jb), '{tap_admin}'),
 ('evict a job (_evict)',         format($$SELECT tide._evict(ARRAY[%s::bigint], ARRAY['x'])$$, :jr),           '{tap_admin}'),
 ('mark a node lost (_nodes_lost)', $$SELECT tide._nodes_lost(ARRAY['n1'])$$,                                    '{tap_admin}'),
 ('record a cycle',               $$INSERT INTO tide.cycles DEFAULT VALUES$$,                                    '{tap_admin}'),
 -- operations added since the first forty
 ('submit_many',                  $$SELECT tide.submit_many('q1', ARRAY['gpu=1', 'cpu=1']::tide.resvec[])$$,     '{tap_admin,tap_alice}'),
 ('explain own job',              format('SELECT tide.explain(%s)', :ja),                                        '{tap_admin,tap_alice,tap_reader}'),
 ('estimate_start of own job',    format('SELECT tide.estimate_start(%s)', :ja),                                 '{tap_admin,tap_alice,tap_reader}'),
 ('dry_run',                      $$SELECT * FROM tide.dry_run()$$,                                              '{tap_admin}'),
 ('run_cycle',                    $$SELECT tide.run_cycle()$$,                                                   '{tap_admin}'),
 ('run_cycle(group)',             $$SELECT tide.run_cycle('default')$$,                                          '{tap_admin}'),
 ('started(ids) on n3',           format('SELECT tide.started(ARRAY[%s]::bigint[])', :a3),                       '{tap_admin}'),
 ('exited(ids) on n1',            format('SELECT tide.exited(ARRAY[%s]::bigint[], ARRAY[0])', :a1),              '{tap_admin,tap_l1}'),
 ('evicted(ids) on n1',           format('SELECT tide.evicted(ARRAY[%s]::bigint[])', :a2),                       '{tap_admin,tap_l1}'),
 ('report_started on n3',         format($$SELECT pg_temp.must_be_changed('SELECT * FROM tide.report_started(ARRAY[%s]::bigint[])')$$, :a3), '{tap_admin}'),
 ('report_exited on n1',          format($$SELECT pg_temp.must_be_changed('SELECT * FROM tide.report_exited(ARRAY[%s]::bigint[], ARRAY[0])')$$, :a1), '{tap_admin,tap_l1}'),
 ('report_evicted on n1',         format($$SELECT pg_temp.must_be_changed('SELECT * FROM tide.report_evicted(ARRAY[%s]::bigint[])')$$, :a2), '{tap_admin,tap_l1}'),
 ('see another''s job in jobs_all', format('SELECT pg_temp.must_see($q$SELECT 1 FROM tide.jobs_all WHERE id = %s$q$)', :jb), '{tap_admin,tap_reader}'),
 ('see own job in job_waits',     format('SELECT pg_temp.must_see($q$SELECT 1 FROM tide.job_waits WHERE job_id = %s$q$)', :ja), '{tap_admin,tap_alice,tap_reader}'),
 ('see another''s job in job_waits', format('SELECT pg_temp.must_see($q$SELECT 1 FROM tide.job_waits WHERE job_id = %s$q$)', :jb), '{tap_admin,tap_reader}'),
 ('read queue_accounting',        $$SELECT * FROM tide.queue_accounting$$,                                       '{tap_admin,tap_reader}'),
 ('read node_accounting',         $$SELECT * FROM tide.node_accounting$$,                                        '{tap_admin,tap_reader}'),
 ('queue_accounting_raw',         $$SELECT * FROM tide.queue_accounting_raw(current_date, current_date + 1)$$,   '{tap_admin,tap_reader}'),
 ('node_accounting_raw',          $$SELECT * FROM tide.node_accounting_raw(current_date, current_date + 1)$$,    '{tap_admin,tap_reader}'),
 ('read usage_buckets',           $$SELECT * FROM tide.usage_buckets$$,                                          '{tap_admin,tap_reader}'),
 ('read the metrics view',        $$SELECT * FROM tide.metrics$$,                                                '{tap_admin,tap_reader}'),
 ('metrics_prometheus',           $$SELECT tide.metrics_prometheus()$$,                                          '{tap_admin,tap_reader}'),
 ('read history_partitions',      $$SELECT * FROM tide.history_partitions$$,                                     '{tap_admin,tap_reader}'),
 ('maintain_history',             $$SELECT pg_temp.gate('SELECT tide.maintain_history()')$$,                     '{tap_admin}'),
 ('schedule_maintenance',         $$SELECT pg_temp.gate('SELECT tide.schedule_maintenance()')$$,                 '{tap_admin}'),
 ('unschedule_maintenance',       $$SELECT pg_temp.gate('SELECT tide.unschedule_maintenance()')$$,               '{tap_admin}'),
 ('schedule_cycles',              $$SELECT pg_temp.gate('SELECT tide.schedule_cycles(''1 second'')')$$,          '{tap_admin}'),
 ('schedule_cycles per group',    $$SELECT pg_temp.gate('SELECT tide.schedule_cycles(''1 second'', true)')$$,    '{tap_admin}'),
 ('unschedule_cycles',            $$SELECT pg_temp.gate('SELECT tide.unschedule_cycles()')$$,                    '{tap_admin}'),
 ('cycle_loop',                   $$SELECT pg_temp.gate('CALL tide.cycle_loop(''1 second'', ''0 seconds'')')$$,  '{tap_admin}');

SELECT is(pg_temp.as_role(r, o.sql),
          CASE WHEN r = ANY (o.allowed) THEN 'allowed' ELSE 'refused' END,
          format('%s: %s', r, o.op))
  FROM ops o
 CROSS JOIN unnest(ARRAY['tap_admin', 'tap_alice', 'tap_l1', 'tap_reader', 'tap_nobody']) r
 ORDER BY o.n, r;

-- n3's own launcher role.
SELECT is(pg_temp.as_role('tap_l3', $$SELECT * FROM tide.claim('n3')$$), 'allowed', 'tap_l3: claim for n3 (its launcher_role)');
SELECT is(pg_temp.as_role('tap_l3', format('SELECT tide.started(%s)', :a3)), 'allowed', 'tap_l3: started on n3');
SELECT is(pg_temp.as_role('tap_l3', $$SELECT * FROM tide.claim('n1')$$), 'allowed', 'tap_l3: any launcher serves a node without launcher_role');
SELECT is(pg_temp.as_role('tap_l1', format($$UPDATE tide.allocations SET state = 'running', started_at = now() WHERE id = %s$$, :a3)),
          'allowed', 'tap_l1: an UPDATE of n3''s allocation is allowed SQL ...');
SET LOCAL ROLE tap_l1;
UPDATE tide.allocations SET state = 'running', started_at = now() WHERE id = :a3;
RESET ROLE;
SELECT is(pg_temp.astate(:a3), 'assigned', '... but changes no row of another node');
-- Errors that say what went wrong.
SET LOCAL ROLE tap_l1;
SELECT throws_ok(format('SELECT tide.started(%s)', :a3), '42501',
                 format('allocation %s belongs to node "n3", which role "tap_l1" may not act for', :a3), 'another node''s allocation: clear error');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
