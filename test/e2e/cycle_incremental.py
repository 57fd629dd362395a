"""Driver of test/e2e/cycle_incremental.sh: the rounds, in one backend.

Prints one line per check: "ok<TAB>description" or
"fail<TAB>description<TAB>what differed".  Argument: the database name
(connection settings from PGHOST, PGPORT, PGUSER).
"""
import os
import re
import sys
import time

import psycopg2

db = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 60


def connect():
    # the cycle remakes frag's typical shapes every minute before it loads,
    # tide.dry_run() never does: both use the same ones here.  Before it
    # loads, the cycle also wakes retries whose backoff has passed (R-T5),
    # sends back the jobs of nodes silent past the node timeout (no
    # launcher beats here) and of allocations not started in time (R-C3,
    # R-T4): the dry run just before it saw those jobs waiting or placed,
    # and on a slow machine the clock got there mid-run.  None happens here.
    c = psycopg2.connect(dbname=db, options="-c tide.frag_shapes_refresh=-1 -c tide.retry_backoff=0 "
                         "-c tide.node_timeout=6h -c tide.start_timeout=6h " + os.environ.get("INC_OPTIONS", ""))
    c.autocommit = True
    return c


def one(cur, sql, *args):
    cur.execute(sql, args)
    row = cur.fetchone()
    return row[0] if row else None


def report(good, what, detail=""):
    print("ok\t%s" % what if good else "fail\t%s\t%s" % (what, detail), flush=True)


cycles = connect()              # the one backend every cycle runs in
cur = cycles.cursor()
cur.execute("SET client_min_messages = debug1")    # the cycle's lines: jobs copied
# every job the load copies from the last load's is checked against its rows
cur.execute("SET tide.check_incremental_load = on")
writer = None
copied_rounds = 0
for r in range(1, rounds + 1):
    what = one(cur, "SELECT inc.changes(%s)", r)
    if r in (12, 20):
        # another session's transaction, open across the next cycle
        writer = connect()
        writer.autocommit = False
        w = writer.cursor()
        w.execute("SELECT tide.submit('batch', 'cpu=1, gpu=1')")
        what += ", a writer's transaction open"
    elif r == 13:
        writer.rollback()
        writer.close()
        what += ", that writer rolled back"
    elif r == 22:
        writer.commit()         # after the cycle of round 21 loaded
        writer.close()
        what += ", the open writer committed"
    elif r == 30:
        other = connect()
        one(other.cursor(), "SELECT tide.run_cycle()")
        other.close()
        what += ", a cycle of another backend"
    elif r == 50:
        other = connect()
        one(other.cursor(), "SELECT tide.run_cycle('default')")
        other.close()
        what += ", a resource group's cycle in another backend"
    elif r == 40:
        cur.execute("SET tide.incremental_load = off")
        what += ", incremental loads off"
    elif r == 42:
        cur.execute("RESET tide.incremental_load")
        what += ", incremental loads on"
    del cycles.notices[:]
    diffs = one(cur, "SELECT inc.check(%s, %s)", r, what)
    if any(re.search(r"run_cycle: [1-9][0-9]* of [0-9]+ jobs copied", n) for n in cycles.notices):
        copied_rounds += 1
    load = one(cur, "SELECT load FROM inc.rounds WHERE round = %s", r)
    report(diffs == "", "round %d (%s load; %s): the cycle decides what a full load decides"
           % (r, load, what or "no change"), diffs)

loads = dict((r, l) for r, l in (cur.execute("SELECT round, load FROM inc.rounds") or cur.fetchall()))
report(loads.get(30) == "full",
       "after another backend's cycle pruned the changes, this backend loads in full", loads.get(30))
report(loads.get(50) == "full",
       "a resource group's cycle prunes too, so this backend loads in full after it", loads.get(50))
report(loads.get(41) == "full" and loads.get(42) == "full",
       "with tide.incremental_load off the loads are full", "%s %s" % (loads.get(41), loads.get(42)))
incremental = sum(1 for l in loads.values() if l == "incremental")
report(incremental >= rounds * 2 // 3,
       "most rounds load incrementally, so the comparison covers them", "%d of %d" % (incremental, rounds))
report(copied_rounds >= incremental // 2,
       "most incremental loads copied unchanged jobs from the kept load's, so the comparison covers that too",
       "%d of %d" % (copied_rounds, incremental))
placed = one(cur, "SELECT count(*) FROM tide.cycles WHERE load = 'incremental' AND jobs_placed > 0")
report(placed > 5, "more than five incremental cycles placed jobs", placed)
report(one(cur, "SELECT count(*) FROM tide.evictions") > 0, "the rounds evicted jobs too")
report(one(cur, "SELECT count(*) FROM tide.cycles WHERE load = 'incremental' AND jobs_evicted > 0") > 0,
       "incremental cycles among them")
report(one(cur, "SELECT count(*) FROM tide.job_changes WHERE xid < "
                "(SELECT changes_pruned_below FROM tide.cycle_state WHERE resource_group = '')") == 0,
       "tide.job_changes keeps nothing below the pruned mark")
cycles.close()
