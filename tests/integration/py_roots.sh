#!/usr/bin/env bash
# The Python and PyTorch cases on every stack gcspy supports, with the host's
# one build of libgcspy.so (docs/design.md, "Python"):
#   bookworm   the host's /usr/bin/python3 (3.11, python3-torch 1.13)
#   pyenv-3.X  pyenv's 3.10 to 3.14 on PATH, where installed (without torch
#              here: the Python cases only)
#   trixie     /usr/bin/python3 in the Debian root (3.13, torch 2.6)
#   sid        /usr/bin/python3 in the Debian root (3.14, torch 2.14)
# (tests/lib.sh's in_root; a missing root is skipped with its reason, and so
# is a missing pyenv 3.11). In each, tests/support/py_roots/cases.py runs
# under the shim and the report (JSON, read here) must show:
#   - the ctypes buffer dropped in drop_native: one lost group of 40013
#     bytes whose innermost script frame is drop_native at its line, called
#     from <module> (Python frames at the script's own lines); definite, or
#     possible where a stale interior copy of its address survives (3.13's
#     ctypes leaves one), never reachable; no frame of its stack is glibc's
#     start code (the native walk ends at the interpreter: sid's
#     tail-calling 3.14 went on to _start before);
#   - the bytearrays made by keep_buffers: in the dump, exactly 3
#     allocations of 77778 bytes, each with keep_buffers at its line as the
#     innermost Python frame, then <module> at the line that calls it;
#   - 3 explicit gc.collect() of 100 cycles each: at least 3 PAUSE records
#     of kind python_gc, generation 2, at least 100 objects collected;
#   - with torch: 30 step markers (the optimizer's step wrapper found), the
#     growth axis in steps, and a growth suspect at the line that keeps one
#     tensor per step; none at the line whose blocks, growing by 64 KiB a
#     step, are each allocated right after a step's marker and freed before
#     the next (the events' coarse clock raised to the marker's, shim.h);
#   - a 30011-byte buffer dropped the same way on a thread that then ended:
#     lost at its line (the dead thread's cached stack is no root; sid's
#     glibc guards it with a guard region, roots.c);
#   - with torch: CPU tensor storage never scanned (GCSPY_TORCH_DATA's
#     c10::alloc_cpu): torch_data.sh's case in the same process, the block
#     only a 64 MiB tensor holds lost at the first gcspy_scan(), reachable
#     at the second once 64 of its words are copied into a bytes object;
#   - with torch: `python3 -c "import torch"` has no definite and no
#     indirect group;
#   - with torch, in a root: examples/train.py's findings, through
#     example_findings.sh run in the same root (GS_SUITE; on the host it and
#     torch_data.sh are tests of their own, so bookworm does not repeat them).
# Per stack: one short probe (torch found, not imported), cases.py, import
# torch, and in a root train.py three times: the torch starts went from 11
# to 5 per root (torch_data.sh's four and the other two probes' imports gone).
# And outside the range: pyenv's 3.9 (where installed) runs cases.py under
# the shim with one line on stderr naming the version and "native stacks
# only", its output unchanged, and no Python frame in its trace.
# Fails on any stack that ran and missed one; skips (77) when none ran.
# test-timeout: 1500
# test-roots: trixie sid
# PY_ROOTS_STACKS="bookworm trixie" runs only those; PY_ROOTS_NO_EXAMPLE=1
# leaves out train.py (minutes per stack).
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init py_roots
CASES=$GS_ROOT/tests/support/py_roots/cases.py
ran=0

# in_stack SUITE CMD...: CMD on the host (SUITE "host") or in the root
in_stack() {
  local s=$1; shift
  if [ "$s" = host ]; then "$@"; else in_root "$s" "$@"; fi
}

# traced NAME SUITE CMD...: CMD under the shim, traces in $GS_T/NAME
traced() {
  local name=$1 s=$2; shift 2
  rm -rf "$GS_T/$name"; mkdir -p "$GS_T/$name"
  in_stack "$s" timeout 600 env LD_PRELOAD="$GS_LIB" GCSPY_QUIET="${GCSPY_QUIET:-1}" \
    GCSPY_OUTPUT="$GS_T/$name/t-%p.trace" "$@" >"$GS_T/$name/out" 2>"$GS_T/$name/err"
}

