# The leak scanner's correctness suite: one small program per case
# (tests/programs/leak_*.c, leak_*.cpp), each with its expected scan results
# written at its top, and the shared libraries some cases dlopen
# (tests/programs/leak_lib*.c). tests/integration/leaks.sh runs them under the
# shim and under valgrind and compares.
#
# Built -O1 -g with frame pointers. -O1 matters: the cases keep pointers out
# of dead stack slots and registers on purpose (noinline helpers, a stack
# clobber), which -O0 would undo by spilling every local. Programs find their
# libraries through RUNPATH $ORIGIN, so they run from any directory and under
# valgrind alike.

LEAK_DIR      := $(BUILD)/tests/leaks
LEAK_CFLAGS   := -std=gnu11 -O1 -g -fno-omit-frame-pointer $(WARN) -pthread -Iinclude
LEAK_CXXFLAGS := -std=gnu++17 -O1 -g -fno-omit-frame-pointer $(WARN) -pthread -Iinclude
LEAK_LDFLAGS  := -Wl,-rpath,'$$ORIGIN' -ldl

LEAK_LIB_SRCS := $(wildcard tests/programs/leak_lib*.c)
LEAK_C_SRCS   := $(filter-out $(LEAK_LIB_SRCS),$(wildcard tests/programs/leak_*.c))
LEAK_CXX_SRCS := $(wildcard tests/programs/leak_*.cpp)
LEAK_PROGS    := $(LEAK_C_SRCS:tests/programs/%.c=$(LEAK_DIR)/%) \
                 $(LEAK_CXX_SRCS:tests/programs/%.cpp=$(LEAK_DIR)/%)
LEAK_LIBS     := $(LEAK_LIB_SRCS:tests/programs/%.c=$(LEAK_DIR)/%.so)

TEST_DEPS += $(LEAK_PROGS) $(LEAK_LIBS) $(BUILD)/libgcspy.so $(BUILD)/gcspy

.PHONY: leak-cases
leak-cases: $(LEAK_PROGS) $(LEAK_LIBS)

$(LEAK_C_SRCS:tests/programs/%.c=$(LEAK_DIR)/%): $(LEAK_DIR)/%: tests/programs/%.c
	@mkdir -p $(@D)
	$(CC) $(LEAK_CFLAGS) -o $@ $< $(LEAK_LDFLAGS)

$(LEAK_CXX_SRCS:tests/programs/%.cpp=$(LEAK_DIR)/%): $(LEAK_DIR)/%: tests/programs/%.cpp
	@mkdir -p $(@D)
	$(CXX) $(LEAK_CXXFLAGS) -o $@ $< $(LEAK_LDFLAGS)

$(LEAK_LIBS): $(LEAK_DIR)/%.so: tests/programs/%.c
	@mkdir -p $(@D)
	$(CC) $(LEAK_CFLAGS) -fPIC -shared -o $@ $<
