/* The command-line parser and --help of the sluice tool, both driven by the
 * command table (table.c). Options of the selected command shadow global
 * options with the same short letter (message send -p is the partition, as
 * in Iggy's CLI); long global options work anywhere. */
#include "cli/cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define HELP_COLUMN 32
#define HELP_WIDTH  100

static bool word_in(const char *list, const char *word, size_t len)
{
    if (list == NULL)
        return false;
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, " ");
        if (n == len && strncmp(p, word, len) == 0)
            return true;
        p += n;
        p += strspn(p, " ");
    }
    return false;
}

static const cli_cmd_t *find_cmd(const cli_cmd_t *list, const char *word)
{
    for (const cli_cmd_t *c = list; c->name != NULL; c++)
        if (strcmp(c->name, word) == 0 || word_in(c->aliases, word, strlen(word)))
            return c;
    return NULL;
}

static const cli_opt_t *find_long(const cli_opt_t *opts, const char *name, size_t len)
{
    for (const cli_opt_t *o = opts; o != NULL && o->name != NULL; o++) {
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
            return o;
        if (o->alias && strlen(o->alias) == len && strncmp(o->alias, name, len) == 0)
            return o;
    }
    return NULL;
}

static const cli_opt_t *find_short(const cli_opt_t *opts, char c)
{
    for (const cli_opt_t *o = opts; o != NULL && o->name != NULL; o++)
        if (o->short_name == c)
            return o;
    return NULL;
}

static const char *command_path(const cli_run_t *run, char *buf, size_t cap)
{
    if (run->group == NULL)
        snprintf(buf, cap, "sluice");
    else if (run->cmd == NULL || run->cmd == run->group)
        snprintf(buf, cap, "sluice %s", run->group->name);
    else
        snprintf(buf, cap, "sluice %s %s", run->group->name, run->cmd->name);
    return buf;
}

int cli_usage(const cli_run_t *run, const char *fmt, ...)
{
    char path[128];
    va_list ap;
    va_start(ap, fmt);
    fputs("sluice: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '%s --help' for more information.\n",
            command_path(run, path, sizeof(path)));
    return CLI_EXIT_USAGE;
}

/* Looks an option up: the command's own first, then the global ones. */
static const cli_opt_t *lookup(const cli_run_t *run, const char *name, size_t len, char short_name)
{
    const cli_opt_t *own = run->cmd ? run->cmd->opts : NULL;
    const cli_opt_t *o = short_name ? find_short(own, short_name) : find_long(own, name, len);
    if (o == NULL)
        o = short_name ? find_short(cli_global_opts, short_name)
                       : find_long(cli_global_opts, name, len);
    return o;
}

static int check_choice(const cli_run_t *run, const cli_opt_t *o, const char *value)
{
    if (o->choices == NULL || word_in(o->choices, value, strlen(value)))
        return 0;
    return cli_usage(run, "invalid value '%s' for --%s (expected one of: %s)", value, o->name,
                     o->choices);
}

/* argv[*i] starts with '-'. Records the option (and its value). */
static int parse_option(cli_run_t *run, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    const char *inline_value = NULL;
    const cli_opt_t *o;
    if (a[1] == '-') {
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        inline_value = eq ? eq + 1 : NULL;
        o = lookup(run, name, len, 0);
        if (o == NULL)
            return cli_usage(run, "unknown option '--%.*s'", (int)len, name);
    } else {
        o = lookup(run, NULL, 0, a[1]);
        if (o == NULL)
            return cli_usage(run, "unknown option '-%c'", a[1]);
        if (a[2] != '\0')
            inline_value = a + 2;
    }
    const char *value = NULL;
    if (o->value == NULL) {
        if (inline_value != NULL)
            return cli_usage(run, "option --%s takes no value", o->name);
    } else if (inline_value != NULL) {
        value = inline_value;
    } else if (*i + 1 < argc) {
        value = argv[++*i];
    } else {
        return cli_usage(run, "option --%s needs a value (%s)", o->name, o->value);
    }
    if (value != NULL && check_choice(run, o, value) != 0)
        return CLI_EXIT_USAGE;
    if (strcmp(o->name, "help") == 0)
        run->help = true;
    run->opts[run->opts_count++] = (cli_optval_t){o, value};
    return 0;
}

/* A word that is not an option: the command, the subcommand or an argument. */
static int take_word(cli_run_t *run, const char *word)
{
    if (run->group == NULL) {
        if (strcmp(word, "help") == 0 && !run->help) {
            run->help = true;
            return 0;
        }
        const cli_cmd_t *c = find_cmd(cli_commands, word);
        if (c == NULL)
            return cli_usage(run, "unknown command '%s'", word);
        run->group = c;
        run->cmd = c->subs ? NULL : c;
        return 0;
    }
    if (run->cmd == NULL) {
        const cli_cmd_t *c = find_cmd(run->group->subs, word);
        if (c == NULL)
            return cli_usage(run, "unknown command '%s %s'", run->group->name, word);
        run->cmd = c;
        return 0;
    }
    run->pos[run->pos_count++] = word;
    return 0;
}

