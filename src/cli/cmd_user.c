/* Handlers of the user and pat (personal access token) commands. */
#include "cli/cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/limits.h"

#define COUNT(a) ((uint32_t)(sizeof(a) / sizeof((a)[0])))

/* --- users ------------------------------------------------------------------------------ */

static const cli_col_t user_cols[] = {
    {"id", "ID", 0},
    {"username", "USERNAME", 0},
    {"status", "STATUS", 0},
    {"created_at_us", "CREATED", 0},
    {"global_permissions", "PERMISSIONS", 0},
};

static const char *status_name(uint8_t status)
{
    return status == SL_USER_STATUS_ACTIVE ? "active" : "inactive";
}

static void user_row(cli_doc_t *doc, cli_table_t *t, const sl_user_t *u, bool with_permissions)
{
    cli_val_t perms = {.kind = CLI_VAL_ABSENT};
    if (with_permissions && u->permissions != NULL)
        perms = cli_permission_list(doc, 0, u->permissions);
    else if (with_permissions)
        perms = (cli_val_t){.kind = CLI_VAL_JSON, .s = "[]", .alt = "none"};
    cli_val_t v[] = {cli_u(u->id), cli_str(u->username), cli_str(status_name(u->status)),
                     cli_typed(CLI_VAL_TIME_US, u->created_at_us), perms};
    cli_table_row(t, v);
}

static const cli_col_t stream_perm_cols[] = {
    {"stream_id", "STREAM", 0},
    {"topic_id", "TOPIC", 0},
    {"permissions", "PERMISSIONS", 0},
};

static void user_doc(cli_doc_t *doc, const sl_user_t *u)
{
    cli_doc_object(doc, user_cols, COUNT(user_cols));
    user_row(doc, &doc->main, u, true);
    cli_table_t *t =
        cli_doc_sub(doc, "stream_permissions", stream_perm_cols, COUNT(stream_perm_cols));
    const sl_permission_set_t *p = u->permissions;
    for (uint32_t i = 0; p != NULL && p->streams != NULL && i < p->streams_count; i++) {
        const sl_stream_permission_t *s = &p->streams[i];
        cli_table_row(
            t, (cli_val_t[]){cli_u(s->stream_id), cli_str(NULL), cli_permission_list(doc, 1, s)});
        for (uint32_t k = 0; s->topics != NULL && k < s->topics_count; k++)
            cli_table_row(t, (cli_val_t[]){cli_u(s->stream_id), cli_u(s->topics[k].topic_id),
                                           cli_permission_list(doc, 2, &s->topics[k])});
    }
}

/* Permissions from -g and -s, in storage the caller frees with perms_free.
 * *out stays NULL when neither option is given. An exit code. */
typedef struct perms {
    sl_permission_set_t set;
    sl_stream_permission_t *streams;
    sl_topic_permission_t **topics;
    uint32_t count;
} perms_t;

static void perms_free(perms_t *p)
{
    for (uint32_t i = 0; i < p->count; i++)
        free(p->topics[i]);
    free(p->topics);
    free(p->streams);
}

static int perms_make(cli_run_t *run, perms_t *p, const sl_permission_set_t **out)
{
    *p = (perms_t){0};
    *out = NULL;
    const char *global = cli_opt(run, "global-permissions"), *why;
    uint32_t n = 0;
    while (cli_opt_nth(run, "stream-permissions", n) != NULL)
        n++;
    if (global == NULL && n == 0)
        return 0;
    if (global != NULL && !cli_global_permissions(global, &p->set, &why))
        return cli_usage(run, "invalid --global-permissions '%s': %s", global, why);
    p->streams = cli_xalloc((n ? n : 1) * sizeof(*p->streams));
    p->topics = cli_xalloc((n ? n : 1) * sizeof(*p->topics));
    for (uint32_t i = 0; i < n; i++) {
        const char *spec = cli_opt_nth(run, "stream-permissions", i);
        size_t hashes = 0;
        for (const char *c = spec; *c; c++)
            hashes += *c == '#';
        p->topics[i] = cli_xalloc((hashes ? hashes : 1) * sizeof(**p->topics));
        p->count = i + 1;
        if (!cli_stream_permission(spec, p->topics[i], &p->streams[i], &why))
            return cli_usage(run, "invalid --stream-permissions '%s': %s", spec, why);
    }
    p->set.streams = p->streams;
    p->set.streams_count = n;
    *out = &p->set;
    return 0;
}

/* True when the user named by text is the root user (id 0); asks the server. */
static bool is_root(cli_run_t *run, const char *text)
{
    const sl_user_t *u;
    return sl_client_get_user(run->client, cli_id(text), &u) == 0 && u != NULL && u->id == 0;
}

/* A user command's failure, saying which user is missing or which rule
 * refused it. root_guarded: the command is one only root may apply to root. */
