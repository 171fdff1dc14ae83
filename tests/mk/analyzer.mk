# The offline analyzer, the reporters and `gcspy report`/`gcspy check`:
#   build/tests/unit_analyzer      Criterion unit tests (tests/unit/test_analyzer*.c),
#                                  on traces built in memory with the trace builder
#   build/tests/analyzer_mktraces  writes the hand-built golden traces
#                                  (tests/golden/mktraces.c, -O0 -g: its own
#                                  functions are the symbolized allocation sites)
#   build/tests/programs/analyzer_* small programs run under the shim by
#                                  tests/integration/analyzer_real.sh
# The integration scripts are tests/integration/analyzer_*.sh; expected JSON
# lives in tests/golden/ (UPDATE_GOLDEN=1 rewrites it).

AN_TB_OBJ := $(BUILD)/obj/tests/support/trace_builder.o
AN_PROG_DIR := $(BUILD)/tests/programs
AN_PROGS := $(AN_PROG_DIR)/analyzer_leaky $(AN_PROG_DIR)/analyzer_grow

TEST_BINS += $(BUILD)/tests/unit_analyzer
TEST_DEPS += $(BUILD)/tests/analyzer_mktraces $(BUILD)/gcspy $(AN_PROGS)

# the library objects, and the CLI's option parsing helpers (cmdutil.c)
AN_LIB_OBJS := $(GS_ANALYZER_LIB_OBJS) $(BUILD)/obj/analyzer/cli/cmdutil.o

$(BUILD)/tests/unit_analyzer: $(sort $(wildcard tests/unit/test_analyzer*.c)) $(AN_TB_OBJ) \
                              $(AN_LIB_OBJS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests/support -o $@ $(filter %.c %.o,$^) $(CRITERION_LIBS) \
	    $(GS_ANALYZER_LIBS)

$(BUILD)/tests/analyzer_mktraces: tests/golden/mktraces.c $(AN_TB_OBJ)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O0 -g $(WARN) -Iinclude -Itests/support -o $@ $(filter %.c %.o,$^) -lzstd

$(AN_PROG_DIR)/analyzer_%: tests/programs/analyzer_%.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O0 -g -fno-omit-frame-pointer $(WARN) -Iinclude -o $@ $< -ldl

include bench/analyzer_bench.mk