static int check_args(cli_run_t *run)
{
    uint32_t required = 0, max = 0;
    bool rest = false;
    const cli_arg_t *args = run->cmd->args;
    for (uint32_t i = 0; args != NULL && args[i].name != NULL; i++) {
        if (i >= CLI_ARGS_MAX)
            abort(); /* the table breaks its own bound */
        if (!(args[i].flags & CLI_ARG_OPTIONAL))
            required = i + 1;
        if (args[i].flags & CLI_ARG_REST)
            rest = true;
        max = i + 1;
        if (i < run->pos_count && args[i].choices &&
            !word_in(args[i].choices, run->pos[i], strlen(run->pos[i])))
            return cli_usage(run, "invalid %s '%s' (expected one of: %s)", args[i].name,
                             run->pos[i], args[i].choices);
        /* A REST argument's words are checked by its handler. */
        if (i < run->pos_count && args[i].len_max != 0 && !(args[i].flags & CLI_ARG_REST) &&
            cli_check_len(run, args[i].name, run->pos[i], args[i].len_min, args[i].len_max) != 0)
            return CLI_EXIT_USAGE;
    }
    if (run->pos_count < required)
        return cli_usage(run, "missing argument %s", args[run->pos_count].name);
    if (!rest && run->pos_count > max)
        return cli_usage(run, "unexpected argument '%s'", run->pos[max]);
    return 0;
}

int cli_parse(int argc, char **argv, cli_run_t *run)
{
    memset(run, 0, sizeof(*run));
    run->argv0 = argv[0];
    run->out = stdout;
    size_t n = argc > 0 ? (size_t)argc : 1;
    run->pos = cli_xalloc(n * sizeof(*run->pos));
    run->opts = cli_xalloc(n * sizeof(*run->opts));
    bool options_done = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int rc;
        if (!options_done && strcmp(a, "--") == 0) {
            options_done = true;
            continue;
        }
        if (!options_done && a[0] == '-' && a[1] != '\0')
            rc = parse_option(run, argc, argv, &i);
        else
            rc = take_word(run, a);
        if (rc != 0)
            return rc;
    }
    if (run->help || run->cmd == NULL)
        return 0;
    return check_args(run);
}

void cli_run_free(cli_run_t *run)
{
    free(run->pos);
    free(run->opts);
    run->pos = NULL;
    run->opts = NULL;
}

/* --- getters ----------------------------------------------------------------- */

static int arg_index(const cli_run_t *run, const char *name)
{
    const cli_arg_t *args = run->cmd->args;
    for (int i = 0; args != NULL && args[i].name != NULL; i++)
        if (strcmp(args[i].name, name) == 0)
            return i;
    fprintf(stderr, "sluice: bug: %s has no argument %s\n", run->cmd->name, name);
    abort();
}

const char *cli_arg(const cli_run_t *run, const char *name)
{
    int i = arg_index(run, name);
    return (uint32_t)i < run->pos_count ? run->pos[i] : NULL;
}

const char *const *cli_rest(const cli_run_t *run, const char *name, uint32_t *count)
{
    uint32_t i = (uint32_t)arg_index(run, name);
    *count = run->pos_count > i ? run->pos_count - i : 0;
    return run->pos + i;
}

static const cli_opt_t *opt_named(const cli_run_t *run, const char *name)
{
    const cli_opt_t *o = run->cmd ? find_long(run->cmd->opts, name, strlen(name)) : NULL;
    if (o == NULL)
        o = find_long(cli_global_opts, name, strlen(name));
    if (o == NULL) {
        fprintf(stderr, "sluice: bug: no option --%s\n", name);
        abort();
    }
    return o;
}

const char *cli_opt_nth(const cli_run_t *run, const char *name, uint32_t index)
{
    const cli_opt_t *o = opt_named(run, name);
    uint32_t seen = 0;
    for (uint32_t i = 0; i < run->opts_count; i++)
        if (run->opts[i].opt == o && seen++ == index)
            return run->opts[i].value ? run->opts[i].value : "";
    return NULL;
}

const char *cli_opt(const cli_run_t *run, const char *name)
{
    const cli_opt_t *o = opt_named(run, name);
    for (uint32_t i = run->opts_count; i > 0; i--)
        if (run->opts[i - 1].opt == o)
            return run->opts[i - 1].value ? run->opts[i - 1].value : "";
    return NULL;
}

bool cli_flag(const cli_run_t *run, const char *name)
{
    return cli_opt(run, name) != NULL;
}

