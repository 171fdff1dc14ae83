/*
 * `gcspy run` and `gcspy options`: running a program under the shim, and the
 * shim's option table for people. `run` finds libgcspy.so next to the gcspy
 * executable (the build tree keeps both in build/; `make install` puts the
 * library in PREFIX/lib/gcspy/), prepends it to LD_PRELOAD, turns its own
 * flags into GCSPY_* variables, sets GCSPY_SUMMARY=none and runs the
 * command as its child. No traced process prints its summary on the
 * program's stderr then: once the command has ended, `gcspy run` prints
 * the summaries from the traces (run_summary.c) and ends as the command
 * did, with its exit status or, killed by a signal, by the same signal.
 * While it waits it ignores SIGINT and SIGQUIT (the terminal sends them to
 * the command too, as system() does) and passes SIGTERM, SIGHUP, SIGUSR1
 * and SIGUSR2 on to the command.
 *
 * The option list comes from include/gcspy/options.def, the same X-macro
 * table the shim parses its environment with, so help text and README
 * cannot drift from what the shim accepts.
 */
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"

struct gs_optdoc {
    const char *env, *type, *def, *help;
};

static const struct gs_optdoc optdocs[] = {
#define GS_OPT(field, env, type, def, help) { env, #type, def, help },
#include "gcspy/options.def"
#undef GS_OPT
};

#define NOPTS (sizeof optdocs / sizeof optdocs[0])

static const char *type_word(const char *type)
{
    if (strcmp(type, "STR") == 0)
        return "string";
    if (strcmp(type, "INT") == 0)
        return "integer";
    if (strcmp(type, "BOOL") == 0)
        return "0 or 1";
    if (strcmp(type, "UNWIND") == 0)
        return "fp or libunwind";
    if (strcmp(type, "SUMMARY") == 0)
        return "first, all or none";
    return type;
}

/* Prints text wrapped at 78 columns, each line indented by `indent`. */
static void wrap(FILE *f, const char *text, int indent)
{
    const int width = 78 - indent;
    while (*text) {
        int n = (int)strlen(text);
        if (n > width) {
            n = width;
            while (n > 0 && text[n] != ' ')
                n--;
            if (n == 0)
                n = width;
        }
        fprintf(f, "%*s%.*s\n", indent, "", n, text);
        text += n;
        while (*text == ' ')
            text++;
    }
}

static void print_options_text(FILE *f)
{
    for (size_t i = 0; i < NOPTS; i++) {
        fprintf(f, "  %s (%s, default %s)\n", optdocs[i].env, type_word(optdocs[i].type),
                optdocs[i].def);
        wrap(f, optdocs[i].help, 6);
    }
}

/* Table cells: '|' would end the cell and a newline the row. */
static void md_cell(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputs("\\|", f);
        else if (*s == '\n')
            fputc(' ', f);
        else
            fputc(*s, f);
    }
}

static void print_options_markdown(FILE *f)
{
    fprintf(f, "| Variable | Type | Default | Description |\n"
               "|---|---|---|---|\n");
    for (size_t i = 0; i < NOPTS; i++) {
        fprintf(f, "| `%s` | ", optdocs[i].env);
        md_cell(f, type_word(optdocs[i].type));
        fputs(" | `", f);
        md_cell(f, optdocs[i].def);
        fputs("` | ", f);
        md_cell(f, optdocs[i].help);
        fputs(" |\n", f);
    }
}

static void run_usage(FILE *f)
{
    fprintf(f,
            "usage: gcspy run [-o PATTERN] [--quiet] [--summary DIR] [--] CMD [ARGS...]\n\n"
            "Runs CMD with libgcspy.so preloaded; it writes a trace of every allocation\n"
            "(see 'gcspy report'). The exit status is CMD's. No traced process prints its\n"
            "summary on CMD's stderr (GCSPY_SUMMARY=none): gcspy run prints them when CMD\n"
            "has ended.\n\n"
            "  -o, --output PATTERN  trace path pattern (sets GCSPY_OUTPUT)\n"
            "  -q, --quiet           print nothing on stderr (sets GCSPY_QUIET=1)\n"
            "  --summary DIR         after CMD, write each trace's summary as\n"
            "                        DIR/NAME.summary.json (docs/jobs.md)\n"
            "  -h, --help            this text\n\n"
            "The shim reads these environment variables:\n");
    print_options_text(f);
}

