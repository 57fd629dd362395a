-- The tables, columns, indexes, roles, dump settings and hygiene of the schema.
BEGIN;
CREATE EXTENSION pg_tide;
SELECT plan(34 + 92 + 15 + 4);

SELECT has_table('tide', t, 'table tide.' || t)
  FROM unnest(ARRAY['queues','nodes','jobs','job_tasks','allocations','evictions','cycles','job_events',
                    'job_transitions','allocation_transitions','workload_shapes','recent_shapes',
                    'recent_shapes_state','job_states','allocation_states']) t;
-- The state lists are written once, in tide.job_states and
-- tide.allocation_states: the state columns' CHECKs are made from them.
SELECT is((SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'jobs_state_check'),
          format('CHECK ((state = ANY (ARRAY[%s])))',
                 (SELECT string_agg(quote_literal(state) || '::text', ', ' ORDER BY final, state) FROM tide.job_states)),
          'tide.jobs.state is checked against exactly the states of tide.job_states');
SELECT is((SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'allocations_state_check'),
          format('CHECK ((state = ANY (ARRAY[%s])))',
                 (SELECT string_agg(quote_literal(state) || '::text', ', ' ORDER BY live DESC, state) FROM tide.allocation_states)),
          'tide.allocations.state is checked against exactly the states of tide.allocation_states');
SELECT has_view('tide', v, 'view tide.' || v) FROM unnest(ARRAY['pending','queue_usage','node_usage']) v;
SELECT has_role(r, 'role ' || r) FROM unnest(ARRAY['tide_admin','tide_submitter','tide_launcher','tide_reader']) r;
SELECT has_function('tide', f, 'function tide.' || f)
  FROM unnest(ARRAY['submit','cancel','register_node','heartbeat','drain_node','resume_node','node_channel','claim',
                    'started','exited','claim_evictions','evicted','_cycle_lock_key','refresh_workload_shapes']) f;

-- Every column of the public SQL surface (docs/schema.md), and the ones the scheduler needs.
SELECT has_column('tide', t, c, format('tide.%s.%s', t, c))
  FROM (VALUES
    ('queues', 'name'), ('queues', 'resource_group'), ('queues', 'quota'), ('queues', 'capability'),
    ('queues', 'priority'), ('queues', 'reclaimable'), ('queues', 'preemption_within'), ('queues', 'service_type'),
    ('queues', 'placement'), ('queues', 'min_runtime'),
    ('nodes', 'name'), ('nodes', 'resource_group'), ('nodes', 'capacity'), ('nodes', 'gpu_type'),
    ('nodes', 'gpu_topology'), ('nodes', 'labels'), ('nodes', 'state'), ('nodes', 'heartbeat_at'),
    ('nodes', 'allow_cpu_jobs'), ('nodes', 'launcher_role'),
    ('jobs', 'id'), ('jobs', 'name'), ('jobs', 'queue'), ('jobs', 'owner'), ('jobs', 'priority'),
    ('jobs', 'created_at'), ('jobs', 'service_type'), ('jobs', 'preemptable'), ('jobs', 'idle'),
    ('jobs', 'reserve'), ('jobs', 'min_available'), ('jobs', 'node_selector'), ('jobs', 'gpu_type'),
    ('jobs', 'time_limit'), ('jobs', 'max_retries'), ('jobs', 'retry_of'), ('jobs', 'on_evict'),
    ('jobs', 'command'), ('jobs', 'state'), ('jobs', 'pending_reason'), ('jobs', 'state_reason'),
    ('jobs', 'unschedulable'), ('jobs', 'attempt'), ('jobs', 'avoid_nodes'), ('jobs', 'evict_goal'),
    ('jobs', 'cancel_requested'), ('jobs', 'started_at'), ('jobs', 'finished_at'), ('jobs', 'exit_code'),
    ('job_tasks', 'job_id'), ('job_tasks', 'role'), ('job_tasks', 'replicas'), ('job_tasks', 'request'),
    ('allocations', 'id'), ('allocations', 'job_id'), ('allocations', 'role'), ('allocations', 'replica'),
    ('allocations', 'node'), ('allocations', 'resources'), ('allocations', 'gpus'), ('allocations', 'gpu_milli'),
    ('allocations', 'cycle_id'), ('allocations', 'state'), ('allocations', 'exit_code'), ('allocations', 'created_at'),
    ('allocations', 'started_at'), ('allocations', 'released_at'), ('allocations', 'release_reason'),
    ('allocations', 'claimed_at'),
    ('evictions', 'id'), ('evictions', 'job_id'), ('evictions', 'cycle_id'), ('evictions', 'reason'),
    ('evictions', 'preemptor_job_id'), ('evictions', 'created_at'), ('evictions', 'acked_at'), ('evictions', 'goal'),
    ('cycles', 'id'), ('cycles', 'started_at'), ('cycles', 'finished_at'), ('cycles', 'jobs_considered'),
    ('cycles', 'jobs_placed'), ('cycles', 'jobs_evicted'),
    ('job_events', 'job_id'), ('job_events', 'at'), ('job_events', 'old_state'), ('job_events', 'new_state'),
    ('job_events', 'reason'), ('job_events', 'cycle_id'), ('job_events', 'id')
  ) AS c(t, c);

