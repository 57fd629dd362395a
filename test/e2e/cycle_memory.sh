#!/usr/bin/env bash
# A looping backend's own memory stays flat: one backend runs busy cycles
# (arrivals and exits before each, every cycle committed as
# tide.cycle_loop() commits them) and its private resident memory
# (RssAnon of /proc/PID/status) may not grow by more than 4 MB over 100 of
# them once warm (100 cycles first: glibc's heap reaches the peak that
# the busy cycles' varying sizes ask for, in steps of up to 2 MB; then it
# stays flat, to within a few kB).  A leak of 41 kB a cycle fails it.
# Shared buffers the backend touches count in its VmRSS but not here: they
# grow with the tables up to shared_buffers, in every backend alike
# (docs/benchmarks.md, "Memory of a looping backend").
. "$(dirname "$0")/lib.bash"

fresh_db
if ! has_run_cycle; then
    skip "no tide.run_cycle() here"
    skip "no tide.run_cycle() here"
    skip "no tide.run_cycle() here"
    finish
fi

# 50 nodes of 8 GPUs, 500 pending jobs of one to four GPUs.
q "INSERT INTO tide.queues (name) VALUES ('e2e');
   INSERT INTO tide.nodes (name, capacity)
   SELECT format('m%s', i), 'cpu=96, memory=1Ti, gpu=8' FROM generate_series(1, 50) i;
   SELECT count(tide.submit('e2e', format('cpu=4, memory=32Gi, gpu=%s', 1 + i % 4)::tide.resvec))
     FROM generate_series(1, 500) i" >/dev/null

# Warm up (the first cycle, then 99 busy cycles), then 100 busy cycles;
# the backend's RssAnon (kB) after each part.  No launchers: no node may
# time out (R-C3).
out=$(psql -qAtX -v ON_ERROR_STOP=1 -d "$DB" 2>&1 <<'SQL'
SET tide.node_timeout = 0;
CREATE FUNCTION pg_temp.anon_kb() RETURNS bigint LANGUAGE sql AS $$
SELECT (regexp_match(pg_read_file('/proc/self/status'), 'RssAnon:\s+(\d+)'))[1]::bigint
$$;
CREATE PROCEDURE pg_temp.busy(cycles int) LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[];
BEGIN
    FOR i IN 1 .. cycles LOOP
        PERFORM tide.submit('e2e', 'cpu=4, memory=32Gi, gpu=1') FROM generate_series(1, 10);
        SELECT array_agg(id) INTO ids FROM tide.allocations WHERE state = 'assigned';
        IF ids IS NOT NULL THEN
            PERFORM tide.report_started(ids);
        END IF;
        SELECT array_agg(id) INTO ids
          FROM (SELECT id FROM tide.allocations WHERE state = 'running' ORDER BY id LIMIT 10) a;
        IF ids IS NOT NULL THEN
            PERFORM tide.report_exited(ids, array_fill(0, ARRAY[cardinality(ids)]));
        END IF;
        COMMIT;
        PERFORM tide.run_cycle();
        COMMIT;
    END LOOP;
END $$;
CALL pg_temp.busy(100);
SELECT 'warm ' || pg_temp.anon_kb();
SELECT 'exited ' || count(*) FROM tide.allocations WHERE state = 'released';
CALL pg_temp.busy(100);
SELECT 'after ' || pg_temp.anon_kb();
SQL
)
warm=$(printf '%s\n' "$out" | sed -n 's/^warm //p')
after=$(printf '%s\n' "$out" | sed -n 's/^after //p')
exited=$(printf '%s\n' "$out" | sed -n 's/^exited //p')
like "$warm $after" '^[0-9]+ [0-9]+$' "the backend's RssAnon read before and after (got: $(printf '%s' "$out" | tail -3 | tr '\n' ' '))"
ok "$([ "${exited:-0}" -gt 0 ]; echo $?)" "the busy cycles placed work and saw it exit ($exited allocations)"
grew=$(( ${after:-0} - ${warm:-0} ))
echo "# RssAnon warm ${warm} kB, after 100 busy cycles ${after} kB (${grew} kB)"
ok "$([ -n "$warm" ] && [ "$grew" -lt 4096 ]; echo $?)" "100 busy cycles grow the backend's private memory by under 4 MB (${grew} kB)"
finish