static int fail_user(cli_run_t *run, int rc, const char *user, bool root_guarded, const char *fmt,
                     ...) __attribute__((format(printf, 5, 6)));
static int fail_user(cli_run_t *run, int rc, const char *user, bool root_guarded, const char *fmt,
                     ...)
{
    char hint[400];
    const char *why = NULL;
    if (rc == -SL_ERR_RESOURCE_NOT_FOUND) {
        snprintf(hint, sizeof(hint), "no user '%s'", user);
        why = hint;
    } else if (rc == -SL_ERR_UNAUTHORIZED && root_guarded && is_root(run, user)) {
        why = "only the root user may rename the root user or set it inactive";
    } else if (rc == -SL_ERR_UNAUTHORIZED) {
        why = "this needs the manage_users permission";
    }
    va_list ap;
    va_start(ap, fmt);
    int code = cli_vfail(rc, why, fmt, ap);
    va_end(ap);
    return code;
}

static uint8_t status_code(const char *text)
{
    return strcmp(text, "inactive") == 0 ? SL_USER_STATUS_INACTIVE : SL_USER_STATUS_ACTIVE;
}

int cli_cmd_user_create(cli_run_t *run)
{
    const char *username = cli_arg(run, "USERNAME"), *status = cli_opt(run, "user-status");
    perms_t storage;
    const sl_permission_set_t *perms;
    int rc = perms_make(run, &storage, &perms);
    const sl_user_t *u = NULL;
    if (rc == 0) {
        rc = sl_client_create_user(run->client, username, cli_arg(run, "PASSWORD"),
                                   status_code(status ? status : "active"), perms, &u);
        if (rc != 0)
            rc = cli_fail(rc, "create user '%s'", username);
    }
    if (rc == 0) {
        cli_doc_t doc;
        user_doc(&doc, u);
        cli_created(run, &doc, "created user '%s' with id %u", u->username, u->id);
        cli_doc_free(&doc);
    }
    perms_free(&storage);
    return rc;
}

int cli_cmd_user_delete(cli_run_t *run)
{
    const char *user = cli_arg(run, "USER");
    int rc = sl_client_delete_user(run->client, cli_id(user));
    if (rc != 0)
        return fail_user(run, rc, user, false, "delete user '%s'", user);
    cli_done(run, "deleted user '%s'", user);
    return 0;
}

int cli_cmd_user_get(cli_run_t *run)
{
    const char *user = cli_arg(run, "USER");
    const sl_user_t *u;
    int rc = sl_client_get_user(run->client, cli_id(user), &u);
    if (rc != 0)
        return cli_fail(rc, "get user '%s'", user);
    if (u == NULL)
        return cli_error(CLI_EXIT_NOT_FOUND, "user '%s' not found", user);
    cli_doc_t doc;
    user_doc(&doc, u);
    cli_doc_print(run, &doc);
    cli_doc_free(&doc);
    return 0;
}

int cli_cmd_user_list(cli_run_t *run)
{
    const sl_user_t *items;
    uint32_t count;
    int rc = sl_client_get_users(run->client, &items, &count);
    if (rc != 0)
        return cli_fail(rc, "list users");
    cli_doc_t doc;
    cli_doc_list(&doc, user_cols, COUNT(user_cols) - 1);
    for (uint32_t i = 0; i < count; i++)
        user_row(&doc, &doc.main, &items[i], false);
    cli_doc_print(run, &doc);
    cli_doc_free(&doc);
    return 0;
}

int cli_cmd_user_name(cli_run_t *run)
{
    const char *user = cli_arg(run, "USER"), *name = cli_arg(run, "USERNAME");
    int rc = sl_client_update_user(run->client, cli_id(user), name, 0);
    if (rc != 0)
        return fail_user(run, rc, user, true, "rename user '%s'", user);
    cli_done(run, "renamed user '%s' to '%s'", user, name);
    return 0;
}

int cli_cmd_user_status(cli_run_t *run)
{
    const char *user = cli_arg(run, "USER"), *status = cli_arg(run, "STATUS");
    int rc = sl_client_update_user(run->client, cli_id(user), NULL, status_code(status));
    if (rc != 0)
        return fail_user(run, rc, user, true, "change the status of user '%s'", user);
    cli_done(run, "user '%s' is now %s", user, status);
    return 0;
}

/* An argument, or a prompt on the terminal when it is absent. */
static bool secret(const char *given, const char *prompt, char *buf, size_t cap)
{
    if (given != NULL) {
        snprintf(buf, cap, "%s", given);
        return true;
    }
    return cli_read_secret(prompt, buf, cap);
}

