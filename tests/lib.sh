# Shared helpers for the integration scripts that run programs under the shim
# (tests/integration/shim_*.sh). Source it after `cd` to the repository root:
#
#   . tests/lib.sh
#   gs_init NAME               temp dir $GS_T (removed at exit), checks the build
#   gs_run NAME CMD...         runs CMD under libgcspy.so in a fresh $GS_T/NAME:
#                              sets GS_DIR, GS_RC; stdout (a pipe) in $GS_DIR/out,
#                              stderr in $GS_DIR/err; traces in $GS_DIR/*.trace*
#                              (GCSPY_OUTPUT=$GS_DIR/%e-%p.trace, GCSPY_QUIET=1
#                              unless the caller's environment sets them;
#                              GS_TIMEOUT seconds, default 60, then rc 124)
#   gs_run_here NAME CMD...    as gs_run, but CMD runs in $GS_DIR (the files it
#                              makes land there), stdout in $GS_DIR/out (a
#                              file), and is killed with SIGKILL at the deadline
#                              (a process gcspy's writer kept alive ignores
#                              SIGTERM: the writer blocks it); GS_PRELOAD
#                              replaces LD_PRELOAD, GS_WRAP is a command put
#                              before it (prlimit ...)
#   gs_plain NAME CMD...       the same without the shim (for comparisons)
#   gs_traces                  the trace files in $GS_DIR, one a line, sorted
#   gs_one_trace               exactly one trace in $GS_DIR: sets GS_TRACE, and
#                              GS_DUMP (its `gcspy dump` text)
#   gs_dump FILE               dumps FILE to FILE.txt, fails on a dump error, and
#                              on any problem `gcspy report` finds in it
#   gs_check DUMP [opts]       the consistency checker (below); prints its summary
#   gs_py ARGS...              /usr/bin/python3 with the gstrace module importable
#   fail MSG / gs_done         count a failure / exit 0, or 1 after failures
#   gs_skip REASON             exit 77 with REASON as the last stdout line
#   in_root SUITE CMD...       runs CMD inside the Debian root SUITE (below);
#                              returns CMD's status, or 77 with a reason on
#                              stdout when the root is missing and cannot be made
# GS_LIB in the environment replaces build/libgcspy.so (to try a patched
# build against the same tests).
#
# The checker (gstrace.py, written into $GS_T at gs_init) replays a dump in
# file order and checks what every complete trace must satisfy:
#   - the trace is complete (TRACE_END last) unless --incomplete;
#   - one PROCESS_START, before any event; PROCESS_EXIT once, before TRACE_END;
#   - STACK nodes defined once, parent first, before any event naming them;
#   - each event's thread has a THREAD_START before it (or is 0); a thread
#     index starts once and exits at most once, after its start;
#   - every FREE/REALLOC is of an address live at that point; no ALLOC of an
#     address already live;
#   - TRACE_END's allocs, frees, bytes_allocated, live_blocks and live_bytes
#     equal the replay (inherited blocks of a forked child are live but not
#     counted as allocations).
# Record order between different addresses is not event order (see
# trace_format.h); the checks above only rely on what the format promises.

GS_ROOT=$PWD
GS_LIB=${GS_LIB:-$GS_ROOT/build/libgcspy.so}
GS_CLI=$GS_ROOT/build/gcspy
GS_PROGS=$GS_ROOT/build/tests/programs
GS_PY=/usr/bin/python3
gs_fails=0

fail() { echo "FAIL: $*"; gs_fails=$((gs_fails + 1)); }

gs_skip() { echo "$*"; exit 77; }

gs_done() {
  if [ "$gs_fails" -gt 0 ]; then
    echo "$gs_fails check(s) failed"
    exit 1
  fi
  echo "all checks passed"
  exit 0
}

