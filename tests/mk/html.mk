# The HTML report (reports/html.c, reports/web/), tested in Debian's chromium
# driven by playwright-core (reports/web/package.json's devDependency):
#   build/tests/html/planted     tests/browser/planted.c: known leaks, growth,
#                                holes and markers, run under the shim
#   build/tests/html/mkdevtrace  tests/browser/mkdevtrace.c: a synthetic
#                                PyTorch-like GPU trace (trace builder)
# The scripts are tests/integration/html_*.sh; the browser checks are
# tests/browser/check_report.mjs. Screenshots go to build/test-artifacts/html/.

HTML_TEST_DIR := $(BUILD)/tests/html

TEST_DEPS += $(HTML_TEST_DIR)/planted $(HTML_TEST_DIR)/mkdevtrace $(HTML_NPM_STAMP) \
             $(BUILD)/gcspy $(BUILD)/libgcspy.so

# -O0 -g with frame pointers: the functions are the symbolized allocation
# sites, at the lines of their malloc calls
$(HTML_TEST_DIR)/planted: tests/browser/planted.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O0 -g -fno-omit-frame-pointer $(WARN) -Iinclude -o $@ $< -ldl

$(HTML_TEST_DIR)/mkdevtrace: tests/browser/mkdevtrace.c $(BUILD)/obj/tests/support/trace_builder.o
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests/support -o $@ $(filter %.c %.o,$^) -lzstd
