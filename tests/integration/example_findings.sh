#!/usr/bin/env bash
# The bundled PyTorch example (examples/train.py, CPU, Debian's python3-torch)
# under gcspy, with each planted problem, and what the report must say:
#
#  1. --leak-native --leak-growth:
#     - the ctypes malloc() buffers dropped every step are lost, attributed to
#       leak_native at train.py (the malloc line) called from main: at least
#       one definite group there, and the site's lost bytes (definite +
#       indirect + possible) equal steps x --leak-bytes. Numbers that look
#       like interior pointers make some buffers "possible" (or "indirect",
#       from another lost block), exactly as memcheck would: the tail of an
#       ASCII string ("00.0" is 0x302e3030) is an address in the brk heap
#       of Debian's non-PIE python3.11, which lies between 10 MiB and 1 GiB;
#     - the findings (issue 17): one leak finding at that line with all
#       steps x --leak-bytes in steps blocks, class definite, one site, and
#       one growth finding from SmallCNN.forward "retained per step while
#       the job ran, freed at exit" (on sid's 3.14, which leaves them
#       allocated at exit: "still live at the end"), both ranked before any
#       finding outside
#       train.py, the leak on the text report's first screen;
#     - the growth view (x axis: optimizer steps, detected without code
#       changes) flags sites whose stacks go through train.py, and their rates
#       add up to the live host heap's own growth per step (the independent
#       measure: the slope of a least-squares line through the live heap at
#       the step markers of the last two thirds), within 25%.
#  2. --cycle: every explicit gc.collect() is a python-gc PAUSE of
#     generation 2 that collected objects, and live host memory falls by at
#     least the cycles' tensors at each one.
#  3. no flag: no definite or indirect leak (PyTorch's DataLoader cache is a
#     built-in suppression), no growth suspect, in the training process and
#     in each of its two DataLoader worker processes (and in the helpers of
#     Python 3.14, whose default start method forks workers from a
#     forkserver process: they are neither the main process nor forked).
# GS_SUITE=trixie (tests/integration/py_roots.sh) runs train.py with the
# python3 of that Debian root (tests/lib.sh's in_root) under the host's
# libgcspy.so; the reports are made and read on the host.
set -eu
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3       # reads the reports
TRAIN_PY=${GS_EXAMPLE_PY:-/usr/bin/python3}
wrap=()
if [ -n "${GS_SUITE:-}" ]; then
  . tests/lib.sh
  wrap=(in_root "$GS_SUITE")
