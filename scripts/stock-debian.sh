#!/usr/bin/env bash
# scripts/stock-debian.sh: README's two commands, as a new user runs them on a
# stock Debian 12 machine. Makes a default (not minbase) debootstrap root of
# bookworm from the host's mirror, installs git in it and nothing else,
# clones this repository (its current branch, committed state) into /root
# (mode 700, as a user's clone would be), then runs, as root in that root,
# the commands of README's block "On a fresh Debian 12 machine" one after
# the other, and prints a summary: each command's exit status and time, and
# the test suite's closing lines. This is how the problems of a stock machine
# (no make, Debian's Node 18, a clone under /root) were found.
#
#   STOCK_SUITE    the suite (default bookworm)
#   STOCK_CACHE    where the base root (debootstrap + git) is kept between
#                  runs: $STOCK_CACHE/SUITE (default /var/cache/gcspy/stock);
#                  made in SUITE.tmp and renamed when complete
#   STOCK_WORK     the run's folder (default /var/tmp/gcspy-stock): a fresh
#                  copy of the base in root/ every run, logs/, summary.txt
#   GCSPY_MIRROR   the Debian mirror (default: the host's, as make-root.sh)
#   STOCK_ONLY     N: run only README's N-th command (with --reuse: a second
#                  look at the test suite after a fix)
#   --reuse        keep the root of the last run (its packages installed:
#                  install-deps then only checks) and clone afresh: a quicker
#                  second look after a fix; the first run of a change should
#                  be a full one
#
# The machine's network is the host's. Where it intercepts TLS with a CA of
# its own (certificates in the host's /usr/local/share/ca-certificates), that
# CA is copied into the root and named by NODE_EXTRA_CA_CERTS for the
# commands, so npm reaches its registry as it does on the host; nothing else
# of the host's configuration goes in.
#
# Needs root, debootstrap, unshare. Every mount (/proc, /sys, /dev, /dev/shm
# for chromium) lives in a private mount namespace: no exit path leaves one.
# Takes long: some 800 packages and the whole suite. Exit status 0 when both
# commands exited 0; 1 otherwise; 77 when it cannot run here.
set -u
cd "$(dirname "$0")/.." || exit 2
repo=$PWD
suite=${STOCK_SUITE:-bookworm}
cache=${STOCK_CACHE:-/var/cache/gcspy/stock}
work=${STOCK_WORK:-/var/tmp/gcspy-stock}
reuse=""
[ "${1:-}" = --reuse ] && reuse=1
base=$cache/$suite
root=$work/root
logs=$work/logs

say() { printf 'stock-debian: %s\n' "$*"; }
skip() { say "$*"; exit 77; }

[ "$(id -u)" -eq 0 ] || skip "not root (debootstrap and chroot need root)"
for t in debootstrap unshare chroot git; do command -v "$t" >/dev/null || skip "$t is not installed"; done
mirror=$(bash scripts/make-root.sh --mirror)