int cli_cmd_user_password(cli_run_t *run)
{
    const char *user = cli_arg(run, "USER");
    char current[256], fresh[256], prompt[300];
    snprintf(prompt, sizeof(prompt), "Current password for %s: ", user);
    if (!secret(cli_arg(run, "CURRENT"), prompt, current, sizeof(current)) ||
        !secret(cli_arg(run, "NEW"), "New password: ", fresh, sizeof(fresh)))
        return cli_usage(run, "give CURRENT and NEW, or run on a terminal to be asked");
    /* The parser checked NEW when it was an argument; a typed one is checked here. */
    int rc = cli_check_len(run, "NEW", fresh, SL_PASSWORD_LEN_MIN, SL_PASSWORD_LEN_MAX);
    if (rc != 0) {
        memset(current, 0, sizeof(current));
        memset(fresh, 0, sizeof(fresh));
        return rc;
    }
    rc = sl_client_change_password(run->client, cli_id(user), current, fresh);
    memset(current, 0, sizeof(current));
    memset(fresh, 0, sizeof(fresh));
    if (rc == -SL_ERR_INVALID_CREDENTIALS)
        return cli_fail_hint(rc, "the current password is wrong",
                             "change the password of user '%s'", user);
    if (rc != 0)
        return fail_user(run, rc, user, false, "change the password of user '%s'", user);
    cli_done(run, "changed the password of user '%s'", user);
    return 0;
}

int cli_cmd_user_permissions(cli_run_t *run)
{
    const char *user = cli_arg(run, "USER");
    perms_t storage;
    const sl_permission_set_t *perms;
    int rc = perms_make(run, &storage, &perms);
    if (rc == 0) {
        rc = sl_client_update_permissions(run->client, cli_id(user), perms);
        rc =
            rc == 0 ? 0 : fail_user(run, rc, user, false, "set the permissions of user '%s'", user);
    }
    if (rc == 0)
        cli_done(run, "%s the permissions of user '%s'", perms ? "replaced" : "removed", user);
    perms_free(&storage);
    return rc;
}

/* --- personal access tokens ----------------------------------------------------------------- */

int cli_cmd_pat_create(cli_run_t *run)
{
    const char *name = cli_arg(run, "NAME");
    uint32_t words;
    const char *const *expiry = cli_rest(run, "EXPIRY", &words);
    uint64_t expiry_us = 0;
    if (words > 0 && !cli_duration_us(expiry, words, &expiry_us))
        return cli_usage(run, "invalid EXPIRY (e.g. 30d, \"2h 30m\", never)");
    const char *token;
    int rc = sl_client_create_token(run->client, name, expiry_us, &token);
    if (rc != 0)
        return cli_fail(rc, "create personal access token '%s'", name);
    if (run->format != CLI_FORMAT_JSON && run->quiet) {
        /* Quiet: the token alone, for TOKEN=$(sluice -q pat create ...). */
        fprintf(run->out, "%s\n", token);
        return 0;
    }
    static const cli_col_t cols[] = {{"name", "NAME", 0}, {"token", "TOKEN", 0}};
    cli_doc_t doc;
    cli_doc_object(&doc, cols, COUNT(cols));
    cli_table_row(&doc.main, (cli_val_t[]){cli_str(name), cli_str(token)});
    cli_created(run, &doc, "created personal access token '%s' (shown only now):\n%s", name, token);
    cli_doc_free(&doc);
    return 0;
}

int cli_cmd_pat_delete(cli_run_t *run)
{
    const char *name = cli_arg(run, "NAME");
    int rc = sl_client_delete_token(run->client, name);
    if (rc == -SL_ERR_RESOURCE_NOT_FOUND)
        return cli_fail_hint(rc, "this user has no token by that name",
                             "delete personal access token '%s'", name);
    if (rc != 0)
        return cli_fail(rc, "delete personal access token '%s'", name);
    cli_done(run, "deleted personal access token '%s'", name);
    return 0;
}

int cli_cmd_pat_list(cli_run_t *run)
{
    const sl_token_t *items;
    uint32_t count;
    int rc = sl_client_get_tokens(run->client, &items, &count);
    if (rc != 0)
        return cli_fail(rc, "list personal access tokens");
    static const cli_col_t cols[] = {{"name", "NAME", 0}, {"expiry_at_us", "EXPIRES", 0}};
    cli_doc_t doc;
    cli_doc_list(&doc, cols, COUNT(cols));
    for (uint32_t i = 0; i < count; i++) {
        cli_val_t expiry = cli_typed(CLI_VAL_TIME_US, items[i].expiry_at_us);
        if (items[i].expiry_at_us == 0)
            expiry = (cli_val_t){.kind = CLI_VAL_JSON, .s = "null", .alt = "never"};
        cli_table_row(&doc.main, (cli_val_t[]){cli_str(items[i].name), expiry});
    }
    cli_doc_print(run, &doc);
    cli_doc_free(&doc);
    return 0;
}
