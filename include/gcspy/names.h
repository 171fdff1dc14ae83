/*
 * The names of the trace's record types and enum values, generated from
 * records.def and enums.def, so that `gcspy dump`, the validator's messages
 * and the reports print one spelling:
 *   gs_rec_type_name(type)  "ALLOC_EX": the name docs and messages use
 *   gs_rec_dump_name(type)  "alloc_ex": the record's word in `gcspy dump`
 *   gs_<enum>_name(value)   "pinned", "cuda_sync", ...: enums.def's names
 * Each returns NULL for a value the tables do not know (a newer minor
 * version's type, a value no name was given), so the caller says what to
 * print instead.
 */
#ifndef GCSPY_NAMES_H
#define GCSPY_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "gcspy/trace_format.h"

static inline const char *gs_rec_type_name(unsigned type)
{
    switch (type) {
#define GS_RECORD(NAME, name, type, cls, member, dump, ...) case GS_REC_##NAME: return #NAME;
#include "gcspy/records.def"
#undef GS_RECORD
    default: return NULL;
    }
}

static inline const char *gs_rec_dump_name(unsigned type)
{
    switch (type) {
#define GS_RECORD(NAME, name, type, cls, member, dump, ...) case GS_REC_##NAME: return dump;
#include "gcspy/records.def"
#undef GS_RECORD
    default: return NULL;
    }
}

#define GS_ENUM(e, prefix, doc)                                 \
    static inline const char *gs_##e##_name(uint64_t v)         \
    {                                                           \
        static const char *const names[prefix##_N] = {
#define GS_ENUM_VAL(prefix, NAME, value, name, doc) [prefix##NAME] = name,
#define GS_ENUM_END(e, prefix)                                  \
        };                                                      \
        return v < prefix##_N ? names[v] : NULL;                \
    }
#include "gcspy/enums.def"
#undef GS_ENUM
#undef GS_ENUM_VAL
#undef GS_ENUM_END

#endif /* GCSPY_NAMES_H */
