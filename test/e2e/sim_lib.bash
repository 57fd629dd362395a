# Shared by the tide-sim end-to-end tests (test/e2e/sim*.sh).  Source it
# with the name of a trace file the test needs:
#   . "$(dirname "$0")/sim_lib.bash" MARKER_FILE
# It sets SRC, WORK (a temporary directory, removed at exit), SIM (the
# program: $TIDE_SIM, next to the server binaries, else the one built in
# the source tree) and TRACES (a directory with MARKER_FILE: $TIDE_TRACES,
# else $TIDE_SRC/../shared/traces in CI, else $TIDE_SRC/../../shared/traces
# in a worktree), defines the TAP helpers ok, notok, check and val (a
# summary field of a file), or prints "not ok 1" and exits when the
# program or the traces are missing.
SRC=${TIDE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
WORK=$(mktemp -d "${TIDE_TMP:-/tmp}/sim_e2e.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

N=0
FAILS=0
ok() { N=$((N + 1)); echo "ok $N - $1"; }
notok() { N=$((N + 1)); FAILS=$((FAILS + 1)); echo "not ok $N - $1"; [ -n "${2:-}" ] && echo "# $2"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else notok "$name"; fi; }
val() { sed -n "s/^$1: //p" "$2"; }

SIM=
for c in "${TIDE_SIM:-}" "${PG_BIN:+$PG_BIN/tide-sim}" "$(pg_config --bindir 2>/dev/null)/tide-sim" "$SRC/tide-sim"; do
    if [ -n "$c" ] && [ -x "$c" ]; then SIM=$c; break; fi
done
TRACES=
for d in "${TIDE_TRACES:-}" "$SRC/../shared/traces" "$SRC/../../shared/traces"; do
    if [ -n "$d" ] && [ -f "$d/$1" ]; then TRACES=$(cd "$d" && pwd); break; fi
done
if [ -z "$SIM" ] || [ -z "$TRACES" ]; then
    echo "not ok 1 - tide-sim (${SIM:-not found}) and traces (${TRACES:-not found}) present"
    exit 1
fi
echo "# using $SIM and $TRACES"
