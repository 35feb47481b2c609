/* The sluice tool's files under ~/.sluice: contexts.toml (named servers and
 * credentials), active_context (the name `context use` chose) and
 * session.toml (the token `login` stored). The TOML reader is minimal:
 * [sections] of key = "string" / 'literal' / bare values, with comments. */
#include "cli/cli.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TOML_LINE_MAX  4096
#define TOML_LINES_MAX 100000

bool cli_home_path(const char *file, char *buf, size_t cap)
{
    const char *home = getenv("HOME");
    if (home == NULL || *home == '\0')
        return false;
    int n = snprintf(buf, cap, "%s/.sluice%s%s", home, file ? "/" : "", file ? file : "");
    return n > 0 && (size_t)n < cap;
}

/* --- the TOML subset ---------------------------------------------------------------------- */

typedef void (*toml_entry_fn)(void *ctx, const char *section, const char *key, const char *value);

static bool bare_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-';
}

/* Appends the UTF-8 encoding of code point cp. */
static bool put_utf8(char **o, const char *end, unsigned long cp)
{
    unsigned char b[4];
    int n;
    if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (unsigned char)(0xc0 | cp >> 6);
        b[1] = (unsigned char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000 && (cp < 0xd800 || cp > 0xdfff)) {
        b[0] = (unsigned char)(0xe0 | cp >> 12);
        b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        b[2] = (unsigned char)(0x80 | (cp & 0x3f));
        n = 3;
    } else if (cp >= 0x10000 && cp <= 0x10ffff) {
        b[0] = (unsigned char)(0xf0 | cp >> 18);
        b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
        b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        b[3] = (unsigned char)(0x80 | (cp & 0x3f));
        n = 4;
    } else {
        return false;
    }
    if (end - *o < n)
        return false;
    memcpy(*o, b, (size_t)n);
    *o += n;
    return true;
}

/* One escape after a backslash in a basic string; *p points after the backslash. */
static bool unescape(const char **p, char **o, const char *end)
{
    static const char from[] = "btnfr\"\\", to[] = "\b\t\n\f\r\"\\";
    const char *hit = **p ? strchr(from, **p) : NULL;
    if (hit != NULL) {
        if (*o >= end)
            return false;
        *(*o)++ = to[hit - from];
        (*p)++;
        return true;
    }
    int digits = **p == 'u' ? 4 : **p == 'U' ? 8 : 0;
    if (digits == 0)
        return false;
    unsigned long cp = 0;
    for (int i = 1; i <= digits; i++) {
        char c = (*p)[i];
        if (!isxdigit((unsigned char)c))
            return false;
        cp = cp * 16 + (unsigned long)(isdigit((unsigned char)c) ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    *p += digits + 1;
    return put_utf8(o, end, cp);
}

/* The value at p into out; NULL on a syntax error, else what follows it. */
static const char *parse_value(const char *p, char *out, size_t cap)
{
    char *o = out, *end = out + cap - 1;
    if (*p == '"' || *p == '\'') {
        char quote = *p++;
        while (*p && *p != quote) {
            if (quote == '"' && *p == '\\') {
                p++;
                if (!unescape(&p, &o, end))
                    return NULL;
                continue;
            }
            if (o >= end)
                return NULL;
            *o++ = *p++;
        }
        if (*p != quote)
            return NULL;
        p++;
    } else {
        while (*p && !isspace((unsigned char)*p) && *p != '#') {
            if (o >= end)
                return NULL;
            *o++ = *p++;
        }
        if (o == out)
            return NULL;
    }
    *o = '\0';
    return p;
}

/* One non-blank line. Returns NULL when it parses, else why not. */
static const char *parse_line(const char *p, char *section, size_t section_cap, void *ctx,
                              toml_entry_fn fn)
{
    if (*p == '[') {
        p++;
        while (*p == ' ')
            p++;
        const char *after = p;
        if (*p == '"' || *p == '\'') {
            after = parse_value(p, section, section_cap);
        } else {
            while (bare_char(*after))
                after++;
            size_t n = (size_t)(after - p);
            if (n == 0 || n >= section_cap)
                return "bad section name";
            memcpy(section, p, n);
            section[n] = '\0';
        }
        if (after == NULL)
            return "bad section name";
        while (*after == ' ')
            after++;
        return *after == ']' ? NULL : "expected ']'";
    }
    char key[64], value[1024];
    size_t n = 0;
    while (bare_char(p[n]))
        n++;
    if (n == 0 || n >= sizeof(key))
        return "expected key = value";
    memcpy(key, p, n);
    key[n] = '\0';
    p += n;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p++ != '=')
        return "expected '=' after the key";
    while (*p == ' ' || *p == '\t')
        p++;
    p = parse_value(p, value, sizeof(value));
    if (p == NULL)
        return "bad value (strings are quoted, at most 1023 bytes)";
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p != '\0' && *p != '#')
        return "unexpected text after the value";
    fn(ctx, section, key, value);
    return NULL;
}

