#!/usr/bin/env bash
# scripts/make-root.sh SUITE: makes (or reuses) a minimal Debian root of SUITE
# (trixie, sid, bookworm, ...) in which the tests run Python and PyTorch with
# the host's build of libgcspy.so (tests/lib.sh's in_root). The root is
#
#   debootstrap --variant=minbase SUITE $GCSPY_ROOTS/SUITE MIRROR
#   chroot: apt-get install --no-install-recommends python3 python3-torch
#           python3-numpy gcc libc6-dev
#
# with GCSPY_ROOTS=/var/cache/gcspy/roots by default and MIRROR the host's
# configured Debian mirror (the first URIs of /etc/apt/sources.list.d/
# debian.sources, or the first "deb" line of /etc/apt/sources.list, that is
# not debian-security; GCSPY_MIRROR replaces it).
#
# What must stay true:
#   - a root is built in SUITE.tmp and renamed to SUITE only when complete,
#     so an interrupted creation is never taken as a root (the next run
#     starts SUITE.tmp again);
#   - SUITE/etc/gcspy-root records when and how the root was made
#     (created=, seconds=, mirror=); a root without it (made by hand with the
#     same commands) is adopted, stamp written, once its packages check out;
#   - a present root is reused as it is (idempotent: a second run only
#     checks, in well under a second) and never deleted by this script;
#   - concurrent runs for one suite serialize on $GCSPY_ROOTS/.SUITE.lock;
#   - every mount (debootstrap's, /proc for apt) lives in a private mount
#     namespace (unshare -m), so no exit path leaves one behind.
#
# Exit status: 0 and the root's path as the last line when the root is ready;
# 77 and one line "make-root: SUITE: REASON" when it cannot be made here (not
# root, no debootstrap, the mirror unreachable, the creation failed: its log
# is named). The full creation log is $GCSPY_ROOTS/SUITE.log.
set -u

suite=${1:-}
[ -n "$suite" ] && [[ "$suite" =~ ^[a-z][a-z0-9-]*$ ]] ||
  { echo "usage: scripts/make-root.sh SUITE   (a Debian suite name: trixie, sid, bookworm, ...)" >&2; exit 2; }

ROOTS=${GCSPY_ROOTS:-/var/cache/gcspy/roots}
dir=$ROOTS/$suite
PKGS=(python3 python3-torch python3-numpy gcc libc6-dev)

skip() { echo "make-root: $suite: $*"; exit 77; }

# The packages every root must hold; dpkg-query inside the root (no chroot
# needed: --admindir reads its database directly).
root_complete() {
  local p
  [ -x "$1/usr/bin/python3" ] || return 1
  for p in "${PKGS[@]}"; do
    dpkg-query --admindir="$1/var/lib/dpkg" -W -f='${Status}' "$p" 2>/dev/null |
      grep -q "install ok installed" || return 1
  done
}

stamp() {  # DIR SECONDS NOTE
  printf 'suite=%s\nmirror=%s\ncreated=%s\nseconds=%s\npackages=%s\n%s' \
    "$suite" "$mirror" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$2" "${PKGS[*]}" "$3" >"$1/etc/gcspy-root"
}

ready() {
  echo "make-root: $suite: ready ($(sed -n 's/^created=//p' "$dir/etc/gcspy-root"), made in $(sed -n 's/^seconds=//p' "$dir/etc/gcspy-root") s)" >&2
  echo "$dir"
  exit 0
}

# The host's Debian mirror: the first URIs: / deb line not naming -security.
host_mirror() {
  local m=""
  if [ -r /etc/apt/sources.list.d/debian.sources ]; then
    m=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' \
          /etc/apt/sources.list.d/debian.sources)
  fi
  if [ -z "$m" ] && [ -r /etc/apt/sources.list ]; then
    m=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { if ($i !~ /security/) print $i; break } }' \
          /etc/apt/sources.list | head -1)
  fi
  echo "${m:-http://deb.debian.org/debian}"
}
mirror=${GCSPY_MIRROR:-$(host_mirror)}
mirror=${mirror%/}