# one STACK SUITE PYTHON
one() {
  local st=$1 s=$2 py=$3 torch=0 rc
  local t0=$SECONDS
  # one short start: the version, and whether torch is installed (found,
  # not imported: an import costs seconds, and cases.py imports it anyway)
  in_stack "$s" "$py" -c 'import importlib.util, sys; assert sys.version_info >= (3, 10)
if importlib.util.find_spec("torch"):
    print("with torch")' >"$GS_T/probe" 2>&1
  rc=$?
  if [ "$rc" -eq 77 ]; then echo "skip $st: $(tail -1 "$GS_T/probe")"; return; fi
  [ "$rc" -eq 0 ] || { echo "skip $st: $py does not run: $(tail -1 "$GS_T/probe")"; return; }
  [ "$(tail -1 "$GS_T/probe")" = "with torch" ] && torch=1
  ran=$((ran + 1))
  local args=() ver
  [ "$torch" = 1 ] && args=(torch)
  traced "$st-cases" "$s" "$py" "$CASES" "${args[@]}" ||
    { fail "$st: cases.py failed: $(tail -3 "$GS_T/$st-cases/err")"; return; }
  ver=$(cat "$GS_T/$st-cases/out")
  [ -s "$GS_T/$st-cases/err" ] && fail "$st: stderr under the shim: $(head -3 "$GS_T/$st-cases/err")"
  "$GS_CLI" dump "$GS_T/$st-cases"/t-*.trace* >"$GS_T/$st-cases.txt" ||
    { fail "$st: gcspy dump failed"; return; }
  # Every possible group (145 to 177 on these stacks) and definite one is
  # listed; the checks never read the reachable ones, of which the exit
  # scan has 25,000 to 60,000 (import torch): listing and symbolizing them
  # all (--max-groups 100000) took 115 s of bookworm's 170 and wrote 2 GB
  "$GS_CLI" report "$GS_T/$st-cases"/t-*.trace* --max-groups 1000 --format json -o "$GS_T/$st-cases.json" ||
    { fail "$st: gcspy report failed"; return; }
  if [ "$torch" = 1 ]; then
    traced "$st-import" "$s" "$py" -c 'import torch' || fail "$st: import torch failed"
    "$GS_CLI" report "$GS_T/$st-import"/t-*.trace* --format json -o "$GS_T/$st-import.json" ||
      fail "$st: gcspy report (import torch) failed"
  fi
  gs_py - "$st ($ver)" "$CASES" "$GS_T/$st-cases.json" "$torch" "$GS_T/$st-import.json" "$GS_T/$st-cases.txt" <<'PY' ||
import json, re, sys
st, cases, rj, torch, ij, dump = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1", sys.argv[5], sys.argv[6]
line = {l.split("# CASE ")[1].strip(): i for i, l in enumerate(open(cases), 1) if "# CASE " in l}
p = json.load(open(rj))["processes"]
assert len(p) == 1, f"{len(p)} processes"
p = p[0]
bad = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + st + ": " + what)
    if not ok:
        bad.append(what)
def script(stack):
    return [(f.get("function"), f.get("line")) for f in stack if (f.get("file") or "").endswith("cases.py")]
drop = [l for l in p["leaks"] if script(l["stack"])[:1] == [("drop_native", line["drop"])]]
check(len(drop) == 1 and drop[0]["class"] in ("definite", "possible") and drop[0]["bytes"] == 40013,
      f"the dropped ctypes buffer: one lost 40013-byte group at drop_native, cases.py:{line['drop']} "
      f"({[(l['class'], l['bytes']) for l in drop]})")
check(all(script(l["stack"])[1:2] and script(l["stack"])[1][0] == "<module>" for l in drop),
      "the dropped buffer's stack goes on to <module>")
