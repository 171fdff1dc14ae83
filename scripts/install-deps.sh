#!/usr/bin/env bash
# Installs every build and test dependency of gcspy from Debian packages by name.
# Needs nothing but bash and apt (a default Debian 12 installation has no
# make: it is installed here, with build-essential), so README's first
# command works on a stock machine.
# Idempotent: when everything is present it only checks (dpkg-query) and exits
# within a second. Run as root (CI and the dev machines are root); otherwise
# sudo is used when available. debootstrap is for the Debian roots the tests
# make when missing (scripts/make-root.sh).
# On a stock machine this is some 800 packages and minutes of work: apt's
# progress is shown as a line per stage and a count every 100 packages
# downloaded, unpacked and set up; apt's full output goes to
# ${TMPDIR:-/tmp}/gcspy-install-deps.log, whose end is printed on failure.
set -euo pipefail

PKGS=(
  make build-essential pkg-config clang libclang-rt-14-dev
  libunwind-dev libdw-dev libelf-dev libzstd-dev libcriterion-dev
  valgrind heaptrack python3 python3-dev python3.11-dev python3-torch
  python3-pytest python3-venv python3-setuptools python3-pip
  nodejs npm chromium
  liblsan0
  strace
  protobuf-c-compiler libprotobuf-c-dev zlib1g-dev protobuf-compiler
  debootstrap
  debuginfod libdebuginfod-dev
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# nodejs may come from another repository that ships npm inside it.
if [[ " ${missing[*]-} " == *" npm "* ]] && command -v npm >/dev/null 2>&1; then
  missing=("${missing[@]/npm}")
fi
read -r -a missing <<< "${missing[*]-}"

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO=sudo
log=${TMPDIR:-/tmp}/gcspy-install-deps.log
export DEBIAN_FRONTEND=noninteractive
: >"$log"
failed() {
  echo "install-deps: $1 failed (status $2); the end of $log:" >&2
  tail -15 "$log" | sed 's/^/    /' >&2
  exit 1
}

echo "install-deps: missing ${missing[*]}"
echo "install-deps: apt-get update"
$SUDO apt-get update >>"$log" 2>&1 || failed "apt-get update" $?
# How many packages the install brings in (dependencies included), for the
# counts below.
total=$($SUDO apt-get install -s --no-install-recommends "${missing[@]}" 2>>"$log" | grep -c '^Inst ' || true)
echo "install-deps: apt-get install: $total packages with their dependencies (full output: $log)"
# apt's -q output has one line per package per stage (Get:, Unpacking,
# Setting up); awk turns them into a line per stage and every 100 packages.
set +e # the status is apt-get's (PIPESTATUS), checked below
$SUDO apt-get install -y -q -o Dpkg::Use-Pty=0 --no-install-recommends "${missing[@]}" 2>&1 | tee -a "$log" |
  awk -v total="$total" '
    function tick(what, n) { if (n == 1 || n % 100 == 0 || n == total)
                               printf "install-deps: %s %d/%d\n", what, n, total; fflush() }
    /^Get:[0-9]+ /   { tick("downloaded", ++g) }
    /^Fetched /      { print "install-deps: " $0; fflush() }
    /^Unpacking /    { tick("unpacked", ++u) }
    /^Setting up /   { tick("set up", ++s) }
    /^(E|W): /       { print "install-deps: " $0; fflush() }'
rc=${PIPESTATUS[0]}
set -e
[ "$rc" -eq 0 ] || failed "apt-get install" "$rc"
echo "install-deps: done"
