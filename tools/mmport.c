/* SPDX-License-Identifier: MIT */
/* mmport: entry point and subcommand dispatch. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <mmport/mmport.h>

#include "cli.h"

static const struct cli_command *const commands[] = {
#define COMMAND(n) &cli_cmd_##n,
#define BENCH(n)
#include "commands.h"
#undef COMMAND
#undef BENCH
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void vreport(const char *cmd, const char *fmt, va_list ap)
{
    fprintf(stderr, "mmport %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(cmd, fmt, ap);
    va_end(ap);
    return 2;
}

int cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(cmd, fmt, ap);
    va_end(ap);
    return 1;
}

bool cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

void cli_getopt_start(void)
{
    optind = 0; /* glibc: full re-initialisation for the next argv */
    opterr = 0; /* messages come from cli_opt_error() */
}

int cli_opt_error(const char *cmd, int c, char **argv, const struct option *longopts)
{
    const char *a = argv[optind - 1];
    if (c == ':') {
        if (optopt && !(a[0] == '-' && a[1] == '-'))
            return cli_usage_error(cmd, "option requires an argument -- '%c'", optopt);
        return cli_usage_error(cmd, "option '%.*s' requires an argument",
                               (int)strcspn(a, "="), a);
    }
    if (optopt && !(a[0] == '-' && a[1] == '-'))
        return cli_usage_error(cmd, "invalid option -- '%c'", optopt);
    /* a long option: unknown, ambiguous, or given a value it does not take */
    size_t n = strcspn(a + 2, "=");
    for (const struct option *o = longopts; o->name; o++)
        if (strlen(o->name) == n && strncmp(o->name, a + 2, n) == 0 && a[2 + n] == '=')
            return cli_usage_error(cmd, "option '--%s' doesn't allow an argument", o->name);
    return cli_usage_error(cmd, "unrecognized option '%s'", a);
}

int cli_no_operands(const char *cmd, int argc, char **argv)
{
    return optind < argc ? cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]) : 0;
}

bool cli_parse_size(const char *s, unsigned long long *out)
{
    char *end;
    if (!s || !*s || *s == '-')
        return false;
    unsigned long long v = strtoull(s, &end, 0);
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: break;
    }
    if (*end == 'i' || *end == 'B')
        end += *end == 'i' ? (end[1] == 'B' ? 2 : 1) : 1;
    if (*end || (shift && v > (~0ull >> shift)))
        return false;
    *out = v << shift;
    return true;
}

void cli_print_wrapped(const char *head, int indent, const char *text)
{
    int col = printf("%s", head);
    bool first = true;
    for (text += strspn(text, " "); *text; text += strspn(text, " ")) {
        int word = (int)strcspn(text, " ");
        if (!first && col + 1 + word > CLI_COLUMNS)
            col = printf("\n%*s", indent, "") - 1;
        else if (!first)
            col += printf(" ");
        col += printf("%.*s", word, text);
        text += word;
        first = false;
    }
    printf("\n");
}

FILE *cli_plot_open(const char *cmd, const char *path)
{
    FILE *out = fopen(path, "w");
    if (!out)
        cli_error(cmd, "--plot '%s': %s", path, strerror(errno));
    return out;
}

int cli_plot_close(const char *cmd, const char *path, FILE *out)
{
    errno = 0;
    int bad = ferror(out);
    if (fclose(out) || bad)
        return cli_error(cmd, "--plot '%s': %s", path, strerror(errno ? errno : EIO));
    return 0;
}

const char *cli_machine(void)
{
    static char buf[64];
    const struct mmp_cpu_features *f = mmp_cpu_features();
    const char *v = f->vendor[0] ? f->vendor : "unknown CPU";
    if (f->arch == MMP_ARCH_ARM64) /* MIDR_EL1: implementer [31:24], part number [15:4] */
        snprintf(buf, sizeof buf, "%s implementer 0x%02x part 0x%03x", v,
                 (unsigned)(f->midr >> 24) & 0xff, (unsigned)(f->midr >> 4) & 0xfff);
    else
        snprintf(buf, sizeof buf, "%s family 0x%x model 0x%x", v, f->family, f->model);
    return buf;
}

void cli_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

void cli_json_hex(FILE *out, unsigned long long v)
{
    fprintf(out, "\"0x%llx\"", v);
}

static void help(FILE *out)
{
    fprintf(out, "usage: mmport <command> [options]   (mmport <command> --help)\n\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %-8s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(out, "\n  -V, --version  print the version\n");
}

/* Output that could not be written (a full disk, /dev/full, a closed pipe)
 * is an error: exit 1, as coreutils do. */
static int finish(const char *cmd, int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        int e = errno;
        fprintf(stderr, "mmport%s%s: write error: %s\n", cmd ? " " : "", cmd ? cmd : "",
                e ? strerror(e) : "output error");
        return rc ? rc : 1;
    }
    return rc;
}

static int dispatch(int argc, char **argv);

int main(int argc, char **argv)
{
    return finish(argc > 1 && argv[1][0] != '-' ? argv[1] : NULL, dispatch(argc, argv));
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2 || cli_is_help(argv[1]) || strcmp(argv[1], "help") == 0) {
        if (argc >= 3 && strcmp(argv[1], "help") == 0) {
            for (size_t i = 0; i < NCOMMANDS; i++)
                if (strcmp(commands[i]->name, argv[2]) == 0) {
                    fputs(commands[i]->usage, stdout);
                    return 0;
                }
            return cli_usage_error("help", "no command '%s'", argv[2]);
        }
        help(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
        printf("mmport %s\n", mmp_version());
        return 0;
    }
    for (size_t i = 0; i < NCOMMANDS; i++) {
        if (strcmp(commands[i]->name, argv[1]) != 0)
            continue;
        /* `mmport X --help`; a nested `mmport bench map --help` reaches X. */
        if (argc > 2 && cli_is_help(argv[2])) {
            fputs(commands[i]->usage, stdout);
            return 0;
        }
        return commands[i]->run(argc - 1, argv + 1);
    }
    fprintf(stderr, "mmport: unknown command '%s' (see mmport help)\n", argv[1]);
    return 2;
}
