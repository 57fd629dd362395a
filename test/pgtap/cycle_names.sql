-- Resource names that only jobs use (R-A2): a job asking for a resource or
-- card type that no node offers is unschedulable with a reason that names
-- it, and however many such names tenants make up, the cycle keeps placing
-- everyone else's jobs.  A node that starts to offer the name brings the
-- job back.
BEGIN;
CREATE EXTENSION pg_tide;
SET client_min_messages = warning;
SELECT plan(15);

INSERT INTO tide.queues (name, quota) VALUES ('q', 'gpu=8');
SELECT tide.register_node('n1', 'cpu=64, memory=256Gi, gpu=8', 'H100');

-- 80 made-up resource names, one per job, and 80 made-up card types: more
-- than the 64 names a cycle's table holds, each alone and together.
CREATE TEMP TABLE bad_res AS
SELECT i, tide.submit('q', format('cpu=1, madeup-%s=1', i)::tide.resvec) AS id
  FROM generate_series(1, 80) i;
CREATE TEMP TABLE bad_type AS
SELECT i, tide.submit('q', 'cpu=1, gpu=1', gpu_type => format('NVIDIA-X%s', i)) AS id
  FROM generate_series(1, 80) i;
-- a request of more names than any cluster offers is refused at once
SELECT throws_ok($$SELECT tide.submit('q', (SELECT string_agg(format('many-%s=1', i), ', ')
                                             FROM generate_series(1, 65) i)::tide.resvec)$$,
                 '54000', 'task "main" names 65 resources, more than 64',
                 'a request naming 65 resources is refused at submit');
-- one job with 64 names of its own: the most a request may name
SELECT tide.submit('q', (SELECT string_agg(format('many-%s=1', i), ', ') FROM generate_series(1, 64) i)::tide.resvec)
    AS many \gset
SELECT tide.submit('q', 'cpu=2, gpu=2') AS good \gset
SELECT tide.submit('q', 'cpu=2, gpu=1', gpu_type => 'H100') AS typed \gset

SELECT isnt(tide.run_cycle(), NULL::bigint, 'the cycle runs despite 224 unknown names');
SELECT is((SELECT state FROM tide.jobs WHERE id = :good), 'allocated', 'an ordinary job is placed');
SELECT is((SELECT state FROM tide.jobs WHERE id = :typed), 'allocated', 'a job asking a card type nodes have is placed');
SELECT is((SELECT count(*)::int FROM tide.jobs j JOIN bad_res b ON b.id = j.id WHERE j.unschedulable), 80,
          'every job asking a made-up resource is unschedulable');
SELECT is((SELECT count(*)::int FROM tide.jobs j JOIN bad_type b ON b.id = j.id WHERE j.unschedulable), 80,
          'every job asking a made-up card type is unschedulable');
SELECT is((SELECT unschedulable FROM tide.jobs WHERE id = :many), true, 'the job with 64 names of its own too');
SELECT is((SELECT j.pending_reason FROM tide.jobs j JOIN bad_res b ON b.id = j.id WHERE b.i = 7),
          'no node offers resource madeup-7', 'the reason names the resource');
SELECT is((SELECT j.pending_reason FROM tide.jobs j JOIN bad_type b ON b.id = j.id WHERE b.i = 9),
          'no node with gpu_type NVIDIA-X9 in the resource group', 'the reason names the card type');

-- A second cycle leaves them as they are and still works.
SELECT isnt(tide.run_cycle(), NULL::bigint, 'the next cycle runs too');
SELECT tide.submit('q', 'cpu=1, gpu=1') AS later \gset
SELECT isnt(tide.run_cycle(), NULL::bigint, 'and the one after a new submit');
SELECT is((SELECT state FROM tide.jobs WHERE id = :later), 'allocated', 'which places the new job');

-- A node that offers a name brings its jobs back (R-A2: looked at again
-- when nodes change), and the next cycle places the one that fits.
SELECT tide.register_node('n2', 'cpu=8, memory=16Gi, madeup-7=1');
SELECT is((SELECT unschedulable FROM tide.jobs j JOIN bad_res b ON b.id = j.id WHERE b.i = 7), false,
          'a node offering madeup-7 makes its job schedulable again');
SELECT isnt(tide.run_cycle(), NULL::bigint, 'a cycle with the new name');
SELECT is((SELECT state || ' on ' || (SELECT node FROM tide.allocations a WHERE a.job_id = j.id)
             FROM tide.jobs j JOIN bad_res b ON b.id = j.id WHERE b.i = 7),
          'allocated on n2', 'and the job runs where madeup-7 is');

SELECT * FROM finish();
ROLLBACK;
