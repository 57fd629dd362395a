"""The checks of test/e2e/prometheus.sh: Prometheus's HTTP API against
tide.metrics.  Prints one line "STATUS<tab>MESSAGE" per check (0 passed,
1 failed) for the shell to number as TAP, and "# ..." lines with what
differs.  One process runs several checks (a Python start is slow on a
busy machine).

usage: prometheus_check.py PROM_URL DB CHECK [ARG...] [-- CHECK [ARG...]]...
  scrape-after T                  a scrape of job pg_tide that began after
                                  Unix time T (waits at most 20 s)
  series MESSAGE                  every tide_* series against tide.metrics
  value PROMQL SQL MESSAGE        a PromQL value against an SQL value
  metadata MESSAGE                HELP and TYPE of each name against
                                  tide._metric_help()
  dashboard FILE PG_FILE MESSAGE  the Prometheus dashboard against the
                                  PostgreSQL one and tide.metrics
  alerts EXPECTED MESSAGE         every rule evaluates without error (after
                                  the latest scrape); the active alerts are
                                  EXPECTED (NAME{label=value} NAME..., sorted)
  listening EXPECTED MESSAGE PID...  the TCP addresses the processes listen on
psql reaches DB through the PG* environment variables."""
import datetime
import json
import math
import os
import re
import socket
import subprocess
import sys
import time
import urllib.parse

PROM, DB = sys.argv[1], sys.argv[2]
HOST, PORT = urllib.parse.urlsplit(PROM).hostname, urllib.parse.urlsplit(PROM).port
# the two ages of tide.metrics: they grow between the scrape and our read
AGES = ("tide_oldest_pending_seconds", "tide_last_cycle_age_seconds")


def api(path, **params):
    """A bare HTTP/1.0 GET: no proxy, no TLS module to load."""
    with socket.create_connection((HOST, PORT), timeout=5) as c:
        c.sendall(("GET %s?%s HTTP/1.0\r\nHost: %s\r\n\r\n"
                   % (path, urllib.parse.urlencode(params), HOST)).encode())
        raw = b"".join(iter(lambda: c.recv(65536), b""))
    body = json.loads(raw.split(b"\r\n\r\n", 1)[1])
    if body.get("status") != "success":
        raise RuntimeError("%s: %s" % (path, body.get("error", body)))
    return body["data"]