SELECT col_type_is('tide', 'queues', 'quota', 'tide.resvec', 'quota is a resvec');
SELECT col_type_is('tide', 'allocations', 'gpus', 'tide.gpumask', 'gpus is a gpumask');
SELECT col_default_is('tide', 'queues', 'service_type', 'training', 'queues default to training');
SELECT col_default_is('tide', 'queues', 'preemption_within', 'never', 'preemption_within defaults to never');
SELECT col_default_is('tide', 'queues', 'placement', 'frag', 'placement defaults to frag (R-L5)');

-- Hot-path indexes.
SELECT is((SELECT pg_get_indexdef('tide.jobs_pending_idx'::regclass)),
          'CREATE INDEX jobs_pending_idx ON tide.jobs USING btree (queue, priority DESC, created_at, id) WHERE ((state = ''pending''::text) AND (NOT waiting))',
          'pending jobs not waiting in scheduling order per queue (R-P1..R-P5)');
SELECT ok(pg_get_indexdef('tide.allocations_live_node_idx'::regclass) ~ '\(node, state\) WHERE \(state <> ''released''', 'live allocations per node');
SELECT ok(pg_get_indexdef('tide.job_events_job_idx'::regclass) ~ '\(job_id, id\)', 'events per job');
SELECT ok(pg_get_indexdef('tide.allocations_job_idx'::regclass) ~ '\(job_id\)', 'allocations per job');

-- pg_dump keeps user rows and sequence positions.
SELECT is((SELECT array_agg(c::regclass::text ORDER BY c::regclass::text)
             FROM pg_extension e, unnest(e.extconfig) c WHERE e.extname = 'pg_tide'
              AND c::regclass::text IN ('tide.queues','tide.nodes','tide.jobs','tide.job_tasks','tide.allocations',
                                        'tide.evictions','tide.cycles','tide.job_events','tide.workload_shapes')),
          ARRAY['tide.allocations','tide.cycles','tide.evictions','tide.job_events','tide.job_tasks','tide.jobs','tide.nodes','tide.queues',
                'tide.workload_shapes'],
          'every table with user rows is dumped');
SELECT is((SELECT count(*)::int FROM pg_extension e, unnest(e.extconfig) c WHERE e.extname = 'pg_tide'
              AND c::regclass::text ~ '_id_seq$'), 6, 'and the identity sequences');
SELECT ok(NOT EXISTS (SELECT 1 FROM pg_extension e, unnest(e.extconfig) c
                        WHERE e.extname = 'pg_tide' AND c = 'tide.job_transitions'::regclass),
          'the transition tables are part of the extension, not user rows');

-- Hygiene: row-level security, fixed search_path, comments.
SELECT is((SELECT array_agg(relname::text ORDER BY relname) FROM pg_class
            WHERE relnamespace = 'tide'::regnamespace AND relrowsecurity),
          ARRAY['allocations','allocations_archive','evictions','evictions_archive','job_arrays','job_dependencies','job_events',
                'job_tasks','job_tasks_archive','jobs','jobs_archive','nodes','owner_fair_usage'], 'row-level security on the private tables');
SELECT is((SELECT array_agg(p.oid::regprocedure::text ORDER BY 1) FROM pg_proc p
            WHERE p.pronamespace = 'tide'::regnamespace AND p.prosecdef
              AND NOT coalesce(p.proconfig, '{}') @> ARRAY['search_path=pg_catalog, pg_temp']),
          NULL, 'every SECURITY DEFINER function pins search_path');
SELECT is((SELECT array_agg(p.oid::regprocedure::text ORDER BY 1) FROM pg_proc p
            WHERE p.pronamespace = 'tide'::regnamespace AND p.prokind = 'f' AND p.prolang IN (SELECT oid FROM pg_language WHERE lanname IN ('sql', 'plpgsql'))
              AND (p.proname IN ('submit','cancel','register_node','heartbeat','drain_node','resume_node','node_channel',
                                 'claim','started','exited','claim_evictions','evicted') OR p.proname LIKE '\_%')
              AND p.proname NOT LIKE '\_sv\_%' AND p.proname NOT LIKE '\_gm\_%'
              AND obj_description(p.oid, 'pg_proc') IS NULL),
          NULL, 'every function of the schema part has a comment');
SELECT is((SELECT array_agg(relname::text ORDER BY relname) FROM pg_class
            WHERE relnamespace = 'tide'::regnamespace AND relkind IN ('r', 'v')
              AND obj_description(oid, 'pg_class') IS NULL),
          NULL, 'every table and view has a comment');
SELECT is((SELECT array_agg(p.oid::regprocedure::text ORDER BY 1) FROM pg_proc p
            WHERE p.pronamespace = 'tide'::regnamespace
              AND p.proname IN ('_evict','_rollup_jobs','_apply_cancel','_create_retries','_nodes_lost','register_node','drain_node',
                                '_refresh_workload_shapes_due','refresh_workload_shapes')
              AND has_function_privilege('public', p.oid, 'EXECUTE')),
          NULL, 'internal and administrative functions are not executable by PUBLIC');

SELECT * FROM finish();
ROLLBACK;
