/*
 * The enums' words (names.h). A value out of range gets a word that says so
 * ("?", "other") rather than an index past a table.
 */
#include "names.h"

#include <string.h>

#include "growth.h"
#include "model.h"

static const char *const class_names[GS_RC__N] = {
    "definite", "indirect", "possible", "reachable", "runtime", "not-freed",
};
_Static_assert(GS_CLASS_RUNTIME == 4 && GS_RC_NOT_FREED == 5, "class_names' order");
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

/* The words the trace's own tables (gcspy/names.h, from enums.def) give,
 * with the reports' word for a value they do not know. */
static const char *or_else(const char *name, const char *unknown)
{
    return name ? name : unknown;
}

const char *gs_trigger_name(uint64_t trigger)
{
    return or_else(gs_scan_trigger_name(trigger), "other");
}

const char *gs_axis_name(int axis)
{
    return axis == GS_AXIS_STEP ? "step" : "time";
}

const char *gs_marker_kind_name(uint32_t kind)
{
    return kind == GS_MARK_STEP ? gs_mark_kind_name(kind) : gs_mark_kind_name(GS_MARK_USER);
}

const char *gs_exit_name(uint64_t how)
{
    return or_else(gs_exit_how_name(how), gs_exit_how_name(GS_EXIT_NORMAL));
}

const char *gs_leak_status_name(int st)
{
    static const char *const w[] = { "scanned", "no-scan", "exec" };
    return st >= 0 && st < (int)(sizeof w / sizeof w[0]) ? w[st] : "?";
}

const char *gs_pool_reason_name(uint64_t reason)
{
    return or_else(gs_pool_why_name(reason), "other");
}

const char *gs_pool_action_word(unsigned action)
{
    return or_else(gs_pool_action_name(action), "other");
}
