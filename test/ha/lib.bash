# The HA harness (sourced by test/e2e/ha_patroni.sh; docs/ha.md): Debian's
# etcd and Patroni on loopback, one etcd and two PostgreSQL 15 members in
# synchronous mode, data under $HA_DIR, run as the postgres OS user, on
# ports from $HA_BASE.  Defines functions; ha_init sets the variables.

# ha_init DIR BASEPORT DBNAME
# HA_SYNC=false: asynchronous replication (for docs/ha.md's comparison only)
ha_init() {
    HA_DIR=$1
    HA_BASE=$2
    HA_DB=$3
    HA_ETCD_CLIENT=$HA_BASE
    HA_ETCD_PEER=$((HA_BASE + 1))
    HA_MEMBERS=(m1 m2)
    declare -gA HA_PG_PORT=([m1]=$((HA_BASE + 2)) [m2]=$((HA_BASE + 3)))
    declare -gA HA_REST_PORT=([m1]=$((HA_BASE + 4)) [m2]=$((HA_BASE + 5)))
    declare -gA HA_PATRONI_PID=()
    HA_ETCD_PID=""
    # what clients use: both members, the one that takes writes
    HA_DSN="host=127.0.0.1,127.0.0.1 port=${HA_PG_PORT[m1]},${HA_PG_PORT[m2]} dbname=$HA_DB user=postgres target_session_attrs=read-write connect_timeout=2"
    mkdir -p "$HA_DIR"
    chown postgres: "$HA_DIR"
    chmod 755 "$HA_DIR"
}

ha_etcd_start() {
    etcd --name e1 --data-dir "$HA_DIR/etcd" \
        --listen-client-urls "http://127.0.0.1:$HA_ETCD_CLIENT" \
        --advertise-client-urls "http://127.0.0.1:$HA_ETCD_CLIENT" \
        --listen-peer-urls "http://127.0.0.1:$HA_ETCD_PEER" \
        --initial-advertise-peer-urls "http://127.0.0.1:$HA_ETCD_PEER" \
        --initial-cluster "e1=http://127.0.0.1:$HA_ETCD_PEER" \
        --initial-cluster-state new --log-level warn \
        >"$HA_DIR/etcd.log" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
    HA_ETCD_PID=$!
    local _
    for _ in $(seq 100); do
        curl -sf "http://127.0.0.1:$HA_ETCD_CLIENT/health" 2>/dev/null | grep -q true && return 0
        sleep 0.1
    done
    return 1
}

# The Patroni configuration of member NAME (docs/ha.md shows an excerpt).
ha_member_config() {
    local m=$1 d=$HA_DIR/$1
    mkdir -p "$d"
    chown postgres: "$d"
    chmod 700 "$d"
    cat >"$d/patroni.yml" <<YML
scope: tide_ha
namespace: /tide/
name: $m
log:
  level: INFO
restapi:
  listen: 127.0.0.1:${HA_REST_PORT[$m]}
  connect_address: 127.0.0.1:${HA_REST_PORT[$m]}
etcd3:
  hosts: 127.0.0.1:$HA_ETCD_CLIENT
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 5
    primary_start_timeout: 0
    maximum_lag_on_failover: 1048576
    synchronous_mode: ${HA_SYNC:-true}
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_log_hints: 'on'
        hot_standby: 'on'
        max_wal_senders: 10
        max_replication_slots: 10
        max_worker_processes: 16
        max_connections: 100
        shared_preload_libraries: pg_cron
        cron.database_name: $HA_DB
        cron.use_background_workers: 'on'
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
    - auth: trust
postgresql:
  listen: 127.0.0.1:${HA_PG_PORT[$m]}
  connect_address: 127.0.0.1:${HA_PG_PORT[$m]}
  data_dir: $d/data
  bin_dir: $PG_BIN
  pgpass: $d/pgpass
  authentication:
    superuser:
      username: postgres
      password: tide
    replication:
      username: replicator
      password: tide
    rewind:
      username: postgres
      password: tide
  pg_hba:
    - local all all trust
    - local replication all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
  parameters:
    unix_socket_directories: $d
    fsync: 'off'
    log_min_messages: warning
YML
    chown postgres: "$d/patroni.yml"
}

ha_patroni_start() {
    local m=$1
    [ -f "$HA_DIR/$m/patroni.yml" ] || ha_member_config "$m"
    runuser -u postgres -- patroni "$HA_DIR/$m/patroni.yml" >>"$HA_DIR/$m/patroni.log" 2>&1 \
        3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
    HA_PATRONI_PID[$m]=$!
}

# The member a REST endpoint answers 200 for (primary, replica, sync), or "".
ha_member_where() {
    local ep=$1 m
    for m in "${HA_MEMBERS[@]}"; do
        if [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:${HA_REST_PORT[$m]}/$ep" 2>/dev/null)" = 200 ]; then
            echo "$m"
            return 0
        fi
    done
    return 1
}

# Wait until ENDPOINT answers on some member (at most TIMEOUT s); prints it.
ha_wait_member() {
    local ep=$1 timeout=${2:-60} end m
    end=$(($(date +%s) + timeout))
    while [ "$(date +%s)" -lt "$end" ]; do
        m=$(ha_member_where "$ep") && { echo "$m"; return 0; }
        sleep 0.2
    done
    return 1
}

ha_other() { [ "$1" = m1 ] && echo m2 || echo m1; }

# psql on member M (superuser, over the member's socket)
ha_q() {
    local m=$1
    shift
    psql -qAtX -v ON_ERROR_STOP=1 -h "$HA_DIR/$m" -p "${HA_PG_PORT[$m]}" -U postgres -d "${HA_QDB:-$HA_DB}" -c "$1"
}

ha_postmaster_pid() {
    head -1 "$HA_DIR/$1/data/postmaster.pid" 2>/dev/null
}

# patronictl with member m1's configuration
ha_ctl() {
    runuser -u postgres -- patronictl -c "$HA_DIR/m1/patroni.yml" "$@" 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-
}

# Stop everything the harness started: Patroni stops its PostgreSQL.
ha_stop_all() {
    local m p
    for m in "${!HA_PATRONI_PID[@]}"; do
        kill -TERM "${HA_PATRONI_PID[$m]}" 2>/dev/null
    done
    for m in "${!HA_PATRONI_PID[@]}"; do
        for _ in $(seq 100); do kill -0 "${HA_PATRONI_PID[$m]}" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "${HA_PATRONI_PID[$m]}" 2>/dev/null
    done
    for m in "${HA_MEMBERS[@]}"; do
        p=$(ha_postmaster_pid "$m")
        [ -n "$p" ] && runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$HA_DIR/$m/data" -m immediate -w stop >/dev/null 2>&1
    done
    [ -n "$HA_ETCD_PID" ] && kill -TERM "$HA_ETCD_PID" 2>/dev/null && wait "$HA_ETCD_PID" 2>/dev/null
}

# The walsenders of member M (what streams its WAL to the standby).
ha_walsender_pids() {
    local pm
    pm=$(ha_postmaster_pid "$1")
    [ -n "$pm" ] && pgrep -P "$pm" -f 'walsender' | tr '\n' ' '
}
