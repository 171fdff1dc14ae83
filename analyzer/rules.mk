# The `gcspy` CLI and the library under it. Files join the build by existing:
#
#   GS_CLI_SRCS       analyzer/cli/*.c: main() (cli.c) and the commands, the
#                     only code that sees both the analyzer and the reporters
#   GS_ANALYZER_SRCS  the library: analyzer/*.c (the reader, the replay, the
#                     analyses) and reports/*.c (the reporters); tests link
#                     $(GS_ANALYZER_LIB_OBJS) with $(GS_ANALYZER_LIBS)
#
# CLI objects find the CLI's headers (commands.h) in analyzer/cli/.

GS_CLI_SRCS := $(sort $(wildcard analyzer/cli/*.c))
GS_ANALYZER_SRCS := $(filter-out $(GS_CLI_SRCS),$(sort $(wildcard analyzer/*.c) $(wildcard reports/*.c)))
GS_ANALYZER_LIB_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(GS_ANALYZER_SRCS))
GS_CLI_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(GS_CLI_SRCS))
GS_ANALYZER_OBJS := $(GS_ANALYZER_LIB_OBJS) $(GS_CLI_OBJS)
GS_ANALYZER_LIBS := -lzstd -ldw -lelf -lm -pthread

all: $(BUILD)/gcspy

$(BUILD)/gcspy: $(GS_ANALYZER_OBJS)
	$(CC) $(ALL_CFLAGS) -o $@ $(filter %.o,$^) $(GS_ANALYZER_LIBS)

$(GS_CLI_OBJS): ALL_CFLAGS += -Ianalyzer/cli

$(BUILD)/obj/analyzer/%.o: analyzer/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/obj/reports/%.o: reports/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<
