#!/usr/bin/env bash
# Upgrade test: every released version (a frozen install script in
# extension/released/) is installed, updated with ALTER EXTENSION ... UPDATE,
# and must then describe exactly the same objects as a fresh install of the
# current version.  Prints TAP.  Needs PGHOST/PGPORT/PGUSER of a running
# server where `make install` has put the current build.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
CURRENT=$(sed -n "s/^default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" "$SRC/pg_tide.control")
n=0; failed=0
tap() { n=$((n + 1)); if [ "$1" = ok ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi; }

# A canonical description of everything the extension owns: member objects,
# table columns, constraints, indexes, function bodies, comments.  Column
# order is left out on purpose: ALTER TABLE ADD COLUMN appends.
describe() {
    psql -qAtX -d "$1" -v ON_ERROR_STOP=1 <<'SQL'
WITH members AS (
    SELECT d.classid, d.objid, d.objsubid
    FROM pg_depend d JOIN pg_extension e ON d.refobjid = e.oid
    WHERE d.refclassid = 'pg_extension'::regclass AND e.extname = 'pg_tide' AND d.deptype = 'e'
)
SELECT 'member ' || pg_describe_object(classid, objid, objsubid) FROM members
UNION ALL
SELECT format('column %s.%s %s notnull=%s default=%s', c.relname, a.attname,
              format_type(a.atttypid, a.atttypmod), a.attnotnull,
              pg_get_expr(ad.adbin, ad.adrelid))
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace s ON s.oid = c.relnamespace
LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
WHERE s.nspname = 'tide' AND a.attnum > 0 AND NOT a.attisdropped
UNION ALL
SELECT format('constraint %s.%s %s', c.conrelid::regclass, c.conname, pg_get_constraintdef(c.oid))
FROM pg_constraint c JOIN pg_namespace s ON s.oid = c.connamespace WHERE s.nspname = 'tide'
UNION ALL
SELECT format('index %s', pg_get_indexdef(i.indexrelid))
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = 'tide'
UNION ALL
SELECT format('function %s %s', p.oid::regprocedure, md5(pg_get_functiondef(p.oid)))
FROM pg_proc p JOIN pg_namespace s ON s.oid = p.pronamespace
WHERE s.nspname = 'tide' AND p.prokind IN ('f', 'p')
UNION ALL
SELECT format('comment %s %s', pg_describe_object(d.classoid, d.objoid, d.objsubid), md5(d.description))
FROM pg_description d
WHERE (d.classoid, d.objoid) IN (SELECT classid, objid FROM members)
   OR (d.classoid = 'pg_namespace'::regclass AND d.objoid = 'tide'::regnamespace)
ORDER BY 1;
SQL
}

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fresh=tide_upgrade_fresh
dropdb --if-exists "$fresh" >/dev/null 2>&1
createdb "$fresh"
if psql -qAtX -d "$fresh" -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION pg_tide' >/dev/null; then
    tap ok "fresh install of $CURRENT"
else
    tap fail "fresh install of $CURRENT"
fi
got=$(psql -qAtX -d "$fresh" -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_tide'")
[ "$got" = "$CURRENT" ] && tap ok "installed version is the control file's ($got)" \
    || tap fail "installed version '$got' differs from the control file's '$CURRENT'"
describe "$fresh" >"$WORK/tide_fresh.desc"

for script in "$SRC"/extension/released/pg_tide--*.sql; do
    [ -f "$script" ] || continue
    v=$(basename "$script" .sql); v=${v#pg_tide--}
    db=tide_upgrade_${v//[^0-9a-zA-Z]/_}
    dropdb --if-exists "$db" >/dev/null 2>&1
    createdb "$db"
    if psql -qAtX -d "$db" -v ON_ERROR_STOP=1 \
        -c "CREATE EXTENSION pg_tide VERSION '$v'" -c 'ALTER EXTENSION pg_tide UPDATE' >/dev/null; then
        tap ok "install $v and update to $CURRENT"
        if diff -u "$WORK/tide_fresh.desc" <(describe "$db") >"$WORK/tide_upgrade_$v.diff"; then
            tap ok "$v updated to $CURRENT matches a fresh install"
        else
            head -40 "$WORK/tide_upgrade_$v.diff" | sed 's/^/# /'
            tap fail "$v updated to $CURRENT matches a fresh install"
        fi
    else
        tap fail "install $v and update to $CURRENT"
    fi
    dropdb "$db"
done
dropdb "$fresh"
echo "1..$n"
exit $failed
