#!/usr/bin/env bash
# Installs every build and test dependency of gcspy from Debian packages by name.
# Idempotent: when everything is present it only checks (dpkg-query) and exits
# within a second. Run as root (CI and the dev machines are root); otherwise
# sudo is used when available.
set -euo pipefail

PKGS=(
  build-essential pkg-config clang libclang-rt-14-dev
  libunwind-dev libdw-dev libelf-dev libzstd-dev libcriterion-dev
  valgrind heaptrack python3 python3-dev python3.11-dev python3-torch
  nodejs npm chromium
  liblsan0
  strace
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
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