# A present, stamped root: reused without a lock or a look at the network.
[ -f "$dir/etc/gcspy-root" ] && root_complete "$dir" && ready

[ "$(id -u)" -eq 0 ] || skip "not root (debootstrap and chroot need root); run scripts/make-root.sh $suite as root once"
for t in debootstrap chroot unshare flock; do
  command -v "$t" >/dev/null || skip "$t is not installed (apt-get install debootstrap util-linux coreutils)"
done
mkdir -p "$ROOTS" || skip "cannot create $ROOTS"

exec 9>"$ROOTS/.$suite.lock" || skip "cannot open the lock $ROOTS/.$suite.lock"
if ! flock -n 9; then
  echo "make-root: $suite: another make-root.sh is making it; waiting" >&2
  flock 9
fi
# Made or adopted while we waited, or made by hand with the same commands.
[ -f "$dir/etc/gcspy-root" ] && root_complete "$dir" && ready
if [ -d "$dir" ]; then
  root_complete "$dir" ||
    skip "$dir exists but lacks some of ${PKGS[*]} (still being made by hand? finish it, or remove it to have it made again)"
  stamp "$dir" "?" "adopted=made by another script; creation time unknown"$'\n'
  ready
fi

# The mirror must answer for this suite before anything is written.
url="$mirror/dists/$suite/Release"
if command -v curl >/dev/null; then
  curl -sfI --max-time 15 "$url" >/dev/null || skip "the mirror $mirror is unreachable ($url did not answer): no root made"
elif command -v wget >/dev/null; then
  wget -q --spider --timeout=15 "$url" || skip "the mirror $mirror is unreachable ($url did not answer): no root made"
fi

log=$ROOTS/$suite.log
tmp=$dir.tmp
start=$(date +%s)
: >"$log"
rm -rf "$tmp" || skip "cannot remove an interrupted $tmp"

echo "make-root: $suite: debootstrap --variant=minbase $suite $tmp $mirror (a few minutes; log: $log)" >&2
# In a private mount namespace: debootstrap mounts /proc and /sys in the
# target, and an interrupted run must not leave them mounted.
if ! unshare -m --propagation private debootstrap --variant=minbase "$suite" "$tmp" "$mirror" >>"$log" 2>&1; then
  tail -5 "$log" | sed 's/^/    /' >&2
  skip "debootstrap failed after $(( $(date +%s) - start )) s (log: $log)"
fi
echo "make-root: $suite: base system in $(( $(date +%s) - start )) s; installing ${PKGS[*]}" >&2

# apt inside the root, /proc mounted in a private namespace. One progress
# line per stage (apt's "Get:" lines counted, then dpkg's "Setting up")
# keeps the terminal readable; the log has everything.
unshare -m --propagation private bash -c '
  mount -t proc proc "$1/proc" || exit 1
  chroot "$1" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 \
    apt-get install -y --no-install-recommends "${@:2}"
' _ "$tmp" "${PKGS[@]}" 2>&1 | tee -a "$log" |
  awk '/^Get:1 /      { print "make-root: downloading packages" > "/dev/stderr" }
       /^Fetched /    { print "make-root: " $0 > "/dev/stderr" }
       /^Setting up / { n++; if (n % 50 == 1) print "make-root: setting up (" n " packages so far)" > "/dev/stderr" }'
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ] || ! root_complete "$tmp"; then
  tail -5 "$log" | sed 's/^/    /' >&2
  skip "apt-get install in the root failed (status $rc; log: $log); $tmp left for a look, remade next time"
fi
chroot "$tmp" apt-get clean >/dev/null 2>&1 || true

secs=$(( $(date +%s) - start ))
stamp "$tmp" "$secs" ""
mv "$tmp" "$dir" || skip "cannot rename $tmp to $dir"
echo "make-root: $suite: made in $secs s" >&2
ready
