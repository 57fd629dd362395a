-- Prototype of the submit-path fixes, applied to an installed pg_tide for
-- measurement only (BENCH_SETUP_SQL=bench/submit_fixes.sql bash
-- bench/submit_throughput.sh).  Each fix edits the live definition of one
-- function by a textual replacement and fails loudly if the text it edits
-- has changed; the extension's own files are not touched.
--
-- 1. tide._restoring() and tide._current_cycle() lose their SET
--    search_path: a function with a SET clause is never inlined and every
--    call saves and restores the setting; both name only pg_catalog
--    objects, qualified.  Every insert trigger calls _restoring() first.
-- 2. tide._jobs_before_insert() asks whether the owner is an administrator
--    (a query over pg_roles) only when the queue restricts its submitters.
-- 3. tide._job_tasks_before_write() does not lock a job row that its own
--    transaction inserted (no other transaction can see it, so no cycle or
--    cancel can hold it): the FOR SHARE lock of tide.submit's own job row
--    costs a tuple lock and its WAL record.
-- 4. tide._check_job_tasks() on a task inserted for a job its transaction
--    inserted returns at once: the job's own deferred check (jobs_have_tasks)
--    runs at commit and counts every task of that job anyway.
DO $fix$
DECLARE
    def text;
    edits text[][] := ARRAY[
        ['tide._restoring()', $a$ SET search_path TO 'pg_catalog', 'pg_temp'
$a$, ''],
        ['tide._current_cycle()', $a$ SET search_path TO 'pg_catalog', 'pg_temp'
$a$, ''],
        ['tide._jobs_before_insert()', $a$admin := EXISTS (SELECT 1 FROM pg_catalog.pg_roles o$a$,
         $a$admin := (q.submit_role IS NOT NULL OR q.preemptable_only OR q.fixed_service_type
                      OR q.max_priority IS NOT NULL)
             AND EXISTS (SELECT 1 FROM pg_catalog.pg_roles o$a$],
        ['tide._job_tasks_before_write()',
         $a$SELECT j.state INTO job_state FROM tide.jobs j WHERE j.id = jid FOR SHARE SKIP LOCKED;$a$,
         $a$SELECT j.state INTO job_state FROM tide.jobs j
     WHERE j.id = jid AND j.xmin OPERATOR(pg_catalog.=) pg_catalog.pg_current_xact_id()::text::xid;
    IF NOT FOUND THEN
        SELECT j.state INTO job_state FROM tide.jobs j WHERE j.id = jid FOR SHARE SKIP LOCKED;
    END IF;$a$],
        ['tide._check_job_tasks()', $a$    IF TG_TABLE_NAME = 'jobs' THEN$a$,
         $a$    IF TG_TABLE_NAME = 'job_tasks' AND TG_OP = 'INSERT' THEN
        -- (nested: NEW of a jobs row has no job_id)
        IF EXISTS (SELECT 1 FROM tide.jobs j WHERE j.id = NEW.job_id
                      AND j.xmin OPERATOR(pg_catalog.=) pg_catalog.pg_current_xact_id()::text::xid) THEN
            RETURN NULL;        -- checked by the job's own deferred trigger
        END IF;
    END IF;
    IF TG_TABLE_NAME = 'jobs' THEN$a$]];
BEGIN
    FOR i IN 1 .. array_length(edits, 1) LOOP
        def := pg_get_functiondef(edits[i][1]::regprocedure);
        IF strpos(def, edits[i][2]) = 0 THEN
            RAISE EXCEPTION 'submit fix %: the text to replace is not in %', i, edits[i][1];
        END IF;
        EXECUTE replace(def, edits[i][2], edits[i][3]);
    END LOOP;
END
$fix$;
