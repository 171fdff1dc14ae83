# PyTorch-aware mode without a GPU: libtorch_toy_alloc.so, a caching
# allocator built like PyTorch's (tests/programs/torch_toy_alloc.cpp) on the
# CUDA test double, loaded by tests/integration/torch_aware.sh's Python side
# through ctypes. Only with a CUDA toolkit (the double needs its headers).

ifeq ($(HAVE_CUDA),1)

GS_TOY_ALLOC := $(BUILD)/tests/programs/libtorch_toy_alloc.so
TEST_DEPS += $(GS_TOY_ALLOC)

# Frame pointers, as in the other test programs; -O1 keeps the allocator's
# functions real frames (they are also marked noinline).
$(GS_TOY_ALLOC): tests/programs/torch_toy_alloc.cpp $(GS_CD_LIBS)
	@mkdir -p $(@D)
	$(CXX) -std=gnu++17 -g -O1 -Wall -Wextra -Werror -fPIC -shared -fno-omit-frame-pointer \
	    -isystem $(CUDA_HOME)/include -o $@ $< $(GS_CD_PROG_LDFLAGS) -lcudart -lcuda

endif
