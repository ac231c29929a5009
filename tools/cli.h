/* SPDX-License-Identifier: MIT */
/*
 * The mmport command. Each tools/cmd_<name>.c provides one subcommand and
 * each tools/bench_<name>.c one `mmport bench <name>`; the build generates
 * the list (gen/commands.h).
 */
#ifndef MMPORT_TOOLS_CLI_H
#define MMPORT_TOOLS_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

/* A subcommand: run() gets argv[0] = its own name; returns the exit code. */
struct cli_command {
    const char *name;
    const char *summary; /* one line, for `mmport help` */
    const char *usage;   /* full --help text */
    int (*run)(int argc, char **argv);
};

#define COMMAND(n) extern const struct cli_command cli_cmd_##n;
#define BENCH(n) extern const struct cli_command cli_bench_##n;
#include "commands.h"
#undef COMMAND
#undef BENCH

/* Prints "mmport <cmd>: <reason>" to stderr and returns 2 (usage error). */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints "mmport <cmd>: <reason>" to stderr and returns 1 (runtime error). */
int cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* True for "-h" / "--help". */
bool cli_is_help(const char *arg);

/*
 * Option parsing: getopt_long (--opt=value, --opt value, bundled short
 * options, "--" ends the options). Every command loops
 *     cli_getopt_start();
 *     while ((c = getopt_long(argc, argv, ":h...", longopts, NULL)) != -1)
 * (the leading ':' makes a missing value come back as ':'), hands
 * '?' and ':' to cli_opt_error(), and ends with cli_no_operands().
 */
void cli_getopt_start(void);
/* "mmport <cmd>: unrecognized option '--x'" / "option '--ram' requires an
 * argument" / "invalid option -- 'q'"; returns 2. */
int cli_opt_error(const char *cmd, int c, char **argv, const struct option *longopts);
/* 0, or a usage error naming the first operand left after the options. */
int cli_no_operands(const char *cmd, int argc, char **argv);

/* Parses "4096", "64K", "2M", "1G" (binary units); false on garbage. */
bool cli_parse_size(const char *s, unsigned long long *out);

/* The machine, for headers and chart titles: "GenuineIntel family 0x6
 * model 0x55", "ARM implementer 0x41 part 0xd0c" (mmp_cpu_features). */
const char *cli_machine(void);

/* Text output keeps to this width (tables, wrapped notes). */
#define CLI_COLUMNS 100

/* Prints head, then text wrapped at spaces to CLI_COLUMNS, continuation
 * lines indented by indent spaces; a newline at the end. */
void cli_print_wrapped(const char *head, int indent, const char *text);

/* --plot FILE: opened before measuring, so that a path that cannot be
 * written fails first; NULL after "mmport <cmd>: --plot 'FILE': <reason>". */
FILE *cli_plot_open(const char *cmd, const char *path);
/* Closes the chart written to out: 0, or 1 after the same kind of message. */
int cli_plot_close(const char *cmd, const char *path, FILE *out);

/* Writes s as a JSON string literal (quoted, escaped). */
void cli_json_string(FILE *out, const char *s);

/* Writes an address, register value or bit mask as a JSON string "0x...":
 * exact in every JSON reader (numbers above 2^53 are rounded by jq and
 * JavaScript). Counts and sizes stay numbers. */
void cli_json_hex(FILE *out, unsigned long long v);

#endif