/* 0, -ENOENT for a missing file, or CLI_EXIT_LOCAL after printing the problem. */
static int toml_read(const char *path, void *ctx, toml_entry_fn fn)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return errno == ENOENT ? -ENOENT
                               : cli_error(CLI_EXIT_LOCAL, "%s: %s", path, strerror(errno));
    char line[TOML_LINE_MAX], section[64] = "";
    int rc = 0;
    for (int number = 1; rc == 0 && number <= TOML_LINES_MAX; number++) {
        if (fgets(line, sizeof(line), f) == NULL)
            break;
        size_t len = strlen(line);
        if (len == sizeof(line) - 1 && line[len - 1] != '\n') {
            rc = cli_error(CLI_EXIT_LOCAL, "%s:%d: line too long", path, number);
            break;
        }
        line[strcspn(line, "\r\n")] = '\0';
        const char *p = line + strspn(line, " \t");
        if (*p == '\0' || *p == '#')
            continue;
        const char *why = parse_line(p, section, sizeof(section), ctx, fn);
        if (why != NULL)
            rc = cli_error(CLI_EXIT_LOCAL, "%s:%d: %s", path, number, why);
    }
    fclose(f);
    return rc;
}

/* --- contexts --------------------------------------------------------------------------------- */

static void copy(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src);
}

static void context_entry(void *ctx, const char *section, const char *key, const char *value)
{
    cli_contexts_t *list = ctx;
    if (section[0] == '\0')
        return; /* top-level keys are not part of any context */
    cli_context_t *c = (cli_context_t *)cli_context_find(list, section);
    if (c == NULL) {
        if (list->count == sizeof(list->items) / sizeof(list->items[0]))
            return;
        c = &list->items[list->count++];
        copy(c->name, sizeof(c->name), section);
    }
    if (strcmp(key, "server") == 0 || strcmp(key, "tcp_server_address") == 0)
        copy(c->server, sizeof(c->server), value);
    else if (strcmp(key, "username") == 0)
        copy(c->username, sizeof(c->username), value);
    else if (strcmp(key, "password") == 0)
        copy(c->password, sizeof(c->password), value);
    else if (strcmp(key, "token") == 0)
        copy(c->token, sizeof(c->token), value);
}

int cli_contexts_load(cli_contexts_t *out)
{
    *out = (cli_contexts_t){0};
    char path[512];
    if (!cli_home_path("contexts.toml", path, sizeof(path)))
        return 0;
    int rc = toml_read(path, out, context_entry);
    return rc == -ENOENT ? 0 : rc;
}

const cli_context_t *cli_context_find(const cli_contexts_t *list, const char *name)
{
    for (uint32_t i = 0; i < list->count; i++)
        if (strcmp(list->items[i].name, name) == 0)
            return &list->items[i];
    return NULL;
}

