-- Every object of schema tide against every role: the effective privileges
-- (has_table_privilege, has_column_privilege, has_sequence_privilege,
-- has_function_privilege, has_type_privilege) of tide_admin, tide_submitter,
-- tide_launcher, tide_reader, PUBLIC and a plain login role, compared with
-- the decided matrix below.  Read from the catalog: an object added to the
-- schema without a decided row fails, with a message that names it.
--
-- To decide a new object, add one row per group of roles to "decided":
--   (object, roles, privileges)
--   object      tide.name for tables, views, sequences and types;
--               tide.f(argtypes) as regprocedure prints it for routines;
--               'partition of tide.parent' for every partition of a parent
--   roles       space-separated: admin submitter launcher reader public login;
--               '-' when nobody but the owner has any privilege
--   privileges  space-separated, in any order: SELECT INSERT UPDATE DELETE
--               TRUNCATE REFERENCES TRIGGER (tables, views), USAGE SELECT
--               UPDATE (sequences), EXECUTE (routines), USAGE (types); a
--               column grant as INSERT(a,b) (columns in alphabetical order)
-- A privilege of public is every role's; write only what a role has beyond it.
BEGIN;
CREATE EXTENSION pg_tide;
SET client_min_messages = warning;
CREATE ROLE tap_login LOGIN;
-- the day and month partitions maintenance makes, beside the default ones
SELECT tide.maintain_history() IS NOT NULL AS made_partitions \gset

