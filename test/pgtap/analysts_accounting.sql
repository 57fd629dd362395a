-- Accounting on the scripted day of _analysts_history.psql: per queue and
-- owner (sacct/sreport), per node with capacity as it was, clock-aligned
-- GPU use per queue and owner, evictions with who caused them, and the
-- daily rollup tide.maintain_history writes (the views read it).
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
\ir _analysts_history.psql
SELECT plan(22);

SELECT results_eq(
    format($$SELECT queue, owner, jobs_submitted, jobs_placed, jobs_started, jobs_succeeded, jobs_failed, jobs_cancelled
               FROM tide.queue_accounting_raw(%L, %L) ORDER BY queue, owner NULLS FIRST$$, :'D', :'D'),
    $$VALUES ('q1', NULL, 7::bigint, 5::bigint, 6::bigint, 3::bigint, 1::bigint, 1::bigint),
             ('q1', 'alice', 4, 2, 2, 1, 1, 1),
             ('q1', 'bob', 3, 3, 4, 2, 0, 0),
             ('qi', NULL, 1, 1, 1, 1, 0, 0),
             ('qi', 'bob', 1, 1, 1, 1, 0, 0)$$,
    'jobs submitted, first placed, started (a requeued job starts twice) and finished by outcome, per queue and owner');
SELECT results_eq(
    format($$SELECT wait_mean, wait_p50, wait_max FROM tide.queue_accounting_raw(%L, %L) WHERE queue = 'q1' AND owner IS NULL$$, :'D', :'D'),
    $$VALUES (540::float8, 300::float8, 1800::float8)$$,
    'waits of first placements: 600, 1800, 300, 0 and 0 seconds');
SELECT is((SELECT round(wait_p95::numeric, 1) FROM tide.queue_accounting_raw(:'D', :'D') WHERE queue = 'q1' AND owner IS NULL),
          1560.0, 'p95 interpolates');
SELECT results_eq(
    format($$SELECT queue, owner, gpu_hours, borrowed_gpu_hours FROM tide.queue_accounting_raw(%L, %L) ORDER BY queue, owner NULLS FIRST$$, :'D', :'D'),
    $$VALUES ('q1', NULL, 59.667, 1.333), ('q1', 'alice', 11.667, 0.622), ('q1', 'bob', 48.000, 0.711),
             ('qi', NULL, 8.000, 8.000), ('qi', 'bob', 8.000, 8.000)$$,
    'GPU-hours (the half GPU counts half) and of them borrowed above quota (q1 held 12 of its 8 for 5 minutes, 10 for 30; qi has no quota), shared among owners by what they held then');
SELECT results_eq(
    format($$SELECT queue, owner, lost_gpu_hours, evictions_suffered, evictions_caused FROM tide.queue_accounting_raw(%L, %L) ORDER BY queue, owner NULLS FIRST$$, :'D', :'D'),
    $$VALUES ('q1', NULL, 4.667, 2::bigint, 0::bigint), ('q1', 'alice', 3.667, 1, 0), ('q1', 'bob', 1.000, 1, 0),
             ('qi', NULL, 0.000, 0, 2), ('qi', 'bob', 0.000, 0, 2)$$,
    'work thrown away by evictions, evictions suffered and caused');

SELECT results_eq(
    $$SELECT job_id, queue, owner, goal, preemptor_job_id, preemptor_queue, preemptor_owner, gpus, gpu_hours_lost
        FROM tide.eviction_log ORDER BY job_id$$,
    $$VALUES (903::bigint, 'q1'::text, 'alice'::text, 'fail'::text, 904::bigint, 'qi'::text, 'bob'::text, 4::numeric, 3.667::numeric),
             (907, 'q1', 'bob', 'requeue', 904, 'qi', 'bob', 2, 1.000)$$,
    'eviction_log: victims, who caused them, GPUs stopped and work lost');

SELECT results_eq(
    format($$SELECT node, capacity_gpu_hours, allocated_gpu_hours, idle_gpu_hours FROM tide.node_accounting_raw(%L, %L) ORDER BY node$$, :'D', :'D'),
    $$VALUES ('n1'::text, 192.000::numeric, 56.000::numeric, 136.000::numeric), ('n2', 144.000, 11.667, 132.333)$$,
    'per node: capacity as it was (n2 had 4 GPUs until noon), allocated and idle GPU-hours');

