# The CUPTI subscriber's unit tests (tests/unit/test_cupti.c): cupti/records.c
# driven with synthetic callback data and activity buffers (read with the
# real libcupti, which needs no driver for that), and the built
# libgcspy_cupti.so refusing to attach without NVIDIA's driver. Built when
# cupti/rules.mk builds the library (CUDA toolkit with CUPTI headers).

ifneq ($(GS_CUPTI_OBJ),)

TEST_BINS += $(BUILD)/tests/unit_cupti
TEST_DEPS += $(BUILD)/libgcspy_cupti.so

$(BUILD)/tests/unit_cupti: tests/unit/test_cupti.c $(BUILD)/obj/cupti/records.o $(BUILD)/obj/cupti/load.o \
                           $(BUILD)/libgcspy_cupti.so $(GS_CD_DIR)/libcuda.so.1
	@mkdir -p $(@D)
	$(CC) $(GS_CUPTI_CFLAGS) -o $@ tests/unit/test_cupti.c \
	    $(BUILD)/obj/cupti/records.o $(BUILD)/obj/cupti/load.o \
	    -DGS_CUPTI_SO='"$(BUILD)/libgcspy_cupti.so"' \
	    -DGS_CUPTI_LIB='"$(GS_CUPTI_LIBDIR)/libcupti.so"' \
	    -DGS_CUDA_DOUBLE_DRIVER='"$(GS_CD_DIR)/libcuda.so.1"' \
	    $(CRITERION_LIBS) -ldl -lpthread

endif
