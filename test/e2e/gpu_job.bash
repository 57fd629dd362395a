#!/bin/bash
# The command of the e2e tests that watch GPUs (launcher_reconcile.sh,
# failover_async.sh).  While it runs it holds a lock on each GPU of
# CUDA_VISIBLE_DEVICES (flock): one it cannot take means two commands on
# one GPU, written to $DIR/overlaps.  It writes "TIME start JOB ALLOC PID
# NODE" and "TIME end JOB ALLOC PID NODE" to $DIR/events, and runs until
# $DIR/stop.JOB exists, RUN_FOR seconds (default 600) pass, or SIGTERM
# comes (then TERM_DELAY seconds more, as a program saving a checkpoint).
for g in ${CUDA_VISIBLE_DEVICES//,/ }; do
    exec {fd}>>"$DIR/gpu-$TIDE_NODE-$g.lock"
    flock -n "$fd" || echo "$TIDE_NODE $g $TIDE_JOB_ID $TIDE_ALLOCATION_ID" >>"$DIR/overlaps"
done
say() { echo "$(date +%s.%N) $1 $TIDE_JOB_ID $TIDE_ALLOCATION_ID $$ $TIDE_NODE" >>"$DIR/events"; }
say start
trap 'sleep "${TERM_DELAY:-0}"; say end; exit 0' TERM
end=$((SECONDS + ${RUN_FOR:-600}))
while [ ! -e "$DIR/stop.$TIDE_JOB_ID" ] && [ "$SECONDS" -lt "$end" ]; do sleep 0.1; done
say end