def sql(query):
    out = subprocess.run(["psql", "-qAtX", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-d", DB, "-c", query],
                         capture_output=True, text=True, check=True).stdout
    return [line.split("\t") for line in out.splitlines()]


def result(passed, message, details=()):
    print("%d\t%s" % (0 if passed else 1, message))
    for d in details:
        print("#   " + d)


def key(name, labels):
    """name{k="v",...}, sorted; an empty value is no label in Prometheus."""
    return name + "{" + ",".join("%s=%s" % (k, json.dumps(v))
                                 for k, v in sorted(labels.items()) if v != "") + "}"


def scrape_after(after):
    after, end = float(after), time.time() + 20
    while time.time() < end:
        try:
            r = api("/api/v1/query", query='timestamp(up{job="pg_tide"})')["result"]
            if r and float(r[0]["value"][1]) > after:
                return result(True, "Prometheus scraped the exporter (%.1f s later)"
                              % (float(r[0]["value"][1]) - after))
        except OSError:
            pass  # not listening yet
        time.sleep(0.2)
    result(False, "Prometheus scraped the exporter (none within 20 s)")


def series(message):
    # one query, so one snapshot: the series and the time of their scrape
    got = api("/api/v1/query", query='{__name__=~"tide_.+"} or '
              'label_replace(timestamp(up{job="pg_tide"}), "scrape", "time", "", "")')["result"]
    scraped = [float(s["value"][1]) for s in got if "scrape" in s["metric"]]
    in_prom = {}
    for s in got:
        m = dict(s["metric"])
        if "scrape" not in m:
            name = m.pop("__name__")
            m.pop("job"), m.pop("instance")
            in_prom[key(name, m)] = float(s["value"][1])
    rows = sql("SELECT name, labels::text, value FROM tide.metrics")
    read_at = time.time()
    in_db = {key(n, json.loads(l)): (float(v) if v != "" else math.nan) for n, l, v in rows}
    problems = ["missing in Prometheus: " + k for k in sorted(set(in_db) - set(in_prom))]
    problems += ["not in tide.metrics: " + k for k in sorted(set(in_prom) - set(in_db))]
    ages = 0
    for k in sorted(set(in_db) & set(in_prom)):
        d, p = in_db[k], in_prom[k]
        if k.startswith(AGES) and p != 0:
            # read at the scrape; older now by at most the time since
            lag = read_at - scraped[0] if len(scraped) == 1 else -1
            ages += 1
            if not 0 <= d - p <= lag + 0.01:
                problems.append("%s: Prometheus %r, tide.metrics %r (%.3f s later)" % (k, p, d, lag))
        elif not (d == p or (math.isnan(d) and math.isnan(p))):
            problems.append("%s: Prometheus %r, tide.metrics %r" % (k, p, d))
    result(in_db and not problems, "%s (%d series, %d names, %d of them ages)"
           % (message, len(in_db), len({k.split("{")[0] for k in in_db}), ages), problems)


def value(promql, query, message):
    r = api("/api/v1/query", query=promql)["result"]
    got = r[0]["value"][1] if len(r) == 1 else "%d results" % len(r)
    expected = sql(query)[0][0]
    result(got == expected, message, [] if got == expected else ["got %s, expected %s" % (got, expected)])


def metadata(message):
    meta = api("/api/v1/metadata")
    problems = []
    for name, kind, help_ in sql("SELECT name, kind, help FROM tide._metric_help()"):
        m = meta.get(name)
        if not m:
            problems.append("%s: no metadata" % name)
        elif (m[0]["type"], m[0]["help"]) != (kind, help_):
            problems.append("%s: %s %r, expected %s %r" % (name, m[0]["type"], m[0]["help"], kind, help_))
    result(not problems, message, problems)


def dashboard(path, pg_path, message):
    try:
        dash = json.load(open(path))
    except ValueError as err:
        return result(False, message, ["not JSON: %s" % err])
    pg = json.load(open(pg_path))
    problems = []

    def grid(d):
        return sorted(json.dumps(p["gridPos"], sort_keys=True) for p in d["panels"])
    if grid(dash) != grid(pg):
        problems.append("its panels are not laid out as those of " + pg_path)
    names = {r[0] for r in sql("SELECT DISTINCT name FROM tide.metrics")}
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    used = set()
    for e in exprs:
        used |= set(re.findall(r"\btide_[a-z0-9_]+", e))
        # Grafana's variables as it fills them for a one-hour range
        e = (e.replace("$__rate_interval", "1m").replace("$__interval", "1m")
             .replace("$__range_s", "3600").replace("$__range", "1h"))
        try:
            api("/api/v1/query", query=e)
        except RuntimeError as err:
            problems.append("%s: %s" % (e, err))
    problems += ["%s is not in tide.metrics" % n for n in sorted(used - names)]
    result(not problems, "%s (%d panels, %d queries, %d names)"
           % (message, len(dash["panels"]), len(exprs), len(used)), problems)


def alerts(expected, message):
    scraped = float(api("/api/v1/query", query='timestamp(up{job="pg_tide"})')["result"][0]["value"][1])
    end = time.time() + 10
    while True:
        # an evaluation that began after the scrape
        rules = [r for g in api("/api/v1/rules")["groups"] for r in g["rules"]]
        evaluated = all(time_of(r["lastEvaluation"]) > scraped for r in rules)
        if evaluated or time.time() > end:
            break
        time.sleep(0.2)
    problems = ["%s: %s %s" % (r["name"], r["health"], r.get("lastError", ""))
                for r in rules if r["health"] != "ok"]
    if not rules or not evaluated:
        problems.append("%d rules, evaluated after the scrape: %s" % (len(rules), evaluated))
    active = " ".join(sorted("%s{%s}" % (a["labels"]["alertname"],
                                         ",".join("%s=%s" % kv for kv in sorted(a["labels"].items())
                                                  if kv[0] != "alertname"))
                             for a in api("/api/v1/alerts")["alerts"]))
    if active != expected:
        problems.append("active alerts: %s; expected %s" % (active or "none", expected))
    result(not problems, "%s (%d rules)" % (message, len(rules)), problems)


def time_of(rfc3339):
    """Unix time of an RFC 3339 time as Prometheus writes it
    (2026-11-27T01:02:03.456789012Z, or with an offset)."""
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$", rfc3339)
    t = datetime.datetime.strptime(m[1] + (m[3] if m[3] != "Z" else "+00:00"), "%Y-%m-%dT%H:%M:%S%z")
    return t.timestamp() + float(m[2] or 0)


def listening(expected, message, *pids):
    listen = {}  # socket inode -> address, from /proc/net/tcp and tcp6
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in open(f).readlines()[1:]:
            f_ = line.split()
            if f_[3] == "0A":  # LISTEN
                h, p = f_[1].split(":")
                if len(h) == 8:
                    h = ".".join(str(int(h[i:i + 2], 16)) for i in (6, 4, 2, 0))
                listen[f_[9]] = "%s:%d" % (h, int(p, 16))
    got = []
    for pid in pids:
        for fd in os.listdir("/proc/%s/fd" % pid):
            try:
                m = re.match(r"socket:\[(\d+)\]", os.readlink("/proc/%s/fd/%s" % (pid, fd)))
            except OSError:
                continue  # closed meanwhile
            if m and m.group(1) in listen:
                got.append(listen[m.group(1)])
    got = " ".join(got)
    result(got == expected, "%s (%s)" % (message, got), [] if got == expected else ["expected " + expected])


CHECKS = {"scrape-after": scrape_after, "series": series, "value": value, "metadata": metadata,
          "dashboard": dashboard, "alerts": alerts, "listening": listening}
argv = sys.argv[3:]
while argv:
    n = argv.index("--") if "--" in argv else len(argv)
    CHECKS[argv[0]](*argv[1:n])
    sys.stdout.flush()
    argv = argv[n + 1:]
