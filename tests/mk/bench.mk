# The bench program the integration tests run (tests/integration/bench_smoke.sh).
# Named literally: bench/rules.mk, which defines its rule, is included after
# this file, and TEST_DEPS is a simple variable.
TEST_DEPS += $(BUILD)/bench/churn
