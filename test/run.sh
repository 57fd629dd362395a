#!/usr/bin/env bash
# The test command: installs what is missing, builds, starts a throwaway
# PostgreSQL (as the postgres OS user, in a temporary directory, on its own
# port and socket directory, with pg_cron preloaded), runs every suite, and
# ends with one line "N passed, N failed".  Exit status is non-zero on any
# failure.  Run as root on Debian 12:  bash test/run.sh
#
# Suites: unit (C, no server; with tools/layers.sh), regress (pg_regress), isolation
# (pg_isolation_regress), pgtap (pg_prove), upgrade (every released
# version updated to this one), e2e (real pg_cron, real launchers),
# evidence (the short forms of test/evidence: fuzzing, a kill -9 loop
# and a soak; docs/reliability.md).  Pick some with TIDE_SUITES="unit regress",
# and within the pgtap and e2e suites only the files whose names match a
# shell pattern with TIDE_ONLY='evict_*' (for work in progress; CI runs all).
set -uo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/tools/lib.sh"

SUITES=${TIDE_SUITES:-"unit regress isolation pgtap upgrade e2e evidence"}
PORT=${TIDE_TEST_PORT:-$((54000 + RANDOM % 1000))}
DB=tide_test
TMP=$(mktemp -d /tmp/pg_tide_test.XXXXXX)
LOGS=$TMP/logs
PASSED=0
FAILED=0

cleanup() {
    cluster_stop "$TMP"
    if [ "$FAILED" -gt 0 ] || [ -n "${TIDE_KEEP:-}" ]; then
        say "logs kept in $LOGS"
    else
        rm -rf "$TMP"
    fi
}
trap cleanup EXIT

# Count TAP lines from a log: "ok N" passes, "not ok N" fails.  A runner
# that failed without any "not ok" (a crash, a plan mismatch) counts once.
count_tap() {
    local name=$1 log=$2 status=$3 ok bad
    ok=$(grep -cE '^[[:space:]]*ok [0-9]+' "$log")
    bad=$(grep -cE '^[[:space:]]*not ok [0-9]+' "$log")
    if [ "$status" -ne 0 ] && [ "$bad" -eq 0 ]; then bad=1; fi
    report "$name" "$ok" "$bad" "$log"
}

# Count pg_regress lines: "name ... ok" and "name ... FAILED".
count_regress() {
    local name=$1 log=$2 status=$3 ok bad
    ok=$(grep -cE '\.\.\. ok ' "$log")
    bad=$(grep -cE '\.\.\. FAILED' "$log")
    if [ "$status" -ne 0 ] && [ "$bad" -eq 0 ]; then bad=1; fi
    report "$name" "$ok" "$bad" "$log"
}

# Seconds since $1 (an $EPOCHREALTIME), rounded.
since() {
    local now=${EPOCHREALTIME/./} t0=${1/./}
    echo $(((now - t0 + 500000) / 1000000))
}

