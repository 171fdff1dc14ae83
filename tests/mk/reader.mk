# The trace reader, the codec and the `gcspy` CLI basics: unit tests, and the
# trace builder (tests/support) other areas' tests link to make exact traces.
#
# To use the builder: compile with $(GS_TB_CFLAGS), link $(GS_TB_OBJ) -lzstd.

GS_TB_OBJ    := $(BUILD)/obj/tests/support/trace_builder.o
GS_TB_CFLAGS := -Itests/support

$(BUILD)/obj/tests/support/%.o: tests/support/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(GS_TB_CFLAGS) -c -o $@ $<
