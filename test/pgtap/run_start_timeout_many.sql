-- Many starts that never happen at once (R-T4): a cycle places hundreds of
-- jobs, no launcher starts them, and the start timeout releases them all in
-- one cycle.  The statistics are those of before the placement (no
-- allocation, no allocated job), as they are right after a large first
-- cycle: the step must still read each index a bounded number of times,
-- not once per job (a plan that probes allocations_assigned_idx for every
-- job reads it n x n times: 653 s for 17,000 jobs).  And no statement
-- trigger joins its old and new transition tables through a cached plan:
-- one made for a one-row statement joins thousands of rows by nested loop.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(8);

-- every statement trigger with both transition tables joins them only in
-- dynamic SQL (EXECUTE $q$ ... $q$, planned for each statement's sizes)
CREATE FUNCTION pg_temp.static_join(src text, a text, b text) RETURNS boolean LANGUAGE sql AS $$
SELECT regexp_replace(src, '\$q\$.*?\$q\$', '', 'g')
       ~* format('\m%s\s+\w+\s*(,|(LEFT\s+|INNER\s+)?JOIN)\s*%s\M', a, b)
$$;
SELECT is((SELECT string_agg(DISTINCT p.proname, ', ' ORDER BY p.proname)
             FROM pg_catalog.pg_trigger t
             JOIN pg_catalog.pg_proc p ON p.oid = t.tgfoid
            WHERE t.tgoldtable IS NOT NULL AND t.tgnewtable IS NOT NULL
              AND t.tgrelid::regclass::text LIKE 'tide.%'
              AND (pg_temp.static_join(p.prosrc, t.tgoldtable, t.tgnewtable)
                   OR pg_temp.static_join(p.prosrc, t.tgnewtable, t.tgoldtable))),
          NULL, 'no statement trigger joins its transition tables through a cached plan');
SELECT is(pg_temp.static_join('SELECT 1 FROM old_jobs o JOIN new_jobs n ON n.id = o.id', 'old_jobs', 'new_jobs')
          AND pg_temp.static_join('SELECT 1 FROM old_jobs o, new_jobs n', 'old_jobs', 'new_jobs')
          AND NOT pg_temp.static_join('EXECUTE $q$ SELECT 1 FROM old_jobs o JOIN new_jobs n ON n.id = o.id $q$',
                                      'old_jobs', 'new_jobs'),
          true, 'the check finds a join of the two outside dynamic SQL, and only there');

-- 300 one-GPU jobs on 40 nodes of 8 GPUs, the statistics taken before
-- the cycle that places them
INSERT INTO tide.queues (name, quota) VALUES ('many', 'gpu=320');
INSERT INTO tide.nodes (name, capacity, gpu_type)
SELECT format('m%s', lpad(i::text, 3, '0')), 'cpu=96, memory=1Ti, gpu=8', 'H100' FROM generate_series(1, 40) i;
SELECT count(tide.submit('many', 'cpu=1, memory=1Gi, gpu=1')) FROM generate_series(1, 300);
ANALYZE tide.jobs, tide.allocations;
SELECT tide.run_cycle();
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE queue = 'many' AND state = 'allocated'), 300,
          'the cycle placed the 300 jobs');

-- no launcher started them: past the timeout, one cycle releases them all
UPDATE tide.allocations SET created_at = now() - interval '11 minutes' WHERE state = 'assigned';
CREATE TEMP TABLE reads AS
SELECT i.indexrelid::regclass::text AS idx, pg_catalog.pg_stat_get_xact_tuples_returned(i.indexrelid) AS before
  FROM pg_catalog.pg_index i
 WHERE i.indexrelid IN ('tide.allocations_assigned_idx'::regclass, 'tide.allocations_job_idx'::regclass,
                        'tide.jobs_active_idx'::regclass, 'tide.jobs_pkey'::regclass);
SELECT tide.run_cycle() AS c \gset
SELECT is((SELECT jobs_evicted FROM tide.cycles WHERE id = :c), 300, 'one cycle released the 300 jobs');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE queue = 'many' AND state = 'evicting' AND evict_goal = 'requeue'
                                                  AND start_timeouts = 1 AND cardinality(avoid_nodes) = 1),
          300, 'each one requeued, its timeout counted, its node avoided');
-- the index entries read by the cycle: a few per job, never one index
-- read whole per job (300 x 300 = 90,000)
SELECT cmp_ok((SELECT pg_catalog.pg_stat_get_xact_tuples_returned('tide.allocations_assigned_idx'::regclass) - r.before
                 FROM reads r WHERE r.idx = 'tide.allocations_assigned_idx'), '<=', 3 * 300::bigint,
              'allocations_assigned_idx: a few entries read per job, not all of them per job');
SELECT cmp_ok((SELECT sum(pg_catalog.pg_stat_get_xact_tuples_returned(r.idx::regclass) - r.before)::bigint
                 FROM reads r WHERE r.idx <> 'tide.allocations_assigned_idx'), '<=', 40 * 300::bigint,
              'the allocations and jobs indexes: a bounded number of entries read per job');
SELECT is((SELECT count(*)::int FROM tide.allocations WHERE state = 'releasing'), 300,
          'every allocation is releasing');

SELECT * FROM finish();
ROLLBACK;