# README's two commands: the sh block after "On a fresh Debian 12 machine",
# comments dropped.
mapfile -t CMDS < <(awk '/^On a fresh Debian 12 machine/ { on = 1 } on && /^```sh/ { inb = 1; next }
                         inb && /^```/ { exit } inb { sub(/[ \t]*#.*/, ""); if ($0 != "") print }' README.md)
[ ${#CMDS[@]} -gt 0 ] || { say "README.md has no sh block after 'On a fresh Debian 12 machine'"; exit 1; }
branch=$(git rev-parse --abbrev-ref HEAD)
commit=$(git rev-parse --short HEAD)
[ -z "$(git status --porcelain --untracked-files=no)" ] ||
  say "note: uncommitted changes are not in the clone (it takes $branch at $commit)"

mkdir -p "$cache" "$work" || exit 1
t0=$(date +%s)

# ---- the base: default debootstrap + git, cached ----
if [ ! -f "$base/etc/gcspy-stock" ]; then
  say "making the base root $base: debootstrap $suite (default variant) from $mirror"
  rm -rf "$base.tmp"
  unshare -m --propagation private debootstrap "$suite" "$base.tmp" "$mirror" >"$work/base.log" 2>&1 ||
    { tail -5 "$work/base.log"; say "debootstrap failed (log: $work/base.log)"; exit 1; }
  cp /etc/resolv.conf "$base.tmp/etc/resolv.conf" 2>/dev/null
  unshare -m --propagation private bash -c '
    mount -t proc proc "$1/proc" &&
    chroot "$1" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
      apt-get install -y git' _ "$base.tmp" >>"$work/base.log" 2>&1 ||
    { tail -5 "$work/base.log"; say "installing git failed (log: $work/base.log)"; exit 1; }
  chroot "$base.tmp" apt-get clean
  echo "created=$(date -u +%Y-%m-%dT%H:%M:%SZ) seconds=$(( $(date +%s) - t0 )) mirror=$mirror" >"$base.tmp/etc/gcspy-stock"
  mv "$base.tmp" "$base" || exit 1
  say "base root made in $(( $(date +%s) - t0 )) s"
else
  say "base root $base ($(cat "$base/etc/gcspy-stock"))"
fi

# ---- a fresh copy, the clone under /root ----
t1=$(date +%s)
rm -rf "$logs" && mkdir -p "$logs" || exit 1
if [ -n "$reuse" ] && [ -f "$root/etc/gcspy-stock" ]; then
  rm -rf "$root/root/gcspy" "$root/tmp/"* || exit 1
  what="the last run's root $root (--reuse)"
else
  rm -rf "$root" && cp -a "$base" "$root" || { say "cannot copy $base to $root"; exit 1; }
  what="fresh root $root (copied in $(( $(date +%s) - t1 )) s)"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null
# Debian's installer names the machine in /etc/hosts (127.0.1.1 HOSTNAME);
# debootstrap does not, and the root runs under the host's name: without
# the line, gloo (torchrun's job_torchrun) cannot resolve its own host
# name and the job waits out its timeout. A stock machine has it.
grep -qw "$(hostname)" "$root/etc/hosts" 2>/dev/null ||
  printf '127.0.1.1\t%s\n' "$(hostname)" >>"$root/etc/hosts"
ca=""
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
  cat /usr/local/share/ca-certificates/*.crt >"$root/etc/gcspy-host-ca.pem" && ca=NODE_EXTRA_CA_CERTS=/etc/gcspy-host-ca.pem
fi
git clone -q --branch "$branch" "$repo" "$root/root/gcspy" || { say "git clone failed"; exit 1; }
say "$what; /root/gcspy is $branch at $commit; packages: $(chroot "$root" dpkg-query -W -f='.\n' | wc -l)${ca:+; the host CA certificates for node}"

# ---- README's commands ----
summary=$work/summary.txt
: >"$summary"
status=0 i=0
for cmd in "${CMDS[@]}"; do
  i=$((i + 1))
  [ -n "${STOCK_ONLY:-}" ] && [ "$STOCK_ONLY" != $i ] && continue
  log=$logs/$i.log
  say "[$i/${#CMDS[@]}] # $cmd   (log: $log)"
  s=$(date +%s)
  unshare -m --propagation private bash -c '
    set -e
    # the root a mount point of its own, so that inside it / is one, and
    # the tests may make private mount namespaces there (unshare -m)
    mount --bind "$1" "$1"
    mount -t proc proc "$1/proc"
    mount -t sysfs sysfs "$1/sys"
    mount --rbind /dev "$1/dev"
    mount -t tmpfs -o mode=1777 tmpfs "$1/dev/shm"
    set +e
    exec chroot "$1" /usr/bin/env -i HOME=/root USER=root LOGNAME=root TERM=dumb $3 \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      bash -c "cd /root/gcspy && $2"
  ' _ "$root" "$cmd" "$ca" </dev/null 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  secs=$(( $(date +%s) - s ))
  [ "$rc" -eq 0 ] || status=1
  printf '%s: exit %d in %d s\n' "$cmd" "$rc" "$secs" >>"$summary"
  # the suite's closing lines, when this command ran it
  grep -aE '^(FAIL |skip |roots: |failed: |[0-9]+ passed, )' "$log" | sed 's/^/    /' >>"$summary"
done
echo "total: $(( $(date +%s) - t0 )) s (base root included when it was made)" >>"$summary"
echo
say "summary ($summary):"
cat "$summary"
exit $status
