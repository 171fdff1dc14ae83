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
                  tests/programs/rel_static.c tests/programs/rel_setuid.c, \
                  $(wildcard tests/programs/rel_*.c))
REL_PROGS    := $(REL_SRCS:tests/programs/%.c=$(REL_DIR)/%)
REL_TOOLS    := $(REL_DIR)/rel_tracecount $(REL_DIR)/rel_mktraces

TEST_DEPS += $(REL_PROGS) $(REL_TOOLS) $(BUILD)/libgcspy.so $(BUILD)/gcspy

.PHONY: rel-programs
rel-programs: $(REL_PROGS) $(REL_TOOLS)

$(REL_PROGS): $(REL_DIR)/%: tests/programs/%.c
	@mkdir -p $(@D)
	$(CC) $(REL_CFLAGS) -o $@ $< -ldl

$(REL_DIR)/rel_mktraces: tests/programs/rel_mktraces.c $(BUILD)/obj/tests/support/trace_builder.o
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests/support -o $@ $(filter %.c %.o,$^) -lzstd

$(REL_DIR)/rel_tracecount: tests/programs/rel_tracecount.c $(BUILD)/obj/analyzer/trace_reader.o
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -O2 -o $@ $(filter %.c %.o,$^) -lzstd

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