-- Clock-aligned buckets: a window starting 03:03 starts its buckets at 03:00.
SELECT results_eq(
    format($$SELECT bucket_start, gpus_used, gpus_total, utilisation FROM tide.gpu_usage(%L, %L) WHERE queue = 'q1' AND owner IS NULL$$,
           pg_temp.t('03:03'), pg_temp.t('03:40')),
    format($$VALUES (%L::timestamptz, 10.000::numeric, 12.000::numeric, 0.8333::numeric), (%L, 8.000, 12.000, 0.6667),
                    (%L, 8.000, 12.000, 0.6667), (%L, 10.000, 12.000, 0.8333)$$,
           pg_temp.t('03:00'), pg_temp.t('03:10'), pg_temp.t('03:20'), pg_temp.t('03:30')),
    'gpu_usage: time-weighted GPUs per 10-minute bucket on the clock, against the GPUs then');
SELECT results_eq(
    format($$SELECT owner, gpus_used FROM tide.gpu_usage(%L, %L) WHERE queue = 'q1' ORDER BY owner NULLS FIRST$$,
           pg_temp.t('06:00'), pg_temp.t('06:10')),
    $$VALUES (NULL::text, 2.500::numeric), ('bob', 2.500)$$,
    'per owner, a half GPU counted as used');
SELECT is((SELECT gpus_total FROM tide.gpu_usage(pg_temp.t('13:00'), pg_temp.t('13:10')) WHERE queue = 'q1' AND owner IS NULL),
          16.000, 'after noon n2 has 8 GPUs');
SELECT is((SELECT count(DISTINCT bucket_start) FROM tide.gpu_usage(pg_temp.t('00:00'), pg_temp.t('12:00'), '1 hour')),
          11::bigint, 'hourly buckets, from the first with an allocation (01:00)');
SELECT throws_ok($$SELECT * FROM tide.gpu_usage(now(), now() - interval '1 hour')$$, '22023', NULL, 'an empty window is refused');

-- Capacity history: written by a trigger on tide.nodes, heartbeats aside.
SELECT tide.register_node('n4', 'gpu=2', 'A100');
SELECT tide.heartbeat('n4');
SELECT is((SELECT count(*) FROM tide.node_capacity_history WHERE node = 'n4'), 1::bigint, 'a new node opens its history; a heartbeat adds nothing');
UPDATE tide.nodes SET state = 'down' WHERE name = 'n4';
SELECT results_eq($$SELECT state, valid_to IS NULL FROM tide.node_capacity_history WHERE node = 'n4' ORDER BY valid_from, valid_to NULLS LAST$$,
                  $$VALUES ('down'::text, true)$$, 'a change in the same transaction replaces the open row');

-- Fragmentation now: p1 wants 1 GPU; n1 has 6 free: usable, nothing fragmented.
SELECT is((SELECT sum(gpus_fragmented) FROM tide.node_fragmentation()), 0::bigint, 'free GPUs a pending request fits are not fragmented');
SET LOCAL session_replication_role = replica;
UPDATE tide.job_tasks SET request = 'gpu=7' WHERE job_id = 908;
SET LOCAL session_replication_role = DEFAULT;
SELECT results_eq($$SELECT node, gpus_free, gpus_fragmented FROM tide.node_fragmentation() WHERE node IN ('n1', 'n2') ORDER BY node$$,
                  $$VALUES ('n1'::text, 6, 6), ('n2', 8, 0)$$,
                  'free GPUs no pending request fits are fragmented');

-- The rollup: maintenance rolls up finished days, the views read them.
SELECT array_agg(q ORDER BY q::text)::text AS raw FROM tide.queue_accounting_raw(:'D', :'D') q \gset
SELECT array_agg(u ORDER BY u::text)::text AS usage_raw FROM tide.gpu_usage(pg_temp.t('00:00'), pg_temp.t('00:00') + interval '1 day', '1 hour') u \gset
SELECT ok((tide.maintain_history() ->> 'days_rolled_up')::int >= 2, 'maintenance rolls up the finished days');
SELECT is((SELECT array_agg(q ORDER BY q::text)::text FROM tide.accounting_daily q WHERE day = :'D'), :'raw',
          'the rollup holds what the raw history says');
SELECT ok((SELECT done_from <= pg_temp.t('01:10') AND done_until > now() - interval '15 minutes' FROM tide.rollup_marks WHERE name = 'usage_buckets'),
          'and the 10-minute GPU use from the first allocation until the last finished bucket');
SELECT is((SELECT array_agg(u ORDER BY u::text)::text FROM tide.gpu_usage(pg_temp.t('00:00'), pg_temp.t('00:00') + interval '1 day', '1 hour') u),
          :'usage_raw', 'gpu_usage from the rollup equals what the allocations say');
SELECT is((SELECT gpu_hours FROM tide.queue_accounting WHERE day = :'D' AND queue = 'q1' AND owner IS NULL), 59.667,
          'queue_accounting reads it');
SELECT is((SELECT capacity_gpu_hours FROM tide.node_accounting WHERE day = :'D' AND node = 'n2'), 144.000,
          'node_accounting too');

SELECT * FROM finish();
ROLLBACK;
