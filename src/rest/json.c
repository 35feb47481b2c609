/* JSON in and out for the HTTP API. json-c reads every u64 exactly (the
 * reference sends u64::MAX for "never" and "unlimited"), keeps object keys
 * in insertion order (the reference's field order) and can write a number
 * from its text (u128 message ids). */
#include <sluice/error.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rest/internal.h"

/* --- scalars from text ----------------------------------------------------------------- */

bool sl_rest_parse_u64(sl_span_t text, uint64_t *out)
{
    size_t i = 0;
    if (text.len > 0 && text.ptr[0] == '+')
        i = 1;
    if (i == text.len || text.len - i > 20)
        return false;
    uint64_t v = 0;
    for (; i < text.len; i++) {
        uint8_t c = text.ptr[i];
        if (c < '0' || c > '9')
            return false;
        uint64_t d = (uint64_t)(c - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

bool sl_rest_parse_u32(sl_span_t text, uint32_t *out)
{
    uint64_t v;
    if (!sl_rest_parse_u64(text, &v) || v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

bool sl_rest_ident(sl_span_t text, sl_ident_t *out, sl_rest_error_t *err)
{
    uint32_t n;
    if (sl_rest_parse_u32(text, &n)) {
        *out = sl_ident_number(n);
        return true;
    }
    if (text.len == 0 || text.len > 255 || !sl_utf8_valid(text.ptr, text.len)) {
        sl_rest_error_from_code(SL_ERR_INVALID_IDENTIFIER, err);
        return false;
    }
    *out = (sl_ident_t){.kind = SL_IDENT_STRING, .name = text};
    return true;
}

bool sl_rest_query_get(const sl_rest_query_t *q, const char *key, char *buf, size_t cap,
                       size_t *len, sl_rest_error_t *err)
{
    char name[64];
    for (uint32_t i = 0; i < q->count; i++) {
        long n = sl_rest_percent_decode(q->items[i].key, true, name, sizeof(name));
        if (n < 0 || (size_t)n != strlen(key) || memcmp(name, key, (size_t)n) != 0)
            continue;
        long v = sl_rest_percent_decode(q->items[i].value, true, buf, cap);
        if (v < 0) {
            sl_rest_error_plain(err, 400, "Failed to deserialize query string: %s is too long",
                                key);
            return false;
        }
        *len = (size_t)v;
        return true;
    }
    *len = 0;
    return false;
}

/* --- JSON in --------------------------------------------------------------------------- */

json_object *sl_rest_json_object(sl_span_t body, sl_rest_error_t *err)
{
    /* JSON text is UTF-8; json-c would let other bytes through into names. */
    if (!sl_utf8_valid(body.ptr, body.len)) {
        sl_rest_error_plain(err, 400, "Failed to parse the request body as JSON: invalid UTF-8");
        return NULL;
    }
    json_tokener *tok = json_tokener_new_ex(64);
    if (!tok) {
        sl_rest_error_custom(err, 500, 1, "error", "out of memory");
        return NULL;
    }
    /* Strict: no comments, no single quotes, no trailing commas. */
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    json_object *o = NULL;
    if (body.len <= INT32_MAX)
        o = json_tokener_parse_ex(tok, (const char *)body.ptr, (int)body.len);
    size_t end = json_tokener_get_parse_end(tok);
    bool complete = o && json_tokener_get_error(tok) == json_tokener_success;
    json_tokener_free(tok);
    while (complete && end < body.len &&
           (body.ptr[end] == ' ' || body.ptr[end] == '\n' || body.ptr[end] == '\r' ||
            body.ptr[end] == '\t'))
        end++;
    if (!complete || end != body.len) {
        json_object_put(o);
        sl_rest_error_plain(err, 400, "Failed to parse the request body as JSON: %s",
                            body.len == 0 ? "EOF while parsing a value" : "syntax error");
        return NULL;
    }
    if (!json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        sl_rest_error_plain(err, 422,
                            "Failed to deserialize the JSON body into the target type: "
                            "invalid type, expected a JSON object");
        return NULL;
    }
    return o;
}

static bool missing(const char *key, bool required, bool *present, sl_rest_error_t *err)
{
    if (present)
        *present = false;
    if (!required)
        return true;
    sl_rest_error_plain(err, 422,
                        "Failed to deserialize the JSON body into the target type: "
                        "missing field `%s`",
                        key);
    return false;
}

static bool wrong(const char *key, const char *expected, sl_rest_error_t *err)
{
    sl_rest_error_plain(err, 422,
                        "Failed to deserialize the JSON body into the target type: "
                        "%s: invalid type or value, expected %s",
                        key, expected);
    return false;
}

/* The field's value, NULL when absent or null. */
static json_object *field(json_object *o, const char *key)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v))
        return NULL;
    return v;
}

bool sl_rest_json_str(json_object *o, const char *key, bool required, sl_span_t *out, bool *present,
                      sl_rest_error_t *err)
{
    json_object *v = field(o, key);
    if (!v)
        return missing(key, required, present, err);
    if (!json_object_is_type(v, json_type_string))
        return wrong(key, "a string", err);
    *out = sl_span(json_object_get_string(v), (size_t)json_object_get_string_len(v));
    if (present)
        *present = true;
    return true;
}

bool sl_rest_json_as_u64(json_object *v, uint64_t *out)
{
    if (!json_object_is_type(v, json_type_int))
        return false;
    /* json-c keeps integers above INT64_MAX as u64; a negative one reads
     * below zero as int64. */
    if (json_object_get_int64(v) < 0)
        return false;
    *out = json_object_get_uint64(v);
    return true;
}

bool sl_rest_json_u64(json_object *o, const char *key, bool required, uint64_t *out, bool *present,
                      sl_rest_error_t *err)
{
    json_object *v = field(o, key);
    if (!v)
        return missing(key, required, present, err);
    if (!sl_rest_json_as_u64(v, out))
        return wrong(key, "u64", err);
    if (present)
        *present = true;
    return true;
}

bool sl_rest_json_u32(json_object *o, const char *key, bool required, uint32_t *out, bool *present,
                      sl_rest_error_t *err)
{
    json_object *v = field(o, key);
    if (!v)
        return missing(key, required, present, err);
    uint64_t n;
    if (!sl_rest_json_as_u64(v, &n) || n > UINT32_MAX)
        return wrong(key, "u32", err);
    *out = (uint32_t)n;
    if (present)
        *present = true;
    return true;
}

bool sl_rest_json_bool(json_object *o, const char *key, bool required, bool *out, bool *present,
                       sl_rest_error_t *err)
{
    json_object *v = field(o, key);
    if (!v)
        return missing(key, required, present, err);
    if (!json_object_is_type(v, json_type_boolean))
        return wrong(key, "a boolean", err);
    *out = json_object_get_boolean(v);
    if (present)
        *present = true;
    return true;
}

/* --- JSON out ------------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when it is not one. */
static size_t utf8_seq(const uint8_t *p, size_t n)
{
    size_t len = p[0] < 0x80         ? 1
                 : (p[0] >> 5) == 6  ? 2
                 : (p[0] >> 4) == 14 ? 3
                 : (p[0] >> 3) == 30 ? 4
                                     : 0;
    if (len == 0 || len > n)
        return 0;
    return sl_utf8_valid(p, len) ? len : 0;
}

json_object *sl_rest_json_string(sl_span_t s)
{
    if (sl_utf8_valid(s.ptr, s.len))
        return json_object_new_string_len((const char *)s.ptr, (int)s.len);
    /* Never invalid JSON text: a byte that is not UTF-8 becomes U+FFFD, as
     * a lossy decode would show it. Names are validated UTF-8 everywhere;
     * this guards the text the server reads from its host (stats). */
    sl_buf_t b;
    sl_buf_init(&b, 0);
    for (size_t i = 0; i < s.len;) {
        size_t k = utf8_seq(s.ptr + i, s.len - i);
        if (k) {
            sl_put_bytes(&b, s.ptr + i, k);
            i += k;
        } else {
            sl_put_bytes(&b, "\xEF\xBF\xBD", 3);
            i++;
        }
    }
    json_object *o = json_object_new_string_len((const char *)b.data, (int)b.len);
    sl_buf_free(&b);
    return o;
}

json_object *sl_rest_json_uint(uint64_t v)
{
    return json_object_new_uint64(v);
}

json_object *sl_rest_json_u128(sl_u128_t v)
{
    if (v.hi == 0)
        return json_object_new_uint64(v.lo);
    /* Long division of the 128-bit value by 10, digit by digit. */
    char digits[48];
    size_t n = 0;
    uint64_t hi = v.hi, lo = v.lo;
    while ((hi || lo) && n < sizeof(digits)) {
        unsigned __int128 x = ((unsigned __int128)hi << 64) | lo;
        digits[n++] = (char)('0' + (int)(x % 10));
        x /= 10;
        hi = (uint64_t)(x >> 64);
        lo = (uint64_t)x;
    }
    char text[48];
    for (size_t i = 0; i < n; i++)
        text[i] = digits[n - 1 - i];
    text[n] = '\0';
    /* json-c writes a double made with a text as that text. */
    return json_object_new_double_s(0.0, text);
}

json_object *sl_rest_json_f32(float v)
{
    /* JSON has no NaN or infinity; serde writes null for them. */
    if (v != v || v - v != 0.0f)
        return NULL;
    char text[32];
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(text, sizeof(text), "%.*g", prec, (double)v);
        if (strtof(text, NULL) == v)
            break;
    }
    /* serde writes floats with a fraction: 3 reads back as "3.0". */
    if (!strpbrk(text, ".eEn"))
        strncat(text, ".0", sizeof(text) - strlen(text) - 1);
    return json_object_new_double_s((double)v, text);
}

void sl_rest_format_bytes(uint64_t v, char *buf, size_t len)
{
    /* byte-unit's alternate Display, precision 3 (http.md 1.3): the first
     * unit, largest first, whose quotient is exact to three decimals. */
    static const struct {
        const char *name;
        uint64_t size;
    } units[] = {
        {"EiB", 1ull << 60}, {"EB", 1000000000000000000ull},
        {"PiB", 1ull << 50}, {"PB", 1000000000000000ull},
        {"TiB", 1ull << 40}, {"TB", 1000000000000ull},
        {"GiB", 1ull << 30}, {"GB", 1000000000ull},
        {"MiB", 1ull << 20}, {"MB", 1000000ull},
        {"KiB", 1ull << 10}, {"KB", 1000ull},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(units); i++) {
        uint64_t u = units[i].size;
        if (v < u || ((unsigned __int128)v * 1000) % u != 0)
            continue;
        uint64_t whole = v / u;
        uint64_t frac = (uint64_t)(((unsigned __int128)(v % u) * 1000) / u);
        if (frac == 0) {
            snprintf(buf, len, "%llu %s", (unsigned long long)whole, units[i].name);
            return;
        }
        char f[24];
        snprintf(f, sizeof(f), "%03llu", (unsigned long long)(frac % 1000));
        for (int k = 2; k > 0 && f[k] == '0'; k--)
            f[k] = '\0';
        snprintf(buf, len, "%llu.%s %s", (unsigned long long)whole, f, units[i].name);
        return;
    }
    snprintf(buf, len, "%llu B", (unsigned long long)v);
}

json_object *sl_rest_json_bytes(uint64_t v)
{
    char text[48];
    sl_rest_format_bytes(v, text, sizeof(text));
    return json_object_new_string(text);
}

void sl_rest_response_json(sl_rest_response_t *r, uint16_t status, json_object *o)
{
    size_t len = 0;
    const char *text = o ? json_object_to_json_string_length(
                               o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len)
                         : NULL;
    sl_buf_reset(&r->body);
    if (text)
        sl_put_bytes(&r->body, text, len);
    r->status = status;
    r->content_type = "application/json";
    json_object_put(o);
}
