#!/usr/bin/env bash
# The short forms of the evidence, for CI (about 2 minutes on 2 cores):
# libFuzzer on the parsers and the engine (5 s a target), the kill -9
# loop (4 kills) and the soak (30 s).  Needs root, clang and the build
# installed (make install, or EVIDENCE_PG_BIN).  The long forms: see
# docs/reliability.md.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
t0=$(date +%s)
fail=0
for s in fuzz kill_loop soak; do
    t=$(date +%s)
    if bash "$D/$s.sh" >"/tmp/pg_tide_evidence_$s.log" 2>&1; then r=ok; else r=FAILED; fail=1; fi
    echo "$s: $r in $(( $(date +%s) - t )) s: $(tail -1 "/tmp/pg_tide_evidence_$s.log")"
done
echo "evidence short forms: $(( $(date +%s) - t0 )) s -> $([ $fail = 0 ] && echo PASS || echo FAIL)"
exit $fail
