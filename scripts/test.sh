#!/usr/bin/env bash
# README's test command, and what CI runs (.ci/run): the whole test suite on a
# machine that may have nothing but bash and apt. Installs the Debian and npm
# dependencies first (scripts/install-deps.sh: make itself is one of them),
# then runs `make test` (build everything, then scripts/run-tests.sh, whose
# last lines say which Debian roots ran and "N passed, N failed, N skipped").
# Exit status: make test's (0 when nothing failed).
set -u
cd "$(dirname "$0")/.." || exit 2
bash scripts/install-deps.sh || { echo "test: scripts/install-deps.sh failed" >&2; exit 1; }
exec make --no-print-directory test
