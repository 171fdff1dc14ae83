# The CUDA test double and the CUDA test programs (only with a CUDA toolkit).
#
# $(BUILD)/cuda_double/ holds libcuda.so.1 and libcudart.so.13 (and their
# libcuda.so / libcudart.so links): libraries with the real sonames, symbol
# versions and prototypes whose device memory is an inaccessible address
# range (tests/cuda_double/README.md). The programs in tests/programs/cuda_*
# link against them with a RUNPATH pointing there, so they run on the double
# with no environment set; cuda_three_reallink is cuda_three linked against
# the toolkit's real libcudart instead (it checks the two are
# interchangeable). tests/integration/cuda_double_selftest.sh runs them all.
#
# To build a program of your own against the double, see $(GS_CD_PROG_LDFLAGS).

ifeq ($(HAVE_CUDA),1)

GS_CD_DIR  := $(BUILD)/cuda_double
GS_CD_PROG := $(BUILD)/tests/programs
GS_CD_CFLAGS := $(ALL_CFLAGS) -fPIC -isystem $(CUDA_HOME)/include -D__CUDA_API_VERSION_INTERNAL
GS_CD_DRIVER_OBJS  := $(patsubst %,$(GS_CD_DIR)/obj/%.o,devmem vmm context core cuda drvtable helper)
GS_CD_RUNTIME_OBJS := $(patsubst %,$(GS_CD_DIR)/obj/%.o,cudart cudart_errors)
GS_CD_LIBS := $(GS_CD_DIR)/libcuda.so.1 $(GS_CD_DIR)/libcuda.so \
              $(GS_CD_DIR)/libcudart.so.13 $(GS_CD_DIR)/libcudart.so

# Programs: frame pointers (gcspy unwinds by them by default), headers from
# the toolkit, libraries from the double, found at
# run time through RUNPATH ($ORIGIN-relative, so the tree can move).
GS_CD_PROG_CFLAGS   := -fno-omit-frame-pointer -isystem $(CUDA_HOME)/include -Itests/cuda_double
GS_CD_PROG_LDFLAGS  := -L$(GS_CD_DIR) -Wl,--enable-new-dtags -Wl,-rpath,'$$ORIGIN/../../cuda_double'
GS_CD_CXXFLAGS      := -std=gnu++17 -g -O2 -Wall -Wextra -Werror -MMD -MP
GS_CD_RT_PROGS  := cuda_three cuda_kept_pinned cuda_kept_thread cuda_pinned_leak cuda_pinned_dlopen \
                   cuda_managed_keep cuda_pinned_gone \
                   cuda_entry_points \
                   cuda_fault cuda_sync
GS_CD_DRV_PROGS := cuda_async_vmm cuda_oom cuda_driver cuda_driver_api cuda_api cuda_stress cuda_hidden \
                   cuda_ctx_teardown
GS_CD_CXX_PROGS := cuda_kept_heap
GS_CD_PROGS := $(addprefix $(GS_CD_PROG)/,$(GS_CD_RT_PROGS) $(GS_CD_DRV_PROGS) $(GS_CD_CXX_PROGS))

# The ABI check needs the toolkit's own libcudart to link against.
GS_CD_REALLINK := $(if $(wildcard $(CUDA_HOME)/lib64/libcudart.so),$(GS_CD_PROG)/cuda_three_reallink)

TEST_DEPS += $(GS_CD_LIBS) $(GS_CD_PROGS) $(GS_CD_REALLINK)

.PHONY: cuda-double
cuda-double: $(GS_CD_LIBS) $(GS_CD_PROGS) $(GS_CD_REALLINK)

$(GS_CD_DRIVER_OBJS) $(GS_CD_RUNTIME_OBJS): $(GS_CD_DIR)/obj/%.o: tests/cuda_double/%.c
	@mkdir -p $(@D)
	$(CC) $(GS_CD_CFLAGS) -c -o $@ $<

# -Bsymbolic as in the real libraries: calls inside a library never go
# through its own exported (interposable) names.
$(GS_CD_DIR)/libcuda.so.1: $(GS_CD_DRIVER_OBJS) tests/cuda_double/libcuda.map
	$(CC) -shared -Wl,-soname,libcuda.so.1 -Wl,--version-script=tests/cuda_double/libcuda.map \
	    -Wl,-Bsymbolic -Wl,-z,defs -o $@ $(GS_CD_DRIVER_OBJS) -lpthread

