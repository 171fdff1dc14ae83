# Benchmarks. `make bench` builds the shim, the CLI and the bench programs,
# then bench/run-bench.sh measures gcspy against bare runs and its peers
# (heaptrack, valgrind memcheck, LeakSanitizer) in one run and prints the
# ratios (docs/benchmarks.md), bench/roots-bench.sh the Debian roots'
# Python and PyTorch stacks, bench/scan-bench.sh the leak scan; bench/hotpath-profile.sh counts the shim's
# instructions per malloc/free pair by stage. BENCH_QUICK=1 uses small sizes, BENCH_RUNS=N
# sets how many runs each median takes.
#
# The bench programs keep frame pointers so gcspy's default unwinder (fp)
# records their full call depth, as the spec's churn workload requires.

BENCH_PROGS := $(BUILD)/bench/churn $(BUILD)/bench/zstd_levels

$(BUILD)/bench/churn: bench/churn.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fno-omit-frame-pointer -pthread $< -o $@

# The writer's compression at each zstd level, replayed on a trace's chunks.
$(BUILD)/bench/zstd_levels: bench/zstd_levels.c $(GS_ANALYZER_LIB_OBJS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(GS_ANALYZER_LIB_OBJS) $(GS_ANALYZER_LIBS)

.PHONY: bench-progs
bench-progs: $(BENCH_PROGS)

# The memory row runs tests/programs/rel_load (tests/mk/reliability.mk).
# bench/targets.sh, last, puts issue 16's targets beside what the others
# measured (each writes its figures to $(BUILD)/bench/metrics).
bench: $(BUILD)/libgcspy.so $(BUILD)/gcspy $(BENCH_PROGS) $(BUILD)/tests/programs/rel_load
	@BUILD=$(BUILD) PYTHON=$(PYTHON) bash bench/run-bench.sh
	@BUILD=$(BUILD) bash bench/roots-bench.sh
	@BUILD=$(BUILD) bash bench/scan-bench.sh
	@BUILD=$(BUILD) bash bench/hotpath-profile.sh; [ $$? -ne 2 ]
	@BUILD=$(BUILD) bash bench/targets.sh

# Job-scale figures (bench/job-bench.sh, docs/jobs.md): merging summaries, -j.
.PHONY: bench-job
bench-job: $(BUILD)/gcspy $(BUILD)/libgcspy.so $(BUILD)/tests/programs/job_rank
	@BUILD=$(BUILD) bash bench/job-bench.sh

bench: bench-job
