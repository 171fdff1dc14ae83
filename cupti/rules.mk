# libgcspy_cupti.so, the CUPTI subscriber (cupti/): built when the CUDA
# toolkit's headers and CUPTI's headers are found (HAVE_CUDA=1 and cupti.h
# under $(CUDA_HOME)/include or $(CUDA_HOME)/extras/CUPTI/include).
#
# Nothing links libcupti or libcuda: the subscriber finds CUPTI at run time,
# next to the CUDA runtime the program loaded (cupti/load.c), so one build
# serves CUDA 12 and 13 installs alike. Frame pointers are kept, as in the
# shim: the bridge walks the stack from inside our callback.

GS_CUPTI_H := $(firstword $(wildcard $(CUDA_HOME)/include/cupti.h \
                                     $(CUDA_HOME)/extras/CUPTI/include/cupti.h))

ifeq ($(HAVE_CUDA),1)
ifneq ($(GS_CUPTI_H),)

GS_CUPTI_INC    := $(patsubst %/,%,$(dir $(GS_CUPTI_H)))
GS_CUPTI_LIBDIR := $(firstword $(wildcard $(CUDA_HOME)/extras/CUPTI/lib64/libcupti.so \
                                          $(CUDA_HOME)/lib64/libcupti.so))
GS_CUPTI_LIBDIR := $(patsubst %/,%,$(dir $(GS_CUPTI_LIBDIR)))
GS_CUPTI_CFLAGS := $(ALL_CFLAGS) -fPIC -fno-omit-frame-pointer -fvisibility=hidden \
                   -isystem $(CUDA_HOME)/include -isystem $(GS_CUPTI_INC) -Icupti \
                   -DGS_CUPTI_BUILD_LIBDIR='"$(GS_CUPTI_LIBDIR)"'
GS_CUPTI_OBJ    := $(patsubst cupti/%.c,$(BUILD)/obj/cupti/%.o,$(wildcard cupti/*.c))

all: $(BUILD)/libgcspy_cupti.so

$(BUILD)/obj/cupti/%.o: cupti/%.c
	@mkdir -p $(@D)
	$(CC) $(GS_CUPTI_CFLAGS) -c $< -o $@

$(BUILD)/libgcspy_cupti.so: $(GS_CUPTI_OBJ)
	$(CC) -shared -fno-omit-frame-pointer -o $@ $^ -Wl,-soname,libgcspy_cupti.so \
	    -Wl,--no-undefined -Wl,-z,nodelete -lpthread -ldl

endif
endif
