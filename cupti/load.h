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
    int cuda_major; /* from its soname (libcupti.so.13: 13), -1 unknown */
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
    __typeof__(cuptiGetVersion) *GetVersion; /* may be NULL */
};

struct gs_cupti_core {
    int ours;  /* we loaded libgcspy.so: no hooks run, device events only */
    __typeof__(gcspy_now_ns) *now_ns;
    __typeof__(gcspy_device_alloc) *device_alloc;
    __typeof__(gcspy_device_free) *device_free;
    __typeof__(gcspy_pause) *pause;
    __typeof__(gcspy_device_sample) *device_sample;
};

/* 0, or -1 with a one-line reason in err. driver_check gives the driver's
 * version (cuDriverGetVersion: 13000 for CUDA 13.0; 0 unknown); lib_load
 * passes over a libcupti newer than it. */
int gs_cupti_driver_check(int *version, char *err, size_t errlen);
int gs_cupti_lib_load(struct gs_cupti_lib *l, int driver_version, char *err, size_t errlen);
/* The major version in the soname of a loaded library (libcupti.so.13:
 * 13), or -1; and whether a CUPTI of that CUDA major fits the driver (an
 * unknown version fits). */
int gs_cupti_soname_major(void *handle);
int gs_cupti_fits(int driver_version, int cupti_major);
int gs_cupti_core_find(struct gs_cupti_core *b, char *err, size_t errlen);
/* CUPTI's name for r ("CUPTI_ERROR_..."). */
const char *gs_cupti_result(const struct gs_cupti_lib *l, CUptiResult r);

#endif /* GCSPY_CUPTI_LOAD_H */
