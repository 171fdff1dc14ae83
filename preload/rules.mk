# libgcspy.so, the in-process shim, and libgcspy_core.a (the same core without
# the interposed functions, for unit tests that drive it with fake pointers).
# Frame pointers are kept: the fp unwinder starts from the hook's own frame.

PRELOAD_SRC   := $(filter-out preload/hooks.c preload/exit_hooks.c preload/cuda_hooks.c \
                  preload/dlsym.c,$(wildcard preload/*.c))
PRELOAD_OBJ   := $(PRELOAD_SRC:%.c=$(BUILD)/obj/%.o)
HOOKS_OBJ     := $(BUILD)/obj/preload/hooks.o $(BUILD)/obj/preload/exit_hooks.o \
                 $(BUILD)/obj/preload/dlsym.o
# dlsym.c and exit_hooks.c interpose dlsym and exit: in libgcspy.so only,
# never in the core archive the unit tests link. They and scan_trigger.c
# (gcspy_scan's entry stubs) are built without LTO, since their assembly
# stubs refer to C symbols by name.
$(BUILD)/obj/preload/dlsym.o $(BUILD)/obj/preload/exit_hooks.o \
    $(BUILD)/obj/preload/scan_trigger.o: PRELOAD_CFLAGS += -fno-lto
# The CUDA hooks need the toolkit's headers (not its libraries: the real
# functions are found at run time); without a toolkit they are left out.
# Python frames: struct layouts from CPython 3.11's headers (python3.11-dev);
# nothing links libpython, its functions are found at run time.
PY_INC ?= /usr/include/python3.11
PY_OBJ := $(patsubst %,$(BUILD)/obj/preload/%.o,pyapi pyarena pyframes python torch)
$(PY_OBJ): PRELOAD_CFLAGS += -isystem $(PY_INC)
ifeq ($(HAVE_CUDA),1)
HOOKS_OBJ     += $(BUILD)/obj/preload/cuda_hooks.o
$(BUILD)/obj/preload/cuda_hooks.o: PRELOAD_CFLAGS += -isystem $(CUDA_HOME)/include
endif
PRELOAD_CFLAGS := $(ALL_CFLAGS) -flto=auto -fPIC -fno-omit-frame-pointer -fvisibility=hidden \
                  -ftls-model=initial-exec -Ipreload
# Nothing beyond glibc: a missing library would keep the program from
# starting under LD_PRELOAD. zstd is linked in from Debian's libzstd.a
# (position-independent), its symbols hidden so they never interpose the
# program's own libzstd; libunwind is dlopen()ed when present (unwind.c).
PRELOAD_LIBS  := -Wl,--exclude-libs,libzstd.a -Wl,-Bstatic -lzstd -Wl,-Bdynamic -lpthread -ldl

all: $(BUILD)/libgcspy.so $(BUILD)/libgcspy_core.a

$(BUILD)/obj/preload/%.o: preload/%.c
	@mkdir -p $(dir $@)
	$(CC) $(PRELOAD_CFLAGS) -c $< -o $@

$(BUILD)/libgcspy.so: $(PRELOAD_OBJ) $(HOOKS_OBJ)
	$(CC) -shared -O2 -flto=auto -fno-omit-frame-pointer -o $@ $^ -Wl,-soname,libgcspy.so -Wl,--no-undefined $(PRELOAD_LIBS)

$(BUILD)/libgcspy_core.a: $(PRELOAD_OBJ)
	@rm -f $@
	ar rcs $@ $^
