/* The strict TOML subset reader (server/toml.h). One pass over the text with
 * a cursor; each line is a blank, a comment, a [table] or [[array]] header
 * or a key/value pair (whose value may be a one-line inline table). Errors stop the parse at the
 * first problem. */
#include "server/toml.h"

#include <sluice/error.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/bytes.h"

typedef struct parser {
    const char *p;   /* cursor */
    const char *end; /* one past the last byte */
    const char *line_start;
    uint32_t line;
    const char *table; /* current table's full name, "" at the root */
    size_t table_len;
    /* The last [[array]] header's name and its element count, so that a
     * [array.sub] header after it names the newest element. */
    char array[SL_TOML_NAME_MAX + 1];
    uint32_t array_count;
    bool array_open; /* no other table was opened since its last element */
    sl_toml_doc_t *doc;
    sl_toml_error_t *err;
} parser_t;

__attribute__((format(printf, 3, 4))) static int fail_at(parser_t *ps, const char *at,
                                                         const char *fmt, ...)
{
    ps->err->line = ps->line;
    ps->err->column = (uint32_t)(at - ps->line_start) + 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->err->message, sizeof(ps->err->message), fmt, ap);
    va_end(ap);
    return -SL_ERR_INVALID_CONFIGURATION;
}

static bool is_bare(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Control characters other than tab are not allowed in comments or strings. */
static bool is_control(char c)
{
    unsigned char u = (unsigned char)c;
    return (u < 0x20 && u != '\t') || u == 0x7f;
}

static bool at_end(const parser_t *ps)
{
    return ps->p >= ps->end;
}

static char peek(const parser_t *ps, size_t ahead)
{
    return (size_t)(ps->end - ps->p) > ahead ? ps->p[ahead] : '\0';
}

static void skip_ws(parser_t *ps)
{
    while (!at_end(ps) && (*ps->p == ' ' || *ps->p == '\t'))
        ps->p++;
}

/* True at a line end or the end of input (nothing consumed). */
static bool at_eol(const parser_t *ps)
{
    return at_end(ps) || *ps->p == '\n' || (*ps->p == '\r' && peek(ps, 1) == '\n');
}

static void consume_eol(parser_t *ps)
{
    if (at_end(ps))
        return;
    ps->p += *ps->p == '\r' ? 2 : 1;
    ps->line++;
    ps->line_start = ps->p;
}

/* A comment runs from '#' to the end of the line. */
static int skip_comment(parser_t *ps)
{
    const char *start = ++ps->p;
    while (!at_eol(ps)) {
        if (is_control(*ps->p)) {
            if (*ps->p == '\r')
                return fail_at(ps, ps->p, "carriage return without a line feed");
            return fail_at(ps, ps->p, "control character 0x%02x in a comment",
                           (unsigned)(unsigned char)*ps->p);
        }
        ps->p++;
    }
    if (!sl_utf8_valid((const uint8_t *)start, (size_t)(ps->p - start)))
        return fail_at(ps, start, "invalid UTF-8 in a comment");
    return 0;
}

/* After a header or a value only blanks and a comment may follow. */
static int finish_line(parser_t *ps, const char *after_what)
{
    skip_ws(ps);
    if (!at_end(ps) && *ps->p == '#') {
        int rc = skip_comment(ps);
        if (rc)
            return rc;
    }
    if (!at_eol(ps)) {
        if (*ps->p == '\r')
            return fail_at(ps, ps->p, "carriage return without a line feed");
        return fail_at(ps, ps->p, "expected the end of the line after %s", after_what);
    }
    consume_eol(ps);
    return 0;
}

/* --- names ---------------------------------------------------------------- */

static int parse_bare(parser_t *ps, const char **start, size_t *len, const char *what)
{
    *start = ps->p;
    if (!at_end(ps) && (*ps->p == '"' || *ps->p == '\''))
        return fail_at(ps, ps->p, "quoted %ss are not supported", what);
    while (!at_end(ps) && is_bare(*ps->p))
        ps->p++;
    *len = (size_t)(ps->p - *start);
    if (*len == 0) {
        if (at_eol(ps))
            return fail_at(ps, ps->p, "expected a %s", what);
        unsigned char c = (unsigned char)*ps->p;
        if (c > 0x20 && c < 0x7f)
            return fail_at(ps, ps->p, "unexpected '%c': expected a %s", c, what);
        return fail_at(ps, ps->p, "unexpected byte 0x%02x: expected a %s", c, what);
    }
    return 0;
}

/* Appends ".segment" (or "segment" to an empty name) within the name cap. */
static bool name_append(char *name, size_t *name_len, const char *seg, size_t seg_len)
{
    size_t dot = *name_len ? 1 : 0;
    if (seg_len > SL_TOML_NAME_MAX || *name_len + dot + seg_len > SL_TOML_NAME_MAX)
        return false;
    if (dot)
        name[(*name_len)++] = '.';
    memcpy(name + *name_len, seg, seg_len);
    *name_len += seg_len;
    name[*name_len] = '\0';
    return true;
}

/* True when name is prefix itself or lies below it ("a.b" under "a"). */
static bool name_within(const char *name, const char *prefix)
{
    size_t n = strlen(prefix);
    return strncmp(name, prefix, n) == 0 && (name[n] == '\0' || name[n] == '.');
}

/* --- tables ----------------------------------------------------------------- */

static int define_table(parser_t *ps, const char *at, const char *name, size_t len)
{
    sl_toml_doc_t *doc = ps->doc;
    for (uint32_t i = 0; i < doc->table_count; i++)
        if (strcmp(doc->tables[i], name) == 0)
            return fail_at(ps, at, "duplicate table [%s]", name);
    for (uint32_t i = 0; i < doc->count; i++)
        if (name_within(name, doc->entries[i].name))
            return fail_at(ps, at, "table [%s] conflicts with key '%s' on line %u", name,
                           doc->entries[i].name, doc->entries[i].line);
    if (doc->table_count == SL_TOML_TABLES_MAX)
        return fail_at(ps, at, "more than %u tables", SL_TOML_TABLES_MAX);
    char *copy = sl_arena_strndup(&doc->arena, name, len);
    if (!copy)
        return fail_at(ps, at, "out of memory");
    doc->tables[doc->table_count++] = copy;
    ps->table = copy;
    ps->table_len = len;
    return 0;
}

/* The name inside [...] or [[...]], dotted segments joined, at ps->p. */
static int parse_header_name(parser_t *ps, char name[SL_TOML_NAME_MAX + 1], size_t *len)
{
    *len = 0;
    name[0] = '\0';
    for (uint32_t depth = 1;; depth++) {
        skip_ws(ps);
        const char *seg;
        size_t seg_len;
        int rc = parse_bare(ps, &seg, &seg_len, "table name");
        if (rc)
            return rc;
        if (depth > SL_TOML_DEPTH_MAX)
            return fail_at(ps, seg, "tables nest deeper than %u levels", SL_TOML_DEPTH_MAX);
        if (!name_append(name, len, seg, seg_len))
            return fail_at(ps, seg, "table name longer than %u bytes", SL_TOML_NAME_MAX);
        skip_ws(ps);
        if (!at_end(ps) && *ps->p == '.') {
            ps->p++;
            continue;
        }
        if (!at_end(ps) && *ps->p == ']')
            return 0;
        return fail_at(ps, ps->p, "expected '.' or ']' in a table header");
    }
}

/* [[name]] opens element n of an array of tables, named "name.n" (the
 * configuration reads "cluster.nodes.0.ip"). Only the newest array can
 * grow: elements of one array are written together. */
static int parse_array_header(parser_t *ps, const char *at)
{
    ps->p++;
    char name[SL_TOML_NAME_MAX + 1];
    size_t len;
    int rc = parse_header_name(ps, name, &len);
    if (rc)
        return rc;
    ps->p++;
    if (at_end(ps) || *ps->p != ']')
        return fail_at(ps, ps->p, "expected ']]' to close an array-of-tables header");
    ps->p++;
    bool same = strcmp(ps->array, name) == 0;
    bool taken = false; /* a table of that name exists outside this array */
    for (uint32_t i = 0; !same && i < ps->doc->table_count; i++)
        taken = taken || name_within(ps->doc->tables[i], name);
    if (taken || (same && !ps->array_open))
        return fail_at(ps, at, "array of tables [[%s]] must be written in one place", name);
    if (strcmp(ps->array, name) != 0) {
        memcpy(ps->array, name, len + 1);
        ps->array_count = 0;
    }
    ps->array_open = true;
    char element[SL_TOML_NAME_MAX + 1];
    int n = snprintf(element, sizeof(element), "%s.%u", name, ps->array_count);
    if (n < 0 || (size_t)n > SL_TOML_NAME_MAX)
        return fail_at(ps, at, "table name longer than %u bytes", SL_TOML_NAME_MAX);
    rc = define_table(ps, at, element, (size_t)n);
    if (rc)
        return rc;
    ps->array_count++;
    return finish_line(ps, "a table header");
}

static int parse_table_header(parser_t *ps)
{
    const char *at = ps->p++;
    if (!at_end(ps) && *ps->p == '[')
        return parse_array_header(ps, at);
    char name[SL_TOML_NAME_MAX + 1];
    size_t len;
    int rc = parse_header_name(ps, name, &len);
    if (rc)
        return rc;
    ps->p++;
    /* [array.sub] after [[array]] is a table of the newest element. */
    size_t alen = strlen(ps->array);
    bool in_element =
        ps->array_open && len > alen && strncmp(name, ps->array, alen) == 0 && name[alen] == '.';
    ps->array_open = in_element;
    if (in_element) {
        char element[SL_TOML_NAME_MAX + 1];
        int n = snprintf(element, sizeof(element), "%s.%u%s", ps->array, ps->array_count - 1,
                         name + alen);
        if (n < 0 || (size_t)n > SL_TOML_NAME_MAX)
            return fail_at(ps, at, "table name longer than %u bytes", SL_TOML_NAME_MAX);
        memcpy(name, element, (size_t)n + 1);
        len = (size_t)n;
    }
    rc = define_table(ps, at, name, len);
    return rc ? rc : finish_line(ps, "a table header");
}

/* --- strings ---------------------------------------------------------------- */

static size_t put_utf8(char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
}

/* Decodes the escape after a backslash at ps->p; appends to out. */
static int parse_escape(parser_t *ps, char *out, size_t *out_len)
{
    const char *at = ps->p - 1;
    if (at_eol(ps))
        return fail_at(ps, at, "a backslash ends the line inside a string");
    char c = *ps->p;
    switch (c) {
    case '"':
    case '\\':
        out[(*out_len)++] = c;
        ps->p++;
        return 0;
    case 'n':
        out[(*out_len)++] = '\n';
        ps->p++;
        return 0;
    case 't':
        out[(*out_len)++] = '\t';
        ps->p++;
        return 0;
    case 'u':
        break;
    default:
        if ((unsigned char)c > 0x20 && (unsigned char)c < 0x7f)
            return fail_at(ps, at, "invalid escape '\\%c' (allowed: \\\" \\\\ \\n \\t \\uXXXX)", c);
        return fail_at(ps, at, "invalid escape (allowed: \\\" \\\\ \\n \\t \\uXXXX)");
    }
    uint32_t cp = 0;
    for (size_t i = 1; i <= 4; i++) {
        int h = sl_hex_digit(peek(ps, i));
        if (h < 0)
            return fail_at(ps, at, "\\u needs exactly four hex digits");
        cp = cp << 4 | (uint32_t)h;
    }
    if (cp == 0)
        return fail_at(ps, at, "\\u0000 is not allowed");
    if (cp >= 0xD800 && cp <= 0xDFFF)
        return fail_at(ps, at, "\\u%04X is a surrogate, not a character", (unsigned)cp);
    *out_len += put_utf8(out + *out_len, cp);
    ps->p += 5;
    return 0;
}

/* A one-line string: "basic" (escapes) or 'literal' (none). */
static int parse_string(parser_t *ps, sl_toml_value_t *v)
{
    const char *open = ps->p;
    char quote = *ps->p;
    if (peek(ps, 1) == quote && peek(ps, 2) == quote)
        return fail_at(ps, open, "multi-line strings are not supported");
    ps->p++;
    /* The decoded text is never longer than the rest of the line. */
    const char *nl = memchr(ps->p, '\n', (size_t)(ps->end - ps->p));
    size_t room = (size_t)((nl ? nl : ps->end) - ps->p) + 1;
    char *out = sl_arena_alloc(&ps->doc->arena, room, 1);
    if (!out)
        return fail_at(ps, open, "out of memory");
    size_t len = 0;
    for (;;) {
        if (at_end(ps) || *ps->p == '\n' || *ps->p == '\r')
            return fail_at(ps, open, "unterminated string");
        char c = *ps->p;
        if (c == quote)
            break;
        if (is_control(c))
            return fail_at(ps, ps->p, "control character 0x%02x in a string",
                           (unsigned)(unsigned char)c);
        ps->p++;
        if (c == '\\' && quote == '"') {
            int rc = parse_escape(ps, out, &len);
            if (rc)
                return rc;
            continue;
        }
        out[len++] = c;
    }
    ps->p++;
    out[len] = '\0';
    if (!sl_utf8_valid((const uint8_t *)out, len))
        return fail_at(ps, open, "invalid UTF-8 in a string");
    v->type = SL_TOML_STRING;
    v->string = out;
    v->string_len = len;
    return 0;
}

/* --- integers, booleans and what we refuse ------------------------------- */

int sl_toml_parse_integer(const char *text, size_t len, int64_t *out, const char **why)
{
    size_t i = 0;
    bool negative = false;
    if (len > 0 && (text[0] == '+' || text[0] == '-')) {
        negative = text[0] == '-';
        i = 1;
    }
    if (i == len) {
        *why = "expected digits";
        return -SL_ERR_INVALID_CONFIGURATION;
    }
    if (text[i] == '0' && i + 1 < len && (is_digit(text[i + 1]) || text[i + 1] == '_')) {
        *why = "leading zeros are not allowed";
        return -SL_ERR_INVALID_CONFIGURATION;
    }
    const uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t acc = 0;
    bool after_digit = false;
    for (; i < len; i++) {
        char c = text[i];
        if (c == '_' && after_digit) {
            after_digit = false;
            continue;
        }
        if (c == '_') {
            *why = "'_' must sit between two digits";
            return -SL_ERR_INVALID_CONFIGURATION;
        }
        if (!is_digit(c)) {
            *why = "invalid character in an integer";
            return -SL_ERR_INVALID_CONFIGURATION;
        }
        uint64_t d = (uint64_t)(c - '0');
        if (acc > (limit - d) / 10) {
            *why = "integer out of range (64-bit signed)";
            return -SL_ERR_INVALID_CONFIGURATION;
        }
        acc = acc * 10 + d;
        after_digit = true;
    }
    if (!after_digit) {
        *why = "'_' must sit between two digits";
        return -SL_ERR_INVALID_CONFIGURATION;
    }
    /* -2^63 has no positive counterpart; negate in unsigned arithmetic. */
    *out = negative ? (int64_t)(~acc + 1) : (int64_t)acc;
    return 0;
}

static bool token_has(const char *tok, size_t len, const char *chars)
{
    for (size_t i = 0; i < len; i++)
        if (strchr(chars, tok[i]))
            return true;
    return false;
}

/* unsupported_number's verdicts for tokens that are most likely text whose
 * quotes were forgotten (address = 127.0.0.1:8090, size = 10GiB): the
 * error then shows the quoted form. */
static const char DATE_TIME[] = "dates and times are not supported";
static const char NOT_A_NUMBER[] = "unquoted values are integers, true or false";

/* An inner sign that does not follow an exponent marker: a date's '-'. */
static bool has_inner_sign(const char *tok, size_t len)
{
    for (size_t i = 1; i < len; i++)
        if ((tok[i] == '-' || tok[i] == '+') && tok[i - 1] != 'e' && tok[i - 1] != 'E')
            return true;
    return false;
}

/* Says why a number-like token is outside our subset, or NULL. */
static const char *unsupported_number(const char *tok, size_t len)
{
    size_t s = (tok[0] == '+' || tok[0] == '-') ? 1 : 0;
    if (len - s == 3 && (memcmp(tok + s, "inf", 3) == 0 || memcmp(tok + s, "nan", 3) == 0))
        return "floating-point values are not supported";
    if (s == len || !is_digit(tok[s]))
        return NULL;
    if (len - s >= 2 && tok[s] == '0' && strchr("xob", tok[s + 1]))
        return "only decimal integers are supported";
    if (token_has(tok, len, ":") || has_inner_sign(tok, len))
        return DATE_TIME;
    size_t dots = 0;
    for (size_t i = 0; i < len; i++) {
        if (!is_digit(tok[i]) && !strchr("+-_.eE", tok[i]))
            return NOT_A_NUMBER; /* 10GiB, 5sec */
        dots += tok[i] == '.';
    }
    if (dots > 1)
        return NOT_A_NUMBER; /* 127.0.0.1 */
    if (token_has(tok, len, ".eE"))
        return "floating-point values are not supported";
    return NULL;
}

/* An unquoted word where a value goes is most often text whose quotes were
 * forgotten (address = 127.0.0.1:8090): the error shows the quoted form.
 * The token is echoed only when it is short printable ASCII. */
static int fail_unquoted(parser_t *ps, const char *tok, size_t len, const char *what)
{
    bool printable = len > 0 && len <= 64;
    for (size_t i = 0; printable && i < len; i++)
        printable = tok[i] > 0x20 && tok[i] < 0x7f && tok[i] != '"' && tok[i] != '\\';
    if (!printable)
        return fail_at(ps, tok, "text values must be quoted (%s)", what);
    return fail_at(ps, tok, "text values must be quoted: \"%.*s\" (%s)", (int)len, tok, what);
}

static int parse_bare_value(parser_t *ps, sl_toml_value_t *v)
{
    const char *tok = ps->p;
    /* strchr also matches the terminator, so a NUL byte ends the token. */
    while (!at_end(ps) && !strchr(" \t#\r\n,}", *ps->p))
        ps->p++;
    size_t len = (size_t)(ps->p - tok);
    if (len == 4 && memcmp(tok, "true", 4) == 0) {
        v->type = SL_TOML_BOOL;
        v->boolean = true;
        return 0;
    }
    if (len == 5 && memcmp(tok, "false", 5) == 0) {
        v->type = SL_TOML_BOOL;
        return 0;
    }
    const char *why = len ? unsupported_number(tok, len) : NULL;
    if (why == DATE_TIME || why == NOT_A_NUMBER)
        return fail_unquoted(ps, tok, len, why);
    if (why)
        return fail_at(ps, tok, "%s", why);
    if (len && (is_digit(tok[0]) || tok[0] == '+' || tok[0] == '-')) {
        if (sl_toml_parse_integer(tok, len, &v->integer, &why))
            return fail_at(ps, tok, "%s", why);
        v->type = SL_TOML_INTEGER;
        return 0;
    }
    return fail_unquoted(ps, tok, len,
                         "expected a value: \"string\", 'string', integer, true or false");
}

static int parse_value(parser_t *ps, sl_toml_value_t *v)
{
    *v = (sl_toml_value_t){.line = ps->line, .column = (uint32_t)(ps->p - ps->line_start) + 1};
    if (at_eol(ps) || *ps->p == '#')
        return fail_at(ps, ps->p, "expected a value after '='");
    switch (*ps->p) {
    case '"':
    case '\'':
        return parse_string(ps, v);
    case '[':
        return fail_at(ps, ps->p, "arrays are not supported");
    case '{':
        return fail_at(ps, ps->p, "nested inline tables are not supported");
    default:
        return parse_bare_value(ps, v);
    }
}

/* --- key = value ------------------------------------------------------------ */

static int define_key(parser_t *ps, const char *at, const char *name, size_t len,
                      const sl_toml_value_t *v)
{
    sl_toml_doc_t *doc = ps->doc;
    for (uint32_t i = 0; i < doc->count; i++)
        if (strcmp(doc->entries[i].name, name) == 0)
            return fail_at(ps, at, "duplicate key '%s' (first set on line %u)", name,
                           doc->entries[i].line);
    for (uint32_t i = 0; i < doc->table_count; i++)
        if (name_within(doc->tables[i], name))
            return fail_at(ps, at, "key '%s' conflicts with table [%s]", name, doc->tables[i]);
    if (doc->count == SL_TOML_ENTRIES_MAX)
        return fail_at(ps, at, "more than %u keys", SL_TOML_ENTRIES_MAX);
    if (doc->count == doc->entry_capacity) {
        uint32_t cap = doc->entry_capacity ? doc->entry_capacity * 2 : 32;
        sl_toml_entry_t *grown = realloc(doc->entries, cap * sizeof(*grown));
        if (!grown)
            return fail_at(ps, at, "out of memory");
        doc->entries = grown;
        doc->entry_capacity = cap;
    }
    char *copy = sl_arena_strndup(&doc->arena, name, len);
    if (!copy)
        return fail_at(ps, at, "out of memory");
    doc->entries[doc->count++] = (sl_toml_entry_t){
        .name = copy,
        .table_len = ps->table_len,
        .line = ps->line,
        .column = (uint32_t)(at - ps->line_start) + 1,
        .value = *v,
    };
    return 0;
}

/* { a = 1, b = "x" } on one line: each pair becomes the entry "name.a".
 * Values are scalars; every pair consumes bytes, so the loop is bounded by
 * the line. */
static int parse_inline_table(parser_t *ps, const char *name, size_t name_len)
{
    ps->p++;
    skip_ws(ps);
    if (!at_end(ps) && *ps->p == '}') {
        ps->p++;
        return 0;
    }
    for (;;) {
        skip_ws(ps);
        const char *key;
        size_t key_len;
        int rc = parse_bare(ps, &key, &key_len, "key");
        if (rc)
            return rc;
        char full[SL_TOML_NAME_MAX + 1];
        size_t len = name_len;
        memcpy(full, name, name_len + 1);
        if (!name_append(full, &len, key, key_len))
            return fail_at(ps, key, "key name longer than %u bytes", SL_TOML_NAME_MAX);
        skip_ws(ps);
        if (at_end(ps) || *ps->p != '=')
            return fail_at(ps, ps->p, "expected '=' after key");
        ps->p++;
        skip_ws(ps);
        sl_toml_value_t v;
        if ((rc = parse_value(ps, &v)) || (rc = define_key(ps, key, full, len, &v)))
            return rc;
        skip_ws(ps);
        if (!at_end(ps) && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (!at_end(ps) && *ps->p == '}') {
            ps->p++;
            return 0;
        }
        return fail_at(ps, ps->p, "expected ',' or '}' in an inline table");
    }
}

static int parse_key_value(parser_t *ps)
{
    const char *key;
    size_t key_len;
    int rc = parse_bare(ps, &key, &key_len, "key");
    if (rc)
        return rc;
    char name[SL_TOML_NAME_MAX + 1];
    size_t len = 0;
    name[0] = '\0';
    if (!name_append(name, &len, ps->table, ps->table_len) ||
        !name_append(name, &len, key, key_len))
        return fail_at(ps, key, "key name longer than %u bytes", SL_TOML_NAME_MAX);
    skip_ws(ps);
    if (!at_end(ps) && *ps->p == '.')
        return fail_at(ps, ps->p, "dotted keys are not supported; use a [table] header");
    if (at_end(ps) || *ps->p != '=')
        return fail_at(ps, ps->p, "expected '=' after key");
    ps->p++;
    skip_ws(ps);
    if (!at_end(ps) && *ps->p == '{') {
        rc = parse_inline_table(ps, name, len);
        return rc ? rc : finish_line(ps, "an inline table");
    }
    sl_toml_value_t v;
    rc = parse_value(ps, &v);
    if (rc)
        return rc;
    rc = define_key(ps, key, name, len, &v);
    return rc ? rc : finish_line(ps, "a value");
}

/* --- the document ----------------------------------------------------------- */

static int parse_lines(parser_t *ps)
{
    /* Every turn consumes at least one byte or fails: bounded by the input. */
    while (!at_end(ps)) {
        skip_ws(ps);
        int rc = 0;
        if (at_eol(ps))
            consume_eol(ps);
        else if (*ps->p == '#')
            rc = finish_line(ps, "a comment");
        else if (*ps->p == '[')
            rc = parse_table_header(ps);
        else if (*ps->p == '\r')
            rc = fail_at(ps, ps->p, "carriage return without a line feed");
        else
            rc = parse_key_value(ps);
        if (rc)
            return rc;
    }
    return 0;
}

int sl_toml_parse(const char *text, size_t len, sl_toml_doc_t *doc, sl_toml_error_t *err)
{
    *doc = (sl_toml_doc_t){0};
    *err = (sl_toml_error_t){0};
    sl_arena_init(&doc->arena, 4096, 4u * SL_TOML_INPUT_MAX);
    if (len > SL_TOML_INPUT_MAX) {
        snprintf(err->message, sizeof(err->message), "larger than %u bytes", SL_TOML_INPUT_MAX);
        return -SL_ERR_INVALID_CONFIGURATION;
    }
    doc->tables = SL_ARENA_NEW(&doc->arena, const char *, SL_TOML_TABLES_MAX);
    if (!doc->tables) {
        snprintf(err->message, sizeof(err->message), "out of memory");
        return -SL_ERR_INVALID_CONFIGURATION;
    }
    parser_t ps = {
        .p = text,
        .end = text + len,
        .line_start = text,
        .line = 1,
        .table = "",
        .doc = doc,
        .err = err,
    };
    /* A UTF-8 byte-order mark some editors write is not content. */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        ps.p = ps.line_start = text + 3;
    int rc = parse_lines(&ps);
    if (rc) {
        sl_toml_doc_free(doc);
        return rc;
    }
    return 0;
}

void sl_toml_doc_free(sl_toml_doc_t *doc)
{
    free(doc->entries);
    sl_arena_free(&doc->arena);
    *doc = (sl_toml_doc_t){0};
}

const sl_toml_entry_t *sl_toml_find(const sl_toml_doc_t *doc, const char *name)
{
    for (uint32_t i = 0; i < doc->count; i++)
        if (strcmp(doc->entries[i].name, name) == 0)
            return &doc->entries[i];
    return NULL;
}

void sl_toml_error_format(const sl_toml_error_t *err, const char *file, char *buf, size_t len)
{
    if (len == 0)
        return;
    if (err->line)
        snprintf(buf, len, "%s:%u:%u: %s", file, err->line, err->column, err->message);
    else
        snprintf(buf, len, "%s: %s", file, err->message);
}

const char *sl_toml_type_name(sl_toml_type_t type)
{
    switch (type) {
    case SL_TOML_STRING:
        return "string";
    case SL_TOML_INTEGER:
        return "integer";
    case SL_TOML_BOOL:
        return "boolean";
    }
    return "value";
}
