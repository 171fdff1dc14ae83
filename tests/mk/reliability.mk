# Reliability and security tests (docs/reliability.md): the shim under
# faults and load, odd programs, the analyzer under bad and huge input,
# fuzzing of the trace reader, and the sanitizer build.
#
#   build/tests/programs/rel_*      programs for the cases (tests/programs/rel_*.c,
#                                   expected outcome at the top of each), run by
#                                   tests/integration/rel_*.sh
#   build/tests/programs/rel_tracecount   exact replay checker for big traces
#   build/tests/programs/rel_mktraces     hand-made traces: hostile strings,
#                                   impossible content, big files
#   build/tests/programs/rel_clitraces    crafted traces of the CLI's
#                                   bounded-answer tests (rel_cli.sh)
#   build/tests/fuzz/fuzz_reader    libFuzzer target: the trace reader
#   build/tests/fuzz/fuzz_analyze   libFuzzer target: reader, replay, reports
#
#   make fuzz   long fuzz run of both targets (FUZZ_SECONDS=600 each), corpus
#               grown in build/tests/fuzz/corpus-*, crashes in build/tests/fuzz/
#   make soak   full-size load tests (SOAK_SECONDS=60: 64 threads for a minute,
#               10M live blocks, 100M events)
#   make asan   analyzer, CLI, unit tests and fuzz regression inputs built with
#               -fsanitize=address,undefined into build-asan/ and run, then the
#               whole integration suite against the sanitized CLI
#
# The fuzz targets need clang and its libFuzzer runtime (libclang-rt-14-dev);
# without them the targets and the CI fuzz test are skipped.

REL_DIR      := $(BUILD)/tests/programs
REL_CFLAGS   := -std=gnu11 -O1 -g -fno-omit-frame-pointer $(WARN) -pthread -Iinclude
REL_SRCS     := $(filter-out tests/programs/rel_tracecount.c tests/programs/rel_mktraces.c \
                  tests/programs/rel_static.c tests/programs/rel_setuid.c \
                  tests/programs/rel_premalloc.c, \
                  $(wildcard tests/programs/rel_*.c))
REL_PROGS    := $(REL_SRCS:tests/programs/%.c=$(REL_DIR)/%)
REL_TOOLS    := $(REL_DIR)/rel_tracecount $(REL_DIR)/rel_mktraces $(REL_DIR)/rel_clitraces
REL_PROGS    := $(filter-out $(REL_TOOLS),$(REL_PROGS))

TEST_DEPS += $(REL_PROGS) $(REL_TOOLS) $(BUILD)/libgcspy.so $(BUILD)/gcspy

.PHONY: rel-programs
rel-programs: $(REL_PROGS) $(REL_TOOLS)

$(REL_PROGS): $(REL_DIR)/%: tests/programs/%.c
	@mkdir -p $(@D)
	$(CC) $(REL_CFLAGS) -o $@ $< -ldl

$(REL_DIR)/rel_mktraces: tests/programs/rel_mktraces.c $(BUILD)/obj/tests/support/trace_builder.o
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests/support -o $@ $(filter %.c %.o,$^) -lzstd

$(REL_DIR)/rel_clitraces: tests/programs/rel_clitraces.c $(BUILD)/obj/tests/support/trace_builder.o
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests/support -o $@ $(filter %.c %.o,$^) -lzstd

$(REL_DIR)/rel_tracecount: tests/programs/rel_tracecount.c $(BUILD)/obj/analyzer/trace_reader.o
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -O2 -o $@ $(filter %.c %.o,$^) -lzstd

# rel_premalloc.so: a malloc of its own, preloaded before the shim.
TEST_DEPS += $(REL_DIR)/rel_premalloc.so
rel-programs: $(REL_DIR)/rel_premalloc.so
$(REL_DIR)/rel_premalloc.so: tests/programs/rel_premalloc.c
	@mkdir -p $(@D)
	$(CC) $(REL_CFLAGS) -fPIC -shared -o $@ $<

