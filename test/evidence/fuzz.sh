#!/usr/bin/env bash
# libFuzzer over the parsers and the engine: builds every test/fuzz/fuzz_*.c
# with clang (-fsanitize=fuzzer,address,undefined) and runs each target.
#
#   bash test/evidence/fuzz.sh              # short form: 5 s a target
#   bash test/evidence/fuzz.sh --long       # 10 million executions a target
#   FUZZ_SECONDS=600 bash test/evidence/fuzz.sh
#   FUZZ_SANITIZE=fuzzer bash test/evidence/fuzz.sh --long   # no ASan/UBSan:
#                                           # several times faster, crashes only
#   FUZZ_TARGETS=engine FUZZ_SECONDS=3600 bash test/evidence/fuzz.sh   # one target
#
# Needs no server.  Corpora are kept in $FUZZ_DIR (default
# /tmp/pg_tide_fuzz) so that later runs start from what earlier ones found;
# a crashing input is written there and the script fails.  Prints one line
# a target: executions, seconds, corpus size.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
FUZZ_DIR=${FUZZ_DIR:-/tmp/pg_tide_fuzz}
SANITIZE=${FUZZ_SANITIZE:-fuzzer,address,undefined}
LIMIT=(-max_total_time="${FUZZ_SECONDS:-5}")
[ "${1:-}" = --long ] && LIMIT=(-runs="${FUZZ_RUNS:-10000000}")
command -v clang >/dev/null || { echo "fuzz: clang is not installed (apt-get install clang)" >&2; exit 1; }
mkdir -p "$FUZZ_DIR"
fail=0
for f in "$SRC"/test/fuzz/fuzz_*.c; do
    name=$(basename "$f" .c)
    [ -n "${FUZZ_TARGETS:-}" ] && [[ " $FUZZ_TARGETS " != *" ${name#fuzz_} "* ]] && continue
    bin=$FUZZ_DIR/$name
    case $name in
        fuzz_engine) srcs=("$SRC"/src/engine/[a-z]*.c) ;;
        fuzz_gpumask) srcs=("$SRC"/src/core/gpumask_core.c) ;;
        *) srcs=("$SRC"/src/core/*.c) ;;
    esac
    clang -g -O1 -fsanitize="$SANITIZE" -I"$SRC"/src/core -I"$SRC"/src/engine \
        -o "$bin" "$f" "${srcs[@]}" -lm || { echo "fuzz: $name does not build" >&2; fail=1; continue; }
    mkdir -p "$FUZZ_DIR/corpus-$name"
    t0=$(date +%s.%N)
    ( cd "$FUZZ_DIR" && nice -n 10 "$bin" "${LIMIT[@]}" -print_final_stats=1 \
        -artifact_prefix="$FUZZ_DIR/$name-" "$FUZZ_DIR/corpus-$name" ) >"$FUZZ_DIR/$name.log" 2>&1
    rc=$?
    secs=$(echo "$(date +%s.%N) - $t0" | bc)
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$FUZZ_DIR/$name.log" | tail -1)
    printf '%-14s %s executions in %.0f s, corpus %s inputs, exit %s\n' "$name" "${runs:-?}" "$secs" \
        "$(ls "$FUZZ_DIR/corpus-$name" | wc -l)" "$rc"
    if [ "$rc" != 0 ]; then
        fail=1
        grep -E 'ERROR|violated|SUMMARY' "$FUZZ_DIR/$name.log" | head -5 >&2
    fi
done
exit $fail
