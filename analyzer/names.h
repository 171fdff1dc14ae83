/*
 * The words the reports print for the analysis's enums: leak classes, memory
 * categories, pause kinds, scan triggers, growth axes, marker kinds, exit
 * kinds and the caching allocator's enums. One table each, here on the
 * analyzer's side, so the analyzer (the CI gate's verdicts, --fail-on) and
 * every reporter spell a value the same way; the JSON report's keys and
 * values (docs/report-json.md) are these words, so they do not change.
 * (`gcspy dump` prints the trace's own spellings of some of these, "cuda_sync"
 * for "cuda-sync": those are the record schema's, not these, which is why
 * these functions are not named gs_<enum>_name.)
 */
#ifndef GCSPY_ANALYZER_NAMES_H
#define GCSPY_ANALYZER_NAMES_H

#include <stdint.h>

#include "gcspy/trace_format.h"

const char *gs_class_name(int cls);       /* "definite" ... "not-freed"; "?" */
int gs_class_parse(const char *s);        /* -1 when unknown */
const char *gs_memcat_name(int mc);       /* "host" "pinned" "managed" "device"; "?" */
/* "scan" "cuda-sync" "python-gc" by GS_PAUSE_*; "other" when unknown */
#define GS_PAUSE_KINDS 3
extern const char *const gs_pause_names[GS_PAUSE_KINDS];
const char *gs_pause_name(uint32_t kind);
const char *gs_trigger_name(uint64_t trigger);      /* GS_SCAN_TRIG_*; "other" */
const char *gs_axis_name(int axis);                 /* GS_AXIS_*: "step" "time" */
const char *gs_marker_kind_name(uint32_t kind);     /* GS_MARK_*: "step" "user" */
const char *gs_exit_name(uint64_t how);             /* GS_EXIT_*: "normal" "signal" "exec" */

/* Caching-allocator enums (trace_format.h), by value: PyTorch's own words
 * where it has them (memory_viz, _snapshot()). */
extern const char *const gs_pool_reason_names[3];       /* GS_POOL_WHY_* */
extern const char *const gs_pool_kind_names[3];         /* GS_POOL_* */
extern const char *const gs_pool_state_names[3];        /* GS_PBLK_* */
extern const char *const gs_pool_action_names[GS_PEV__N]; /* GS_PEV_* */
const char *gs_pool_reason_name(uint64_t reason);       /* "other" when unknown */

#endif /* GCSPY_ANALYZER_NAMES_H */
