# Allocation stacks (tests/integration/stack_walk.sh): small programs whose
# stacks go through code without frame pointers (the system's libstdc++,
# hand-written assembly that leaves garbage in rbp). Built like the shim's
# test programs (-O1 -g, frame pointers kept in their own code).

STACK_PROG_DIR := $(BUILD)/tests/programs
STACK_PROGS    := $(STACK_PROG_DIR)/stack_cxx_new $(STACK_PROG_DIR)/stack_garbage \
                  $(STACK_PROG_DIR)/stack_reload $(STACK_PROG_DIR)/libstack_reload_a.so \
                  $(STACK_PROG_DIR)/libstack_reload_b.so

TEST_DEPS += $(STACK_PROGS)

$(STACK_PROG_DIR)/stack_cxx_new: tests/programs/stack_cxx_new.cpp
	@mkdir -p $(@D)
	$(CXX) -std=gnu++17 -O1 -g -fno-omit-frame-pointer $(WARN) -o $@ $<

$(STACK_PROG_DIR)/stack_garbage: tests/programs/stack_garbage.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O1 -g -fno-omit-frame-pointer $(WARN) -o $@ $<

$(STACK_PROG_DIR)/stack_reload: tests/programs/stack_reload.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O1 -g -fno-omit-frame-pointer $(WARN) -o $@ $< -ldl

# The library twice, its frame PAD bytes apart (stack_reload_lib.c says why),
# without frame pointers: its unwind rule comes from .eh_frame.
STACK_RELOAD_PAD_a := 200
STACK_RELOAD_PAD_b := 4000
$(STACK_PROG_DIR)/libstack_reload_%.so: tests/programs/stack_reload_lib.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g -fomit-frame-pointer -fPIC -shared -DPAD=$(STACK_RELOAD_PAD_$*) $(WARN) -o $@ $<
