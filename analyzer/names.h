/*
 * The words the reports print for the analysis's enums: leak classes, memory
 * categories, pause kinds, scan triggers, growth axes, marker kinds, exit
 * kinds and the caching allocator's enums, so the analyzer (the CI gate's
 * verdicts, --fail-on) and every reporter spell a value the same way; the
 * JSON report's keys and values (docs/report-json.md) are these words, so
 * they do not change. Where a report's word is the trace's own (scan
 * triggers, marker and exit kinds, the caching allocator's words), it comes
 * from the record schema's tables (gcspy/names.h, enums.def) and only the
 * word for an unknown value is chosen here. The reports keep words of their
 * own only where they differ from the trace's: pause kinds ("cuda-sync"
 * where `gcspy dump` prints the trace's "cuda_sync"), the report's classes
 * (with "not-freed") and memory categories.
 */
#ifndef GCSPY_ANALYZER_NAMES_H
#define GCSPY_ANALYZER_NAMES_H

#include <stdint.h>

#include "gcspy/names.h"
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
const char *gs_leak_status_name(int st);            /* GS_LS_*: "scanned" "no-scan" "exec" */

/* Caching-allocator enums (trace_format.h), by value: PyTorch's own words
 * where it has them (memory_viz, _snapshot()), which the trace's tables
 * (gcspy/names.h) hold; "other" when unknown. */
const char *gs_pool_reason_name(uint64_t reason);       /* GS_POOL_WHY_* */
const char *gs_pool_action_word(unsigned action);       /* GS_PEV_* */

#endif /* GCSPY_ANALYZER_NAMES_H */
