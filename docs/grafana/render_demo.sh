#!/usr/bin/env bash
# Render docs/img/pg_tide_dashboard.png: two days of synthetic history
# (bench/history_gen.sql: 0.8 jobs a minute on 20 nodes of 8 GPUs, three
# queues, 20 owners), one maintenance pass (archive, rollup), a few jobs
# left pending, then every panel of docs/grafana/pg_tide.json drawn from its
# own query (docs/grafana/render.py, gnuplot).  Needs an empty database
# with pg_tide in PGDATABASE (and the PG* connection variables).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
psql -qX -v ON_ERROR_STOP=1 -v minutes=2880 -v jpm=0.8 -v nodes=20 -f "$src/bench/history_gen.sql" >/dev/null
psql -qAtX -v ON_ERROR_STOP=1 -c "SELECT tide.maintain_history()" >/dev/null
psql -qAtX -v ON_ERROR_STOP=1 -c "SELECT count(tide.submit(q, ('gpu=' || g)::tide.resvec))
                                    FROM (VALUES ('train', 8), ('train', 4), ('research', 2), ('infer', 1)) v(q, g)" >/dev/null
python3 "$here/render.py" "$here/pg_tide.json" "$src/docs/img/pg_tide_dashboard.png"
