/*
 * One row per allocation site and the headline findings (findings.c), built
 * into a result after its suppressions were applied (gcspy report and check
 * both call it once per trace), so every reporter and the CI gate read the
 * same rows and the same findings.
 *
 * A finding is one problem in one line: a leak (the lost bytes of the sites
 * that share a user frame), a growth (the suspects that share a user frame,
 * their rates summed), a fragmentation (free bytes wasted, when significant:
 * see gs_frag_significant), or noise (the lost bytes of the sites that the
 * import machinery or the dynamic loader allocated, one per origin).
 * Suppressed sites and suspects, and blocks inherited from a parent
 * process, make no finding: the summary shows them apart.
 */
#ifndef GCSPY_FINDINGS_H
#define GCSPY_FINDINGS_H

#include "result.h"
#include "userframe.h"

/* Fills r->sites and r->findings (replacing earlier ones). 0, or -1 when
 * out of memory. */
int gs_findings_build(struct gs_result *r, const struct gs_userframe_opts *uf);

/* The fragmentation rule. The bytes wasted are the free bytes outside the
 * largest free piece (between live host blocks: the gaps but the largest;
 * on a device: reserved, not in use, outside the largest free block): one
 * big free piece serves any request and wastes nothing. They are
 * significant, a finding with a ratio (wasted / free), when at least 1 MiB
 * and at least an eighth of the span they lie in (live + free host bytes,
 * the device's reserved bytes); below that no ratio is shown anywhere. */
int gs_frag_significant(uint64_t free_bytes, uint64_t span);
#define GS_FRAG_MIN_FREE (1u << 20)

/* "leak", "growth", "noise", "fragmentation". */
const char *gs_finding_kind_name(int kind);

/* The lost bytes and blocks of a site: definite + indirect + possible. */
struct gs_cell gs_site_lost(const struct gs_leaksite *s);

/* A frame in one line: "function (file:line)", "function (module)",
 * "module+0xOFF"; "?" for NULL. Returns buf. */
char *gs_fmt_frame(char *buf, size_t n, const struct gs_frame *f);

/* The one-line wording of a finding (no leading number, no newline), the
 * same in every reporter that prints lines: text, the check's detail and
 * `gcspy run`'s verdict. */
void gs_finding_line(char *buf, size_t n, const struct gs_result *r, const struct gs_finding *f);

#endif /* GCSPY_FINDINGS_H */
