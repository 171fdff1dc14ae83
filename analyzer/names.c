/*
 * The enums' words (names.h). A value out of range gets a word that says so
 * ("?", "other") rather than an index past a table.
 */
#include "names.h"

#include <string.h>

#include "growth.h"
#include "model.h"

static const char *const class_names[GS_RC__N] = {
    "definite", "indirect", "possible", "reachable", "not-freed",
};
static const char *const memcat_names[GS_MC__N] = { "host", "pinned", "managed", "device" };

const char *gs_class_name(int cls)
{
    return cls >= 0 && cls < GS_RC__N ? class_names[cls] : "?";
}

int gs_class_parse(const char *s)
{
    for (int i = 0; i < GS_RC__N; i++)
        if (strcmp(s, class_names[i]) == 0)
            return i;
    if (strcmp(s, "still-reachable") == 0)
        return GS_CLASS_REACHABLE;
    return -1;
}

const char *gs_memcat_name(int mc)
{
    return mc >= 0 && mc < GS_MC__N ? memcat_names[mc] : "?";
}

const char *const gs_pause_names[GS_PAUSE_KINDS] = {
    [GS_PAUSE_SCAN] = "scan", [GS_PAUSE_CUDA_SYNC] = "cuda-sync",
    [GS_PAUSE_PYTHON_GC] = "python-gc",
};

const char *gs_pause_name(uint32_t kind)
{
    return kind < GS_PAUSE_KINDS ? gs_pause_names[kind] : "other";
}

const char *gs_trigger_name(uint64_t trigger)
{
    switch (trigger) {
    case GS_SCAN_TRIG_EXIT: return "exit";
    case GS_SCAN_TRIG_SIGNAL: return "signal";
    case GS_SCAN_TRIG_PERIODIC: return "periodic";
    case GS_SCAN_TRIG_API: return "api";
    case GS_SCAN_TRIG_BYTES: return "bytes";
    default: return "other";
    }
}

const char *gs_axis_name(int axis)
{
    return axis == GS_AXIS_STEP ? "step" : "time";
}

const char *gs_marker_kind_name(uint32_t kind)
{
    return kind == GS_MARK_STEP ? "step" : "user";
}

const char *gs_exit_name(uint64_t how)
{
    return how == GS_EXIT_SIGNAL ? "signal" : how == GS_EXIT_EXEC ? "exec" : "normal";
}

const char *const gs_pool_reason_names[3] = { "scan", "exit", "api" };
const char *const gs_pool_kind_names[3] = { "large", "small", "other" };
const char *const gs_pool_state_names[3] = { "active", "pending_free", "inactive" };
const char *const gs_pool_action_names[GS_PEV__N] = {
    [GS_PEV_ALLOC] = "alloc", [GS_PEV_FREE_REQUESTED] = "free_requested",
    [GS_PEV_FREE_COMPLETED] = "free_completed", [GS_PEV_SEGMENT_ALLOC] = "segment_alloc",
    [GS_PEV_SEGMENT_FREE] = "segment_free", [GS_PEV_SEGMENT_MAP] = "segment_map",
    [GS_PEV_SEGMENT_UNMAP] = "segment_unmap", [GS_PEV_SNAPSHOT] = "snapshot",
    [GS_PEV_OOM] = "oom", [GS_PEV_OTHER] = "other",
};

const char *gs_pool_reason_name(uint64_t reason)
{
    return reason < 3 ? gs_pool_reason_names[reason] : "other";
}
