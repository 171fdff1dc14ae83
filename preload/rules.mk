# libgcspy.so, the in-process shim, and libgcspy_core.a (the same core without
# the interposed functions, for unit tests that drive it with fake pointers).
# Frame pointers are kept: the fp unwinder starts from the hook's own frame.

PRELOAD_SRC   := $(filter-out preload/hooks.c,$(wildcard preload/*.c))
PRELOAD_OBJ   := $(PRELOAD_SRC:%.c=$(BUILD)/obj/%.o)
HOOKS_OBJ     := $(BUILD)/obj/preload/hooks.o
PRELOAD_CFLAGS := $(ALL_CFLAGS) -fPIC -fno-omit-frame-pointer -fvisibility=hidden \
                  -ftls-model=initial-exec -Ipreload
PRELOAD_LIBS  := -lzstd -lunwind -lpthread -ldl

all: $(BUILD)/libgcspy.so $(BUILD)/libgcspy_core.a

$(BUILD)/obj/preload/%.o: preload/%.c
	@mkdir -p $(dir $@)
	$(CC) $(PRELOAD_CFLAGS) -c $< -o $@

$(BUILD)/libgcspy.so: $(PRELOAD_OBJ) $(HOOKS_OBJ)
	$(CC) -shared -o $@ $^ -Wl,-soname,libgcspy.so -Wl,--no-undefined $(PRELOAD_LIBS)

$(BUILD)/libgcspy_core.a: $(PRELOAD_OBJ)
	@rm -f $@
	ar rcs $@ $^