int gs_cmd_options(int argc, char **argv)
{
    int markdown = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--markdown") == 0) {
            markdown = 1;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("usage: gcspy options [--markdown]\n\n"
                   "Lists the GCSPY_* environment variables the shim reads; --markdown\n"
                   "prints them as the Markdown table README.md embeds.\n");
            return 0;
        } else {
            fprintf(stderr, "gcspy options: unknown argument '%s' (see gcspy options --help)\n",
                    argv[i]);
            return 2;
        }
    }
    if (markdown)
        print_options_markdown(stdout);
    else
        print_options_text(stdout);
    return fflush(stdout) == 0 ? 0 : 2;
}

/* Finds libgcspy.so for the running gcspy: beside it (build tree) or in
 * ../lib/gcspy (installed). Returns 0 and the path in out, or -1 with a
 * message printed. */
static int find_shim(char *out, size_t outlen)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n < 0) {
        fprintf(stderr, "gcspy run: cannot read /proc/self/exe: %s\n", strerror(errno));
        return -1;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    static const char *const rel[] = { "libgcspy.so", "../lib/gcspy/libgcspy.so" };
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char cand[PATH_MAX + 32];
        snprintf(cand, sizeof cand, "%s/%s", exe, rel[i]);
        if (access(cand, R_OK) == 0 && realpath(cand, out) && strlen(out) < outlen)
            return 0;
    }
    fprintf(stderr, "gcspy run: libgcspy.so not found in %s or %s/../lib/gcspy\n", exe, exe);
    return -1;
}

/* LD_PRELOAD separates entries with ':' or ' '. */
static int preloaded(const char *list, const char *lib)
{
    size_t n = strlen(lib);
    for (const char *p = list; *p;) {
        size_t k = strcspn(p, ": ");
        if (k == n && strncmp(p, lib, n) == 0)
            return 1;
        p += k;
        p += strspn(p, ": ");
    }
    return 0;
}

/* The command's file, as execvp will find it (NULL when it is not found). */
static char *resolve(const char *cmd, char *buf, size_t len)
{
    if (strchr(cmd, '/'))
        return snprintf(buf, len, "%s", cmd) < (int)len ? buf : NULL;
    const char *path = getenv("PATH");
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        const char *c = strchr(p, ':');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        if (snprintf(buf, len, "%.*s/%s", (int)n, n ? p : ".", cmd) < (int)len &&
            access(buf, X_OK) == 0)
            return buf;
        p += n + (c != NULL);
    }
    return NULL;
}

/* Two kinds of program the loader never hands LD_PRELOAD to: say so in one
 * line, then run them anyway (their output and status stay theirs). */
static void warn_unreachable(const char *cmd)
{
    char file[4096];
    struct stat st;
    if (!resolve(cmd, file, sizeof file) || stat(file, &st))
        return;
    if (((st.st_mode & S_ISUID) && st.st_uid != geteuid()) ||
        ((st.st_mode & S_ISGID) && st.st_gid != getegid())) {
        fprintf(stderr, "gcspy run: %s is set-user-ID or set-group-ID: the loader ignores "
                        "LD_PRELOAD for it, so it is not traced\n", cmd);
        return;
    }
    FILE *f = fopen(file, "rb");
    if (!f)
        return;
    Elf64_Ehdr eh;
    int is_static = 0;
    if (fread(&eh, sizeof eh, 1, f) == 1 && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
        eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr)) {
        is_static = 1;
        for (int k = 0; k < eh.e_phnum; k++) {
            Elf64_Phdr ph;
            if (fseek(f, (long)(eh.e_phoff + (uint64_t)k * sizeof ph), SEEK_SET) ||
                fread(&ph, sizeof ph, 1, f) != 1)
                break;
            if (ph.p_type == PT_INTERP || ph.p_type == PT_DYNAMIC)
                is_static = 0;
        }
    }
    fclose(f);
    if (is_static)
        fprintf(stderr, "gcspy run: %s is statically linked: LD_PRELOAD cannot reach it, "
                        "so it is not traced\n", cmd);
}

static volatile sig_atomic_t child_pid;

static void pass_on(int sig)
{
    if (child_pid > 0)
        kill((pid_t)child_pid, sig);
}

/* The trace path pattern the shim will use (GCSPY_OUTPUT or its default). */
static const char *output_pattern(void)
{
    const char *p = getenv("GCSPY_OUTPUT");
    if (p && *p)
        return p;
    for (size_t k = 0; k < NOPTS; k++)
        if (!strcmp(optdocs[k].env, "GCSPY_OUTPUT"))
            return optdocs[k].def;
    return "gcspy-%e-%p.trace";
}

/* Runs the command as a child, waits for it, prints the summaries, and
 * returns its exit status, or ends this process by its signal. */
