#!/usr/bin/env bash
# docs/trace-format.md's record reference, enumerations and dump table are
# generated from include/gcspy/records.def and enums.def: they must be
# exactly what build/tests/records_md prints (regenerate with
# `make docs-records`).
set -eu
cd "$(dirname "$0")/../.."
bash scripts/docs-records.sh --check