# rel_static: -static, so no loader and no LD_PRELOAD. rel_setuid: run
# set-user-ID; rel_setuid_linked links the shim directly (absolute RUNPATH:
# secure mode ignores $ORIGIN) to see it ignore GCSPY_* variables there.
REL_LOADER := $(REL_DIR)/rel_static $(REL_DIR)/rel_setuid $(REL_DIR)/rel_setuid_linked
TEST_DEPS += $(REL_LOADER)
rel-programs: $(REL_LOADER)

$(REL_DIR)/rel_static: tests/programs/rel_static.c
	@mkdir -p $(@D)
	$(CC) $(REL_CFLAGS) -static -o $@ $<

$(REL_DIR)/rel_setuid: tests/programs/rel_setuid.c
	@mkdir -p $(@D)
	$(CC) $(REL_CFLAGS) -o $@ $<

$(REL_DIR)/rel_setuid_linked: tests/programs/rel_setuid.c $(BUILD)/libgcspy.so
	@mkdir -p $(@D)
	$(CC) $(REL_CFLAGS) -o $@ $< -Wl,--no-as-needed -L$(BUILD) -lgcspy -Wl,-rpath,$(abspath $(BUILD))

# ---- fuzzing (clang + libFuzzer) ----
# The targets compile the analyzer's sources themselves, with coverage
# instrumentation and ASan+UBSan (-fsanitize-recover=undefined, so known
# UBSan findings can be suppressed in long runs: tests/fuzz/known.supp).
FUZZ_DIR    := $(BUILD)/tests/fuzz
FUZZ_CC     ?= clang
FUZZ_FLAGS  := -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fsanitize-recover=undefined \
               -fno-omit-frame-pointer -DGCSPY_VERSION='"$(VERSION)"' -Iinclude -Ianalyzer -Itests/fuzz
FUZZ_AN_SRCS := $(GS_ANALYZER_SRCS)
HAVE_FUZZ   := $(shell echo 'int LLVMFuzzerTestOneInput(const char *d, long n){(void)d;(void)n;return 0;}' | \
                 $(FUZZ_CC) -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null && echo 1)
FUZZ_SECONDS ?= 600
FUZZ_JOBS    ?= 1
FUZZ_KNOWN   ?=
FUZZ_RUN_ENV := GCSPY_FUZZ_KNOWN=$(FUZZ_KNOWN) \
                UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=$(abspath tests/fuzz/known.supp) \
                ASAN_OPTIONS=detect_leaks=1
FUZZ_TARGETS := $(FUZZ_DIR)/fuzz_reader $(FUZZ_DIR)/fuzz_analyze

ifeq ($(HAVE_FUZZ),1)
TEST_DEPS += $(FUZZ_TARGETS)
endif
TEST_DEPS += $(FUZZ_DIR)/fuzz_plain

$(FUZZ_DIR)/fuzz_reader: tests/fuzz/fuzz_reader.c tests/fuzz/fuzz_common.h analyzer/trace_reader.c \
                         analyzer/trace_reader.h include/gcspy/codec.h include/gcspy/trace_format.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_reader.c analyzer/trace_reader.c -lzstd

