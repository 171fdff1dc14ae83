# The analyzer's benchmark (bench/analyzer_bench.sh): throughput of
# `gcspy report` on a large synthetic trace (bench/analyzer_bench.c writes
# it), peak memory, and heaptrack_print on a heaptrack recording of a
# comparable workload, measured in the same run. Included from
# tests/mk/analyzer.mk; `make bench` runs it through the bench-analyzer
# prerequisite, `make bench-analyzer` alone.

AN_BENCH_GEN := $(BUILD)/bench/analyzer_bench

$(AN_BENCH_GEN): bench/analyzer_bench.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ $< -lzstd

.PHONY: bench-analyzer
bench-analyzer: $(AN_BENCH_GEN) $(BUILD)/gcspy
	@BUILD=$(BUILD) bash bench/analyzer_bench.sh

bench: bench-analyzer
