#!/usr/bin/env bash
# tools/layers.sh: the C code calls downwards only.
#
# Compiles every C file of the three programs (pg_tide.so, tide-launcher,
# tide-sim) into a temporary directory, reads with nm which file defines
# each global symbol and which file uses it, and checks the file-level call
# graph against the layers drawn in docs/development.md (the fenced block
# marked "layers", top to bottom):
#
#   - every C file is in exactly one layer, and the drawing above the
#     block names every C file and no other;
#   - no file calls a file in a layer above its own;
#   - no two files call each other, and no longer circle exists;
#   - includes match calls: what a file uses of another is declared in a
#     header it includes (directly or through another of our headers;
#     src/engine/engine.h is the engine's face to the others), and a file
#     that includes an X.h
#     of prototypes only calls X.c (a header with types, macros or inline
#     functions may be included for those alone).
#
# Prints TAP.  Usage: bash tools/layers.sh [SOURCE_DIR]   (default: the
# repository this script is in).  bash tools/layers.sh --self-test also
# plants a circle in a copy of the tree and checks that it is caught.
set -uo pipefail

HERE=$(cd "$(dirname "$0")/.." && pwd)

# check_tree SRC WORK [FROM_SRC FROM_WORK]: compile SRC's C files into WORK
# (left there for the caller to remove) and check them.  Files compile two
# at a time (or nproc).  With FROM_SRC and FROM_WORK (a tree checked
# before), an object whose C file and every header are the same in both
# trees is copied from FROM_WORK instead of compiled again: the self-test's
# planted copy differs from the real tree in one file.
check_tree() {
    local src=$1 work=$2 from_src=${3:-} from_work=${4:-} pgserver pginc
    pgserver=$("${PG_CONFIG:-pg_config}" --includedir-server)
    pginc=$("${PG_CONFIG:-pg_config}" --includedir)
    if [ -n "$from_src" ] && ! diff -rq -x '*.c' -x '*.o' -x '*.bc' -x '*.so' \
            "$from_src/src" "$src/src" >/dev/null 2>&1; then
        from_src=""     # a header differs: compile everything
    fi
    compile() {   # compile() PROGRAM FILE CFLAGS...
        local prog=$1 file=$2 out
        shift 2
        out=$work/$prog/${file//\//__}.o
        if [ -n "$from_src" ] && [ -f "$from_work/$prog/${out##*/}" ] &&
            cmp -s "$from_src/$file" "$src/$file"; then
            cp "$from_work/$prog/${out##*/}" "$out"
            return
        fi
        cc -c -O0 -w -std=gnu11 "$@" -o "$out" "$src/$file" ||
            { echo "layers: cannot compile $file" >&2; return 1; }
    }
    (
        cd "$src" || exit 1
        mkdir -p "$work/so" "$work/launcher" "$work/sim"
        max=$(nproc 2>/dev/null || echo 2) pids=() fail=0
        # at most $max at once: before the next, wait for the oldest
        for job in $(printf 'so:%s ' src/*.c src/core/*.c src/engine/*.c) \
                   $(printf 'launcher:%s ' src/launcher/*.c src/core/*.c) \
                   $(printf 'sim:%s ' src/sim/*.c src/engine/*.c src/core/*.c); do
            if [ ${#pids[@]} -ge "$max" ]; then
                wait "${pids[0]}" || fail=1
                pids=("${pids[@]:1}")
            fi
            f=${job#*:}
            case ${job%%:*} in
                so) compile so "$f" -fPIC -I"$pgserver" -Isrc -Isrc/core -Isrc/engine & ;;
                launcher) compile launcher "$f" -I"$pginc" -Isrc/launcher -Isrc/core -Isrc/engine & ;;
                sim) compile sim "$f" -Isrc/sim -Isrc/core -Isrc/engine & ;;
            esac
            pids+=($!)
        done
        for p in "${pids[@]}"; do wait "$p" || fail=1; done
        exit $fail
    ) || { echo "not ok 1 - the sources compile for the layer check"; return 1; }
    python3 - "$src" "$work" <<'PY'
import glob, os, re, subprocess, sys

src, work = sys.argv[1], sys.argv[2]
tests = []          # (ok, description, details)

def tap(ok, desc, details=()):
    tests.append((ok, desc, list(details)))

# --- the layers, from docs/development.md's ```layers block
doc = open(os.path.join(src, 'docs/development.md')).read()
m = re.search(r'^```layers\n(.*?)^```', doc, re.S | re.M)
layer_of = {}
layers = []
apart = set()
problems = []
if not m:
    problems.append('docs/development.md has no ```layers block')
else:
    for line in m.group(1).splitlines():
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        name, _, files = line.partition(':')
        idx = len(layers)
        name = name.strip()
        if name.endswith('!'):      # its files never call each other
            name = name[:-1]
            apart.add(idx)
        layers.append(name)
        for pat in files.split():
            hits = sorted(glob.glob(os.path.join(src, pat)))
            if not hits:
                problems.append('layer %s names %s, which matches no file' % (name.strip(), pat))
            for h in hits:
                rel = os.path.relpath(h, src)
                if rel in layer_of:
                    problems.append('%s is in two layers (%s and %s)' % (rel, layers[layer_of[rel]], name.strip()))
                layer_of[rel] = idx
cfiles = sorted(os.path.relpath(p, src) for d in ('src', 'src/core', 'src/engine', 'src/launcher', 'src/sim')
                for p in glob.glob(os.path.join(src, d, '*.c')))
for c in cfiles:
    if c not in layer_of:
        problems.append('%s is in no layer' % c)
tap(not problems, 'every C file is in exactly one layer of docs/development.md', problems)

# The drawing above the block explains each file: it must name each one
# (by its base name, as the drawing does) and no file that is gone.
drawing = doc[doc.index('### How the C code is layered'):m.start()] if m and '### How the C code is layered' in doc else ''
named = set(re.findall(r'\b([a-z_]+\.c)\b', drawing))
bases = {os.path.basename(c) for c in cfiles}
stale = ['the drawing names %s, which no C file is' % n for n in sorted(named - bases)]
undrawn = ['the drawing does not name %s' % c for c in cfiles if os.path.basename(c) not in named]
tap(not stale and not undrawn, 'the drawing in docs/development.md names every C file and no other', stale + undrawn)

# --- who defines and who uses each global symbol, per program
def nm(objs, flags):
    # one nm for all the objects (-A: each line starts "OBJECT: SYMBOL")
    syms = {o: [] for o in objs}
    out = subprocess.run(['nm', '-P', '-A'] + flags + sorted(objs), capture_output=True, text=True,
                         check=True).stdout
    for l in out.splitlines():
        o, _, rest = l.partition(': ')
        if rest.strip():
            syms[o].append(rest.split()[0])
    return syms

calls = {}          # file -> set(file)
uses = {}           # (file, file) -> symbols
for prog in ('so', 'launcher', 'sim'):
    objs = glob.glob(os.path.join(work, prog, '*.o'))
    owner = {}
    defined, undefined = nm(objs, ['-g', '--defined-only']), nm(objs, ['-u'])
    for o in objs:
        f = os.path.basename(o)[:-2].replace('__', '/')
        for s in defined[o]:
            owner[s] = f
    for o in objs:
        f = os.path.basename(o)[:-2].replace('__', '/')
        for s in undefined[o]:
            g = owner.get(s)
            if g and g != f:
                calls.setdefault(f, set()).add(g)
                uses.setdefault((f, g), set()).add(s)

# --- upward calls
up = []
for a in sorted(calls):
    for b in sorted(calls[a]):
        if a in layer_of and b in layer_of and layer_of[b] < layer_of[a]:
            up.append('%s (layer %s) calls %s (layer %s, above it)'
                      % (a, layers[layer_of[a]], b, layers[layer_of[b]]))
for a in sorted(calls):
    for b in sorted(calls[a]):
        if a in layer_of and layer_of.get(b) == layer_of[a] and layer_of[a] in apart:
            up.append('%s calls %s: the files of layer %s never call each other'
                      % (a, b, layers[layer_of[a]]))
tap(not up, 'no file calls a file in a layer above its own, nor beside it in a layer marked !', up)

# --- circles
pairs = sorted('%s <-> %s' % (a, b) for a in calls for b in calls[a]
               if a < b and a in calls.get(b, ()))
tap(not pairs, 'no two files call each other', pairs)

circles = []
state = {}
def visit(f, path):
    state[f] = 1
    path.append(f)
    for g in sorted(calls.get(f, ())):
        if state.get(g) == 1:
            circles.append(' -> '.join(path[path.index(g):] + [g]))
        elif g not in state:
            visit(g, path)
    path.pop()
    state[f] = 2
for f in sorted(calls):
    if f not in state:
        visit(f, [])
tap(not circles, 'the file-level call graph has no circle', circles)

# --- includes match calls
inc_re = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
def includes(path):
    try:
        return inc_re.findall(open(os.path.join(src, path)).read())
    except OSError:
        return []
def header_path(frm, h):
    for d in (os.path.dirname(frm), 'src', 'src/core', 'src/engine', 'src/launcher', 'src/sim'):
        p = os.path.normpath(os.path.join(d, h))
        if os.path.exists(os.path.join(src, p)):
            return p
    return None
def closure(path, seen):
    for h in includes(path):
        p = header_path(path, h)
        if p and p not in seen:
            seen.add(p)
            closure(p, seen)
    return seen
def declarations_only(h):
    # A header that gives only prototypes is included for its calls; one
    # with types, macros or inline functions may be included for those.
    text = re.sub(r'/\*.*?\*/', '', open(os.path.join(src, h)).read(), flags=re.S)
    defines = [l for l in re.findall(r'^\s*#\s*define\s+(\w+)', text, re.M) if not l.endswith('_H')]
    return not defines and not re.search(r'\b(typedef|struct\s+\w*\s*\{|enum\b|static\s+inline)', text)

mismatch = []
for c in cfiles:
    direct = [header_path(c, h) for h in includes(c)]
    for h in direct:
        if not h or h == c[:-2] + '.h':
            continue
        owner_c = h[:-2] + '.c'
        if (os.path.exists(os.path.join(src, owner_c)) and owner_c not in calls.get(c, ())
                and declarations_only(h)):
            mismatch.append('%s includes %s but calls nothing of %s' % (c, h, owner_c))
    reach = closure(c, set())
    declared = ''.join(open(os.path.join(src, h)).read() for h in sorted(reach))
    for g in sorted(calls.get(c, ())):
        for sym in sorted(uses[(c, g)]):
            if not re.search(r'\b%s\b' % re.escape(sym), declared):
                mismatch.append('%s uses %s of %s, which none of the headers it includes declares'
                                % (c, sym, g))
tap(not mismatch, 'includes match calls: what a file uses is declared in what it includes, and it uses what it includes', mismatch)

for i, (ok, desc, details) in enumerate(tests, 1):
    print('%sok %d - %s' % ('' if ok else 'not ', i, desc))
    for d in details[:40]:
        print('#   ' + d)
    if len(details) > 40:
        print('#   ... and %d more' % (len(details) - 40))
sys.exit(0 if all(t[0] for t in tests) else 1)
PY
}

if [ "${1:-}" = "--self-test" ]; then
    # The real tree passes; a copy with a planted circle (core calls up into
    # the SQL glue, and two engine files call each other) must fail.
    real_work=$(mktemp -d /tmp/pg_tide_layers.XXXXXX)
    plant_work=$(mktemp -d /tmp/pg_tide_layers.XXXXXX)
    out=$(check_tree "$HERE" "$real_work")
    real=$?
    echo "$out" | sed 's/^/# real tree: /'
    [ $real -eq 0 ] && echo "ok 1 - the layer check passes on this tree" \
        || echo "not ok 1 - the layer check passes on this tree"
    copy=$(mktemp -d /tmp/pg_tide_layers_plant.XXXXXX)
    tar -C "$HERE" -cf - src docs/development.md | tar -C "$copy" -xf -
    # a planted upward call and a circle: the resvec core calls the SQL type's
    # file, which calls the core already
    fn=$(sed -n 's/^PG_FUNCTION_INFO_V1(\([a-z_]*\));/\1/p' "$HERE/src/resvec.c" | head -1)
    printf '\nextern void %s(void);\nvoid layers_planted_circle(void) { %s(); }\n' "$fn" "$fn" \
        >> "$copy/src/core/resvec_core.c"
    out=$(check_tree "$copy" "$plant_work" "$HERE" "$real_work")
    planted=$?
    echo "$out" | sed 's/^/# planted: /'
    if [ $planted -ne 0 ] && echo "$out" | grep -q '^#   src/core/resvec_core.c <-> src/resvec.c$' \
        && echo "$out" | grep -q '^#   src/core/resvec_core.c (layer [a-z-]*) calls src/resvec.c'; then
        echo "ok 2 - a planted circle (src/core/resvec_core.c calling $fn of src/resvec.c) fails the check"
    else
        echo "not ok 2 - a planted circle (src/core/resvec_core.c calling $fn of src/resvec.c) fails the check"
    fi
    rm -rf "$copy" "$real_work" "$plant_work"
    [ $real -eq 0 ] && [ $planted -ne 0 ]
    exit $?
fi

work=$(mktemp -d /tmp/pg_tide_layers.XXXXXX)
check_tree "${1:-$HERE}" "$work"
status=$?
rm -rf "$work"
exit $status