CREATE TEMP TABLE decided (object text, roles text, privileges text);
INSERT INTO decided VALUES
 -- tables
 ('tide.accounting_daily'                 , 'admin reader'          , 'SELECT'),
 ('tide.allocation_states'                , 'admin submitter reader', 'SELECT'),
 ('tide.allocation_transitions'           , 'admin submitter reader', 'SELECT'),
 ('tide.allocations'                      , 'admin'                 , 'DELETE INSERT SELECT UPDATE'),
 ('tide.allocations'                      , 'submitter reader'      , 'SELECT'),
 ('tide.allocations'                      , 'launcher'              , 'SELECT UPDATE(claimed_at,exit_code,exit_reason,exited_at,release_reason,released_at,started_at,state)'),
 ('tide.cycle_state'                      , 'admin'                 , 'INSERT SELECT UPDATE'),
 ('tide.cycle_state'                      , 'reader'                , 'SELECT'),
 ('tide.job_changes'                      , 'admin'                 , 'DELETE SELECT'),
 ('tide.queue_fair_usage'                 , 'admin'                 , 'DELETE INSERT SELECT UPDATE'),
 ('tide.queue_fair_usage'                 , 'reader'                , 'SELECT'),
 ('tide.owner_fair_usage'                 , 'admin'                 , 'DELETE INSERT SELECT UPDATE'),
 ('tide.owner_fair_usage'                 , 'submitter reader'      , 'SELECT'),
 ('tide.eviction_holds'                   , 'admin'                 , 'DELETE INSERT SELECT'),
 ('tide.eviction_holds'                   , 'reader'                , 'SELECT'),
 ('tide.evictions'                        , 'admin'                 , 'DELETE INSERT SELECT UPDATE'),
 ('tide.evictions'                        , 'submitter launcher reader', 'SELECT'),
 ('tide.job_tasks'                        , 'admin'                 , 'DELETE INSERT SELECT UPDATE'),
 ('tide.job_tasks'                        , 'submitter'             , 'INSERT(job_id,replicas,request,role) SELECT'),
 ('tide.job_tasks'                        , 'launcher reader'       , 'SELECT'),
 ('tide.job_states'                       , 'admin submitter reader', 'SELECT'),
 ('tide.job_transitions'                  , 'admin submitter reader', 'SELECT'),
 ('tide.jobs'                             , 'admin'                 , 'DELETE INSERT SELECT UPDATE'),
 ('tide.jobs'                             , 'submitter'             , 'INSERT(array_id,array_index,array_throttled,begin_at,command,deferred,env,gpu_type,grace_period,held,idle,key,labels,max_retries,min_available,name,node_selector,on_evict,pending_reason,preemptable,priority,queue,queue_held,reserve,service_type,time_limit,warn_before,workdir) SELECT UPDATE(cancel_requested,held)'),
 ('tide.job_arrays'                       , 'admin'                 , 'DELETE INSERT SELECT UPDATE'),
 ('tide.job_arrays'                       , 'submitter'             , 'INSERT(key,max_running,queue,size) SELECT'),
 ('tide.job_arrays'                       , 'reader'                , 'SELECT'),
 ('tide.job_dependencies'                 , 'admin'                 , 'DELETE INSERT SELECT UPDATE'),
 ('tide.job_dependencies'                 , 'submitter'             , 'INSERT(condition,depends_on,job_id) SELECT'),
 ('tide.job_dependencies'                 , 'reader'                , 'SELECT'),
 ('tide.jobs'                             , 'launcher reader'       , 'SELECT'),
 ('tide.node_capacity_history'            , 'admin reader'          , 'SELECT'),
 ('tide.node_daily'                       , 'admin reader'          , 'SELECT'),
 ('tide.node_samples'                     , 'admin reader'          , 'SELECT'),
 ('tide.nodes'                            , 'admin'                 , 'DELETE INSERT SELECT UPDATE'),
 ('tide.nodes'                            , 'submitter reader'      , 'SELECT'),
 ('tide.nodes'                            , 'launcher'              , 'SELECT UPDATE(heartbeat_at)'),
 ('tide.queues'                           , 'admin'                 , 'DELETE INSERT SELECT UPDATE'),
 ('tide.queues'                           , 'submitter reader'      , 'SELECT'),
 ('tide.recent_shapes'                    , 'admin reader'          , 'SELECT'),
 ('tide.recent_shapes_state'              , 'admin reader'          , 'SELECT'),
 ('tide.workload_shapes'                  , 'admin'                 , 'DELETE INSERT SELECT UPDATE'),
 ('tide.workload_shapes'                  , 'reader'                , 'SELECT'),
 ('tide.reason_backlog'                   , 'admin'                 , 'DELETE INSERT SELECT UPDATE'),
 ('tide.reason_backlog'                   , 'reader'                , 'SELECT'),
 ('tide.rollup_marks'                     , 'admin reader'          , 'SELECT'),
 ('tide.usage_buckets'                    , 'admin reader'          , 'SELECT'),
 ('tide.jobs_removed'                     , 'admin reader'          , 'SELECT'),
 -- partitioned tables (their partitions: one row for all, 'partition of' the parent)
 ('tide.allocations_archive'              , 'admin submitter reader', 'SELECT'),
 ('tide.cycles'                           , 'admin'                 , 'DELETE INSERT SELECT UPDATE'),
 ('tide.cycles'                           , 'reader'                , 'SELECT'),
 ('tide.evictions_archive'                , 'admin submitter reader', 'SELECT'),
 ('tide.job_events'                       , 'admin'                 , 'DELETE SELECT'),
 ('tide.job_events'                       , 'submitter reader'      , 'SELECT'),
 ('tide.job_tasks_archive'                , 'admin submitter reader', 'SELECT'),
 ('tide.jobs_archive'                     , 'admin submitter reader', 'SELECT'),
 -- partitions: reached only through their parent
 ('partition of tide.allocations_archive' , '-'                     , ''),
 ('partition of tide.cycles'              , '-'                     , ''),
 ('partition of tide.evictions_archive'   , '-'                     , ''),
 ('partition of tide.job_events'          , '-'                     , ''),
 ('partition of tide.job_tasks_archive'   , '-'                     , ''),
 ('partition of tide.jobs_archive'        , '-'                     , ''),
 -- views
 ('tide.allocations_all'                  , 'admin submitter reader', 'SELECT'),
 ('tide.eviction_log'                     , 'admin submitter reader', 'SELECT'),
 ('tide.evictions_all'                    , 'admin submitter reader', 'SELECT'),
 ('tide.history_partitions'               , 'admin reader'          , 'SELECT'),
 ('tide.job_tasks_all'                    , 'admin submitter reader', 'SELECT'),
 ('tide.job_waits'                        , 'admin submitter reader', 'SELECT'),
 ('tide.jobs_all'                         , 'admin submitter reader', 'SELECT'),
 ('tide.metrics'                          , 'admin reader'          , 'SELECT'),
 ('tide.node_accounting'                  , 'admin reader'          , 'SELECT'),
 ('tide.node_usage'                       , 'admin reader'          , 'SELECT'),
 ('tide.demand'                           , 'admin reader'          , 'SELECT'),
 ('tide.pending'                          , 'admin submitter reader', 'SELECT'),
 ('tide.queue_accounting'                 , 'admin reader'          , 'SELECT'),
 ('tide.queue_usage'                      , 'admin reader'          , 'SELECT'),
 ('tide.fair_share'                       , 'admin reader'          , 'SELECT'),
 ('tide.owner_fair_share'                 , 'admin submitter reader', 'SELECT'),
 -- sequences
 ('tide.allocations_id_seq'               , 'admin'                 , 'SELECT USAGE'),
 ('tide.allocations_id_seq'               , 'reader'                , 'SELECT'),
 ('tide.change_seq'                       , 'admin'                 , 'SELECT USAGE'),
 ('tide.cycles_id_seq'                    , 'admin'                 , 'SELECT USAGE'),
 ('tide.cycles_id_seq'                    , 'reader'                , 'SELECT'),
 ('tide.evictions_id_seq'                 , 'admin'                 , 'SELECT USAGE'),
 ('tide.evictions_id_seq'                 , 'reader'                , 'SELECT'),
 ('tide.job_events_id_seq'                , 'admin'                 , 'SELECT USAGE'),
 ('tide.job_arrays_id_seq'                , 'admin'                 , 'SELECT USAGE'),
 ('tide.jobs_id_seq'                      , 'admin'                 , 'SELECT USAGE'),
 ('tide.jobs_id_seq'                      , 'reader'                , 'SELECT'),
 -- types
 ('tide._order_step'                      , 'public'                , 'USAGE'),
 ('tide.gpumask'                          , 'public'                , 'USAGE'),
 ('tide.resvec'                           , 'public'                , 'USAGE'),
 ('tide.writer'                           , 'public'                , 'USAGE'),
 ('tide."union"(tide.gpumask)'            , 'public'                , 'EXECUTE'),
 -- functions, procedures and aggregates, each overload apart
 ('tide._admit_job(text,text,boolean,boolean,text,integer)', 'admin submitter'       , 'EXECUTE'),
 ('tide._all_gpus(numeric)'               , 'public'                , 'EXECUTE'),
 ('tide._allocations_after_insert()'      , '-'                     , ''),
 ('tide._allocations_after_update()'      , '-'                     , ''),
 ('tide._allocations_release_decided()'   , '-'                     , ''),
 ('tide._apply_cancel(bigint[])'          , '-'                     , ''),
 ('tide._archive_jobs(timestamp with time zone,integer)', '-'                     , ''),
 ('tide._assert_acting_as(text)'          , 'public'                , 'EXECUTE'),
 ('tide._batch_notice(bigint[],bigint[],text)', 'admin launcher'        , 'EXECUTE'),
 ('tide._change_lock_key()'               , 'public'                , 'EXECUTE'),
 ('tide._changed()'                       , '-'                     , ''),
 ('tide._log_job_changes()'               , '-'                     , ''),
 ('tide._prune_job_changes(xid8,text,integer)', 'admin'          , 'EXECUTE'),
 ('tide._check_choice(text,text,text[],text)', 'public'                , 'EXECUTE'),
 ('tide._check_job_tasks()'               , '-'                     , ''),
 ('tide._check_job_values(text,text,integer,integer,interval,text,jsonb,text)', 'public'           , 'EXECUTE'),
 ('tide._check_launcher(text)'            , 'admin launcher'        , 'EXECUTE'),
 ('tide._check_name(text,text)'           , 'public'                , 'EXECUTE'),
 ('tide._check_window(timestamp with time zone,timestamp with time zone)', 'public'    , 'EXECUTE'),
 ('tide._count_removed_jobs()'            , '-'                     , ''),
 ('tide._check_node_values(text,tide.resvec,text,jsonb,integer[],text)', 'public'                , 'EXECUTE'),
 ('tide._check_task_values(bigint,text,integer,tide.resvec)', 'public'                , 'EXECUTE'),
 ('tide._covered(tide.resvec,tide.resvec)', 'public'                , 'EXECUTE'),
 ('tide._copies(tide.resvec,numeric,tide.resvec)', 'public'         , 'EXECUTE'),
 ('tide._demand()'                        , 'admin reader'          , 'EXECUTE'),
 ('tide._labels_match(jsonb,jsonb)'       , 'public'                , 'EXECUTE'),
 ('tide._create_retries(bigint[])'        , '-'                     , ''),
 ('tide._current_cycle()'                 , 'public'                , 'EXECUTE'),
 ('tide._cycle_lock_key()'                , 'public'                , 'EXECUTE'),
 ('tide._cycle_place_jobs(bigint[],tid[],boolean[],text[],boolean[],bigint,boolean)', 'admin', 'EXECUTE'),
 ('tide._overcommitted(text[],text[],tide.resvec[],tide.gpumask[],integer[])', 'admin', 'EXECUTE'),
 ('tide._overcommitted_now(text[])'       , '-'                     , ''),
 ('tide._refuse_overcommit(text[])'       , '-'                     , ''),
 ('tide._node_usage_now(text)'            , '-'                     , ''),
 ('tide._dominant_share(tide.resvec,tide.resvec)', 'public'                , 'EXECUTE'),
 ('tide._estimate(bigint)'                , 'public'                , 'EXECUTE'),
 ('tide._job_not_found(bigint)'           , 'public'                , 'EXECUTE'),
 ('tide._no_such_job(bigint)'            , 'public'                , 'EXECUTE'),
 ('tide._explain(bigint)'                 , 'admin reader'          , 'EXECUTE'),
 ('tide._explain_archived(bigint)'        , 'public'                , 'EXECUTE'),
 ('tide._explain_own(bigint,text)'        , 'submitter'             , 'EXECUTE'),
 ('tide._job_of(bigint,text)'             , '-'                     , ''),
 ('tide._others_counted(jsonb,text)'      , '-'                     , ''),
 ('tide._forecast(bigint)'                , 'admin submitter reader', 'EXECUTE'),
 ('tide._evict(bigint[],text[],text[],bigint[])', 'admin'                 , 'EXECUTE'),
 ('tide._gpu_usage_raw(timestamp with time zone,timestamp with time zone,interval)', 'public'                , 'EXECUTE'),
 ('tide._gpus_held(tide.gpumask,integer)' , 'public'                , 'EXECUTE'),
 ('tide._group_order(text)'               , 'public'                , 'EXECUTE'),
 ('tide._queue_ancestors()'               , 'public'                , 'EXECUTE'),
 ('tide._fair_share_half_life()'          , 'public'                , 'EXECUTE'),
 ('tide._queue_fair_follow()'             , '-'                     , ''),
 ('tide._owner_share_denom(text)'         , 'public'                , 'EXECUTE'),
 ('tide._owner_head_shares(text)'        , 'public'                , 'EXECUTE'),
 ('tide._owner_fair_positions()'         , 'admin submitter reader', 'EXECUTE'),
 ('tide._group_releases(text)'            , 'public'                , 'EXECUTE'),
 ('tide._history_lock_key()'              , 'public'                , 'EXECUTE'),
 ('tide._history_tables()'                , 'public'                , 'EXECUTE'),
 ('tide._job_events_keep()'               , 'public'                , 'EXECUTE'),
 ('tide._job_events_refuse_change()'      , '-'                     , ''),
 ('tide._job_minimum(bigint)'             , 'public'                , 'EXECUTE'),
 ('tide._job_tasks_after_delete()'        , '-'                     , ''),
 ('tide._job_tasks_before_write()'        , '-'                     , ''),
 ('tide._jobs_after_delete()'             , '-'                     , ''),
 ('tide._jobs_after_insert()'             , '-'                     , ''),
 ('tide._jobs_after_update()'             , '-'                     , ''),
 -- a job's payload (29_payload.sql) and completion notices (33_notices.sql, R-C5)
 ('tide._cut(text,integer)'               , 'public'                , 'EXECUTE'),
 ('tide._payload_max(text)'               , 'public'                , 'EXECUTE'),
 ('tide._check_payload(jsonb,text,jsonb)' , 'public'                , 'EXECUTE'),
 ('tide._jobs_payload_update()'           , '-'                     , ''),
 ('tide._notice_secret'                   , '-'                     , ''),
 ('tide._owner_channel_of(text)'          , '-'                     , ''),
 ('tide._channel_for(text)'               , 'admin submitter'       , 'EXECUTE'),
 ('tide.owner_channel()'                  , 'admin submitter'       , 'EXECUTE'),
 ('tide._notice_jobs_max()'               , 'public'                , 'EXECUTE'),
 ('tide._job_notices(text[],bigint[],text[])', '-'                  , ''),
 ('tide._jobs_notify()'                   , '-'                     , ''),
 ('tide._jobs_before_insert()'            , '-'                     , ''),
 ('tide._late_exit_reason(text,integer)'  , 'public'                , 'EXECUTE'),
 ('tide._hms(interval)'                   , 'public'                , 'EXECUTE'),
 ('tide._limit_at(timestamp with time zone,interval)', 'public'     , 'EXECUTE'),
 ('tide._late_exits(bigint[],integer[])'  , 'admin launcher'        , 'EXECUTE'),
 ('tide._launcher_target(bigint,text)'    , 'admin launcher'        , 'EXECUTE'),
 ('tide._launcher_targets(bigint[],text,uuid[])', 'admin launcher' , 'EXECUTE'),
 ('tide._launches_job(bigint,text)'       , 'public'                , 'EXECUTE'),
 ('tide._make_partition(regclass,text,timestamp with time zone)', '-'                     , ''),
 ('tide._may_launch(text,text)'           , 'public'                , 'EXECUTE'),
 ('tide._metric_help()'                   , 'public'                , 'EXECUTE'),
 ('tide._name_max()'                      , 'public'                , 'EXECUTE'),
 ('tide._node_back(text)'                 , 'admin launcher'        , 'EXECUTE'),
 ('tide._node_info(text)'                 , 'admin launcher'        , 'EXECUTE'),
 ('tide._nodes_before_update()'           , '-'                     , ''),
 ('tide._nodes_capacity_log()'            , '-'                     , ''),
 ('tide._nodes_lost(text[],text,boolean)' , 'admin'                 , 'EXECUTE'),
 ('tide._nodes_silent(interval)'          , 'public'                , 'EXECUTE'),
 ('tide._nodes_state_change()'            , 'public'                , 'EXECUTE'),
 ('tide._partition_bounds(oid)'           , 'public'                , 'EXECUTE'),
 ('tide._prom_labels(jsonb)'              , 'public'                , 'EXECUTE'),
 ('tide._queues_before_write()'           , '-'                     , ''),
 ('tide._workload_shapes_before_write()'  , '-'                     , ''),
 ('tide._jobs_queue_exists()'             , '-'                     , ''),
 ('tide._queues_keep_jobs()'              , '-'                     , ''),
 ('tide._queues_renamed()'                , '-'                     , ''),
 ('tide._queue_tree_lock_key()'           , 'public'                , 'EXECUTE'),
 ('tide._queue_depth_max()'               , 'public'                , 'EXECUTE'),
 ('tide._child_queues(text)'              , 'public'                , 'EXECUTE'),
 ('tide._queues_tree_keys()'              , '-'                     , ''),
 ('tide._queues_tree_rename()'            , '-'                     , ''),
 ('tide._queues_tree_check()'             , '-'                     , ''),
 ('tide._jobs_queue_leaf()'               , '-'                     , ''),
 ('tide._queues_held_by()'                , '-'                     , ''),
 ('tide._queues_held_by_down()'           , '-'                     , ''),
 ('tide._refresh_workload_shapes_due(interval,integer)', 'admin'       , 'EXECUTE'),
 ('tide._raise_refusal(text,text,text)'   , 'admin launcher'        , 'EXECUTE'),
 ('tide._reconsider_unschedulable()'      , '-'                     , ''),
 ('tide._report(text,bigint[],integer[],text,boolean,text[],interval[],uuid[])', 'admin launcher', 'EXECUTE'),
 ('tide._reconcile(text,bigint[],bigint[],uuid[],text)', 'admin launcher', 'EXECUTE'),
 ('tide._launcher_reason(text)'         , 'admin launcher'        , 'EXECUTE'),
 ('tide._report_accepts(text,text)'       , 'admin launcher'        , 'EXECUTE'),
 ('tide._report_all(text,bigint[],integer[])', 'admin launcher'        , 'EXECUTE'),
 ('tide._restoring()'                     , 'public'                , 'EXECUTE'),
 ('tide._rollup_buckets()'                , '-'                     , ''),
 ('tide._rollup_days()'                   , '-'                     , ''),
 ('tide._rollup_jobs(bigint[],bigint[],bigint[])', '-'                     , ''),
 ('tide._sample_nodes()'                  , '-'                     , ''),
 ('tide._set_node_state(text,text[],text)', 'admin'                 , 'EXECUTE'),
 ('tide._setting(text,text)'              , 'public'                , 'EXECUTE'),
 ('tide._setting_interval(text,text)'     , 'public'                , 'EXECUTE'),
 ('tide._writer()'                       , 'public'                , 'EXECUTE'),
 ('tide._unschedule_cycles(boolean,boolean)', 'admin'                 , 'EXECUTE'),
 -- the cycle loop (70_cron.sql): starting one and applying a reload are the
 -- scheduler's; the others only compute or answer
 ('tide._apply_reload()'                  , 'admin'                 , 'EXECUTE'),
 ('tide._start_cycle_loop(interval,text)' , 'admin'                 , 'EXECUTE'),
 ('tide._start_loop_now(text,text[],numeric,text)', 'admin'          , 'EXECUTE'),
 ('tide._cycle_loop_command(interval,text)', 'public'               , 'EXECUTE'),
 ('tide._cycle_loop_taken(text)'          , 'public'                , 'EXECUTE'),
 ('tide._preloaded()'                     , 'public'                , 'EXECUTE'),
 ('tide._preload_warning()'               , 'public'                , 'EXECUTE'),
 ('tide._schedule_restart_loop(text,text)', 'admin'                 , 'EXECUTE'),
 ('tide.cancel(bigint)'                   , 'admin submitter'       , 'EXECUTE'),
 ('tide.claim(text)'                      , 'admin launcher'        , 'EXECUTE'),
 ('tide.claim_evictions(text)'            , 'admin launcher'        , 'EXECUTE'),
 ('tide.cron_check()'                     , 'admin'                 , 'EXECUTE'),
 ('tide.cron_job_name()'                  , 'public'                , 'EXECUTE'),
 ('tide._cron_restart_job_name(text)'     , 'public'                , 'EXECUTE'),
 ('tide.cron_job_name(text)'              , 'public'                , 'EXECUTE'),
 ('tide.cuda_visible_devices(tide.gpumask)', 'public'                , 'EXECUTE'),
 ('tide.cycle_loop(interval,interval)'    , 'admin'                 , 'EXECUTE'),
 ('tide.cycle_loop(interval,interval,text)', 'admin'                 , 'EXECUTE'),
 ('tide.drain_node(text)'                 , 'admin'                 , 'EXECUTE'),
 ('tide.down_node(text,text)'             , 'admin'                 , 'EXECUTE'),
 ('tide._nodes_set_down()'                , '-'                     , ''),
 ('tide._job_time_limit(text,interval,interval,interval,boolean)', 'public', 'EXECUTE'),
 ('tide._jobs_limits_changed()'           , '-'                     , ''),
 ('tide.dry_run()'                        , 'admin'                 , 'EXECUTE'),
 ('tide.each(tide.resvec)'                , 'public'                , 'EXECUTE'),
 ('tide.estimate_start(bigint)'           , 'admin submitter reader', 'EXECUTE'),
 ('tide.evicted(bigint)'                  , 'admin launcher'        , 'EXECUTE'),
 ('tide.evicted(bigint[])'                , 'admin launcher'        , 'EXECUTE'),
 ('tide.exited(bigint,integer)'           , 'admin launcher'        , 'EXECUTE'),
 ('tide.exited(bigint[],integer[])'       , 'admin launcher'        , 'EXECUTE'),
 ('tide.explain(bigint)'                  , 'admin submitter reader', 'EXECUTE'),
 ('tide.forecast()'                       , 'admin submitter reader', 'EXECUTE'),
 ('tide.get(tide.resvec,text)'            , 'public'                , 'EXECUTE'),
 ('tide.gpu_count(tide.gpumask)'          , 'public'                , 'EXECUTE'),
 ('tide.gpu_indices(tide.gpumask)'        , 'public'                , 'EXECUTE'),
 ('tide.gpu_usage(timestamp with time zone,timestamp with time zone,interval)', 'public'                , 'EXECUTE'),
 ('tide.gpu_utilisation(timestamp with time zone,timestamp with time zone,interval,text)', 'public'                , 'EXECUTE'),
 ('tide.gpumask(integer[])'               , 'public'                , 'EXECUTE'),
 ('tide.gpumask_and(tide.gpumask,tide.gpumask)', 'public'                , 'EXECUTE'),
 ('tide.gpumask_cmp(tide.gpumask,tide.gpumask)', 'public'                , 'EXECUTE'),
 ('tide.gpumask_contained(tide.gpumask,tide.gpumask)', 'public'                , 'EXECUTE'),
 ('tide.gpumask_contains(tide.gpumask,tide.gpumask)', 'public'                , 'EXECUTE'),
 ('tide.gpumask_eq(tide.gpumask,tide.gpumask)', 'public'                , 'EXECUTE'),
 ('tide.gpumask_ge(tide.gpumask,tide.gpumask)', 'public'                , 'EXECUTE'),
 ('tide.gpumask_gt(tide.gpumask,tide.gpumask)', 'public'                , 'EXECUTE'),
 ('tide.gpumask_hash(tide.gpumask)'       , 'public'                , 'EXECUTE'),
 ('tide.gpumask_hash_extended(tide.gpumask,bigint)', 'public'                , 'EXECUTE'),
 ('tide.gpumask_in(cstring)'              , 'public'                , 'EXECUTE'),
 ('tide.gpumask_le(tide.gpumask,tide.gpumask)', 'public'                , 'EXECUTE'),
 ('tide.gpumask_lt(tide.gpumask,tide.gpumask)', 'public'                , 'EXECUTE'),
 ('tide.gpumask_minus(tide.gpumask,tide.gpumask)', 'public'                , 'EXECUTE'),
 ('tide.gpumask_ne(tide.gpumask,tide.gpumask)', 'public'                , 'EXECUTE'),
 ('tide.gpumask_or(tide.gpumask,tide.gpumask)', 'public'                , 'EXECUTE'),
 ('tide.gpumask_out(tide.gpumask)'        , 'public'                , 'EXECUTE'),
 ('tide.gpumask_overlaps(tide.gpumask,tide.gpumask)', 'public'                , 'EXECUTE'),
 ('tide.gpumask_recv(internal)'           , 'public'                , 'EXECUTE'),
 ('tide.gpumask_send(tide.gpumask)'       , 'public'                , 'EXECUTE'),
 ('tide.gpumask_sortsupport(internal)'    , 'public'                , 'EXECUTE'),
 ('tide.heartbeat(text)'                  , 'admin launcher'        , 'EXECUTE'),
 ('tide.history_settings()'               , 'public'                , 'EXECUTE'),
 ('tide.maintain_history()'               , 'admin'                 , 'EXECUTE'),
 ('tide.metrics_prometheus()'             , 'admin reader'          , 'EXECUTE'),
 ('tide.check_replication()'              , 'admin reader'          , 'EXECUTE'),
 ('tide.refresh_workload_shapes(integer)' , 'admin'                 , 'EXECUTE'),
 ('tide.node_accounting_raw(date,date)'   , 'admin reader'          , 'EXECUTE'),
 ('tide.node_channel(text)'               , 'public'                , 'EXECUTE'),
 ('tide.node_fragmentation()'             , 'public'                , 'EXECUTE'),
 ('tide.queue_accounting_raw(date,date)'  , 'admin reader'          , 'EXECUTE'),
 ('tide.register_node(text,tide.resvec,text,jsonb,integer[],text)', 'admin'                 , 'EXECUTE'),
 ('tide.report_evicted(bigint[],uuid[])'  , 'admin launcher'        , 'EXECUTE'),
 ('tide.report_exited(bigint[],integer[],text[],interval[],uuid[])', 'admin launcher', 'EXECUTE'),
 ('tide.report_started(bigint[],uuid[])'  , 'admin launcher'        , 'EXECUTE'),
 ('tide.reconcile(text,bigint[],bigint[],uuid[])', 'admin launcher', 'EXECUTE'),
 ('tide.resume_node(text)'                , 'admin'                 , 'EXECUTE'),
 ('tide.resvec_add(tide.resvec,tide.resvec)', 'public'                , 'EXECUTE'),
 ('tide.resvec_cmp(tide.resvec,tide.resvec)', 'public'                , 'EXECUTE'),
 ('tide.resvec_contained(tide.resvec,tide.resvec)', 'public'                , 'EXECUTE'),
 ('tide.resvec_contains(tide.resvec,tide.resvec)', 'public'                , 'EXECUTE'),
 ('tide.resvec_eq(tide.resvec,tide.resvec)', 'public'                , 'EXECUTE'),
 ('tide.resvec_from_jsonb(jsonb)'         , 'public'                , 'EXECUTE'),
 ('tide.resvec_ge(tide.resvec,tide.resvec)', 'public'                , 'EXECUTE'),
 ('tide.resvec_gt(tide.resvec,tide.resvec)', 'public'                , 'EXECUTE'),
 ('tide.resvec_hash(tide.resvec)'         , 'public'                , 'EXECUTE'),
 ('tide.resvec_hash_extended(tide.resvec,bigint)', 'public'                , 'EXECUTE'),
 ('tide.resvec_in(cstring)'               , 'public'                , 'EXECUTE'),
 ('tide.resvec_le(tide.resvec,tide.resvec)', 'public'                , 'EXECUTE'),
 ('tide.resvec_lt(tide.resvec,tide.resvec)', 'public'                , 'EXECUTE'),
 ('tide.resvec_mul(integer,tide.resvec)'  , 'public'                , 'EXECUTE'),
 ('tide.resvec_mul(numeric,tide.resvec)'  , 'public'                , 'EXECUTE'),
 ('tide.resvec_mul(tide.resvec,integer)'  , 'public'                , 'EXECUTE'),
 ('tide.resvec_mul(tide.resvec,numeric)'  , 'public'                , 'EXECUTE'),
 ('tide.resvec_names(tide.resvec)'        , 'public'                , 'EXECUTE'),
 ('tide.resvec_ne(tide.resvec,tide.resvec)', 'public'                , 'EXECUTE'),
 ('tide.resvec_out(tide.resvec)'          , 'public'                , 'EXECUTE'),
 ('tide.resvec_recv(internal)'            , 'public'                , 'EXECUTE'),
 ('tide.resvec_send(tide.resvec)'         , 'public'                , 'EXECUTE'),
 ('tide.resvec_sub(tide.resvec,tide.resvec)', 'public'                , 'EXECUTE'),
 ('tide.resvec_to_jsonb(tide.resvec)'     , 'public'                , 'EXECUTE'),
 ('tide.run_cycle()'                      , 'admin'                 , 'EXECUTE'),
 ('tide.run_cycle(text)'                  , 'admin'                 , 'EXECUTE'),
 ('tide.schedule_cycles(interval)'        , 'admin'                 , 'EXECUTE'),
 ('tide.schedule_cycles(interval,boolean)', 'admin'                 , 'EXECUTE'),
 ('tide.schedule_maintenance(text)'       , 'admin'                 , 'EXECUTE'),
 ('tide.started(bigint)'                  , 'admin launcher'        , 'EXECUTE'),
 ('tide.started(bigint[])'                , 'admin launcher'        , 'EXECUTE'),
 ('tide.submit(text,tide.resvec,integer,integer,text,boolean,boolean,text,boolean,integer,text,jsonb,interval,integer,text,text,text,bigint[],boolean,timestamp with time zone,jsonb,text,jsonb,text,interval,interval)', 'admin submitter'       , 'EXECUTE'),
 ('tide.submit_array(text,tide.resvec,integer,integer,integer,integer,text,boolean,boolean,text,boolean,integer,text,jsonb,interval,integer,text,text,text,bigint[],boolean,timestamp with time zone,jsonb,text,jsonb,text,interval,interval)', 'admin submitter', 'EXECUTE'),
 ('tide.hold(bigint)'                     , 'admin submitter'       , 'EXECUTE'),
 ('tide.release(bigint)'                  , 'admin submitter'       , 'EXECUTE'),
 ('tide.cancel_array(bigint)'             , 'admin submitter'       , 'EXECUTE'),
 ('tide._set_hold(bigint,boolean)'        , 'admin submitter'       , 'EXECUTE'),
 ('tide._job_dependencies_before_insert()', 'admin submitter'       , 'EXECUTE'),
 ('tide.hold_queue(text)'                 , 'admin'                 , 'EXECUTE'),
 ('tide.release_queue(text)'              , 'admin'                 , 'EXECUTE'),
 ('tide._set_queue_hold(text,boolean)'    , 'admin'                 , 'EXECUTE'),
 ('tide._wake_due()'                      , 'admin'                 , 'EXECUTE'),
 ('tide._stop_at_limits()'                , 'admin'                 , 'EXECUTE'),
 ('tide._limits_due(timestamp with time zone,interval)', 'admin'   , 'EXECUTE'),
 ('tide._stop_unstarted(interval,integer)', 'admin'                 , 'EXECUTE'),
 ('tide._condition_verb(text)'            , 'public'                , 'EXECUTE'),
 ('tide._wait_text(boolean,boolean,text,text,boolean,timestamp with time zone,boolean,bigint,integer,integer)', 'public', 'EXECUTE'),
 ('tide._array_refill(bigint[])'          , '-'                     , ''),
 ('tide._job_dependencies_after_change()' , '-'                     , ''),
 ('tide._job_dependencies_after_insert()' , '-'                     , ''),
 ('tide._job_outcomes(bigint[])'          , '-'                     , ''),
 ('tide._jobs_ended(bigint[])'            , '-'                     , ''),
 ('tide._jobs_pipelines_after_delete()'   , '-'                     , ''),
 ('tide._jobs_pipelines_after_insert()'   , '-'                     , ''),
 ('tide._jobs_pipelines_after_update()'   , '-'                     , ''),
 ('tide._judge_dependencies(bigint[],bigint[])', '-'                , ''),
 ('tide._queues_hold_changed()'           , '-'                     , ''),
 ('tide._refresh_waits(bigint[])'         , '-'                     , ''),
 ('tide.submit_many(text,tide.resvec[],text[],text[],integer,integer,boolean,text,boolean,text,jsonb,interval,integer,text,interval,interval)', 'admin submitter'       , 'EXECUTE'),
 ('tide.sum(tide.resvec)'                 , 'public'                , 'EXECUTE'),
 ('tide.unschedule_cycles()'              , 'admin'                 , 'EXECUTE'),
 ('tide.unschedule_maintenance()'         , 'admin'                 , 'EXECUTE'),
 ('tide.wait_stats(timestamp with time zone,timestamp with time zone)', 'public'                , 'EXECUTE');