$(FUZZ_DIR)/fuzz_analyze: tests/fuzz/fuzz_analyze.c tests/fuzz/fuzz_common.h $(FUZZ_AN_SRCS) \
                          $(wildcard analyzer/*.h reports/*.h) $(HTML_PAGE_H)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) $(if $(HTML_PAGE_H),-I$(dir $(HTML_PAGE_H))) -o $@ \
	    tests/fuzz/fuzz_analyze.c $(FUZZ_AN_SRCS) $(GS_ANALYZER_LIBS)

# Rewrites a trace with uncompressed chunks (the corpus's twins).
$(FUZZ_DIR)/fuzz_plain: tests/fuzz/fuzz_plain.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ $< -lzstd

# make fuzz: each target for FUZZ_SECONDS on the seed corpus plus what earlier
# runs found (build/tests/fuzz/corpus-*); findings land in build/tests/fuzz/
# as crash-*/oom-*/timeout-*: minimise one with
#   build/tests/fuzz/fuzz_reader -minimize_crash=1 -runs=10000 FILE
# and keep it in tests/fuzz/regressions/ once understood.
.PHONY: fuzz fuzz-regressions
fuzz: $(if $(filter 1,$(HAVE_FUZZ)),$(FUZZ_TARGETS))
	@[ "$(HAVE_FUZZ)" = 1 ] || { echo "make fuzz: needs clang with libFuzzer (libclang-rt-14-dev)"; exit 2; }
	@found=0; for t in fuzz_reader fuzz_analyze; do \
	  mkdir -p $(FUZZ_DIR)/corpus-$$t; \
	  echo "== $$t: $(FUZZ_SECONDS) s, $(FUZZ_JOBS) job(s), log $(FUZZ_DIR)/$$t.log"; \
	  ( cd $(FUZZ_DIR) && $(FUZZ_RUN_ENV) ./$$t -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
	      -rss_limit_mb=2048 -timeout=20 $(if $(filter-out 1,$(FUZZ_JOBS)),-jobs=$(FUZZ_JOBS) -workers=$(FUZZ_JOBS)) \
	      -print_final_stats=1 corpus-$$t $(abspath tests/fuzz/corpus) >$$t.log 2>&1 ) || found=1; \
	  cat $(FUZZ_DIR)/$$t.log $(if $(filter-out 1,$(FUZZ_JOBS)),$(FUZZ_DIR)/fuzz-*.log) | \
	    grep -aE '^(stat::number_of_executed_units|stat::peak_rss_mb|INFO: seed corpus|SUMMARY)|^#[0-9]+.*DONE' || true; \
	done; \
	ls $(FUZZ_DIR)/crash-* $(FUZZ_DIR)/oom-* $(FUZZ_DIR)/timeout-* $(FUZZ_DIR)/leak-* 2>/dev/null; \
	if [ $$found = 1 ]; then echo "make fuzz: findings above"; exit 1; fi; echo "make fuzz: no findings"

# The regression inputs, replayed by each target with every check on and
# the same time limit per input as make fuzz (a hang is a finding).
fuzz-regressions: $(if $(filter 1,$(HAVE_FUZZ)),$(FUZZ_TARGETS))
	@for t in $(FUZZ_TARGETS); do UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 $$t -timeout=20 tests/fuzz/regressions/* || exit 1; done

# ---- make asan ----
# 1. The analyzer, the CLI and the unit tests built into build-asan/ with
#    ASan+UBSan (every UBSan finding fatal), by this Makefile run again with
#    BUILD=build-asan (the shim itself is not: it is preloaded into
#    programs that have no ASan runtime; its core is, inside unit_core).
# 2. The unit tests run, then the fuzz regression inputs and the seed
#    corpus through the sanitized CLI (dump, report in every format, check).
# 3. The whole integration suite run in build-asan/tree: a view of the
#    repository whose build/ is the normal build with gcspy replaced by the
#    sanitized one, so every script that runs build/gcspy runs it under ASan
#    (leaks included: LeakSanitizer exits non-zero).
ASAN_BUILD := build-asan
ASAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
ASAN_UNITS := unit_codec unit_reader unit_analyzer unit_core

.PHONY: asan asan-build
asan-build: all $(TEST_DEPS)
	$(MAKE) --no-print-directory -j2 BUILD=$(ASAN_BUILD) EXTRA_CFLAGS="$(ASAN_FLAGS)" \
	    $(ASAN_BUILD)/gcspy $(addprefix $(ASAN_BUILD)/tests/,$(ASAN_UNITS))

asan: asan-build
	@bash tests/fuzz/asan-run.sh $(ASAN_BUILD) $(ASAN_UNITS)

# ---- make soak ----
# tests/integration/rel_load.sh at full size: 64 threads for SOAK_SECONDS
# with scans every 200 ms and threads ending and starting throughout,
# SOAK_LIVE blocks live at once, SOAK_EVENTS events, every count exact.
SOAK_SECONDS ?= 60
SOAK_THREADS ?= 64
SOAK_LIVE    ?= 10000000
SOAK_EVENTS  ?= 100000000
.PHONY: soak
soak: $(REL_PROGS) $(REL_TOOLS) $(BUILD)/libgcspy.so $(BUILD)/gcspy
	REL_THREADS=$(SOAK_THREADS) REL_SECONDS=$(SOAK_SECONDS) REL_LIVE=$(SOAK_LIVE) \
	REL_EVENTS=$(SOAK_EVENTS) bash tests/integration/rel_load.sh
