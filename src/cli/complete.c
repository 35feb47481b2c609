/* Views generated from the command table: the bash completion (`sluice
 * --generate bash`, committed as scripts/sluice-completion.bash) and the
 * command reference of docs/cli.md (`--generate markdown`). Tests keep the
 * committed copies identical to what the table generates. */
#include "cli/cli.h"

#include <string.h>

static void option_words(FILE *f, const cli_opt_t *opts, bool values_only)
{
    const char *sep = "";
    for (const cli_opt_t *o = opts; o != NULL && o->name != NULL; o++) {
        if (values_only && o->value == NULL)
            continue;
        fprintf(f, "%s--%s", sep, o->name);
        sep = " ";
        if (o->alias)
            fprintf(f, " --%s", o->alias);
        if (o->short_name)
            fprintf(f, " -%c", o->short_name);
    }
}

static bool is_leaf(const cli_cmd_t *c)
{
    return c->subs == NULL;
}

/* Calls fn for every command that runs (leaves), with its "cmd sub" path. */
static void each_command(FILE *f, void (*fn)(FILE *, const char *path, const cli_cmd_t *))
{
    char path[128];
    for (const cli_cmd_t *c = cli_commands; c->name != NULL; c++) {
        if (is_leaf(c)) {
            fn(f, c->name, c);
            continue;
        }
        for (const cli_cmd_t *s = c->subs; s->name != NULL; s++) {
            snprintf(path, sizeof(path), "%s %s", c->name, s->name);
            fn(f, path, s);
        }
    }
}

/* Whether the command's own options shadow a global spelling (the parser
 * looks at the command's options first). */
static bool shadowed(const cli_cmd_t *c, const char *name, char short_name)
{
    for (const cli_opt_t *o = c->opts; o != NULL && o->name != NULL; o++)
        if ((short_name && o->short_name == short_name) ||
            (name && (strcmp(o->name, name) == 0 || (o->alias && strcmp(o->alias, name) == 0))))
            return true;
    return false;
}

/* The command's options, then the global spellings it leaves visible. */
static void all_option_words(FILE *f, const cli_cmd_t *c, bool values_only)
{
    option_words(f, c->opts, values_only);
    for (const cli_opt_t *g = cli_global_opts; g->name != NULL; g++) {
        if (values_only && g->value == NULL)
            continue;
        if (!shadowed(c, g->name, 0))
            fprintf(f, " --%s", g->name);
        if (g->alias && !shadowed(c, g->alias, 0))
            fprintf(f, " --%s", g->alias);
        if (g->short_name && !shadowed(c, NULL, g->short_name))
            fprintf(f, " -%c", g->short_name);
    }
}

static void emit_opts_case(FILE *f, const char *path, const cli_cmd_t *c)
{
    fprintf(f, "    \"%s\")\n        _sluice_o=\"", path);
    all_option_words(f, c, false);
    fprintf(f, "\"\n        _sluice_v=\"");
    all_option_words(f, c, true);
    fprintf(f, "\" ;;\n");
}

/* Every value-taking option gets a case, so that one without choices is not
 * completed with the choices of a global option it shadows. */
static void emit_choices_case(FILE *f, const char *path, const cli_cmd_t *c)
{
    for (const cli_opt_t *o = c->opts; o != NULL && o->name != NULL; o++) {
        if (o->value == NULL)
            continue;
        fprintf(f, "    \"%s --%s\"", path, o->name);
        if (o->alias)
            fprintf(f, " | \"%s --%s\"", path, o->alias);
        if (o->short_name)
            fprintf(f, " | \"%s -%c\"", path, o->short_name);
        if (o->choices)
            fprintf(f, ") echo \"%s\" ;;\n", o->choices);
        else
            fprintf(f, ") ;;\n");
    }
}

static void emit_args_case(FILE *f, const char *path, const cli_cmd_t *c)
{
    int i = 0;
    for (const cli_arg_t *a = c->args; a != NULL && a->name != NULL; a++, i++)
        if (a->choices != NULL)
            fprintf(f, "    \"%s %d\") echo \"%s\" ;;\n", path, i, a->choices);
}