CREATE TEMP TABLE who (n int, short text PRIMARY KEY, role text);
INSERT INTO who VALUES (1, 'admin', 'tide_admin'), (2, 'submitter', 'tide_submitter'), (3, 'launcher', 'tide_launcher'),
                       (4, 'reader', 'tide_reader'), (5, 'public', 'public'), (6, 'login', 'tap_login');
CREATE TEMP VIEW objs AS
SELECT CASE WHEN c.relispartition THEN 'partition' ELSE k.kind END AS kind,
       CASE WHEN c.relispartition THEN 'partition of ' || i.inhparent::regclass::text ELSE c.oid::regclass::text END AS key,
       c.oid::regclass::text AS name, c.oid
  FROM pg_class c
  JOIN (VALUES ('r', 'table'), ('p', 'partitioned table'), ('v', 'view'), ('m', 'materialized view'),
               ('S', 'sequence'), ('f', 'foreign table'), ('c', 'composite type')) k(relkind, kind) ON k.relkind = c.relkind
  LEFT JOIN pg_inherits i ON i.inhrelid = c.oid AND c.relispartition
 WHERE c.relnamespace = 'tide'::regnamespace
UNION ALL
SELECT CASE p.prokind WHEN 'p' THEN 'procedure' WHEN 'a' THEN 'aggregate' WHEN 'w' THEN 'window function' ELSE 'function' END,
       p.oid::regprocedure::text, p.oid::regprocedure::text, p.oid
  FROM pg_proc p WHERE p.pronamespace = 'tide'::regnamespace