void cli_context_active(const cli_run_t *run, char *buf, size_t cap)
{
    const char *name = cli_opt(run, "context");
    if (name == NULL)
        name = getenv("SLUICE_CONTEXT");
    if (name != NULL && *name != '\0') {
        copy(buf, cap, name);
        return;
    }
    copy(buf, cap, "default");
    char path[512];
    if (!cli_home_path("active_context", path, sizeof(path)))
        return;
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    char line[64];
    if (fgets(line, sizeof(line), f) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] != '\0')
            copy(buf, cap, line);
    }
    fclose(f);
}

/* --- writing files -------------------------------------------------------------------------- */

static void toml_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", (unsigned char)*s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

/* Opens ~/.sluice/<file>.tmp for writing, owner-only (it may hold a token). Each buffer comes
 * with its own size: tmp is longer than path, and a name cut short could be path itself, which
 * would then be truncated in place instead of replaced whole by close_private's rename. */
static FILE *open_private(const char *file, char *path, size_t path_cap, char *tmp,
                          size_t tmp_cap)
{
    char dir[512];
    if (!cli_home_path(NULL, dir, sizeof(dir)) || !cli_home_path(file, path, path_cap))
        return NULL;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return NULL;
    int n = snprintf(tmp, tmp_cap, "%s.tmp", path);
    if (n < 0 || (size_t)n >= tmp_cap) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "w");
    if (f == NULL)
        close(fd);
    return f;
}

static int close_private(FILE *f, const char *path, const char *tmp)
{
    bool ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return cli_error(CLI_EXIT_LOCAL, "cannot write %s: %s", path, strerror(errno));
    }
    return 0;
}

int cli_context_write_active(const char *name)
{
    char path[512], tmp[520];
    FILE *f = open_private("active_context", path, sizeof(path), tmp, sizeof(tmp));
    if (f == NULL)
        return cli_error(CLI_EXIT_LOCAL, "cannot write ~/.sluice/active_context: %s",
                         strerror(errno));
    fprintf(f, "%s\n", name);
    return close_private(f, path, tmp);
}

/* --- the login session ---------------------------------------------------------------------- */

static void session_entry(void *ctx, const char *section, const char *key, const char *value)
{
    cli_login_session_t *s = ctx;
    if (strcmp(section, "session") != 0)
        return;
    if (strcmp(key, "server") == 0)
        copy(s->server, sizeof(s->server), value);
    else if (strcmp(key, "name") == 0)
        copy(s->name, sizeof(s->name), value);
    else if (strcmp(key, "token") == 0)
        copy(s->token, sizeof(s->token), value);
}

bool cli_login_session_load(cli_login_session_t *out)
{
    *out = (cli_login_session_t){0};
    char path[512];
    if (!cli_home_path("session.toml", path, sizeof(path)))
        return false;
    return toml_read(path, out, session_entry) == 0 && out->token[0] && out->server[0];
}

int cli_login_session_save(const cli_login_session_t *s)
{
    char path[512], tmp[520];
    FILE *f = open_private("session.toml", path, sizeof(path), tmp, sizeof(tmp));
    if (f == NULL)
        return cli_error(CLI_EXIT_LOCAL, "cannot write ~/.sluice/session.toml: %s",
                         strerror(errno));
    fputs("# Written by `sluice login`, removed by `sluice logout`.\n[session]\nserver = ", f);
    toml_string(f, s->server);
    fputs("\nname = ", f);
    toml_string(f, s->name);
    fputs("\ntoken = ", f);
    toml_string(f, s->token);
    fputc('\n', f);
    return close_private(f, path, tmp);
}

int cli_login_session_remove(void)
{
    char path[512];
    if (!cli_home_path("session.toml", path, sizeof(path)))
        return 0;
    if (unlink(path) != 0 && errno != ENOENT)
        return cli_error(CLI_EXIT_LOCAL, "cannot remove %s: %s", path, strerror(errno));
    return 0;
}