# Append the ten slowest files of a suite's log to it ("# slowest: ...").
# e2e lines read "# NAME took N s"; pg_prove --timer's, "ok  N ms" after
# the file's own line.
slowest() {
    awk '/^# [^ ]+ took [0-9]+ s$/ { print $4 * 1000, $2 }
         /^\[[0-9:]+\] / { f = $2; sub(/.*\//, "", f) }
         /^(ok|not ok|Failed|Dubious).* [0-9]+ ms/ && f != "" {
             for (i = 1; i < NF; i++) if ($(i + 1) == "ms") { print $i, f; break }
             f = "" }' "$1" |
        sort -rn | head -10 | awk '{ printf "# slowest: %s %.1f s\n", $2, $1 / 1000 }' >>"$1"
}

report() {
    local name=$1 ok=$2 bad=$3 log=$4 took
    took=$(since "$SUITE_T0")
    PASSED=$((PASSED + ok))
    FAILED=$((FAILED + bad))
    if [ "$bad" -gt 0 ]; then
        say "$name: $ok passed, $bad failed in $took s; log follows"
        grep -E 'not ok|FAILED|ERROR|Failed|Dubious|# ' "$log" | head -60 >&2
        for d in "$SRC"/regression.diffs "$SRC"/test/isolation/results/regression.diffs; do
            [ -s "$d" ] && head -120 "$d" >&2
        done
    else
        say "$name: $ok passed in $took s"
    fi
}

RUN_T0=$EPOCHREALTIME
mkdir -p "$LOGS"
chmod 755 "$TMP"
# clang for the fuzz targets, procps for the scripts that wait on processes,
# psycopg2 and Node.js for the examples of docs/notices.md (e2e notices.sh;
# a Node.js from elsewhere, e.g. NodeSource's, brings its own npm)
install_packages clang libclang-rt-14-dev procps python3-psycopg2
command -v npm >/dev/null || install_packages nodejs npm
build_and_install "$SRC"
cluster_start "$TMP" "$PORT" "$DB"
createdb "$DB" || die "createdb failed"
PGX=$PG_BIN/../lib/pgxs/src/test
# The server's own psql, createdb, pg_isready first: /usr/bin/psql is
# Debian's Perl wrapper, which costs about twice the CPU of psql itself on
# every call, and the tests make thousands of calls.
export PATH="$PG_BIN:$PATH"
say "setup (packages, build, install, cluster): $(since "$RUN_T0") s"

for suite in $SUITES; do
    log=$LOGS/$suite.log
    SUITE_T0=$EPOCHREALTIME
    case $suite in
    unit)
        make -C "$SRC" -s -j"$(nproc)" unit >"$log" 2>&1
        st=$?
        if [ $st -eq 0 ]; then
            for t in "$SRC"/test/unit/bin/test_*; do
                [ -x "$t" ] || continue
                echo "# $t" >>"$log"
                "$t" >>"$log" 2>&1 || st=1
            done
        fi
        # the C files call downwards only (docs/development.md)
        echo "# tools/layers.sh --self-test" >>"$log"
        PG_CONFIG="$PG_BIN/pg_config" bash "$SRC/tools/layers.sh" --self-test >>"$log" 2>&1 || st=1
        count_tap unit "$log" $st ;;
    regress)
        rm -f "$SRC"/regression.diffs
        make -C "$SRC" -s installcheck PG_CONFIG="$PG_BIN/pg_config" >"$log" 2>&1
        count_regress regress "$log" $? ;;
    isolation)
        specs=$(ls "$SRC"/test/isolation/specs/*.spec 2>/dev/null | xargs -rn1 basename | sed 's/\.spec$//')
        [ -n "$specs" ] || continue
        (cd "$SRC/test/isolation" && "$PGX/isolation/pg_isolation_regress" \
            --bindir="$PG_BIN" --inputdir=. --outputdir=results \
            --load-extension=pg_tide --dbname=tide_isolation $specs) >"$log" 2>&1
        count_regress isolation "$log" $? ;;
    pgtap)
        psql -qX -d "$DB" -c 'CREATE EXTENSION IF NOT EXISTS pgtap' >/dev/null || die "no pgtap"
        files=$(ls "$SRC"/test/pgtap/${TIDE_ONLY:-*}.sql 2>/dev/null)
        [ -n "$files" ] || continue
        # --timer: each file's line ends with its time ("ok  1234 ms")
        pg_prove -v --timer -d "$DB" $files >"$log" 2>&1
        st=$?
        slowest "$log"
        count_tap pgtap "$log" $st ;;
    upgrade)
        bash "$SRC/test/upgrade.sh" >"$log" 2>&1
        count_tap upgrade "$log" $? ;;
    e2e)
        : >"$log"
        st=0
        for t in "$SRC"/test/e2e/${TIDE_ONLY:-*}.sh; do
            [ -f "$t" ] || continue
            echo "# $t" >>"$log"
            t0=$EPOCHREALTIME
            TIDE_SRC=$SRC TIDE_TMP=$TMP TIDE_DB=$DB PG_BIN=$PG_BIN \
                timeout 600 bash "$t" >>"$log" 2>&1 || st=1
            echo "# $(basename "$t") took $(since "$t0") s" >>"$log"
        done
        slowest "$log"
        count_tap e2e "$log" $st ;;
    evidence)
        # one line per script: "NAME: ok in N s: ..." or "NAME: FAILED ..."
        bash "$SRC/test/evidence/ci.sh" >"$log" 2>&1
        st=$?
        ok=$(grep -cE '^[a-z_]+: ok ' "$log")
        bad=$(grep -cE '^[a-z_]+: FAILED' "$log")
        if [ "$st" -ne 0 ] && [ "$bad" -eq 0 ]; then bad=1; fi
        for f in /tmp/pg_tide_evidence_*.log; do [ -f "$f" ] && { echo "# $f"; tail -20 "$f"; } >>"$log"; done
        report evidence "$ok" "$bad" "$log" ;;
    *) die "unknown suite $suite" ;;
    esac
done

# Clean up first, so the summary is the very last line CI reads.
trap - EXIT
cleanup
say "total: $(since "$RUN_T0") s"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
