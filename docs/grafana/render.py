#!/usr/bin/env python3
"""Render docs/grafana/pg_tide.json without Grafana: run each panel's own SQL
(Grafana's macros $__timeFrom(), $__timeTo(), $__timeFilter(col) replaced by
the window) against a database through psql, and draw the results with
gnuplot in the dashboard's grid.  A picture of what the queries return, not
a Grafana screenshot.

usage: render.py DASHBOARD.json OUT.png [--from TS --to TS] (psql connection
from the PG* environment variables and PGDATABASE)."""
import json, os, re, subprocess, sys, tempfile

args = sys.argv[1:]
dash_path, out_png = args[0], args[1]
opts = dict(zip(args[2::2], args[3::2]))

def psql(sql):
    r = subprocess.run(["psql", "-qAtX", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-c", sql],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("query failed: %s\n%s" % (r.stderr, sql))
    return [line.split("\t") for line in r.stdout.splitlines() if line]

def psql_header(sql):
    r = subprocess.run(["psql", "-qAX", "-F", "\t", "-P", "footer=off", "-v", "ON_ERROR_STOP=1", "-c", sql],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("query failed: %s\n%s" % (r.stderr, sql))
    lines = [l.split("\t") for l in r.stdout.splitlines() if l]
    return lines[0], lines[1:]

t_from = opts.get("--from") or psql("SELECT (now() - interval '2 days')::text")[0][0]
t_to = opts.get("--to") or psql("SELECT now()::text")[0][0]

def expand(sql):
    sql = sql.replace("$__timeFrom()", "'%s'" % t_from).replace("$__timeTo()", "'%s'" % t_to)
    return re.sub(r"\$__timeFilter\(([^)]*)\)",
                  lambda m: "(%s BETWEEN '%s' AND '%s')" % (m.group(1), t_from, t_to), sql)

dash = json.load(open(dash_path))
W, UNIT = 1800, 34
rows = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in dash["panels"])
H = rows * UNIT + 60
tmp = tempfile.mkdtemp(prefix="tide_render_")
gp = ['set terminal pngcairo size %d,%d font "DejaVu Sans,9" background "#111217"' % (W, H),
      'set output "%s"' % out_png,
      'set termoption noenhanced',
      'set multiplot',
      'set border lc rgb "#9fa7b3"; set tics textcolor rgb "#ccccdc"; set key textcolor rgb "#ccccdc" top left',
      'set style line 101 lc rgb "#2c3235"; set grid ls 101',
      'set title textcolor rgb "#ccccdc"',
      'set label 1 "%s: rendered from the dashboard\'s own queries (%s .. %s), not a Grafana screenshot" at screen 0.01, screen %f textcolor rgb "#ccccdc" font "DejaVu Sans,11"'
      % (dash["title"], t_from[:16], t_to[:16], 1 - 25.0 / H)]
colors = ["#73bf69", "#f2cc0c", "#5794f2", "#ff9830", "#f2495c", "#b877d9", "#8ab8ff", "#ffb357"]

def frame(p):
    g = p["gridPos"]
    x0 = g["x"] / 24.0
    y0 = 1 - (60 + (g["y"] + g["h"]) * UNIT) / float(H)
    return x0, y0, g["w"] / 24.0, g["h"] * UNIT / float(H)

def reset():
    gp.extend(['unset xdata', 'unset label', 'unset xtics', 'unset ytics', 'unset title', 'unset key', 'unset border',
               'set xtics; set ytics; set border', 'set format x "% h"', 'unset logscale',
               'set xrange [*:*]; set yrange [*:*]', 'set style fill empty', 'set style data lines', 'set key',
               'set format y "% h"', 'set ytics autofreq', 'set xtics norotate autofreq'])

for p in dash["panels"]:
    sql = expand(p["targets"][0]["rawSql"])
    x0, y0, w, h = frame(p)
    reset()
    gp.append('set origin %f,%f; set size %f,%f' % (x0, y0, w, h))
    title = p["title"].replace('"', "'")
    kind = p["type"]
    if kind == "stat":
        head, data = psql_header(sql)
        val = data[0][0] if data and data[0][0] != "" else "0"
        try:
            f = float(val); val = ("%d" % f) if f == int(f) else ("%.1f" % f)
        except ValueError:
            pass
        gp += ['unset border; unset xtics; unset ytics; unset key',
               'set label 2 "%s" at graph 0.05, graph 0.85 textcolor rgb "#ccccdc" font "DejaVu Sans,10"' % title,
               'set label 3 "%s" at graph 0.5, graph 0.4 center textcolor rgb "#73bf69" font "DejaVu Sans Bold,26"' % val,
               'set xrange [0:1]; set yrange [0:1]', 'plot -1 notitle']
    elif kind == "timeseries":
        head, data = psql_header(sql)
        series = {}
        if head[1:] == ["metric", "value"]:
            for t, m, v in data:
                series.setdefault(m, []).append((t, v))
        else:
            for row in data:
                for name, v in zip(head[1:], row[1:]):
                    series.setdefault(name, []).append((row[0], v))
        plots = []
        for i, (m, pts) in enumerate(sorted(series.items())):
            fn = os.path.join(tmp, "p%d_%d.dat" % (p["id"], i))
            with open(fn, "w") as f:
                for t, v in pts:
                    f.write("%s\t%s\n" % (psql("SELECT extract(epoch FROM timestamptz '%s')" % t)[0][0] if False else t.replace(" ", "T"), v or "NaN"))
            style = "linespoints pt 7 ps 0.6" if "drawStyle" in json.dumps(p.get("fieldConfig", {})) else "lines lw 1.5"
            plots.append('"%s" using 1:2 with %s lc rgb "%s" title "%s"' % (fn, style, colors[i % len(colors)], m))
        unit = p.get("fieldConfig", {}).get("defaults", {}).get("unit", "")
        gp += ['set title "%s" textcolor rgb "#ccccdc"' % title, 'set xdata time', 'set timefmt "%Y-%m-%dT%H:%M:%S"',
               'set format x "%d %H:%M"', 'set key top left horizontal textcolor rgb "#ccccdc"']
        if unit == "percentunit":
            gp.append('set yrange [0:1]; set format y "%.0f%%"; set ytics ("0%%" 0, "25%%" 0.25, "50%%" 0.5, "75%%" 0.75, "100%%" 1)')
        gp.append('plot ' + ", ".join(plots) if plots else 'plot NaN notitle')
    elif kind in ("bargauge", "barchart"):
        head, data = psql_header(sql)
        fn = os.path.join(tmp, "p%d.dat" % p["id"])
        with open(fn, "w") as f:
            for row in data:
                f.write("\t".join(['"%s"' % row[0]] + [c or "0" for c in row[1:]]) + "\n")
        cols = head[1:]
        if kind == "bargauge":
            gp += ['set title "%s" textcolor rgb "#ccccdc"' % title, 'set style data histograms', 'set style histogram rowstacked',
                   'set style fill solid 0.8 border -1', 'set boxwidth 0.6', 'set yrange [0:*]',
                   'set key top right horizontal textcolor rgb "#ccccdc"']
        else:
            gp += ['set title "%s" textcolor rgb "#ccccdc"' % title, 'set style data histograms', 'set style histogram clustered gap 1',
                   'set style fill solid 0.8 border -1', 'set yrange [0:*]', 'set xtics rotate by -20',
                   'set key top right textcolor rgb "#ccccdc"']
        plots = ['"%s" using %d:xtic(1) lc rgb "%s" title "%s"' % (fn, i + 2, colors[i], c) for i, c in enumerate(cols)]
        gp.append('plot ' + ", ".join(plots) if data else 'plot NaN notitle')
    elif kind == "table":
        head, data = psql_header(sql)
        def fmt(c):
            try:
                f = float(c)
                return ("%d" % f) if f == int(f) else ("%.2f" % f)
            except ValueError:
                return c
        cells = [head] + [[fmt(c) for c in r] for r in data]
        widths = [max(len(r[i]) for r in cells) for i in range(len(head))]
        lines = ["  ".join(r[i].rjust(widths[i]) if i else r[i].ljust(widths[i]) for i in range(len(head))) for r in cells]
        gp += ['unset border; unset xtics; unset ytics; unset key', 'set xrange [0:1]; set yrange [0:1]',
               'set label 2 "%s" at graph 0.01, graph 0.96 textcolor rgb "#ccccdc" font "DejaVu Sans,10"' % title]
        for i, l in enumerate(lines[:16]):
            gp.append('set label %d "%s" at graph 0.01, graph %f textcolor rgb "%s" font "DejaVu Sans Mono,8.5"'
                      % (10 + i, l.replace('"', "'"), 0.86 - i * 0.075 * 9.0 / p["gridPos"]["h"] * 1.0,
                         "#9fa7b3" if i == 0 else "#ccccdc"))
        gp.append('plot -1 notitle')
gp.append('unset multiplot')
script = os.path.join(tmp, "dash.gp")
open(script, "w").write("\n".join(gp) + "\n")
r = subprocess.run(["gnuplot", script], capture_output=True, text=True)
if r.returncode != 0:
    sys.exit("gnuplot failed: " + r.stderr)
print(out_png)
