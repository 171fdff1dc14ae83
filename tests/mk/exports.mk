# The exports and site views (docs/exports.md): tests/integration/exports.sh
# runs build/tests/programs/analyzer_exports (tests/programs/analyzer_exports.c,
# built by analyzer.mk's analyzer_% rule) under the shim and reads its
# pprof, collapsed, peak, temporary and diff outputs back.
TEST_DEPS += $(AN_PROG_DIR)/analyzer_exports
