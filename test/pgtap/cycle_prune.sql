-- The cycle's pruning of tide.job_changes (src/cycle_cache.c,
-- tide._prune_job_changes): a backlog of changes is deleted over several
-- cycles, oldest first, a batch of 1,000 rows, then 2,000, ... while the
-- batch is filled, the whole cluster's mark rising past what was deleted;
-- the allocations a cycle inserts are not logged again (the UPDATE that
-- moved their jobs named them).
BEGIN;
CREATE EXTENSION pg_tide;
SET client_min_messages = warning;
SELECT plan(9);

INSERT INTO tide.queues (name) VALUES ('q');
SELECT tide.register_node('n1', 'cpu=64');
-- 3,500 rows of transactions far below any real one (every load has
-- seen them): 999 of transaction 10, 1,000 each of 11 and 12, 501 of 13
INSERT INTO tide.job_changes (xid, job_id)
SELECT (10 + g / 1000)::text::xid8, g FROM generate_series(1, 3500) g;
CREATE FUNCTION pg_temp.old() RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM tide.job_changes WHERE job_id <= 3500 AND xid < '100'
$$;
CREATE FUNCTION pg_temp.mark() RETURNS xid8 LANGUAGE sql AS $$
    SELECT changes_pruned_below FROM tide.cycle_state WHERE resource_group = ''
$$;

SELECT tide.submit('q', 'cpu=1', name => 'j1') AS j1 \gset
SELECT ok(tide.run_cycle() IS NOT NULL, 'a cycle runs');
SELECT is(pg_temp.old(), 2500::bigint, 'the first cycle prunes 1,000 of the 3,500 rows');
SELECT is((SELECT min(xid) FROM tide.job_changes WHERE job_id <= 3500 AND xid < '100'), '11'::xid8,
          'the oldest first: transaction 10''s rows and one of 11''s');
SELECT is(pg_temp.mark(), '12'::xid8, 'the mark: past the highest transaction deleted (11)');

SELECT tide.submit('q', 'cpu=1', name => 'j2') AS j2 \gset
SELECT ok(tide.run_cycle() IS NOT NULL, 'the next cycle runs after a submission');
SELECT is(pg_temp.old(), 500::bigint, 'it prunes a batch of 2,000 (the first one was full)');

SELECT tide.submit('q', 'cpu=1', name => 'j3') AS j3 \gset
SELECT tide.run_cycle();
SELECT is(pg_temp.old(), 0::bigint, 'the third prunes the last 500');
SELECT ok(pg_temp.mark() > '14'::xid8, 'and, none left below its load''s xmin, the mark rises to it');

-- j3, placed by the third cycle: named once by tide.submit, once by the
-- cycle's UPDATE, not again by its allocation's INSERT
SELECT is((SELECT count(*) FROM tide.job_changes WHERE job_id = :j3), 2::bigint,
          'a placed job is named by its submission and the cycle''s UPDATE, not by its allocation');

SELECT * FROM finish();
ROLLBACK;
