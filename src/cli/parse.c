/* Values typed on the command line: identifiers, numbers, durations, sizes,
 * user headers (key:kind:value) and permission lists. Each parser says why
 * it refused, so the usage error can name the problem. */
#include "cli/cli.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool cli_u64(const char *text, uint64_t *out)
{
    if (text == NULL || !isdigit((unsigned char)text[0]))
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = v;
    return true;
}

bool cli_u32(const char *text, uint32_t *out)
{
    uint64_t v;
    if (!cli_u64(text, &v) || v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

int cli_check_len(const cli_run_t *run, const char *what, const char *text, size_t min, size_t max)
{
    size_t len = strlen(text);
    if (len >= min && len <= max)
        return 0;
    return cli_usage(run, "%s must be %zu..%zu bytes (got %zu)", what, min, max, len);
}

sl_id_t cli_id(const char *text)
{
    uint32_t n;
    if (cli_u32(text, &n))
        return sl_id_num(n);
    return sl_id_name(text);
}

/* --- durations and sizes ---------------------------------------------------------- */

typedef struct unit {
    const char *name;
    uint64_t factor;
} unit_t;

#define MONTH_US 2630016000000ull
#define YEAR_US  31557600000000ull

static const unit_t duration_units[] = {
    {"us", 1},
    {"usec", 1},
    {"micros", 1},
    {"ms", 1000},
    {"msec", 1000},
    {"millis", 1000},
    {"s", 1000000},
    {"sec", 1000000},
    {"secs", 1000000},
    {"second", 1000000},
    {"seconds", 1000000},
    {"m", 60000000ull},
    {"min", 60000000ull},
    {"mins", 60000000ull},
    {"minute", 60000000ull},
    {"minutes", 60000000ull},
    {"h", 3600000000ull},
    {"hr", 3600000000ull},
    {"hour", 3600000000ull},
    {"hours", 3600000000ull},
    {"d", 86400000000ull},
    {"day", 86400000000ull},
    {"days", 86400000000ull},
    {"w", 604800000000ull},
    {"week", 604800000000ull},
    {"weeks", 604800000000ull},
    {"month", MONTH_US}, /* 30.44 days, as Iggy's (humantime) durations count them */
    {"months", MONTH_US},
    {"y", YEAR_US}, /* 365.25 days */
    {"year", YEAR_US},
    {"years", YEAR_US},
    {NULL, 0},
};

static const unit_t size_units[] = {
    {"", 1},
    {"b", 1},
    {"kb", 1000ull},
    {"mb", 1000000ull},
    {"gb", 1000000000ull},
    {"tb", 1000000000000ull},
    {"k", 1024ull},
    {"kib", 1024ull},
    {"m", 1048576ull},
    {"mib", 1048576ull},
    {"g", 1073741824ull},
    {"gib", 1073741824ull},
    {"t", 1099511627776ull},
    {"tib", 1099511627776ull},
    {NULL, 0},
};

static const unit_t *find_unit(const unit_t *units, const char *name, size_t len)
{
    for (const unit_t *u = units; u->name != NULL; u++)
        if (strlen(u->name) == len && strncasecmp(u->name, name, len) == 0)
            return u;
    return NULL;
}

/* Adds "<number><unit>" pairs of one word ("1h30m") to *total. */
static bool add_duration_word(const char *w, uint64_t *total)
{
    const char *p = w;
    if (*p == '\0')
        return false;
    while (*p) {
        if (!isdigit((unsigned char)*p))
            return false;
        errno = 0;
        char *end;
        unsigned long long n = strtoull(p, &end, 10);
        if (errno != 0)
            return false;
        const char *u = end;
        while (isalpha((unsigned char)*end))
            end++;
        /* Units ignore case, except that "M" is a month and "m" a minute. */
        static const unit_t month = {"M", MONTH_US};
        const unit_t *unit =
            end - u == 1 && *u == 'M' ? &month : find_unit(duration_units, u, (size_t)(end - u));
        if (unit == NULL || n > (UINT64_MAX - 1 - *total) / unit->factor)
            return false;
        *total += n * unit->factor;
        p = end;
    }
    return true;
}

static bool is_word(const char *text, const char *a, const char *b, const char *c)
{
    return strcasecmp(text, a) == 0 || (b && strcasecmp(text, b) == 0) ||
           (c && strcasecmp(text, c) == 0);
}

bool cli_duration_us(const char *const *words, uint32_t count, uint64_t *out)
{
    if (count == 1 && (is_word(words[0], "never", "unlimited", "none") ||
                       is_word(words[0], "never_expire", NULL, NULL))) {
        *out = UINT64_MAX;
        return true;
    }
    if (count == 1 && is_word(words[0], "server_default", "default", NULL)) {
        *out = 0;
        return true;
    }
    /* Every word and every space-separated part of a word ("1h 30m" quoted,
     * "7 days") joins into one "1h30m" / "7days" text; two numbers in a row
     * would merge into one, so they are refused. */
    char joined[256];
    size_t len = 0;
    for (uint32_t i = 0; i < count; i++) {
        const char *p = words[i];
        while (*p) {
            p += strspn(p, " \t");
            size_t n = strcspn(p, " \t");
            if (n == 0)
                break;
            if (len + n >= sizeof(joined))
                return false;
            if (len > 0 && isdigit((unsigned char)joined[len - 1]) && isdigit((unsigned char)*p))
                return false;
            memcpy(joined + len, p, n);
            len += n;
            p += n;
        }
    }
    joined[len] = '\0';
    uint64_t total = 0;
    if (!add_duration_word(joined, &total) || total == 0)
        return false;
    *out = total;
    return true;
}

bool cli_size_bytes(const char *text, uint64_t *out)
{
    if (is_word(text, "unlimited", "none", NULL)) {
        *out = UINT64_MAX;
        return true;
    }
    if (is_word(text, "server_default", "default", NULL)) {
        *out = 0;
        return true;
    }
    if (!isdigit((unsigned char)text[0]))
        return false;
    errno = 0;
    char *end;
    unsigned long long n = strtoull(text, &end, 10);
    while (*end == ' ')
        end++;
    const unit_t *unit = find_unit(size_units, end, strlen(end));
    if (errno != 0 || unit == NULL || n > UINT64_MAX / unit->factor)
        return false;
    *out = n * unit->factor;
    return true;
}

/* --- user headers --------------------------------------------------------------------- */

static const char *const header_kinds[16] = {
    NULL,     "raw",   "string", "bool",   "int8",   "int16",   "int32",   "int64",
    "int128", "uint8", "uint16", "uint32", "uint64", "uint128", "float32", "float64",
};

const char *cli_header_kind_name(uint8_t kind)
{
    return kind < 16 && header_kinds[kind] ? header_kinds[kind] : "unknown";
}

static uint8_t header_kind(const char *name, size_t len)
{
    if (len == 3 && strncasecmp(name, "str", 3) == 0)
        return SL_HEADER_KIND_STRING;
    for (uint8_t k = 1; k < 16; k++)
        if (strlen(header_kinds[k]) == len && strncasecmp(header_kinds[k], name, len) == 0)
            return k;
    return 0;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)tolower((unsigned char)c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static bool parse_hex(const char *text, uint8_t *out, uint32_t *len)
{
    size_t n = strlen(text);
    if (n % 2 != 0)
        return false;
    for (size_t i = 0; i < n; i += 2) {
        int hi = hex_digit(text[i]), lo = hex_digit(text[i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        out[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    *len = (uint32_t)(n / 2);
    return true;
}

/* A decimal 128-bit integer, as two's complement halves. */
static bool parse_128(const char *text, bool is_signed, sl_msg_id_t *out)
{
    bool negative = is_signed && *text == '-';
    const char *p = negative ? text + 1 : text;
    if (!isdigit((unsigned char)*p))
        return false;
    unsigned __int128 v = 0;
    const unsigned __int128 limit =
        is_signed ? ((unsigned __int128)1 << 127) - (negative ? 0 : 1) : ~(unsigned __int128)0;
    for (; *p; p++) {
        if (!isdigit((unsigned char)*p))
            return false;
        unsigned digit = (unsigned)(*p - '0');
        if (v > (limit - digit) / 10)
            return false;
        v = v * 10 + digit;
    }
    if (negative)
        v = ~v + 1;
    out->lo = (uint64_t)v;
    out->hi = (uint64_t)(v >> 64);
    return true;
}

static bool parse_signed(const char *text, int bits, int64_t *out)
{
    errno = 0;
    char *end;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0' || end == text)
        return false;
    if (bits < 64) {
        long long max = (1ll << (bits - 1)) - 1;
        if (v > max || v < -max - 1)
            return false;
    }
    *out = v;
    return true;
}

static bool parse_unsigned(const char *text, int bits, uint64_t *out)
{
    uint64_t v;
    if (!cli_u64(text, &v) || (bits < 64 && v >> bits != 0))
        return false;
    *out = v;
    return true;
}

const char *cli_header_next(const char *text)
{
    for (const char *comma = strchr(text, ','); comma != NULL; comma = strchr(comma + 1, ',')) {
        const char *c1 = strchr(comma + 1, ':');
        const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (c1 != NULL && c1 > comma + 1 && c2 != NULL &&
            memchr(comma + 1, ',', (size_t)(c2 - comma - 1)) == NULL &&
            header_kind(c1 + 1, (size_t)(c2 - c1 - 1)) != 0)
            return comma;
    }
    return NULL;
}

static bool parse_header_value(uint8_t kind, const char *text, uint8_t *storage,
                               sl_header_value_t *v)
{
    static const int widths[16] = {0, 0, 0, 0, 8, 16, 32, 64, 128, 8, 16, 32, 64, 128, 0, 0};
    char *end;
    *v = (sl_header_value_t){.kind = kind};
    switch (kind) {
    case SL_HEADER_KIND_RAW:
        v->bytes = storage;
        return parse_hex(text, storage, &v->len) && v->len > 0;
    case SL_HEADER_KIND_STRING:
        v->bytes = text;
        v->len = (uint32_t)strlen(text);
        return v->len > 0;
    case SL_HEADER_KIND_BOOL:
        v->b = is_word(text, "true", "1", "yes");
        return v->b || is_word(text, "false", "0", "no");
    case SL_HEADER_KIND_INT128:
    case SL_HEADER_KIND_UINT128:
        return parse_128(text, kind == SL_HEADER_KIND_INT128, &v->x128);
    case SL_HEADER_KIND_FLOAT32:
        errno = 0;
        v->f32 = strtof(text, &end);
        return errno == 0 && *end == '\0' && end != text;
    case SL_HEADER_KIND_FLOAT64:
        errno = 0;
        v->f64 = strtod(text, &end);
        return errno == 0 && *end == '\0' && end != text;
    default:
        if (kind >= SL_HEADER_KIND_INT8 && kind <= SL_HEADER_KIND_INT64)
            return parse_signed(text, widths[kind], &v->i);
        return parse_unsigned(text, widths[kind], &v->u);
    }
}

bool cli_header(const char *text, uint8_t *storage, sl_header_t *out, const char **why)
{
    const char *c1 = strchr(text, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (c2 == NULL) {
        *why = "expected KEY:KIND:VALUE";
        return false;
    }
    if (c1 == text || c1 - text > 255) {
        *why = "the key must be 1..255 bytes";
        return false;
    }
    uint8_t kind = header_kind(c1 + 1, (size_t)(c2 - c1 - 1));
    if (kind == 0) {
        *why = "unknown kind (raw, string, bool, int8..int128, uint8..uint128, float32, float64)";
        return false;
    }
    out->key = (sl_header_value_t){
        .kind = SL_HEADER_KIND_STRING, .bytes = text, .len = (uint32_t)(c1 - text)};
    if (!parse_header_value(kind, c2 + 1, storage, &out->value)) {
        *why = kind == SL_HEADER_KIND_RAW ? "a raw value is 1..255 bytes in hex"
                                          : "the value does not fit its kind";
        return false;
    }
    if ((kind == SL_HEADER_KIND_RAW || kind == SL_HEADER_KIND_STRING) && out->value.len > 255) {
        *why = "the value must be 1..255 bytes";
        return false;
    }
    return true;
}

/* --- permissions ------------------------------------------------------------------------- */

typedef struct perm_name {
    const char *name;
    const char *short_name;
    size_t offset;
} perm_name_t;

#define PERM(n, s, type)                                                                           \
    {                                                                                              \
#n, s, offsetof(type, n)                                                                   \
    }

static const perm_name_t global_perms[] = {
    PERM(manage_servers, "m_srv", sl_permission_set_t),
    PERM(read_servers, "r_srv", sl_permission_set_t),
    PERM(manage_users, "m_usr", sl_permission_set_t),
    PERM(read_users, "r_usr", sl_permission_set_t),
    PERM(manage_streams, "m_str", sl_permission_set_t),
    PERM(read_streams, "r_str", sl_permission_set_t),
    PERM(manage_topics, "m_top", sl_permission_set_t),
    PERM(read_topics, "r_top", sl_permission_set_t),
    PERM(poll_messages, "p_msg", sl_permission_set_t),
    PERM(send_messages, "s_msg", sl_permission_set_t),
    {NULL, NULL, 0},
};

static const perm_name_t stream_perms[] = {
    PERM(manage_stream, "m_str", sl_stream_permission_t),
    PERM(read_stream, "r_str", sl_stream_permission_t),
    PERM(manage_topics, "m_top", sl_stream_permission_t),
    PERM(read_topics, "r_top", sl_stream_permission_t),
    PERM(poll_messages, "p_msg", sl_stream_permission_t),
    PERM(send_messages, "s_msg", sl_stream_permission_t),
    {NULL, NULL, 0},
};

static const perm_name_t topic_perms[] = {
    PERM(manage_topic, "m_top", sl_topic_permission_t),
    PERM(read_topic, "r_top", sl_topic_permission_t),
    PERM(poll_messages, "p_msg", sl_topic_permission_t),
    PERM(send_messages, "s_msg", sl_topic_permission_t),
    {NULL, NULL, 0},
};

/* Sets the bools named in the comma-separated list [p, p+len) of *base. */
static bool set_perms(const perm_name_t *names, const char *p, size_t len, void *base)
{
    const char *end = p + len;
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        size_t n = comma ? (size_t)(comma - p) : (size_t)(end - p);
        const perm_name_t *hit = NULL;
        for (const perm_name_t *pn = names; pn->name != NULL && hit == NULL; pn++)
            if ((strlen(pn->name) == n && strncasecmp(pn->name, p, n) == 0) ||
                (strlen(pn->short_name) == n && strncasecmp(pn->short_name, p, n) == 0))
                hit = pn;
        if (hit == NULL)
            return false;
        *(bool *)((char *)base + hit->offset) = true;
        p += n + (comma ? 1 : 0);
    }
    return true;
}

bool cli_global_permissions(const char *text, sl_permission_set_t *set, const char **why)
{
    if (!set_perms(global_perms, text, strlen(text), set)) {
        *why = "unknown global permission";
        return false;
    }
    return true;
}

/* "ID[:list]" at [p, p+len): the id into *id, the list into the bools of base. */
static bool id_and_perms(const perm_name_t *names, const char *p, size_t len, uint32_t *id,
                         void *base)
{
    char num[16];
    const char *colon = memchr(p, ':', len);
    size_t n = colon ? (size_t)(colon - p) : len;
    if (n == 0 || n >= sizeof(num))
        return false;
    memcpy(num, p, n);
    num[n] = '\0';
    if (!cli_u32(num, id))
        return false;
    return colon == NULL || set_perms(names, colon + 1, len - n - 1, base);
}

bool cli_stream_permission(const char *text, sl_topic_permission_t *storage,
                           sl_stream_permission_t *out, const char **why)
{
    *out = (sl_stream_permission_t){0};
    const char *hash = strchr(text, '#');
    size_t head = hash ? (size_t)(hash - text) : strlen(text);
    if (!id_and_perms(stream_perms, text, head, &out->stream_id, out)) {
        *why = "expected STREAM_ID[:PERMISSIONS] with a numeric id and known permissions";
        return false;
    }
    out->topics = storage;
    while (hash != NULL) {
        const char *p = hash + 1;
        hash = strchr(p, '#');
        size_t n = hash ? (size_t)(hash - p) : strlen(p);
        sl_topic_permission_t *t = &storage[out->topics_count];
        *t = (sl_topic_permission_t){0};
        if (!id_and_perms(topic_perms, p, n, &t->topic_id, t)) {
            *why = "expected #TOPIC_ID[:PERMISSIONS] with a numeric id and known permissions";
            return false;
        }
        out->topics_count++;
    }
    return true;
}

cli_val_t cli_permission_list(cli_doc_t *doc, int scope, const void *base)
{
    const perm_name_t *names = scope == 0 ? global_perms : scope == 1 ? stream_perms : topic_perms;
    char *json, *text;
    size_t json_len, text_len;
    FILE *j = cli_memstream(&json, &json_len), *t = cli_memstream(&text, &text_len);
    const char *sep = "";
    fputc('[', j);
    for (const perm_name_t *pn = names; pn->name != NULL; pn++) {
        if (!*(const bool *)((const char *)base + pn->offset))
            continue;
        fprintf(j, "%s\"%s\"", sep, pn->name);
        fprintf(t, "%s%s", *sep ? "," : "", pn->name);
        sep = ", ";
    }
    fputc(']', j);
    if (*sep == '\0')
        fputs("none", t);
    fclose(j);
    fclose(t);
    cli_val_t v = {.kind = CLI_VAL_JSON};
    v.s = cli_doc_adopt(doc, json);
    v.alt = cli_doc_adopt(doc, text);
    return v;
}