# RUNPATH $ORIGIN: the runtime dlopens libcuda.so.1 from its own folder.
$(GS_CD_DIR)/libcudart.so.13: $(GS_CD_RUNTIME_OBJS) tests/cuda_double/libcudart.map
	$(CC) -shared -Wl,-soname,libcudart.so.13 -Wl,--version-script=tests/cuda_double/libcudart.map \
	    -Wl,-Bsymbolic -Wl,-z,defs -Wl,--enable-new-dtags -Wl,-rpath,'$$ORIGIN' \
	    -o $@ $(GS_CD_RUNTIME_OBJS) -ldl -lpthread

$(GS_CD_DIR)/libcuda.so: $(GS_CD_DIR)/libcuda.so.1
	ln -sfn libcuda.so.1 $@

$(GS_CD_DIR)/libcudart.so: $(GS_CD_DIR)/libcudart.so.13
	ln -sfn libcudart.so.13 $@

$(addprefix $(GS_CD_PROG)/,$(GS_CD_RT_PROGS)): $(GS_CD_PROG)/%: tests/programs/%.c tests/cuda_double/cuda_double_check.h $(GS_CD_LIBS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(GS_CD_PROG_CFLAGS) -o $@ $< $(GS_CD_PROG_LDFLAGS) -lcudart -ldl -lpthread

$(addprefix $(GS_CD_PROG)/,$(GS_CD_DRV_PROGS)): $(GS_CD_PROG)/%: tests/programs/%.c tests/cuda_double/cuda_double_check.h $(GS_CD_LIBS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(GS_CD_PROG_CFLAGS) -o $@ $< $(GS_CD_PROG_LDFLAGS) -lcudart -lcuda -ldl -lpthread

$(addprefix $(GS_CD_PROG)/,$(GS_CD_CXX_PROGS)): $(GS_CD_PROG)/%: tests/programs/%.cpp tests/cuda_double/cuda_double_check.h $(GS_CD_LIBS)
	@mkdir -p $(@D)
	$(CXX) $(GS_CD_CXXFLAGS) $(GS_CD_PROG_CFLAGS) -o $@ $< $(GS_CD_PROG_LDFLAGS) -lcudart -ldl -lpthread

# Two runtimes in one process (cuda_two_runtimes): the runtime double built
# again as libcudart.so.12, and a library bound to each runtime.
$(GS_CD_DIR)/libcudart.so.12: $(GS_CD_RUNTIME_OBJS) tests/cuda_double/libcudart12.map
	$(CC) -shared -Wl,-soname,libcudart.so.12 -Wl,--version-script=tests/cuda_double/libcudart12.map \
	    -Wl,-Bsymbolic -Wl,-z,defs -Wl,--enable-new-dtags -Wl,-rpath,'$$ORIGIN' \
	    -o $@ $(GS_CD_RUNTIME_OBJS) -ldl -lpthread

$(GS_CD_PROG)/libcuda_rt12.so: tests/programs/cuda_two_rt_lib.c $(GS_CD_DIR)/libcudart.so.12
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(GS_CD_PROG_CFLAGS) -fPIC -shared -DRT_CHECK=rt12_check -o $@ $< \
	    -Wl,--enable-new-dtags -Wl,-rpath,'$$ORIGIN/../../cuda_double' $(GS_CD_DIR)/libcudart.so.12

$(GS_CD_PROG)/libcuda_rt13.so: tests/programs/cuda_two_rt_lib.c $(GS_CD_LIBS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(GS_CD_PROG_CFLAGS) -fPIC -shared -DRT_CHECK=rt13_check -o $@ $< \
	    $(GS_CD_PROG_LDFLAGS) -lcudart

$(GS_CD_PROG)/cuda_two_runtimes: tests/programs/cuda_two_runtimes.c $(GS_CD_PROG)/libcuda_rt12.so \
                                 $(GS_CD_PROG)/libcuda_rt13.so
	$(CC) $(ALL_CFLAGS) $(GS_CD_PROG_CFLAGS) -o $@ $< -L$(GS_CD_PROG) \
	    -Wl,--enable-new-dtags -Wl,-rpath,'$$ORIGIN' -lcuda_rt12 -lcuda_rt13

TEST_DEPS += $(GS_CD_PROG)/cuda_two_runtimes

# Linked against the toolkit's libcudart, no RUNPATH: the selftest runs it
# with LD_LIBRARY_PATH=$(GS_CD_DIR) to load the double in its place.
$(GS_CD_PROG)/cuda_three_reallink: tests/programs/cuda_three.c tests/cuda_double/cuda_double_check.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(GS_CD_PROG_CFLAGS) -o $@ $< -L$(CUDA_HOME)/lib64 -lcudart -ldl -lpthread

endif
