# Tests of the shim (libgcspy.so): the core unit tests (tests/unit/test_core.c,
# linked with libgcspy_core.a and the trace reader) and the small programs the
# tests/integration/shim_*.sh scripts run under LD_PRELOAD.
#
# Programs are built -O1 -g with frame pointers, like the code the fp unwinder
# is meant for; each states its expected outcome in a comment at its top.
# shim_dlopen loads libshim_dlib.so from its own directory ($ORIGIN-free:
# the script passes the path).

SHIM_PROG_DIR    := $(BUILD)/tests/programs
SHIM_PROG_CFLAGS := -std=gnu11 -O1 -g -fno-omit-frame-pointer $(WARN) -pthread
SHIM_PROG_CXXFLAGS := -std=gnu++17 -O1 -g -fno-omit-frame-pointer $(WARN) -pthread
SHIM_C_PROGS     := pairs families fork exec signals thread_exit dlopen threads stdio exits unwind \
                    reopen dlsym_cuda
SHIM_PROGS       := $(SHIM_C_PROGS:%=$(SHIM_PROG_DIR)/shim_%) $(SHIM_PROG_DIR)/shim_cxx \
                    $(SHIM_PROG_DIR)/libshim_dlib.so $(SHIM_PROG_DIR)/shim_dlsym \
                    $(SHIM_PROG_DIR)/libshim_dlnext.so

TEST_BINS += $(BUILD)/tests/unit_core
TEST_DEPS += $(SHIM_PROGS) $(BUILD)/libgcspy.so $(BUILD)/gcspy

$(BUILD)/tests/unit_core: tests/unit/test_core.c $(BUILD)/libgcspy_core.a \
                          $(BUILD)/obj/analyzer/trace_reader.o
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Ipreload -o $@ $< $(BUILD)/libgcspy_core.a \
	    $(BUILD)/obj/analyzer/trace_reader.o $(CRITERION_LIBS) -lzstd -lunwind -lpthread -ldl

$(SHIM_C_PROGS:%=$(SHIM_PROG_DIR)/shim_%): $(SHIM_PROG_DIR)/shim_%: tests/programs/shim_%.c
	@mkdir -p $(@D)
	$(CC) $(SHIM_PROG_CFLAGS) -o $@ $< -ldl

$(SHIM_PROG_DIR)/shim_cxx: tests/programs/shim_cxx.cpp
	@mkdir -p $(@D)
	$(CXX) $(SHIM_PROG_CXXFLAGS) -o $@ $<

$(SHIM_PROG_DIR)/libshim_dlib.so: tests/programs/shim_dlib.c
	@mkdir -p $(@D)
	$(CC) $(SHIM_PROG_CFLAGS) -fPIC -shared -o $@ $<

# shim_dlsym links libshim_dlnext.so (found through RUNPATH $ORIGIN): its
# RTLD_NEXT lookups must be resolved after it, in the global scope.
$(SHIM_PROG_DIR)/libshim_dlnext.so: tests/programs/shim_dlnext.c
	@mkdir -p $(@D)
	$(CC) $(SHIM_PROG_CFLAGS) -fPIC -shared -o $@ $< -ldl

$(SHIM_PROG_DIR)/shim_dlsym: tests/programs/shim_dlsym.c $(SHIM_PROG_DIR)/libshim_dlnext.so
	@mkdir -p $(@D)
	$(CC) $(SHIM_PROG_CFLAGS) -o $@ $< -L$(SHIM_PROG_DIR) -lshim_dlnext \
	    -Wl,-rpath,'$$ORIGIN' -ldl
