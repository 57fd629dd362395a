#!/usr/bin/env bash
# Prometheus for real (docs/prometheus.md): Debian 12's postgres_exporter
# with docs/prometheus/queries.yaml and Prometheus with
# docs/prometheus/prometheus.yml, both on loopback on free ports with
# scratch directories, scrape a small cluster made with the public SQL
# API.  Read back through Prometheus's HTTP API, the tide_* series are
# tide.metrics: the same names, label sets and values (HELP and TYPE from
# tide._metric_help()), and again after a change.  The Prometheus dashboard
# (docs/grafana/pg_tide_prometheus.json) is valid JSON, has the panels of
# pg_tide.json, names only metrics of tide.metrics, and each of its
# queries runs in this Prometheus; the rules of docs/prometheus/alerts.yml
# evaluate.  About 10 s; skipped only when the packages cannot be
# installed.
. "$(dirname "$0")/lib.bash"
keep_bin=$PG_BIN
. "$TIDE_SRC/tools/lib.sh"
PG_BIN=$keep_bin

if ! command -v prometheus >/dev/null || ! command -v prometheus-postgres-exporter >/dev/null; then
    # Without their recommends (node exporter, smartmontools, ...): about
    # half the time.  In a subshell: install_packages dies when it cannot.
    printf 'APT::Install-Recommends "false";\n' >"$WORK/apt.conf"
    (APT_CONFIG=${APT_CONFIG:-$WORK/apt.conf} install_packages prometheus prometheus-postgres-exporter) >"$WORK/apt.log" 2>&1
    if ! command -v prometheus >/dev/null || ! command -v prometheus-postgres-exporter >/dev/null; then
        err=$(tail -1 "$WORK/apt.log")
        skip "prometheus and prometheus-postgres-exporter cannot be installed here (${err:-installed but not on PATH})"
        finish
    fi
fi
bail() { echo "Bail out! $*"; exit 1; }
now() { date +%s.%N; }
PROM_DIR=$TIDE_SRC/docs/prometheus

# two free loopback ports (bound, read, closed)
read -r EXP_PORT PROM_PORT < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
PROM=http://127.0.0.1:$PROM_PORT

# ---- Prometheus first: it finds its targets about 5 s after it starts ----
sed -e "s/127\.0\.0\.1:9187/127.0.0.1:$EXP_PORT/" -e 's/15s/1s/g' "$PROM_DIR/prometheus.yml" >"$WORK/prometheus.yml"
cp "$PROM_DIR/alerts.yml" "$WORK/alerts.yml"
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/prometheus-data" \
    --web.listen-address="127.0.0.1:$PROM_PORT" >"$WORK/prometheus.log" 2>&1 &
PROM_PID=$!
at_exit "kill $PROM_PID; wait $PROM_PID"

# ---- a small cluster, with the public SQL API, and one cycle ----
fresh_db
ROLE=tide_e2e_prom_$$
q "CREATE ROLE $ROLE LOGIN IN ROLE tide_reader" >/dev/null || bail "CREATE ROLE failed"
at_exit "psql -qX -d postgres -c 'DROP ROLE IF EXISTS $ROLE'"
q "INSERT INTO tide.queues (name, quota, resource_group) VALUES
   ('train', 'gpu=8', 'default'), ('research', NULL, 'default'), ('lab', NULL, 'lab')" >/dev/null
q "SELECT tide.register_node('n1', 'cpu=64, memory=256Gi, gpu=8', gpu_type => 'H100');
   SELECT tide.register_node('n2', 'cpu=64, memory=256Gi, gpu=8', gpu_type => 'H100');
   SELECT tide.register_node('n3', 'cpu=32, memory=128Gi, gpu=4');
   SELECT tide.register_node('l1', 'cpu=32, memory=128Gi, gpu=4', gpu_type => 'A100', resource_group => 'lab')" >/dev/null
q "SELECT count(tide.submit('train', 'gpu=4')) FROM generate_series(1, 3);
   SELECT count(tide.submit('research', 'gpu=2')) FROM generate_series(1, 2);
   SELECT tide.submit('research', 'gpu=16')" >/dev/null
q "SELECT tide.run_cycle()" >/dev/null
is "$(q "SELECT sum(value) FROM tide.metrics WHERE name = 'tide_jobs_running'")" 5 "a cycle placed 5 of 6 jobs (one can never fit)"