# the native walk ends at the interpreter (sid's tail-calling 3.14 walked
# on through every interpreter frame to _start, and glibc's start code,
# libc.so.6+0x29fba and +0x2a0d7 where its symbols are not read, stood
# between ctypes' frames and the Python ones: pyframes.c). libffi calls
# malloc itself, so no other libc frame belongs in this stack.
start = [f["function"] or f["module"] + "+" + f["offset"] for l in drop for f in l["stack"]
         if (f["function"] or "").split("+")[0] in ("_start", "__libc_start_main", "__libc_start_call_main")
         or (f["module"] or "").endswith("/libc.so.6")]
check(not start, f"the dropped buffer's stack has no frame of glibc's start code ({start})")
thr = [l for l in p["leaks"] if script(l["stack"])[:1] and script(l["stack"])[0][1] == line["thread"]
       and l["class"] != "reachable"]
check(len(thr) == 1 and thr[0]["class"] in ("definite", "possible") and thr[0]["bytes"] == 30011,
      f"the buffer dropped on a thread that ended: one lost 30011-byte group at cases.py:{line['thread']} "
      f"({[(l['class'], l['bytes']) for l in thr]})")
# the dump's stacks: node -> (parent, (file, function, line) or None)
code, node, sizes = {}, {}, []
for l in open(dump, encoding="latin-1"):
    if l.startswith("pycode "):
        m = re.match(r'pycode id=(\d+) file="(.*)" function="(.*)" firstline=', l)
        code[int(m.group(1))] = (m.group(2), m.group(3))
    elif l.startswith("stack "):
        d = dict(re.findall(r"(\w+)=(\S+)", l))
        node[int(d["id"])] = (int(d["parent"]), (int(d["pycode"]), int(d["line"])) if "pycode" in d else None)
    elif l.startswith(("alloc ", "alloc_ex ")) and " size=77778 " in l:
        sizes.append(int(re.search(r" stack=(\d+)", l).group(1)))
def pyframes(i):
    out = []
    while i:
        i, f = node[i]
        if f:
            out.append((code.get(f[0], ("?", "?"))[1], f[1]))
    return out
keep = [pyframes(i)[:2] for i in sizes]
want = [("keep_buffers", line["keep"]), ("<module>", line["call_keep"])]
check(keep == [want] * 3, f"the bytearrays: 3 allocations of 77778 bytes at {want} ({keep[:4]})")
gcs = [l for l in open(dump, encoding="latin-1") if l.startswith("pause ") and " kind=python_gc " in l
       and re.search(r" a=2 b=(\d+)", l) and int(re.search(r" a=2 b=(\d+)", l).group(1)) >= 100]
check(len(gcs) >= 3, f"python-gc pauses of generation 2 that collected >= 100 objects: {len(gcs)}, expected >= 3")
if torch:
    steps = [m for m in p["timeline"]["markers"] if m["kind"] == "step"]
    check(len(steps) == 30, f"step markers: {len(steps)}, expected 30")
    g = p["growth"]
    check(g["axis"] == "step", f"growth axis: {g['axis']}")
    sus = [s for s in g["suspects"] if ("train", line["grow"]) in script(s["stack"])[:1]]
    check(len(sus) == 1 and 0.9 * 65536 <= sus[0]["rate"] <= 1.5 * 65536,
          f"a growth suspect at train, cases.py:{line['grow']} of 64 KiB/step (+-10%, +50%) "
          f"({[(s['rate'], script(s['stack'])[:1]) for s in g['suspects']]})")
    scr = [s for s in g["suspects"] if ("train", line["scratch"]) in script(s["stack"])[:1]]
    check(not scr, f"no growth suspect at train, cases.py:{line['scratch']} (blocks freed within "
          f"their step) ({[(s['rate'], s['x_from'], s['x_to']) for s in scr]})")
    # the tensor-data case: the api scans in order, the 3003-byte block's
    # class in each (absent: reachable)
    api, cls = [], {}
    for l in open(dump, encoding="latin-1"):
        if l.startswith("scan_begin ") and " trigger=api " in l:
            api.append(re.search(r" id=(\d+)", l).group(1))
        elif l.startswith("scan_block ") and " size=3003 " in l:
            cls[re.search(r" id=(\d+)", l).group(1)] = re.search(r" class=(\w+)", l).group(1)
    seen = [cls.get(i, "reachable") for i in api]
    check(len(seen) == 2 and seen[0] in ("definite", "possible"),
          f"tensor data (c10::alloc_cpu's) not scanned: the block only the tensor holds is lost ({seen})")
    check(seen[1:] == ["reachable"], f"the same words in a bytes object keep it reachable ({seen})")
    q = json.load(open(ij))["processes"][0]
    lost = [(l["class"], l["bytes"]) for l in q["leaks"] if l["class"] in ("definite", "indirect")]
    check(not lost, f"import torch: no definite or indirect group ({lost[:5]})")