UNION ALL
SELECT 'type', t.oid::regtype::text, t.oid::regtype::text, t.oid
  FROM pg_type t
 WHERE t.typnamespace = 'tide'::regnamespace AND t.typrelid = 0
   AND NOT (t.typcategory = 'A' AND t.typelem <> 0);
CREATE FUNCTION pg_temp.privs(r text, kind text, o oid) RETURNS text LANGUAGE sql STABLE AS $$
SELECT coalesce(string_agg(x, ' ' ORDER BY x), '') FROM (
    SELECT p AS x FROM unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) p
     WHERE kind IN ('table', 'partitioned table', 'partition', 'view', 'materialized view', 'foreign table')
       AND has_table_privilege(r, o, p)
    UNION ALL
    SELECT p || '(' || string_agg(a.attname::text, ',' ORDER BY a.attname) || ')'
      FROM unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'REFERENCES']) p, pg_attribute a
     WHERE kind IN ('table', 'partitioned table', 'partition', 'view', 'materialized view', 'foreign table')
       AND a.attrelid = o AND a.attnum > 0 AND NOT a.attisdropped
       AND NOT has_table_privilege(r, o, p) AND has_column_privilege(r, o, a.attnum, p)
     GROUP BY p
    UNION ALL
    SELECT p FROM unnest(ARRAY['USAGE', 'SELECT', 'UPDATE']) p
     WHERE kind = 'sequence' AND has_sequence_privilege(r, o, p)
    UNION ALL
    SELECT 'EXECUTE' WHERE kind IN ('function', 'procedure', 'aggregate', 'window function') AND has_function_privilege(r, o, 'EXECUTE')
    UNION ALL
    SELECT 'USAGE' WHERE kind = 'type' AND has_type_privilege(r, o, 'USAGE')
    UNION ALL
    -- a composite type's row is its pg_class entry: its type is reltype
    SELECT 'USAGE' WHERE kind = 'composite type'
                     AND has_type_privilege(r, (SELECT c.reltype FROM pg_class c WHERE c.oid = o), 'USAGE')) s