# ---- postgres_exporter, as a tide_reader login, with the shipped query file ----
DATA_SOURCE_NAME="host=$PGHOST port=$PGPORT user=$ROLE dbname=$DB sslmode=disable" \
    prometheus-postgres-exporter --extend.query-path="$PROM_DIR/queries.yaml" \
    --disable-default-metrics --disable-settings-metrics --no-collector.database --no-collector.bgwriter \
    --web.listen-address="127.0.0.1:$EXP_PORT" >"$WORK/exporter.log" 2>&1 &
EXP_PID=$!
at_exit "kill $EXP_PID; wait $EXP_PID"

# Run prometheus_check.py's checks; each of its result lines is a TAP line
# here.  A crash is a failure too (its checks would go missing).
check() {
    local st line
    python3 "$TIDE_SRC/test/e2e/prometheus_check.py" "$PROM" "$DB" "$@" >"$WORK/check.out" 2>&1
    st=$?
    while IFS= read -r line; do
        case $line in
        [01]$'\t'*) ok "${line%%$'\t'*}" "${line#*$'\t'}" ;;
        '#'*) echo "$line" ;;
        *) echo "# $line" ;;
        esac
    done <"$WORK/check.out"
    [ $st = 0 ] || ok 1 "prometheus_check.py $1 ran to its end"
}
# SQL: the value of tide.metrics NAME [with labels containing JSONB]
metric() { echo "SELECT value FROM tide.metrics WHERE name = '$1'${2:+ AND labels @> '$2'}"; }

# ---- the first scrape, read back ----
check scrape-after "$(now)" \
    -- series "every tide_* series in Prometheus is a row of tide.metrics and back, value for value" \
    -- value 'count(count by (__name__) ({__name__=~"tide_.+"}))' "SELECT count(*) FROM tide._metric_help()" \
    "Prometheus has every name of tide._metric_help(), so every query of queries.yaml ran" \
    -- value 'tide_gpus_allocated{resource_group="default",gpu_type="H100"}' \
    "$(metric tide_gpus_allocated '{"resource_group": "default", "gpu_type": "H100"}')" \
    'a gauge with labels: tide_gpus_allocated{resource_group="default",gpu_type="H100"}' \
    -- value 'tide_gpus_total{resource_group="default",gpu_type=""}' "$(metric tide_gpus_total '{"gpu_type": ""}')" \
    'an empty label value is no label: tide_gpus_total{gpu_type=""} is the pool without a GPU type' \
    -- value 'tide_queue_gpus_quota' "SELECT 8" "a family only some queues have: tide_queue_gpus_quota (train's)" \
    -- value 'tide_jobs_submitted_total' "$(metric tide_jobs_submitted_total)" "a counter: tide_jobs_submitted_total" \
    -- metadata "Prometheus's HELP and TYPE of every name are tide._metric_help()'s (the *_total ones counters)"

# ---- a change: more jobs, a node drained, a cycle; the next scrape has it ----
q "SELECT count(tide.submit('train', 'gpu=1')) FROM generate_series(1, 4);
   SELECT tide.submit('lab', 'gpu=4', gpu_type => 'A100');
   SELECT tide.drain_node('n3');
   SELECT tide.run_cycle()" >/dev/null
check scrape-after "$(now)" \
    -- series "after the change, Prometheus is tide.metrics again" \
    -- value 'tide_jobs_submitted_total' "SELECT 11" "the counter counted the 5 new jobs" \
    -- value 'tide_cycles_total' "SELECT 2" "and the second cycle" \
    -- value 'tide_nodes{state="draining"}' "SELECT 1" 'tide_nodes{state="draining"} follows the drained node' \
    -- value 'tide_gpus_allocated{resource_group="lab"}' "SELECT 4" "the lab pool's A100s are held (resource_group label)" \
    -- dashboard "$TIDE_SRC/docs/grafana/pg_tide_prometheus.json" "$TIDE_SRC/docs/grafana/pg_tide.json" \
    "pg_tide_prometheus.json: valid JSON, the panels of pg_tide.json, names of tide.metrics, every query runs" \
    -- alerts "TideJobsUnschedulable{queue=research}" \
    "the alerting rules of alerts.yml evaluate, and only research's unschedulable job is pending" \
    -- listening "127.0.0.1:$PROM_PORT 127.0.0.1:$EXP_PORT" "Prometheus and the exporter listen on loopback only" \
    "$PROM_PID" "$EXP_PID"
if [ "$T_FAIL" -gt 0 ]; then
    for f in "$WORK/prometheus.log" "$WORK/exporter.log"; do
        echo "# ---- $f (last lines)"
        tail -8 "$f" | sed 's/^/# /'
    done
fi
finish
