# Shared by the bench/sim_*.sh scripts: their common options and where the
# traces and tide-sim are.  Source it, then call
#   sim_args NAME MARKER_FILE [--quick] [--out DIR] [TRACES_DIR]
# It sets TRACES (a directory with MARKER_FILE: the argument, else
# ../shared/traces beside the checkout), KEEP (--out), QUICK (--quick,
# only where the caller allows it: SIM_QUICK_OK=1) and SIM (TIDE_SIM, else
# ./tide-sim, else the installed one), or exits 2 saying what is missing.
sim_args() {
    local name=$1 marker=$2 d
    shift 2
    TRACES= KEEP= QUICK=
    while [ $# -gt 0 ]; do
        case $1 in
            --quick) [ -n "${SIM_QUICK_OK:-}" ] || { echo "$name: unknown option $1" >&2; exit 2; }; QUICK=1 ;;
            --out) KEEP=$2; shift ;;
            --out=*) KEEP=${1#--out=} ;;
            -*) echo "$name: unknown option $1" >&2; exit 2 ;;
            *) TRACES=$1 ;;
        esac
        shift
    done
    if [ -z "$TRACES" ]; then
        for d in "$SRC/../shared/traces" "$SRC/../../shared/traces"; do
            if [ -f "$d/$marker" ]; then TRACES=$(cd "$d" && pwd); break; fi
        done
    fi
    [ -n "$TRACES" ] && [ -f "$TRACES/$marker" ] ||
        { echo "$name: no traces directory (give it as the argument)" >&2; exit 2; }
    SIM=${TIDE_SIM:-}
    if [ -z "$SIM" ]; then
        if [ -x "$SRC/tide-sim" ]; then SIM=$SRC/tide-sim; else SIM=$(pg_config --bindir)/tide-sim; fi
    fi
    [ -x "$SIM" ] || { echo "$name: no tide-sim (build it: make tide-sim)" >&2; exit 2; }
}
