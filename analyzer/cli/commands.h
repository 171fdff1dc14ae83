/*
 * The subcommands of the `gcspy` CLI. Each is a main-like function: argv[0]
 * is the command name, argv[1..] its arguments. It returns the process exit
 * status (0 success, 2 bad options or errors, command-specific otherwise)
 * and prints its own one-line error messages, prefixed "gcspy CMD: ".
 * analyzer/cli/cli.c dispatches to them through its command table.
 */
#ifndef GCSPY_COMMANDS_H
#define GCSPY_COMMANDS_H

int gs_cmd_run(int argc, char **argv);      /* run.c */
int gs_cmd_options(int argc, char **argv);  /* run.c */
int gs_cmd_dump(int argc, char **argv);     /* dump.c */
int gs_cmd_report(int argc, char **argv);   /* report_cmd.c */
int gs_cmd_check(int argc, char **argv);    /* check_cmd.c */
int gs_cmd_diff(int argc, char **argv);     /* diff.c */

struct gs_common;
/* job_cmd.c: the job report (or with summary_out, one summary file per
 * input in that directory) over the traces and summaries c names, jobs
 * analysed at a time; the exit status. */
int gs_report_job(const struct gs_common *c, const char *output, int json, unsigned jobs,
                  const char *summary_out);

struct timespec;
/* run_summary.c: prints on stderr the exit summary of every trace that the
 * output pattern names, written since start by a descendant of pid self. */
void gs_run_summary(const char *pattern, long self, const struct timespec *start);
/* run_summary.c: the same traces analysed into DIR/NAME.summary.json
 * (gcspy run --summary DIR); 0, or 2 with the error printed. */
int gs_run_summaries(const char *pattern, long self, const struct timespec *start, const char *dir);

/* True when argv[1..] asks for help (-h or --help before any "--"). */
int gs_wants_help(int argc, char **argv);

#endif /* GCSPY_COMMANDS_H */
