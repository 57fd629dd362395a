# Shared shell helpers for the test command and the quick start.
# Source it; it defines functions and sets nothing else.

PG_MAJOR=${PG_MAJOR:-15}
# TIDE_PG_BIN: the bin directory of another copy of the server (a copy of
# /usr/lib/postgresql/15 and /usr/share/postgresql/15 elsewhere finds its
# share directory relative to itself): `make install` then writes there, so
# work in several checkouts can run its tests at once.
PG_BIN=${TIDE_PG_BIN:-/usr/lib/postgresql/$PG_MAJOR/bin}
TIDE_PACKAGES="postgresql-$PG_MAJOR postgresql-server-dev-$PG_MAJOR postgresql-$PG_MAJOR-cron postgresql-$PG_MAJOR-pgtap pgtap libpq-dev make gcc libc6-dev"

say() { printf '[pg_tide] %s\n' "$*" >&2; }
die() { printf '[pg_tide] error: %s\n' "$*" >&2; exit 1; }

# Install the Debian packages we need.  When any is missing, refresh the
# package lists first (a fresh machine has none); when all are installed
# there is nothing to fetch, in CI too, so no apt-get at all.
install_packages() {
    local missing=() p
    for p in $TIDE_PACKAGES "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        [ "$(id -u)" = 0 ] || die "need root to install: ${missing[*]}"
        say "installing packages: ${missing[*]}"
        apt-get update -qq >/dev/null || die "apt-get update failed"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null \
            || die "apt-get install ${missing[*]} failed"
    fi
}

# Build and install the extension and its programs.
build_and_install() {
    local src=$1
    make -C "$src" -s -j"$(nproc)" PG_CONFIG="$PG_BIN/pg_config" >/dev/null || die "build failed"
    make -C "$src" -s install PG_CONFIG="$PG_BIN/pg_config" >/dev/null || die "make install failed"
}

# Start a throwaway cluster owned by the postgres OS user (PostgreSQL
# refuses to run as root).  $1: directory; $2: port; $3: database that
# pg_cron serves.  Exports PGHOST, PGPORT, PGUSER for the callers.
# pg_tide is preloaded, as docs/deployment.md advises (ALTER SYSTEM SET
# tide.* then works in any session): install it before the first start.
# TIDE_EXTRA_CONF: more lines for postgresql.conf at initdb (they come
# last, so they win).
cluster_start() {
    local dir=$1 port=$2 crondb=$3
    mkdir -p "$dir"
    chown postgres: "$dir"
    chmod 700 "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        runuser -u postgres -- "$PG_BIN/initdb" -D "$dir/data" -U postgres -A trust \
            --no-sync -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
            || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
        cat >>"$dir/data/postgresql.conf" <<CONF
port = $port
listen_addresses = ''
unix_socket_directories = '$dir'
shared_preload_libraries = 'pg_cron,pg_tide'
cron.database_name = '$crondb'
cron.use_background_workers = on
max_worker_processes = 16
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
log_min_messages = warning
${TIDE_EXTRA_CONF:-}
CONF
    fi
    # Close inherited descriptors (3-9): a server started under flock would
    # otherwise hold the caller's lock for as long as it runs.
    runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null \
        3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- \
        || { tail -20 "$dir/server.log" >&2; die "server did not start"; }
    export PGHOST=$dir PGPORT=$port PGUSER=postgres
}

cluster_stop() {
    local dir=$1
    [ -f "$dir/data/postmaster.pid" ] || return 0
    runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
}

cluster_restart() {
    local dir=$1
    runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m fast -w -t 60 restart >/dev/null \
        3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- \
        || die "server did not restart"
}

# bench_setup SRC: what every benchmark driver does before its cluster:
# PORT (TIDE_BENCH_PORT, else a random one) and TMP, the cluster's
# directory, stopped and removed at exit; the install lock held for the
# whole run (the library must stay ours) unless TIDE_PG_BIN names a
# private copy of the server; then the build and install.  The caller
# sets TIDE_EXTRA_CONF if it needs to and calls cluster_start.
bench_setup() {
    PORT=${TIDE_BENCH_PORT:-$((56000 + RANDOM % 1000))}
    TMP=$(mktemp -d /tmp/pg_tide_bench.XXXXXX)
    trap 'cluster_stop "$TMP"; rm -rf "$TMP"' EXIT
    if [ -z "${TIDE_PG_BIN:-}" ]; then
        exec 9>/tmp/pg_tide_install.lock
        flock 9
    fi
    build_and_install "$1"
}
