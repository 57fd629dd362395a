#!/usr/bin/env bash
# Completion notices (R-C5) end to end: the Python and Node.js examples of
# docs/notices.md, exactly as written there, run as real login roles
# against a real tide-launcher and see their job start and end; another
# role hears none of it and cannot learn the channel.
. "$(dirname "$0")/lib.bash"

PY=/usr/bin/python3              # Debian's, with python3-psycopg2
NPM_DIR=${TIDE_NPM_DIR:-/tmp/pg_tide_npm}

fresh_db
ALICE=e2e_alice_$$
BOB=e2e_bob_$$
q "CREATE ROLE $ALICE LOGIN IN ROLE tide_submitter; CREATE ROLE $BOB LOGIN IN ROLE tide_submitter" >/dev/null
at_exit "stop_launchers; psql -qAtX -d postgres -c 'DROP ROLE IF EXISTS $ALICE, $BOB'"
q "INSERT INTO tide.queues (name) VALUES ('training')" >/dev/null
q "SELECT tide.register_node('n1', 'cpu=64, memory=256Gi, gpu=4')" >/dev/null
start_launcher n1

# The examples, from the page itself.
awk '/^```python$/ {on = 1; next} /^```$/ {on = 0} on' "$TIDE_SRC/docs/notices.md" >"$WORK/wait_job.py"
awk '/^```js$/ {on = 1; next} /^```$/ {on = 0} on' "$TIDE_SRC/docs/notices.md" >"$WORK/wait_job.js"
like "$(cat "$WORK/wait_job.py")" "tide.owner_channel" "the Python example is on the page"
like "$(cat "$WORK/wait_job.js")" "tide.owner_channel" "the Node.js example is on the page"

# Run cycles until the background processes in $@ have all exited (at most 60 s).
cycles_while() {
    local end=$(($(date +%s) + 60)) p live
    while [ "$(date +%s)" -lt "$end" ]; do
        live=0
        for p in "$@"; do kill -0 "$p" 2>/dev/null && live=1; done
        [ "$live" = 0 ] && return 0
        q "SELECT tide.run_cycle()" >/dev/null
        sleep 0.3
    done
    return 1
}

# Bob listens on his own channel meanwhile: he must hear nothing of Alice's job.
cat >"$WORK/overhear.py" <<'PY'
import select, sys, time
import psycopg2
conn = psycopg2.connect("")
conn.autocommit = True
cur = conn.cursor()
cur.execute("SELECT tide.owner_channel()")
cur.execute("LISTEN " + cur.fetchone()[0])
print("listening", flush=True)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    if select.select([conn], [], [], 0.2) != ([], [], []):
        conn.poll()
        for n in conn.notifies:
            print(n.channel, n.payload, flush=True)
        conn.notifies.clear()
PY

if ! "$PY" -c 'import psycopg2' 2>/dev/null; then
    for _ in 1 2 3 4 5 6 7; do skip "python3-psycopg2 is not installed (the test command installs it)"; done
else
    PGUSER=$BOB PGDATABASE=$DB "$PY" "$WORK/overhear.py" 25 >"$WORK/bob.out" 2>&1 &
    bob=$!
    wait_for_file() { for _ in $(seq 50); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.2; done; return 1; }
    wait_for_file "$WORK/bob.out" listening
    PGUSER=$ALICE PGDATABASE=$DB timeout 60 "$PY" "$WORK/wait_job.py" 'sleep 1' >"$WORK/py.out" 2>&1 &
    py=$!
    wait_for_file "$WORK/py.out" submitted
    # What Bob can learn while Alice listens: not her channel.
    is "$(psql -qAtX -U "$BOB" -d "$DB" -c "SELECT string_agg(DISTINCT query, ',') FROM pg_stat_activity WHERE usename = '$ALICE'" 2>&1)" \
        "<insufficient privilege>" "Bob cannot read the queries of Alice's listening session in pg_stat_activity"
    like "$(psql -qAtX -U "$BOB" -d "$DB" -c "SELECT tide._channel_for('$ALICE')" 2>&1)" \
        "may not know the notice channel of role \"$ALICE\"" "Bob cannot ask for Alice's channel"
    like "$(psql -qAtX -U "$BOB" -d "$DB" -c "SELECT secret FROM tide._notice_secret" 2>&1)" \
        "permission denied for table _notice_secret" "nor read the secret it is made from"
    cycles_while "$py"
    wait "$py"
    ok $? "the Python example ends when its job ends"
    job=$(sed -n 's/^submitted //p' "$WORK/py.out")
    is "$(cat "$WORK/py.out")" "submitted $job
$job running
$job succeeded" "the Python example saw its job start and end"
    is "$(q "SELECT owner || ' ' || state FROM tide.jobs WHERE id = $job")" "$ALICE succeeded" \
        "(the job is Alice's, and it succeeded)"
    kill "$bob" 2>/dev/null
    wait "$bob" 2>/dev/null
    is "$(grep -v '^listening$' "$WORK/bob.out")" "" "Bob, listening on his own channel, heard nothing of Alice's job"
fi

# Node.js: pg from npm, installed into a cache outside the repository.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    for _ in 1 2 3; do skip "node and npm are not installed"; done
elif [ ! -d "$NPM_DIR/node_modules/pg" ] &&
     ! { mkdir -p "$NPM_DIR" && timeout 120 npm install --no-audit --no-fund --silent --prefix "$NPM_DIR" pg >"$WORK/npm.log" 2>&1; }; then
    for _ in 1 2 3; do skip "npm install pg failed (no registry?): $(tail -1 "$WORK/npm.log")"; done
else
    PGUSER=$BOB PGDATABASE=$DB NODE_PATH=$NPM_DIR/node_modules timeout 60 node "$WORK/wait_job.js" 'exit 3' >"$WORK/js.out" 2>&1 &
    js=$!
    cycles_while "$js"
    wait "$js"
    ok $? "the Node.js example ends when its job ends"
    job=$(sed -n 's/^submitted //p' "$WORK/js.out")
    is "$(cat "$WORK/js.out")" "submitted $job
$job running
$job failed" "the Node.js example saw its job start and fail"
    is "$(q "SELECT owner || ' ' || state FROM tide.jobs WHERE id = $job")" "$BOB failed" \
        "(the job is Bob's, and it failed)"
fi

finish
