# gcspy — build, test, benchmark.
#
# On a machine without make (a stock Debian 12): bash scripts/demo.sh, or
# bash scripts/test.sh (README's two commands) install it with the rest.
#
#   make            build everything (libgcspy.so, the gcspy CLI, CUDA parts if found)
#   make demo       install what is missing, build, run examples/train.py under gcspy, report
#   make test       the whole test suite (.ci/run: scripts/test.sh, which installs make first)
#   make bench      benchmarks, printed as ratios against peers measured in the same run
#   make asan       analyzer, CLI and unit tests built and run with ASan+UBSan
#   make fuzz       long fuzz runs of the reader and of the analysis with every reporter, HTML included (FUZZ_SECONDS=600 each, -timeout=20 per input)
#   make soak       long load tests of the shim (SOAK_SECONDS=60)
#   make install PREFIX=/usr/local    bin/, lib/, include/
#   make readme-options                 regenerate README.md's option table
#   make clean
#
# Each directory adds its own targets in its rules.mk; this file holds the
# shared flags. Objects go under build/ (build-asan/ for the sanitizer build).

CC        ?= gcc
CXX       ?= g++
PREFIX    ?= /usr/local
BUILD     ?= build
CUDA_HOME ?= /usr/local/cuda
PYTHON    ?= /usr/bin/python3
VERSION   := 0.1.0

WARN      := -Wall -Wextra -Werror
CFLAGS_BASE := -std=gnu11 -g -O2 $(WARN) -Iinclude -Ianalyzer -MMD -MP \
               -DGCSPY_VERSION='"$(VERSION)"' $(EXTRA_CFLAGS)
CFLAGS    ?=
ALL_CFLAGS := $(CFLAGS_BASE) $(CFLAGS)

HAVE_CUDA := $(shell test -f $(CUDA_HOME)/include/cuda_runtime.h && echo 1)

.PHONY: all demo test bench asan fuzz soak install clean deps
all:

deps:
	@bash scripts/install-deps.sh

include preload/rules.mk
include analyzer/rules.mk
-include reports/rules.mk
-include cupti/rules.mk
include tests/rules.mk
-include bench/rules.mk

ifneq ($(HAVE_CUDA),1)
$(info gcspy: no CUDA toolkit at $(CUDA_HOME): CUDA parts skipped)
endif

demo:
	@bash scripts/demo.sh

# README.md's option table, regenerated from include/gcspy/options.def.
.PHONY: readme-options
readme-options: $(BUILD)/gcspy
	@$(BUILD)/gcspy options --markdown > $(BUILD)/options.md
	@awk -v f=$(BUILD)/options.md '/<!-- options:begin -->/{print; while ((getline l < f) > 0) print l; skip=1; next} /<!-- options:end -->/{skip=0} !skip' README.md > $(BUILD)/README.md && mv $(BUILD)/README.md README.md

# docs/trace-format.md's record reference, enumerations and dump table,
# regenerated from include/gcspy/records.def and enums.def.
.PHONY: docs-records
docs-records: $(BUILD)/tests/records_md
	@BUILD=$(BUILD) bash scripts/docs-records.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/gcspy $(DESTDIR)$(PREFIX)/include/gcspy
	install -m 755 $(BUILD)/gcspy $(DESTDIR)$(PREFIX)/bin/gcspy
	install -m 755 $(BUILD)/libgcspy.so $(DESTDIR)$(PREFIX)/lib/gcspy/libgcspy.so
	for f in $(BUILD)/libgcspy_cupti.so; do [ -f $$f ] && install -m 755 $$f $(DESTDIR)$(PREFIX)/lib/gcspy/ || true; done
	install -m 644 include/gcspy.h $(DESTDIR)$(PREFIX)/include/gcspy.h
	install -m 644 include/gcspy/*.h include/gcspy/*.def $(DESTDIR)$(PREFIX)/include/gcspy/

clean:
	rm -rf build build-asan

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