static void emit_lookups(FILE *f)
{
    fprintf(f, "_sluice_cmd() {\n    case \"$1\" in\n");
    for (const cli_cmd_t *c = cli_commands; c->name != NULL; c++) {
        fprintf(f, "    %s", c->name);
        for (const char *p = c->aliases; p != NULL && *p;) {
            size_t n = strcspn(p, " ");
            fprintf(f, " | %.*s", (int)n, p);
            p += n + strspn(p + n, " ");
        }
        fprintf(f, ") echo \"%s\" ;;\n", c->name);
    }
    fprintf(f, "    esac\n}\n\n_sluice_sub() {\n    case \"$1 $2\" in\n");
    for (const cli_cmd_t *c = cli_commands; c->name != NULL; c++) {
        for (const cli_cmd_t *s = c->subs; s != NULL && s->name != NULL; s++) {
            fprintf(f, "    \"%s %s\"", c->name, s->name);
            for (const char *p = s->aliases; p != NULL && *p;) {
                size_t n = strcspn(p, " ");
                fprintf(f, " | \"%s %.*s\"", c->name, (int)n, p);
                p += n + strspn(p + n, " ");
            }
            fprintf(f, ") echo \"%s\" ;;\n", s->name);
        }
    }
    fprintf(f, "    esac\n}\n\n_sluice_subs() {\n    case \"$1\" in\n");
    for (const cli_cmd_t *c = cli_commands; c->name != NULL; c++) {
        if (is_leaf(c))
            continue;
        fprintf(f, "    %s) echo \"", c->name);
        for (const cli_cmd_t *s = c->subs; s->name != NULL; s++)
            fprintf(f, "%s%s", s == c->subs ? "" : " ", s->name);
        fprintf(f, "\" ;;\n");
    }
    fprintf(f, "    esac\n}\n\n");
}

static void emit_main(FILE *f)
{
    fprintf(f, "_sluice_takes_value() {\n"
               "    _sluice_opts \"$1\"\n"
               "    [[ \" $_sluice_v \" == *\" $2 \"* ]]\n"
               "}\n\n");
    fprintf(f, "_sluice() {\n"
               "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}\n"
               "    local cmd=\"\" sub=\"\" path=\"\" npos=0 i w\n"
               "    COMPREPLY=()\n"
               "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
               "        w=${COMP_WORDS[i]}\n"
               "        if [[ $w == -* ]]; then\n"
               "            if [[ $w != *=* ]] && _sluice_takes_value \"$path\" \"$w\"; then\n"
               "                ((i++))\n"
               "            fi\n"
               "        elif [[ -z $cmd ]]; then\n"
               "            cmd=$(_sluice_cmd \"$w\")\n"
               "            path=$cmd\n"
               "            [[ -n $cmd && -z $(_sluice_subs \"$cmd\") ]] && sub=.\n"
               "        elif [[ -z $sub ]]; then\n"
               "            sub=$(_sluice_sub \"$cmd\" \"$w\")\n"
               "            [[ -n $sub ]] && path=\"$cmd $sub\"\n"
               "        else\n"
               "            ((npos++))\n"
               "        fi\n"
               "    done\n"
               "    if [[ $COMP_CWORD -gt 1 && $prev == -* && $prev != *=* ]] &&\n"
               "        _sluice_takes_value \"$path\" \"$prev\"; then\n"
               "        COMPREPLY=($(compgen -W \"$(_sluice_choices \"$path\" \"$prev\")\" "
               "-- \"$cur\"))\n"
               "        return\n"
               "    fi\n"
               "    if [[ $cur == -* ]]; then\n"
               "        _sluice_opts \"$path\"\n"
               "        COMPREPLY=($(compgen -W \"$_sluice_o\" -- \"$cur\"))\n"
               "    elif [[ -z $cmd ]]; then\n"
               "        COMPREPLY=($(compgen -W \"$_sluice_commands\" -- \"$cur\"))\n"
               "    elif [[ -z $sub ]]; then\n"
               "        COMPREPLY=($(compgen -W \"$(_sluice_subs \"$cmd\")\" -- \"$cur\"))\n"
               "    else\n"
               "        COMPREPLY=($(compgen -W \"$(_sluice_args \"$path\" \"$npos\")\" -- "
               "\"$cur\"))\n"
               "    fi\n"
               "}\n\n"
               "complete -o default -F _sluice sluice\n");
}