static int run_child(char **cmd, int quiet, const char *summary_dir)
{
    /* file times come from the coarse clock, a tick behind the fine one:
     * a trace made just after this must not look older than the run */
    struct timespec start;
    clock_gettime(CLOCK_REALTIME_COARSE, &start);
    if (start.tv_nsec >= 20000000) {
        start.tv_nsec -= 20000000;
    } else {
        start.tv_sec--;
        start.tv_nsec += 980000000;
    }
    fflush(NULL);
    struct sigaction ign = { .sa_handler = SIG_IGN }, fwd = { .sa_handler = pass_on }, old_int, old_quit;
    sigemptyset(&ign.sa_mask);
    sigemptyset(&fwd.sa_mask);
    fwd.sa_flags = SA_RESTART;
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "gcspy run: cannot fork: %s\n", strerror(errno));
        return 2;
    }
    if (pid == 0) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGQUIT, &old_quit, NULL);
        execvp(cmd[0], cmd);
        int err = errno;
        fprintf(stderr, "gcspy run: %s: %s\n", cmd[0],
                err == ENOENT ? "command not found" : strerror(err));
        _exit(err == ENOENT ? 127 : 126);
    }
    child_pid = pid;
    static const int passed[] = { SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 };
    for (size_t k = 0; k < sizeof passed / sizeof passed[0]; k++)
        sigaction(passed[k], &fwd, NULL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "gcspy run: waiting for %s: %s\n", cmd[0], strerror(errno));
            return 2;
        }
    }
    child_pid = 0;
    if (!quiet)
        gs_run_summary(output_pattern(), (long)getpid(), &start);
    if (summary_dir)
        gs_run_summaries(output_pattern(), (long)getpid(), &start, summary_dir);
    fflush(NULL);
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) {
        /* end as the command did, without a core file of our own */
        int sig = WTERMSIG(status);
        struct rlimit none = { 0, 0 };
        setrlimit(RLIMIT_CORE, &none);
        signal(sig, SIG_DFL);
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        sigprocmask(SIG_UNBLOCK, &one, NULL);
        raise(sig);
        return 128 + sig;
    }
    return 2;
}

int gs_cmd_run(int argc, char **argv)
{
    const char *output = NULL, *summary_dir = NULL;
    int quiet = 0, i = 1;

    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            run_usage(stdout);
            return 0;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            quiet = 1;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "gcspy run: %s needs a path pattern\n", a);
                return 2;
            }
            output = argv[++i];
        } else if (strcmp(a, "--summary") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "gcspy run: --summary needs a directory\n");
                return 2;
            }
            summary_dir = argv[++i];
        } else if (strncmp(a, "--output=", 9) == 0) {
            output = a + 9;
        } else if (strncmp(a, "-o", 2) == 0) {
            output = a + 2;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "gcspy run: unknown option '%s' (see gcspy run --help)\n", a);
            return 2;
        } else {
            break;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "gcspy run: missing command (usage: gcspy run [OPTIONS] -- CMD [ARGS...])\n");
        return 2;
    }
    if (output && !*output) {
        fprintf(stderr, "gcspy run: empty output pattern\n");
        return 2;
    }

    char lib[PATH_MAX];
    if (find_shim(lib, sizeof lib))
        return 2;
    if (strpbrk(lib, ": ")) {
        fprintf(stderr, "gcspy run: %s: LD_PRELOAD cannot hold a path with ':' or ' '\n", lib);
        return 2;
    }
    const char *old = getenv("LD_PRELOAD");
    if (!old || !*old) {
        if (setenv("LD_PRELOAD", lib, 1))
            goto env_fail;
    } else if (!preloaded(old, lib)) {
        size_t n = strlen(lib) + 1 + strlen(old) + 1;
        char *v = malloc(n);
        if (!v)
            goto env_fail;
        snprintf(v, n, "%s:%s", lib, old);
        int rc = setenv("LD_PRELOAD", v, 1);
        free(v);
        if (rc)
            goto env_fail;
    }
    if (output && setenv("GCSPY_OUTPUT", output, 1))
        goto env_fail;
    if (quiet && setenv("GCSPY_QUIET", "1", 1))
        goto env_fail;

    /* the summaries are ours to print, after the command */
    if (setenv("GCSPY_SUMMARY", "none", 1))
        goto env_fail;
    const char *q = getenv("GCSPY_QUIET");
    if (q && (!strcmp(q, "1") || !strcmp(q, "yes") || !strcmp(q, "true")))
        quiet = 1;

    warn_unreachable(argv[i]);
    return run_child(argv + i, quiet, summary_dir);

env_fail:
    fprintf(stderr, "gcspy run: cannot set the environment: %s\n", strerror(errno));
    return 2;
}
