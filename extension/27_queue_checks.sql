-- What a queue row must be, checked before the table's own constraints so
-- that a bad value is refused naming the queue, the column, the value and
-- the limit (a constraint would name itself and print the whole row).

CREATE FUNCTION tide._queues_before_write() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    q text := pg_catalog.format('queue "%s"', NEW.name);
    ok boolean;
BEGIN
    IF tide._restoring() THEN
        RETURN NEW;
    END IF;
    ok := tide._check_name('queue name', NEW.name);
    ok := tide._check_name('resource_group of ' || q, NEW.resource_group);
    IF NEW.submit_role IS NOT NULL THEN
        ok := tide._check_name('submit_role of ' || q, NEW.submit_role);
    END IF;
    ok := tide._check_choice('preemption_within of ' || q, NEW.preemption_within, '{never,lower_priority}',
                             'lower_priority lets its jobs evict lower-priority preemptable jobs of the same queue.');
    ok := tide._check_choice('service_type of ' || q, NEW.service_type, '{training,inference}',
                             'It is the default service_type of the jobs submitted to the queue.');
    ok := tide._check_choice('placement of ' || q, NEW.placement, '{pack,spread,frag}',
                             'pack fills the fullest node first; spread the emptiest; frag the node where the typical workload''s GPU fragmentation grows least.');
    IF NEW.min_runtime < interval '0' OR NEW.min_runtime > interval '100 years' THEN
        RAISE EXCEPTION 'min_runtime of % must be between 0 and 100 years, not %', q, NEW.min_runtime
            USING ERRCODE = 'check_violation',
                  HINT = 'It is how long a started job is safe from preemption and reclaim; 0 (the default) for no such time.';
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION tide._queues_before_write() IS
    'trigger: checks a new or changed queue''s values (names, preemption_within, service_type, placement, min_runtime), naming the queue, the column and the limit';
CREATE TRIGGER queues_before_check BEFORE INSERT OR UPDATE ON tide.queues
    FOR EACH ROW EXECUTE FUNCTION tide._queues_before_write();
