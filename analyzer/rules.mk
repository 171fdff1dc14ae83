# The `gcspy` CLI: every analyzer/*.c and reports/*.c file, so new files join
# the build by existing. analyzer/cli.c holds main(); everything else is also
# available to tests as $(GS_ANALYZER_LIB_OBJS) (link with $(GS_ANALYZER_LIBS)).

GS_ANALYZER_SRCS := $(sort $(wildcard analyzer/*.c) $(wildcard reports/*.c))
GS_ANALYZER_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(GS_ANALYZER_SRCS))
GS_ANALYZER_LIB_OBJS := $(filter-out $(BUILD)/obj/analyzer/cli.o,$(GS_ANALYZER_OBJS))
GS_ANALYZER_LIBS := -lzstd -ldw -lelf -lm

all: $(BUILD)/gcspy

$(BUILD)/gcspy: $(GS_ANALYZER_OBJS)
	$(CC) $(ALL_CFLAGS) -o $@ $(filter %.o,$^) $(GS_ANALYZER_LIBS)

$(BUILD)/obj/analyzer/%.o: analyzer/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/obj/reports/%.o: reports/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<