sys.exit(1 if bad else 0)
PY
    fail "$st: the cases' findings (above)"
  echo "time $st cases: $((SECONDS - t0)) s"
  if [ "$torch" = 1 ] && [ "$s" != host ] && [ -z "${PY_ROOTS_NO_EXAMPLE:-}" ]; then
    t0=$SECONDS
    GS_SUITE=$s GS_EXAMPLE_PY=$py GS_TORCH_OK=1 bash tests/integration/example_findings.sh >"$GS_T/$st-example" 2>&1 ||
      fail "$st: examples/train.py's findings: $(grep -E '^FAIL|failed' "$GS_T/$st-example" | head -5)"
    grep -E '^(ok|FAIL)' "$GS_T/$st-example" | sed "s/^/$st example: /"
    echo "time $st example: $((SECONDS - t0)) s"
  fi
}

# PY_ROOTS_STACKS names the stacks to run (default: all of them).
PY_ROOTS_DEFAULT="bookworm pyenv-3.9 pyenv-3.10 pyenv-3.11 pyenv-3.12 pyenv-3.13 pyenv-3.14 trixie sid"
want() { [[ " ${PY_ROOTS_STACKS:-$PY_ROOTS_DEFAULT} " == *" $1 "* ]]; }
want bookworm && one bookworm host /usr/bin/python3
for m in 10 11 12 13 14; do
  want pyenv-3.$m || continue
  bin=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.$m.*/bin 2>/dev/null | tail -1)
  if [ -n "$bin" ]; then
    PATH=$bin:$PATH one pyenv-3.$m host python3
  else
    echo "skip pyenv-3.$m: no pyenv 3.$m here"
  fi
done
bin=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.9.*/bin 2>/dev/null | tail -1)
if ! want pyenv-3.9; then :
elif [ -z "$bin" ]; then
  echo "skip pyenv-3.9: no pyenv 3.9 here"
else
  ran=$((ran + 1))
  GCSPY_QUIET=0 traced pyenv-3.9 host "$bin/python3" "$CASES" || fail "pyenv-3.9: cases.py failed"
  grep -v '^gcspy: \(pid\|trace\)' "$GS_T/pyenv-3.9/err" >"$GS_T/pyenv-3.9/lines"
  [ "$(cat "$GS_T/pyenv-3.9/out")" = "cases done 3 9" ] || fail "pyenv-3.9: output $(cat "$GS_T/pyenv-3.9/out")"
  if [ "$(wc -l <"$GS_T/pyenv-3.9/lines")" -eq 1 ] &&
     grep -q '^gcspy: Python 3.9: a version outside 3.10-3.14; .*native stacks only$' "$GS_T/pyenv-3.9/lines"; then
    echo "ok   pyenv-3.9: one line: $(cat "$GS_T/pyenv-3.9/lines")"
  else
    fail "pyenv-3.9: stderr is not the one line: $(head -3 "$GS_T/pyenv-3.9/lines")"
  fi
  "$GS_CLI" dump "$GS_T/pyenv-3.9"/t-*.trace* | grep -q '^pycode ' && fail "pyenv-3.9: Python frames in the trace"
fi
want trixie && one trixie trixie /usr/bin/python3
want sid && one sid sid /usr/bin/python3
[ "$ran" -gt 0 ] || gs_skip "no stack ran"
gs_done