void cli_completion_bash(FILE *f)
{
    fprintf(f, "# Bash completion for sluice, generated from its command table by\n"
               "# `sluice --generate bash`. Use: source this file, or copy it to\n"
               "# /usr/share/bash-completion/completions/sluice.\n\n");
    fprintf(f, "_sluice_commands=\"");
    for (const cli_cmd_t *c = cli_commands; c->name != NULL; c++)
        fprintf(f, "%s%s", c == cli_commands ? "" : " ", c->name);
    fprintf(f, "\"\n_sluice_go=\"");
    option_words(f, cli_global_opts, false);
    fprintf(f, "\"\n_sluice_gv=\"");
    option_words(f, cli_global_opts, true);
    fprintf(f, "\"\n\n");
    emit_lookups(f);
    fprintf(f, "_sluice_opts() {\n    case \"$1\" in\n");
    each_command(f, emit_opts_case);
    fprintf(f, "    *)\n        _sluice_o=$_sluice_go\n        _sluice_v=$_sluice_gv ;;\n");
    fprintf(f, "    esac\n}\n\n_sluice_choices() {\n    case \"$1 $2\" in\n");
    each_command(f, emit_choices_case);
    for (const cli_opt_t *o = cli_global_opts; o->name != NULL; o++) {
        if (o->choices == NULL)
            continue;
        fprintf(f, "    *\" --%s\"", o->name);
        if (o->short_name)
            fprintf(f, " | *\" -%c\"", o->short_name);
        fprintf(f, ") echo \"%s\" ;;\n", o->choices);
    }
    fprintf(f, "    esac\n}\n\n_sluice_args() {\n    case \"$1 $2\" in\n");
    each_command(f, emit_args_case);
    fprintf(f, "    esac\n}\n\n");
    emit_main(f);
}

/* --- the markdown reference ------------------------------------------------------------ */

static void markdown_options(FILE *f, const cli_opt_t *opts)
{
    const char *sep = "";
    for (const cli_opt_t *o = opts; o != NULL && o->name != NULL; o++) {
        fputs(sep, f);
        fputc('`', f);
        if (o->short_name)
            fprintf(f, "-%c, ", o->short_name);
        fprintf(f, "--%s%s%s`", o->name, o->value ? " " : "", o->value ? o->value : "");
        if (o->flags & CLI_OPT_REPEAT)
            fputs(" (repeatable)", f);
        sep = ", ";
    }
}

static void markdown_row(FILE *f, const char *path, const cli_cmd_t *c)
{
    fprintf(f, "| `%s` | %s | ", path, c->aliases ? c->aliases : "");
    for (const cli_arg_t *a = c->args; a != NULL && a->name != NULL; a++) {
        bool optional = (a->flags & CLI_ARG_OPTIONAL) != 0;
        fprintf(f, "%s%s%s%s%s", a == c->args ? "" : " ", optional ? "[" : "", a->name,
                (a->flags & CLI_ARG_REST) ? "..." : "", optional ? "]" : "");
    }
    fputs(" | ", f);
    markdown_options(f, c->opts);
    fprintf(f, " | %s |\n", c->summary);
}

void cli_reference_markdown(FILE *f)
{
    fputs("| Command | Aliases | Arguments | Options | What it does |\n", f);
    fputs("|---|---|---|---|---|\n", f);
    each_command(f, markdown_row);
    fputs("\nGlobal options (any command): ", f);
    markdown_options(f, cli_global_opts);
    fputs(".\n", f);
}
