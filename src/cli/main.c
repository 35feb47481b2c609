/* sluice: the command-line tool for Sluice and Apache Iggy servers. Parses
 * the command line with the command table, opens the session the command
 * needs, runs its handler and exits with a documented code. */
#include "cli/cli.h"

#include <string.h>

#ifndef SLUICE_VERSION
#define SLUICE_VERSION "unknown"
#endif

/* The value of the named option if it was given, without the table lookup of
 * cli_opt (which treats an option the command lacks as a bug). */
static const char *given(const cli_run_t *run, const char *name)
{
    const char *value = NULL;
    for (uint32_t i = 0; i < run->opts_count; i++)
        if (strcmp(run->opts[i].opt->name, name) == 0)
            value = run->opts[i].value;
    return value;
}

/* -o/--output, or Iggy's -l/--list-mode of list commands (the later wins). */
static cli_format_t output_format(const cli_run_t *run)
{
    const char *format = NULL;
    for (uint32_t i = 0; i < run->opts_count; i++) {
        const char *name = run->opts[i].opt->name;
        if (strcmp(name, "output") == 0 || strcmp(name, "list-mode") == 0)
            format = run->opts[i].value;
    }
    if (format != NULL && strcmp(format, "json") == 0)
        return CLI_FORMAT_JSON;
    if (format != NULL && strcmp(format, "list") == 0)
        return CLI_FORMAT_LIST;
    return CLI_FORMAT_TABLE;
}

static int dispatch(cli_run_t *run)
{
    if (run->help) {
        cli_print_help(stdout, run->group, run->cmd);
        return CLI_EXIT_OK;
    }
    const char *generate = given(run, "generate");
    if (generate != NULL) {
        if (strcmp(generate, "markdown") == 0)
            cli_reference_markdown(stdout);
        else
            cli_completion_bash(stdout);
        return CLI_EXIT_OK;
    }
    if (cli_flag(run, "version")) {
        printf("sluice %s (Apache Iggy binary protocol 0.11.0)\n", SLUICE_VERSION);
        return CLI_EXIT_OK;
    }
    if (run->cmd == NULL) {
        cli_print_help(stderr, run->group, NULL);
        return CLI_EXIT_USAGE;
    }
    run->format = output_format(run);
    run->quiet = cli_flag(run, "quiet");
    int rc = cli_session_open(run);
    if (rc == 0)
        rc = run->cmd->run(run);
    cli_session_close(run);
    return rc;
}

int main(int argc, char **argv)
{
    cli_run_t run;
    int rc = cli_parse(argc, argv, &run);
    if (rc == 0)
        rc = dispatch(&run);
    cli_run_free(&run);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fputs("sluice: error: cannot write the output\n", stderr);
        if (rc == 0)
            rc = CLI_EXIT_LOCAL;
    }
    return rc;
}