/* --- help ---------------------------------------------------------------------- */

/* Help text from column `indent`, wrapped at HELP_WIDTH. */
static void print_wrapped(FILE *f, size_t indent, const char *text)
{
    size_t col = indent;
    const char *p = text;
    while (*p) {
        size_t n = strcspn(p, " ");
        if (col > indent && col + 1 + n > HELP_WIDTH) {
            fprintf(f, "\n%*s", (int)indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', f);
            col++;
        }
        fwrite(p, 1, n, f);
        col += n;
        p += n;
        p += strspn(p, " ");
    }
    fputc('\n', f);
}

static void print_opts(FILE *f, const char *title, const cli_opt_t *opts)
{
    if (opts == NULL || opts->name == NULL)
        return;
    fprintf(f, "\n%s:\n", title);
    for (const cli_opt_t *o = opts; o->name != NULL; o++) {
        char left[128];
        snprintf(left, sizeof(left), "  %c%c%s--%s%s%s%s%s", o->short_name ? '-' : ' ',
                 o->short_name ? o->short_name : ' ', o->short_name ? ", " : "  ", o->name,
                 o->alias ? ", --" : "", o->alias ? o->alias : "", o->value ? " " : "",
                 o->value ? o->value : "");
        if (strlen(left) >= HELP_COLUMN)
            fprintf(f, "%s\n%*s", left, HELP_COLUMN + 1, "");
        else
            fprintf(f, "%-*s ", HELP_COLUMN, left);
        print_wrapped(f, HELP_COLUMN + 1, o->help);
    }
}

static void print_commands(FILE *f, const cli_cmd_t *list)
{
    fprintf(f, "\nCommands:\n");
    for (const cli_cmd_t *c = list; c->name != NULL; c++) {
        char left[96];
        snprintf(left, sizeof(left), "  %s%s%s%s", c->name, c->aliases ? " (" : "",
                 c->aliases ? c->aliases : "", c->aliases ? ")" : "");
        fprintf(f, "%-*s %s\n", HELP_COLUMN - 8, left, c->summary);
    }
}

static void print_usage_line(FILE *f, const cli_cmd_t *group, const cli_cmd_t *cmd)
{
    fprintf(f, "Usage: sluice");
    if (group != NULL)
        fprintf(f, " %s", group->name);
    if (cmd != NULL && cmd != group)
        fprintf(f, " %s", cmd->name);
    if (cmd == NULL) {
        fprintf(f, " [OPTIONS] COMMAND [ARGS]\n");
        return;
    }
    fprintf(f, " [OPTIONS]");
    for (const cli_arg_t *a = cmd->args; a != NULL && a->name != NULL; a++) {
        bool optional = (a->flags & CLI_ARG_OPTIONAL) != 0;
        fprintf(f, " %s%s%s%s", optional ? "[" : "", a->name,
                (a->flags & CLI_ARG_REST) ? "..." : "", optional ? "]" : "");
    }
    fputc('\n', f);
}

void cli_print_help(FILE *f, const cli_cmd_t *group, const cli_cmd_t *cmd)
{
    if (group == NULL) {
        fprintf(f, "sluice - the command-line tool for Sluice and Apache Iggy servers\n\n");
        print_usage_line(f, NULL, NULL);
        print_commands(f, cli_commands);
        print_opts(f, "Options", cli_global_opts);
        fprintf(f, "\nRun 'sluice COMMAND --help' for more information on a command.\n");
        return;
    }
    const cli_cmd_t *shown = cmd ? cmd : group;
    fprintf(f, "sluice %s%s%s - %s\n\n", group->name, cmd && cmd != group ? " " : "",
            cmd && cmd != group ? cmd->name : "", shown->summary);
    print_usage_line(f, group, cmd);
    if (cmd == NULL) {
        print_commands(f, group->subs);
    } else if (cmd->args != NULL && cmd->args->name != NULL) {
        fprintf(f, "\nArguments:\n");
        for (const cli_arg_t *a = cmd->args; a->name != NULL; a++) {
            char help[512];
            if (a->len_max != 0)
                snprintf(help, sizeof(help), "%s (%u..%u bytes)", a->help, a->len_min, a->len_max);
            else
                snprintf(help, sizeof(help), "%s", a->help);
            fprintf(f, "  %-*s ", HELP_COLUMN - 2, a->name);
            print_wrapped(f, HELP_COLUMN + 1, help);
        }
    }
    if (cmd != NULL)
        print_opts(f, "Options", cmd->opts);
    print_opts(f, "Global options", cli_global_opts);
    if (shown->aliases)
        fprintf(f, "\nAliases: %s\n", shown->aliases);
    if (shown->details)
        fprintf(f, "\n%s\n", shown->details);
}
