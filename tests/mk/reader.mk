# The trace reader, the codec and the `gcspy` CLI basics: unit tests, the
# trace builder (tests/support) other areas' tests link to make exact traces,
# and build/tests/mktrace, which writes builder-made traces for scripts.
#
# To use the builder: compile with $(GS_TB_CFLAGS), link $(GS_TB_OBJ) -lzstd.

GS_TB_OBJ    := $(BUILD)/obj/tests/support/trace_builder.o
GS_TB_CFLAGS := -Itests/support

TEST_BINS += $(BUILD)/tests/unit_codec $(BUILD)/tests/unit_reader
TEST_DEPS += $(BUILD)/tests/mktrace $(BUILD)/gcspy

$(BUILD)/obj/tests/support/%.o: tests/support/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(GS_TB_CFLAGS) -c -o $@ $<

$(BUILD)/tests/unit_codec: tests/unit/test_codec.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ $(filter %.c,$^) $(CRITERION_LIBS)

$(BUILD)/tests/unit_reader: tests/unit/test_reader.c $(GS_TB_OBJ) $(BUILD)/obj/analyzer/trace_reader.o
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(GS_TB_CFLAGS) -o $@ $(filter %.c %.o,$^) $(CRITERION_LIBS) -lzstd

$(BUILD)/tests/mktrace: $(BUILD)/obj/tests/support/mktrace.o $(GS_TB_OBJ)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ $(filter %.o,$^) -lzstd

# What records.def generates: every record through its encoder and the decoder.
TEST_BINS += $(BUILD)/tests/unit_records

$(BUILD)/tests/unit_records: tests/unit/test_records.c $(GS_TB_OBJ) $(BUILD)/obj/analyzer/trace_reader.o
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(GS_TB_CFLAGS) -o $@ $(filter %.c %.o,$^) $(CRITERION_LIBS) -lzstd

# The parts of docs/trace-format.md generated from records.def and enums.def
# (`make docs-records`; tests/integration/docs_records.sh checks them).
TEST_DEPS += $(BUILD)/tests/records_md

$(BUILD)/tests/records_md: tests/support/records_md.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ $<
