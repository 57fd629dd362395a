#!/usr/bin/env bash
# Every SQL block of docs/analysts.md runs as it stands on the scripted day
# of history of the analyst tests (test/pgtap/_fixture.psql and
# _analysts_history.psql, then one tide.maintain_history() for the
# rollups), each in its own rolled-back transaction (a block's own BEGIN
# and ROLLBACK become a savepoint), and returns rows.  A block starting "-- skip-if-missing: f()" is skipped when
# that function does not exist (it belongs to another part).
. "$(dirname "$0")/lib.bash"

fresh_db
sql_blocks "$TIDE_SRC/docs/analysts.md" "$WORK"
n=0
for f in "$WORK"/block*.sql; do
    n=$((n + 1))
    need=$(sed -n 's/^-- skip-if-missing: *\(.*\)$/\1/p' "$f")
    if [ -n "$need" ] && [ "$(q "SELECT to_regprocedure('$need') IS NULL")" = t ]; then
        skip "block $n of docs/analysts.md needs $need"
        continue
    fi
    {
        echo "BEGIN;"
        echo "\\ir $TIDE_SRC/test/pgtap/_fixture.psql"
        echo "\\ir $TIDE_SRC/test/pgtap/_analysts_history.psql"
        echo "SELECT tide.maintain_history() IS NOT NULL AS maintained \\gset"
        echo "\\o $f.out"
        # a block's own BEGIN/ROLLBACK (a what-if) nests as a savepoint
        sed -e 's/^BEGIN;$/SAVEPOINT doc_block;/' -e 's/^ROLLBACK;$/ROLLBACK TO SAVEPOINT doc_block;/' "$f"
        echo "\\o"
        echo "ROLLBACK;"
    } >"$f.run"
    err=$(psql -qAtX -v ON_ERROR_STOP=1 -d "$DB" -f "$f.run" 2>&1 >/dev/null)
    is "$err" "" "block $n of docs/analysts.md runs: $(head -c 70 "$f" | tr '\n' ' ')"
    rows=$(grep -c . "$f.out")
    ok "$([ "$rows" -gt 0 ] && echo 0 || echo 1)" "block $n returns rows ($rows lines)"
done
finish
