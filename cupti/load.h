/*
 * Finding the two libraries the CUPTI subscriber works between: libcupti
 * (found at run time, matching the CUDA the program loaded) and the gcspy
 * core that writes the trace (libgcspy.so, preloaded, or loaded by us from
 * our own folder when the driver loaded us through CUDA_INJECTION64_PATH).
 */
#ifndef GCSPY_CUPTI_LOAD_H
#define GCSPY_CUPTI_LOAD_H

#include <stdint.h>

#include <cupti.h>

#include "gcspy/bridge.h"

struct gs_cupti_lib {
    void *handle;
    char path[1024];
    __typeof__(cuptiSubscribe) *Subscribe;
    __typeof__(cuptiUnsubscribe) *Unsubscribe;
    __typeof__(cuptiEnableCallback) *EnableCallback;
    __typeof__(cuptiActivityRegisterCallbacks) *ActivityRegisterCallbacks;
    __typeof__(cuptiActivityEnable) *ActivityEnable;
    __typeof__(cuptiActivityDisable) *ActivityDisable;
    __typeof__(cuptiActivityGetNextRecord) *ActivityGetNextRecord;
    __typeof__(cuptiActivityFlushAll) *ActivityFlushAll;
    __typeof__(cuptiActivitySetAttribute) *ActivitySetAttribute;
    __typeof__(cuptiActivityGetNumDroppedRecords) *ActivityGetNumDroppedRecords;
    __typeof__(cuptiGetTimestamp) *GetTimestamp;
    __typeof__(cuptiGetResultString) *GetResultString;
    __typeof__(cuptiGetDeviceId) *GetDeviceId;
};

struct gs_cupti_core {
    int ours;  /* we loaded libgcspy.so: no hooks run, device events only */
    __typeof__(gcspy_now_ns) *now_ns;
    __typeof__(gcspy_device_alloc) *device_alloc;
    __typeof__(gcspy_device_free) *device_free;
    __typeof__(gcspy_pause) *pause;
    __typeof__(gcspy_device_sample) *device_sample;
};

/* 0, or -1 with a one-line reason in err. */
int gs_cupti_driver_check(char *err, size_t errlen);
int gs_cupti_lib_load(struct gs_cupti_lib *l, char *err, size_t errlen);
int gs_cupti_core_find(struct gs_cupti_core *b, char *err, size_t errlen);
/* CUPTI's name for r ("CUPTI_ERROR_..."). */
const char *gs_cupti_result(const struct gs_cupti_lib *l, CUptiResult r);

#endif /* GCSPY_CUPTI_LOAD_H */