# in_root SUITE CMD...: CMD, as root, chrooted into the minimal Debian root
# $GCSPY_ROOTS/SUITE (/var/cache/gcspy/roots/SUITE: python3, python3-torch,
# python3-numpy, gcc, libc6-dev), made by scripts/make-root.sh when missing.
# Inside, at the same paths as outside: this repository read-only (so
# $GS_LIB, $GS_CLI and build/tests/programs are the host's build) and, read-
# write, $GS_T when set plus every directory in IN_ROOT_BIND (space-
# separated); /proc, /dev/null, zero, random, urandom, a tmpfs on /tmp and
# /dev/shm. The environment is passed through with PATH set to the root's.
# All mounts live in a private mount namespace (unshare -m): they vanish
# with CMD on every exit path, a kill included, and are never seen outside.
# Returns CMD's status, or 77 with one line "root SUITE: REASON" on stdout
# when the root is missing and cannot be made (not root, mirror unreachable:
# make-root.sh's reason). Each call appends "SUITE ran" or "SUITE skipped:
# REASON" to $GS_ROOTS_LOG when set (scripts/run-tests.sh's roots line).
# Make a root by hand with `scripts/make-root.sh SUITE`.
in_root() {
  local suite=$1 root why binds d
  shift
  root=${GCSPY_ROOTS:-/var/cache/gcspy/roots}/$suite
  if [ ! -f "$root/etc/gcspy-root" ]; then
    why=$(bash "$GS_ROOT/scripts/make-root.sh" "$suite" 2>/dev/null | tail -1)
    if [ "$why" != "$root" ]; then
      why=${why#make-root: $suite: }
      echo "root $suite: ${why:-scripts/make-root.sh $suite failed}"
      [ -n "${GS_ROOTS_LOG:-}" ] && echo "$suite skipped $(basename "$0" .sh): ${why:-make-root.sh failed}" >>"$GS_ROOTS_LOG"
      return 77
    fi
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "root $suite: not root (chroot needs root)"
    [ -n "${GS_ROOTS_LOG:-}" ] && echo "$suite skipped $(basename "$0" .sh): not root (chroot needs root)" >>"$GS_ROOTS_LOG"
    return 77
  fi
  binds=""
  for d in ${GS_T:-} ${IN_ROOT_BIND:-}; do [ -d "$d" ] && binds="$binds $d"; done
  [ -n "${GS_ROOTS_LOG:-}" ] && echo "$suite ran $(basename "$0" .sh)" >>"$GS_ROOTS_LOG"
  unshare -m --propagation private bash -c '
    set -e
    root=$1 repo=$2 binds=$3; shift 3
    mnt() {  # SRC DST [ro]: bind SRC at DST inside the root (DST made if missing)
      if [ -d "$1" ]; then mkdir -p "$2"; else [ -e "$2" ] || : >"$2"; fi
      mount --bind "$1" "$2"
      [ "${3:-}" != ro ] || mount -o remount,bind,ro "$2"
    }
    mount -t proc proc "$root/proc"
    mount -t tmpfs tmpfs "$root/tmp"
    mkdir -p "$root/dev/shm"; mount -t tmpfs tmpfs "$root/dev/shm"
    for f in null zero random urandom; do mnt "/dev/$f" "$root/dev/$f"; done
    mnt "$repo" "$root$repo" ro
    for d in $binds; do mnt "$d" "$root$d"; done
    set +e
    exec chroot "$root" /usr/bin/env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
  ' in_root "$root" "$GS_ROOT" "$binds" "$@"
}

gs_init() {
  local f
  for f in "$GS_LIB" "$GS_CLI" "$GS_PY"; do
    [ -x "$f" ] || [ -f "$f" ] || { echo "$f missing (make test-build)"; exit 1; }
  done
  GS_T=$(mktemp -d "/tmp/gcspy-$1.XXXXXX") || exit 2
  trap 'rm -rf "$GS_T"' EXIT
  gs_write_py >"$GS_T/gstrace.py"
}

# Needs the named programs in build/tests/programs.
gs_need() {
  local p
  for p in "$@"; do
    [ -x "$GS_PROGS/$p" ] || [ -f "$GS_PROGS/$p" ] || { echo "$GS_PROGS/$p missing (make test-build)"; exit 1; }
  done
}

gs_run() {
  local name=$1; shift
  GS_DIR=$GS_T/$name
  rm -rf "$GS_DIR"; mkdir -p "$GS_DIR"
  # stdout through a pipe: a file size limit set for the program (prlimit)
  # then applies to its trace, not to the copy of its output
  { timeout "${GS_TIMEOUT:-60}" env LD_PRELOAD="$GS_LIB" \
      GCSPY_OUTPUT="${GCSPY_OUTPUT:-$GS_DIR/%e-%p.trace}" GCSPY_QUIET="${GCSPY_QUIET:-1}" \
      "$@" 2>"$GS_DIR/err"; } | cat >"$GS_DIR/out"
  GS_RC=${PIPESTATUS[0]}
  [ "$GS_RC" -eq 124 ] && fail "$name: timed out after ${GS_TIMEOUT:-60}s (deadlock?)"
  return 0
}

gs_run_here() {
  local name=$1; shift
  GS_DIR=$GS_T/$name
  rm -rf "$GS_DIR"; mkdir -p "$GS_DIR"
  # shellcheck disable=SC2086 # GS_WRAP is a command and its arguments
  GS_RC=$(cd "$GS_DIR" && { ${GS_WRAP:-} timeout -s KILL "${GS_TIMEOUT:-60}" \
      env LD_PRELOAD="${GS_PRELOAD:-$GS_LIB}" GCSPY_OUTPUT="${GCSPY_OUTPUT:-$GS_DIR/%e-%p.trace}" \
      GCSPY_QUIET="${GCSPY_QUIET:-1}" "$@" >out 2>err; echo $?; } 2>/dev/null)
}

gs_plain() {
  local name=$1; shift
  GS_DIR=$GS_T/$name
  rm -rf "$GS_DIR"; mkdir -p "$GS_DIR"
  { timeout "${GS_TIMEOUT:-60}" "$@" 2>"$GS_DIR/err"; } | cat >"$GS_DIR/out"
  GS_RC=${PIPESTATUS[0]}
  return 0
}

gs_traces() {
  find "$GS_DIR" -maxdepth 1 -name '*.trace*' ! -name '*.txt' ! -name '*.dumperr' | sort
}

gs_dump() {
  "$GS_CLI" dump "$1" >"$1.txt" 2>"$1.dumperr" || fail "gcspy dump $1: $(cat "$1.dumperr")"
  # every trace the shim writes keeps the format's promises: the analyzer
  # finds no problem in it (a cut trace is incomplete, not malformed)
  "$GS_CLI" report --no-symbols -q --format json -o /dev/null "$1" 2>"$1.dumperr" ||
    fail "gcspy report $1: $(head -c 400 "$1.dumperr")"
}

gs_one_trace() {
  local list n
  list=$(gs_traces)
  n=$(grep -c . <<<"$list")
  GS_TRACE= GS_DUMP=
  if [ "$n" -ne 1 ]; then
    fail "$(basename "$GS_DIR"): $n trace files, expected 1: $list"
    return 1
  fi
  GS_TRACE=$list
  gs_dump "$GS_TRACE"
  GS_DUMP=$GS_TRACE.txt
}

gs_py() {
  PYTHONPATH=$GS_T PYTHONDONTWRITEBYTECODE=1 "$GS_PY" "$@"
}

# gs_check DUMP [--incomplete] : the consistency checker; failures counted.
gs_check() {
  local out
  if out=$(gs_py -m gstrace check "$@" 2>&1); then
    echo "check $(basename "$1"): $out"
  else
    fail "check $(basename "$1"): $out"
  fi
}

gs_write_py() {
  cat <<'PYEOF'
"""gstrace: parse `gcspy dump` text and check a trace's consistency.

Used as a module by the shim_* integration scripts (from gstrace import *)
and as `python3 -m gstrace check DUMP [--incomplete]`.
"""
import re
import subprocess
import sys

_KV = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)')


def _val(v):
    if v.startswith('"'):
        return bytes(v[1:-1], 'latin-1').decode('unicode_escape')
    if re.fullmatch(r'-?\d+', v):
        return int(v)
    if re.fullmatch(r'0x[0-9a-fA-F]+', v):
        return int(v, 16)
    return v


class Rec(dict):
    """One dump line: r.type is its name, fields by key (ints parsed)."""

    def __getattr__(self, k):
        try:
            return self[k]
        except KeyError:
            raise AttributeError(k)


class Trace:
    def __init__(self, path):
        self.path = path
        self.recs = []
        self.end = None
        with open(path, encoding='latin-1') as f:
            for line in f:
                name, _, rest = line.rstrip('\n').partition(' ')
                if '"' in rest:
                    r = Rec((k, _val(v)) for k, v in _KV.findall(rest))
                else:  # the hot records: no strings, a fast path
                    r = Rec()
                    for kv in rest.split():
                        k, _, v = kv.partition('=')
                        try:
                            r[k] = int(v, 0)
                        except ValueError:
                            r[k] = v
                r['type'] = name
                if name == 'module':
                    r['segs'] = [tuple(int(x, 16) for x in re.match(
                        r'0x([0-9a-f]+)\+0x([0-9a-f]+)', s).groups()) + (s[-3:],)
                        for s in str(r.get('segs', '')).split(',') if s]
                if name == 'end':
                    self.end = r
                elif name != 'trace':
                    self.recs.append(r)
        self.stacks = {r.id: (r.parent, r.ip) for r in self.of('stack')}
        self.modules = {r.id: r for r in self.of('module')}

    def of(self, *types):
        return [r for r in self.recs if r.type in types]

    def one(self, t):
        rs = self.of(t)
        if len(rs) != 1:
            raise AssertionError('%s: %d %s records, expected 1' % (self.path, len(rs), t))
        return rs[0]

    def frames(self, sid):
        """ips of stack sid, innermost first."""
        out = []
        while sid:
            parent, ip = self.stacks[sid]
            out.append(ip)
            sid = parent
        return out

    def module_of(self, ip):
        for m in self.modules.values():
            for vaddr, memsz, _ in m.segs:
                if m.base + vaddr <= ip < m.base + vaddr + memsz:
                    return m
        return None

    def exe_base(self, path):
        for m in self.modules.values():
            if m.path == path:
                return m.base
        raise AssertionError('%s: no module record for %s' % (self.path, path))


def sym_range(binary, name):
    """(start, end) of function `name` in binary, as link-time addresses."""
    out = subprocess.run(['nm', '-S', '--defined-only', binary], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[3] == name:
            a = int(f[0], 16)
            return a, a + int(f[1], 16)
    raise AssertionError('%s: no symbol %s' % (binary, name))


def in_function(tr, binary, name):
    """Predicate on an ip: inside function `name` of `binary` as loaded."""
    import os
    lo, hi = sym_range(binary, name)
    base = tr.exe_base(os.path.realpath(binary))
    return lambda ip: base + lo <= ip < base + hi


def _kv(field, key):
    """Value of a `key=value` dump field at a known position (the dump
    grammar fixes the order); a changed grammar fails loudly."""
    k, _, v = field.partition('=')
    if k != key:
        raise AssertionError('dump field %r where %s= was expected' % (field, key))
    return v


def check(tr, complete=True):
    """Replays the dump (a path or a Trace) in file order. Returns (errors,
    summary, live): errors empty when consistent; live maps address to size
    at the end. Streams the file with positional parsing: traces of
    millions of records take seconds."""
    path = tr.path if isinstance(tr, Trace) else tr
    errs = []

    def err(m):
        if len(errs) < 20:
            errs.append(m)

    defined = set()
    threads_started, threads_exited = set(), set()
    live = {}
    allocs = frees = nbytes = 0
    seen_proc = seen_exit = seen_end = False
    nrec = 0
    end_line = None
    with open(path, encoding='latin-1') as f:
        for line in f:
            t, _, rest = line.rstrip('\n').partition(' ')
            if t == 'trace':
                continue
            if t == 'end':
                end_line = rest
                continue
            nrec += 1
            if seen_end:
                err('record %d (%s) after trace_end' % (nrec, t))
            if t in ('alloc', 'alloc_ex', 'realloc'):
                fs = rest.split()
                thread = int(_kv(fs[1], 'thread'))
                addr = int(_kv(fs[2], 'addr'), 16)
                size = int(_kv(fs[3], 'size'))
                stack = int(_kv(fs[4], 'stack'))
                if not seen_proc:
                    err('%s before the process record' % t)
                if stack and stack not in defined:
                    err('record %d: stack %d used before its definition' % (nrec, stack))
                if thread and thread not in threads_started:
                    err('record %d: thread %d has no thread_start before it' % (nrec, thread))
                if t == 'realloc':
                    if addr not in live:
                        err('realloc of 0x%x, not live' % addr)
                    live[addr] = size
                    continue
                if addr in live:
                    err('alloc of 0x%x, already live' % addr)
                live[addr] = size
                if t == 'alloc' or _kv(fs[6], 'fn') != 'inherited':
                    allocs += 1
                    nbytes += size
            elif t in ('free', 'free_ex'):
                fs = rest.split()
                addr = int(_kv(fs[1] if t == 'free' else fs[2], 'addr'), 16)
                if live.pop(addr, None) is None:
                    err('free of 0x%x, not live' % addr)
                frees += 1
            elif t == 'stack':
                fs = rest.split()
                sid, parent = int(_kv(fs[0], 'id')), int(_kv(fs[1], 'parent'))
                if sid in defined:
                    err('stack node %d defined twice' % sid)
                if parent and parent not in defined:
                    err('stack node %d before its parent %d' % (sid, parent))
                defined.add(sid)
            elif t == 'process':
                if seen_proc:
                    err('second process record')
                seen_proc = True
            elif t == 'thread_start' or t == 'thread_exit':
                index = int(_kv(rest.split()[1], 'index'))
                if t == 'thread_start':
                    if index in threads_started:
                        err('thread %d started twice' % index)
                    threads_started.add(index)
                else:
                    if index not in threads_started:
                        err('thread %d exits without a start' % index)
                    if index in threads_exited:
                        err('thread %d exits twice' % index)
                    threads_exited.add(index)
            elif t == 'exit':
                if seen_exit:
                    err('second exit record')
                seen_exit = True
            elif t == 'trace_end':
                seen_end = True
                if not seen_exit:
                    err('trace_end without an exit record before it')
                fs = dict(kv.partition('=')[::2] for kv in rest.split())
                want = dict(allocs=allocs, frees=frees, bytes_allocated=nbytes,
                            live_blocks=len(live), live_bytes=sum(live.values()))
                for k, v in want.items():
                    if int(fs[k]) != v:
                        err('trace_end %s=%s, replay gives %d' % (k, fs[k], v))
    if complete and (end_line is None or not end_line.endswith('complete=yes')):
        err('trace incomplete (no TRACE_END)')
    if not seen_proc and (complete or nrec):
        err('no process record')
    summary = 'allocs=%d frees=%d live_blocks=%d live_bytes=%d stacks=%d threads=%d' % (
        allocs, frees, len(live), sum(live.values()), len(defined), len(threads_started))
    return errs, summary, live


def main(argv):
    if len(argv) < 2 or argv[0] != 'check':
        print('usage: python3 -m gstrace check DUMP [--incomplete]', file=sys.stderr)
        return 2
    errs, summary, _ = check(argv[1], complete='--incomplete' not in argv)
    for e in errs:
        print(e)
    print(summary)
    return 1 if errs else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
PYEOF
}
