# Test suite. `make test` builds every test artifact, then scripts/run-tests.sh
# runs them all and prints one closing line "N passed, N failed, N skipped".
#
# Each area adds a file tests/mk/<area>.mk that
#   - appends Criterion unit-test binaries to TEST_BINS (build/tests/unit_<name>),
#   - appends other things the integration scripts need to TEST_DEPS,
# and puts integration scripts in tests/integration/*.sh (exit 0 = pass,
# 77 = skipped with a reason on stdout, anything else = fail).

TEST_BINS :=
TEST_DEPS :=
CRITERION_LIBS := -lcriterion

include $(sort $(wildcard tests/mk/*.mk))

.PHONY: test test-build
test-build: all $(TEST_BINS) $(TEST_DEPS)

test:
	@bash scripts/install-deps.sh
	@$(MAKE) --no-print-directory -j2 test-build
	@bash scripts/run-tests.sh $(TEST_BINS)
