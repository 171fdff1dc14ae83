#!/usr/bin/env bash
# A forked child's trace names the Python frames it inherited. The child
# starts a trace of its own, and the stacks of the blocks it inherited name
# the parent's code ids; the shim copies each code's names when it interns
# it and writes every PYCODE record again in the child (pyframes.c). With
# Debian's /usr/bin/python3 under `gcspy run -o DIR/%p.trace`: the parent
# keeps a 3131-byte malloc from keep_it() and drops a 2727-byte one from
# lose_it(), then forks; the child drops a 1717-byte one from child_leak()
# and leaves with os._exit (as DataLoader workers and multiprocessing do).
# In the child's JSON report:
#   - the 2727-byte site is inherited and lost, its innermost Python frame
#     lose_it (fork.py:12), and the 1717-byte one lost (definite, or
#     possible where a stale interior pointer survives, docs/python.md) at
#     child_leak (fork.py:20);
#   - no frame of any site with a stack is "<python code N>" (a DataLoader
#     worker's report had 518 such lines before);
# and the same in the trixie and sid roots (Python 3.13 and 3.14), the
# shim preloaded there and the reports made here.
# test-roots: trixie sid
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh
gs_init py_fork_names
py=/usr/bin/python3
T=$GS_T
cat > "$T/fork.py" <<'PY'
import ctypes, os
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]


def keep_it():
    return libc.malloc(3131)


def lose_it():
    libc.malloc(2727)


kept = keep_it()
lose_it()
pid = os.fork()
if pid == 0:
    def child_leak():
        libc.malloc(1717)
    child_leak()
    os._exit(0)
os.waitpid(pid, 0)
PY
# check DIR LABEL: the reports of the two traces in DIR
check() {
  local t
  for t in "$1"/*.trace; do
    build/gcspy report -q --format json -o "$t.json" "$t" || fail "$2: gcspy report $t failed"
  done
  gs_py - "$1" "$2" <<'PY' || fail "$2: the child's report: see above"
import glob, json, sys
procs = [json.load(open(f))["processes"][0] for f in glob.glob(sys.argv[1] + "/*.trace.json")]
child = [p for p in procs if any(s["inherited"] for s in p["sites"])]
assert len(procs) == 2 and len(child) == 1, [(p["trace"], len(p["sites"])) for p in procs]
sites = child[0]["sites"]
def py_frames(s):
    return [f for f in (s["stack"] or []) if f["python"]]
def at(size):
    got = [s for s in sites if s["largest_block"] == size]
    assert len(got) == 1, (size, got)
    return got[0]
inh, own = at(2727), at(1717)
where = lambda s: "%s (%s:%s)" % (py_frames(s)[0]["function"], py_frames(s)[0]["file"].split("/")[-1], py_frames(s)[0]["line"])
assert inh["inherited"] and inh["lost"]["bytes"] == 2727, inh
assert where(inh) == "lose_it (fork.py:12)", where(inh)
assert not own["inherited"] and own["lost"]["bytes"] == 1717, own
assert where(own) == "child_leak (fork.py:20)", where(own)
anon = [f["function"] for s in sites for f in (s["stack"] or []) if (f["function"] or "").startswith("<python code")]
assert not anon, anon[:5]
print(sys.argv[2] + ": child: %d sites, 2727 at %s (inherited), 1717 at %s" % (len(sites), where(inh), where(own)))
PY
}

mkdir -p "$T/host" && (cd "$T" && GCSPY_QUIET=1 "$OLDPWD/build/gcspy" run -o "$T/host/%p.trace" -- "$py" fork.py) > "$T/run.out" 2>&1 ||
  fail "gcspy run: $(tail -3 "$T/run.out")"
check "$T/host" bookworm
# CPython 3.13 and 3.14 in the roots, the shim preloaded (the CLI is the host's)
for s in trixie sid; do
  mkdir -p "$T/$s"
  out=$(in_root "$s" bash -c "cd '$T' && GCSPY_QUIET=1 GCSPY_OUTPUT='$T/$s/%p.trace' \
    LD_PRELOAD='$PWD/build/libgcspy.so' python3 fork.py 2>&1")
  rc=$?
  if [ "$rc" = 77 ]; then echo "$s: skipped: $out"; continue; fi
  [ "$rc" = 0 ] || fail "$s: fork.py under the shim: exit $rc: $out"
  check "$T/$s" "$s"
done
gs_done