$$;
-- A list of privileges in one order: tokens sorted, duplicates dropped.
CREATE FUNCTION pg_temp.norm(p text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
SELECT coalesce(string_agg(DISTINCT t, ' ' ORDER BY t), '') FROM regexp_split_to_table(coalesce(p, ''), '\s+') t WHERE t <> ''
$$;
-- What each role has, as "role=PRIV PRIV; role=PRIV" (roles with nothing left out).
CREATE TEMP VIEW actual AS
SELECT o.kind, o.key, o.name, coalesce(string_agg(w.short || '=' || pv, '; ' ORDER BY w.n) FILTER (WHERE pv <> ''), '') AS privs
  FROM objs o CROSS JOIN who w CROSS JOIN LATERAL pg_temp.privs(w.role, o.kind, o.oid) pv
 GROUP BY o.kind, o.key, o.name;
CREATE TEMP VIEW expected AS
SELECT d.key, coalesce(string_agg(w.short || '=' || l.pv, '; ' ORDER BY w.n) FILTER (WHERE l.pv <> ''), '') AS privs
  FROM (SELECT DISTINCT object AS key FROM decided) d CROSS JOIN who w
 CROSS JOIN LATERAL (SELECT pg_temp.norm(string_agg(x.privileges, ' ')) AS pv FROM decided x
                      WHERE x.object = d.key
                        AND string_to_array(x.roles, ' ') && ARRAY[w.short, 'public']) l
 GROUP BY d.key;

SELECT plan((SELECT count(*)::int FROM objs) + 6);

SELECT is(a.privs, coalesce(e.privs, '(no decided row)'),
          CASE WHEN e.key IS NULL
               THEN format('%s %s has NO DECIDED ROW in the role x object matrix: add (%L, roles, privileges) to "decided" in test/pgtap/roles_privileges.sql',
                           a.kind, a.name, a.key)
               ELSE format('%s %s: privileges of each role', a.kind, a.name) END)
  FROM actual a LEFT JOIN expected e USING (key)
 ORDER BY a.kind, a.name;

SELECT is((SELECT array_agg(DISTINCT object ORDER BY object) FROM decided WHERE object NOT IN (SELECT key FROM objs)),
          NULL, 'every decided row names an object of schema tide (drop the rows of removed objects)');
SELECT is((SELECT array_agg(DISTINCT r ORDER BY r) FROM decided, unnest(string_to_array(roles, ' ')) r
            WHERE r NOT IN (SELECT short FROM who UNION ALL SELECT '-')),
          NULL, 'every decided row names known roles');
SELECT is((SELECT string_agg(w.short || '=' || p, '; ' ORDER BY w.n) FROM who w, unnest(ARRAY['USAGE', 'CREATE']) p
            WHERE has_schema_privilege(w.role, 'tide', p)),
          'admin=USAGE; submitter=USAGE; launcher=USAGE; reader=USAGE',
          'schema tide: the pg_tide roles may use it, nobody may create in it');

-- SECURITY DEFINER routines run as the owner: a fixed search_path, and not
-- for everyone but those decided.
SELECT is((SELECT array_agg(p.oid::regprocedure::text ORDER BY p.oid::regprocedure::text) FROM pg_proc p
            WHERE p.pronamespace = 'tide'::regnamespace AND p.prosecdef
              AND NOT coalesce(p.proconfig, '{}') @> ARRAY['search_path=pg_catalog, pg_temp']),
          NULL, 'every SECURITY DEFINER routine pins search_path to pg_catalog, pg_temp');
SELECT is((SELECT array_agg(p.oid::regprocedure::text ORDER BY p.oid::regprocedure::text) FROM pg_proc p
            WHERE p.pronamespace = 'tide'::regnamespace AND p.prosecdef
              AND has_function_privilege('public', p.oid, 'EXECUTE')),
          -- row-level security policies call these as the querying role; they
          -- answer only about roles the session may act as (docs/security.md)
          ARRAY['tide._launches_job(bigint,text)', 'tide._may_launch(text,text)'],
          'SECURITY DEFINER routines executable by PUBLIC: only the two the policies call');
SELECT is((SELECT array_agg(p.oid::regprocedure::text ORDER BY p.oid::regprocedure::text) FROM pg_proc p
            WHERE p.pronamespace = 'tide'::regnamespace AND p.prorettype = 'trigger'::regtype
              AND has_function_privilege('public', p.oid, 'EXECUTE') AND p.prosecdef),
          NULL, 'no SECURITY DEFINER trigger function is executable by PUBLIC');

SELECT * FROM finish();
ROLLBACK;
