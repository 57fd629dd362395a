#!/usr/bin/python3
"""A steady submitter for the HA test (docs/ha.md).

    submitter.py DSN RATE OUT STOPFILE COMMAND...

Submits a one-GPU (every fourth: two-GPU) job RATE times a second on DSN
(a multi-host DSN with target_session_attrs=read-write) until STOPFILE
exists.  COMMAND is the job's command; {seconds} in it becomes a duration
of 1 to 3 seconds, {n} the submission's number (so that a job row tells
which submission made it).  Every acknowledged id goes to OUT as
"ack ID EPOCH N" as soon as the commit returned; a submit whose outcome is unknown (the
connection broke before the answer) is "unknown EPOCH MESSAGE", a refused
one "error EPOCH MESSAGE".  Reconnects at once, then every 0.1 s.
"""
import os
import random
import sys
import time

import psycopg2

dsn, rate, out, stopfile = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
command = " ".join(sys.argv[5:])
rng = random.Random(22)
log = open(out, "a", buffering=1)
conn = None
period = 1.0 / rate
next_at = time.time()
n = 0
while not os.path.exists(stopfile):
    if conn is None:
        try:
            conn = psycopg2.connect(dsn)
            conn.autocommit = True
            log.write("connected %.3f\n" % time.time())
        except psycopg2.Error as e:
            log.write("connect_failed %.3f %s\n" % (time.time(), str(e).strip().replace("\n", " | ")[:200]))
            time.sleep(0.1)
            continue
    now = time.time()
    if now < next_at:
        time.sleep(next_at - now)
    next_at = max(next_at + period, time.time() - period)
    n += 1
    gpus = 2 if n % 4 == 0 else 1
    cmd = command.replace("{seconds}", "%.1f" % rng.uniform(1.0, 3.0)).replace("{n}", str(n))
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT tide.submit('ha', %s, command => %s)", ("gpu=%d" % gpus, cmd))
            job = cur.fetchone()[0]
        log.write("ack %d %.3f %d\n" % (job, time.time(), n))
    except (psycopg2.OperationalError, psycopg2.InterfaceError) as e:
        log.write("unknown %.3f %s\n" % (time.time(), str(e).strip().replace("\n", " | ")[:200]))
        try:
            conn.close()
        except psycopg2.Error:
            pass
        conn = None
    except psycopg2.Error as e:
        log.write("error %.3f %s\n" % (time.time(), str(e).strip().replace("\n", " | ")[:200]))