fi
[ -x build/libgcspy.so ] || [ -f build/libgcspy.so ] || { echo "build/libgcspy.so missing"; exit 1; }
rc=0
# GS_TORCH_OK=1: the caller (py_roots.sh) has just seen torch import there
[ -n "${GS_TORCH_OK:-}" ] || "${wrap[@]}" "$TRAIN_PY" -c 'import torch' >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 0 ] || { echo "torch cannot be imported by $TRAIN_PY ${GS_SUITE:+in $GS_SUITE} (status $rc)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export IN_ROOT_BIND=$tmp

run() { # name, args...
  local name=$1; shift
  mkdir -p "$tmp/$name"
  "${wrap[@]}" env LD_PRELOAD="$PWD/build/libgcspy.so" GCSPY_OUTPUT="$tmp/$name/t-%p.trace" GCSPY_QUIET=1 \
    "$TRAIN_PY" "$PWD/examples/train.py" "$@" > "$tmp/$name/out" 2> "$tmp/$name/err" || {
    echo "train.py $* failed:"; tail -5 "$tmp/$name/err"; exit 1; }
  # One report of the main process and its DataLoader workers.
  build/gcspy report "$tmp/$name"/t-*.trace* --format json -o "$tmp/$name/r.json"
  build/gcspy report "$tmp/$name"/t-*.trace* -o "$tmp/$name/r.txt"
}

STEPS=24
LEAK=65536
run leaks --steps $STEPS --leak-native step --leak-bytes $LEAK --leak-growth
run cycle --steps 30 --workers 0 --cycle --gc-every 10 --cycle-bytes 8388608
run clean --steps $STEPS

$PY - "$tmp" "$STEPS" "$LEAK" <<'EOF'
import json, os, sys
tmp, steps, leak = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fails = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        fails.append(what)
def procs(name):
    return json.load(open(f"{tmp}/{name}/r.json"))["processes"]
def is_main(p):
    # 3.14's forkserver names train.py in its -c code's arguments too
    return not p["forked"] and len(p["argv"]) > 1 and p["argv"][1].endswith("examples/train.py")
def proc(name):
    """the training process itself (DataLoader workers are forked from it,
    or from Python 3.14's default forkserver, a process of its own)"""
    main = [p for p in procs(name) if is_main(p)]
    if len(main) != 1:
        sys.exit(f"FAIL {name}: {len(main)} processes that are not forked, expected 1")
    return main[0]
def train_frames(stack):
    return [(f["function"], f["line"]) for f in stack if (f.get("file") or "").endswith("examples/train.py")]
malloc_line = next(i for i, l in enumerate(open("examples/train.py"), 1) if "p = libc.malloc(nbytes)" in l)

# 1. native leak and growth
p = proc("leaks")
site = [l for l in p["leaks"] if l["memory"] == "host" and l["class"] in ("definite", "indirect", "possible")
        and train_frames(l["stack"])[:1] == [("leak_native", malloc_line)]]
check(any(l["class"] == "definite" for l in site),
      f"native leak: a definite group at leak_native, train.py:{malloc_line}")
check(all(("main" in [f for f, _ in train_frames(l["stack"])]) for l in site),
      "native leak: the stack goes on to main in train.py")
lost = sum(l["bytes"] for l in site)
by = {c: sum(l["bytes"] for l in site if l["class"] == c) for c in ("definite", "indirect", "possible")}
check(lost == steps * leak, f"native leak: {lost} bytes lost at that site, expected {steps} x {leak} "
      f"({by['definite']} definite, {by['indirect']} indirect, {by['possible']} possible)")
g = p["growth"]
check(g["axis"] == "step" and g["steps"] >= steps, f"growth axis: optimizer steps ({g['axis']}, {g['steps']} steps)")
sus = [s for s in g["suspects"] if train_frames(s["stack"])]
check(len(sus) >= 1, f"growth: {len(sus)} suspect sites with train.py frames")
check(any(f == "SmallCNN.forward" for s in sus for f, _ in train_frames(s["stack"])),
      "growth: the retained activations are attributed to SmallCNN.forward in train.py")
# Independent measure: the live host heap at the step markers.
t = p["timeline"]
host, bns = t["live_bytes"]["host"], t["bucket_ns"]
marks = [m for m in t["markers"] if m["kind"] == "step"]
def live_at(ns):
    i = min(int(ns // bns), len(host) - 1)
    while i > 0 and host[i] is None:
        i -= 1
    return host[i] or 0
# A least-squares line through the live heap at every step marker from the
# first third on: the heap at one marker is off by whatever transient the
# step holds at that instant (activations, gradients: megabytes), so a
# difference of two markers strayed by up to a quarter over 16 steps.
pts = [(m["ordinal"], live_at(m["t_ns"])) for m in marks[len(marks) // 3:]]
mx = sum(x for x, _ in pts) / len(pts)
my = sum(y for _, y in pts) / len(pts)
heap_rate = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
rate = sum(s["rate"] for s in g["suspects"] if s["unit"] == "bytes/step")
check(heap_rate > 0 and abs(rate - heap_rate) <= 0.25 * heap_rate,
      f"growth: suspects add up to {rate:.0f} B/step, the live heap grows {heap_rate:.0f} B/step")

# Findings first (issue 17): the report starts with the planted problems at
# the user's own train.py lines, ranked before anything else.
def in_train(f):
    u = f["user_frame"]
    return u is not None and (u.get("file") or "").endswith("examples/train.py")
real = [f for f in p["findings"] if f["kind"] != "noise"]
other = [i for i, f in enumerate(real) if not in_train(f)]
first_other = other[0] if other else len(real)
leak_f = [i for i, f in enumerate(real) if f["kind"] == "leak" and in_train(f)
          and (f["user_frame"]["function"], f["user_frame"]["line"]) == ("leak_native", malloc_line)]
grow_f = [i for i, f in enumerate(real) if f["kind"] == "growth" and in_train(f)
          and f["user_frame"]["function"] == "SmallCNN.forward"]
check(len(leak_f) == 1 and leak_f[0] < first_other and real[leak_f[0]]["bytes"] == steps * leak
      and real[leak_f[0]]["blocks"] == steps and real[leak_f[0]]["class"] == "definite"
      and real[leak_f[0]]["sites"] == 1,
      f"findings: one leak finding at leak_native, train.py:{malloc_line}, {steps} x {leak} bytes in "
      f"{steps} blocks, ranked before any finding outside train.py: {[real[i]['line'] for i in leak_f]}")
# Python 3.14 (sid) leaves LEAKED_LOSSES' tensors allocated at exit (the
# trace holds no free of them before its end): there the finding must say
# so, with the bytes still live; elsewhere they are freed at exit.
def growth_end_ok(f):
    if f["freed_at_exit"]:
        return f["line"].endswith("retained per step while the job ran, freed at exit")
    return (os.environ.get("GS_SUITE") == "sid" and " still live at the end" in f["line"]
            and f["blocks"] > 0)
check(len(grow_f) == 1 and grow_f[0] < first_other and growth_end_ok(real[grow_f[0]]),
      f"findings: one growth finding from SmallCNN.forward in train.py, freed at exit (sid: "
      f"freed at exit or still live at the end), ranked before any finding outside train.py: "
      f"{[real[i]['line'] for i in grow_f]}")
screen = open(f"{tmp}/leaks/r.txt").read().split("\n")[:24]
check(any(f"examples/train.py:{malloc_line})" in l and ". leak " in l for l in screen),
      "text report: the leak finding on the first screen")

# 2. reference cycles freed by the collector
p = proc("cycle")
longest = p["pauses"]["longest"]
gcs = [x for x in p["pauses"].get("all", longest) if x["kind"] == "python-gc" and x["a"] == 2 and x["b"] > 0]
check(p["pauses"]["by_kind"]["python-gc"]["count"] >= 3 and len(gcs) >= 1,
      f"cycle: python-gc pauses recorded ({p['pauses']['by_kind']['python-gc']['count']}, "
      f"{len(gcs)} of generation 2 that collected objects among those listed)")
t = p["timeline"]
host, bns = t["live_bytes"]["host"], t["bucket_ns"]
def window(t0, t1):
    i0 = max(0, int(t0 // bns)); i1 = min(len(host) - 1, int(t1 // bns))
    return [v for v in host[i0:i1 + 1] if v is not None]
drops = 0
for x in gcs:
    # The timeline is bucketed (bucket_ns) and events of different addresses
    # may be up to one flush interval apart: compare the highest live bytes
    # in the 100 ms before the collection with the lowest in the 100 ms after.
    before = window(x["t_ns"] - 100e6, x["t_ns"])
    after = window(x["t_ns"] + x["duration_ns"], x["t_ns"] + x["duration_ns"] + 100e6)
    if before and after and max(before) - min(after) >= 8 * 8388608:
        drops += 1
check(drops >= 1, f"cycle: live host memory falls by >= 8 cycles' tensors at {drops} collection(s)")

# 3. no planted problem, no finding
ps = procs("clean")
# 3.14's forkserver (and its resource tracker) are processes of their own
check(sum(is_main(p) for p in ps) == 1 and sum(p["forked"] for p in ps) == 2,
      f"clean run: {len(ps)} processes, the training process and its 2 DataLoader workers "
      f"(+ {len(ps) - 3} helpers: {[p['command'][:60] for p in ps if not p['forked'] and not is_main(p)]})")
for p in ps:
    who = "worker" if p["forked"] else "main" if is_main(p) else "helper"
    bad = [l for l in p["leaks"] if l["class"] in ("definite", "indirect") and not l.get("suppressed")]
    check(not bad, f"clean run, {who} {p['pid']}: {len(bad)} unsuppressed definite/indirect groups")
    check(not p["growth"]["suspects"], f"clean run, {who} {p['pid']}: {len(p['growth']['suspects'])} growth suspects")
    lg = [f["line"] for f in p["findings"] if f["kind"] in ("leak", "growth")]
    check(not lg, f"clean run, {who} {p['pid']}: no leak or growth finding: {lg}")
    for s in p["growth"]["suspects"]:
        frames = [f"{f.get('function')} {(f.get('file') or '').split('/')[-1]}:{f.get('line')}" for f in s["stack"][:8]]
        print(f"     suspect: {s['rate']:.0f} {s['unit']} at " + " <- ".join(frames))
sys.exit(1 if fails else 0)
EOF
