/*
 * main() of the `gcspy` binary: global options (--help, --version) and the
 * command table. Each command lives in its own file and is declared in
 * commands.h; this file only dispatches, so adding a command is one table
 * line. Exit statuses: what the command returns; 2 for usage errors here.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "gcspy/trace_format.h"

#ifndef GCSPY_VERSION
#define GCSPY_VERSION "unknown"
#endif

struct gs_command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static const struct gs_command commands[] = {
    { "run", gs_cmd_run, "run a program under gcspy, writing a trace" },
    { "report", gs_cmd_report, "analyze a trace: leaks, growth, fragmentation, pauses" },
    { "check", gs_cmd_check, "exit non-zero when a trace breaks the given limits" },
    { "diff", gs_cmd_diff, "compare two runs' traces site by site: new, gone, grown" },
    { "dump", gs_cmd_dump, "print every record of a trace as one line of text" },
    { "options", gs_cmd_options, "list the shim's GCSPY_* options (--markdown for README)" },
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: gcspy COMMAND [ARGS...]\n"
               "       gcspy --help | --version\n\n"
               "Finds leaked and wasted memory in programs (ML training jobs in particular).\n\n"
               "commands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'gcspy COMMAND --help' describes a command.\n");
}

int gs_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return 0;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "gcspy: missing command (see gcspy --help)\n");
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        printf("gcspy %s (trace format %d.%d)\n", GCSPY_VERSION, GS_TRACE_MAJOR,
               GS_TRACE_MINOR);
        return 0;
    }
    if (cmd[0] == '-') {
        fprintf(stderr, "gcspy: unknown option '%s' (see gcspy --help)\n", cmd);
        return 2;
    }
    for (size_t i = 0; i < NCOMMANDS; i++) {
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "gcspy: unknown command '%s' (see gcspy --help)\n", cmd);
    return 2;
}
