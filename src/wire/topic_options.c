/* The topic option catalog (wire/topic_options.h): value parsing, create
 * resolution, update patches, stored blocks and the DescribeOptions data. */
#include "wire/topic_options.h"

#include <sluice/error.h>
#include <string.h>

#include "base/limits.h"

/* --- catalog data ----------------------------------------------------------- */

static const uint8_t default_compression[] = {'n', 'o', 'n', 'e'};
static const uint8_t default_all_ones[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
static const uint8_t default_segment_size[] = {0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00};
static const uint8_t default_false[] = {0x00};
static const uint8_t default_messages[] = {0x00, 0x04, 0x00, 0x00};
static const uint8_t default_size_to_save[] = {0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00};

#define STATIC_SPAN(a)                                                                             \
    {                                                                                              \
        (a), sizeof(a)                                                                             \
    }

const sl_topic_option_info_t sl_topic_option_catalog[SL_TOPIC_KEY_COUNT] = {
    [SL_TOPIC_KEY_COMPRESSION_ALGORITHM] =
        {"compression_algorithm", SL_KIND_STRING, STATIC_SPAN(default_compression),
         "Compression recorded for the topic: \"none\" or \"gzip\" (any letter case), or a "
         "Uint8 code 1 (none) / 2 (gzip). Stored and reported only."},
    [SL_TOPIC_KEY_MESSAGE_EXPIRY] =
        {"message_expiry", SL_KIND_UINT64, STATIC_SPAN(default_all_ones),
         "Age after which sealed segments are removed, as Uint64 microseconds or a humantime "
         "duration string such as \"7 days\" or \"1h 30m\". All ones: messages never expire."},
    [SL_TOPIC_KEY_MAX_TOPIC_SIZE] =
        {"max_topic_size", SL_KIND_UINT64, STATIC_SPAN(default_all_ones),
         "Cap on the topic's total size, as Uint64 bytes or a byte-size string such as "
         "\"10 GiB\"; unless unlimited (all ones) it may not be smaller than the segment size."},
    [SL_TOPIC_KEY_SEGMENT_SIZE] =
        {"segment_size", SL_KIND_UINT64, STATIC_SPAN(default_segment_size),
         "Size in bytes at which a segment is sealed: a multiple of 512 from 1048576 up to "
         "1073741824 inclusive. Fixed at creation."},
    [SL_TOPIC_KEY_ENFORCE_FSYNC] =
        {"enforce_fsync", SL_KIND_BOOL, STATIC_SPAN(default_false),
         "When true, each write to the topic's partitions is fsynced before it is "
         "acknowledged. Fixed at creation."},
    [SL_TOPIC_KEY_MESSAGES_REQUIRED_TO_SAVE] =
        {"messages_required_to_save", SL_KIND_UINT32, STATIC_SPAN(default_messages),
         "Buffered message count (1 to 16777216) that flushes the partition journal to disk. "
         "A count no segment ever reaches leaves the data in the in-memory journal only."},
    [SL_TOPIC_KEY_SIZE_OF_MESSAGES_REQUIRED_TO_SAVE] =
        {"size_of_messages_required_to_save", SL_KIND_UINT64, STATIC_SPAN(default_size_to_save),
         "Buffered bytes (at most 1073741824) that flush the partition journal; whichever of "
         "the two flush thresholds is reached first triggers the flush."},
    [SL_TOPIC_KEY_PREALLOCATE_SEGMENTS] =
        {"preallocate_segments", SL_KIND_BOOL, STATIC_SPAN(default_false),
         "When true, every new segment reserves segment_size bytes of real disk space up "
         "front; segment_size * partitions_count may not exceed 68719476736 bytes."},
};

/* Stored blocks list keys in byte order (options.md 2); this is that order. */
static const sl_topic_key_t sorted_keys[SL_TOPIC_KEY_COUNT] = {
    SL_TOPIC_KEY_COMPRESSION_ALGORITHM,
    SL_TOPIC_KEY_ENFORCE_FSYNC,
    SL_TOPIC_KEY_MAX_TOPIC_SIZE,
    SL_TOPIC_KEY_MESSAGE_EXPIRY,
    SL_TOPIC_KEY_MESSAGES_REQUIRED_TO_SAVE,
    SL_TOPIC_KEY_PREALLOCATE_SEGMENTS,
    SL_TOPIC_KEY_SEGMENT_SIZE,
    SL_TOPIC_KEY_SIZE_OF_MESSAGES_REQUIRED_TO_SAVE,
};

int sl_option_catalog(uint8_t scope, const sl_topic_option_info_t **items, uint32_t *count)
{
    *items = NULL;
    *count = 0;
    switch (scope) {
    case 1: /* topic */
        *items = sl_topic_option_catalog;
        *count = SL_TOPIC_KEY_COUNT;
        return 0;
    case 2: /* stream: no keys today */
    case 3: /* user: no keys today */
        return 0;
    default:
        return -SL_ERR_INVALID_COMMAND;
    }
}

const char *sl_topic_key_name(sl_topic_key_t key)
{
    sl_assert(key < SL_TOPIC_KEY_COUNT);
    return sl_topic_option_catalog[key].key;
}

bool sl_topic_key_find(sl_span_t name, sl_topic_key_t *out)
{
    for (int k = 0; k < SL_TOPIC_KEY_COUNT; k++) {
        if (sl_span_eq(name, sl_span_str(sl_topic_option_catalog[k].key))) {
            *out = (sl_topic_key_t)k;
            return true;
        }
    }
    return false;
}

void sl_topic_config_default(sl_topic_config_t *out)
{
    *out = (sl_topic_config_t){
        .compression_algorithm = SL_TOPIC_DEFAULT_COMPRESSION,
        .message_expiry = SL_TOPIC_DEFAULT_MESSAGE_EXPIRY,
        .max_topic_size = SL_TOPIC_DEFAULT_MAX_TOPIC_SIZE,
        .segment_size = SL_SEGMENT_SIZE_DEFAULT,
        .enforce_fsync = false,
        .messages_required_to_save = SL_MESSAGES_TO_SAVE_DEFAULT,
        .size_of_messages_required_to_save = SL_SIZE_TO_SAVE_DEFAULT,
        .preallocate_segments = false,
        .explicit_keys = 0,
    };
}

/* --- text helpers ---------------------------------------------------------- */

static bool is_space(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
static bool is_digit(uint8_t c)
{
    return c >= '0' && c <= '9';
}
static bool is_alpha(uint8_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
static uint8_t to_lower(uint8_t c)
{
    return (c >= 'A' && c <= 'Z') ? (uint8_t)(c - 'A' + 'a') : c;
}

static bool text_is(sl_span_t text, const char *word)
{
    return sl_span_eq(text, sl_span_str(word));
}

static bool text_is_nocase(sl_span_t text, const char *word)
{
    size_t n = strlen(word);
    if (text.len != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (to_lower(text.ptr[i]) != (uint8_t)word[i])
            return false;
    return true;
}

static bool text_is_any(sl_span_t text, const char *const *words, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (text_is(text, words[i]))
            return true;
    return false;
}

static sl_span_t text_trim(sl_span_t t)
{
    while (t.len > 0 && is_space(t.ptr[0])) {
        t.ptr++;
        t.len--;
    }
    while (t.len > 0 && is_space(t.ptr[t.len - 1]))
        t.len--;
    return t;
}

/* Appends one decimal digit to *v; false on u64 overflow. */
static bool push_digit(uint64_t *v, uint8_t c)
{
    return !__builtin_mul_overflow(*v, 10u, v) && !__builtin_add_overflow(*v, c - '0', v);
}

/* --- byte sizes (byte-unit grammar, options.md 4.3) ----------------------- */

typedef struct byte_unit {
    uint64_t multiplier;
    bool bits;
} byte_unit_t;

/* "", B, b, bit(s), or a K/M/G/T/P/E prefix (either case), an optional 'i'
 * for powers of 1024, then an optional B (bytes) or b/bit/bits. */
static bool parse_byte_unit(sl_span_t u, byte_unit_t *out)
{
    static const char prefixes[] = "kmgtpe";
    size_t i = 0;
    unsigned power = 0;
    uint64_t base = 1000;
    *out = (byte_unit_t){1, false};
    if (u.len > 0) {
        const char *p = memchr(prefixes, to_lower(u.ptr[0]), sizeof(prefixes) - 1);
        if (p != NULL) {
            power = (unsigned)(p - prefixes) + 1;
            i = 1;
            if (i < u.len && u.ptr[i] == 'i') {
                base = 1024;
                i++;
            }
        }
    }
    sl_span_t rest = sl_span(u.ptr + i, u.len - i);
    if (rest.len == 0 || text_is(rest, "B")) {
        out->bits = false;
    } else if (text_is(rest, "b") || text_is(rest, "bit") || text_is(rest, "bits")) {
        out->bits = true;
    } else {
        return false;
    }
    for (unsigned k = 0; k < power; k++)
        out->multiplier *= base;
    return true;
}

/* The decimal number at the start of t: integer part, up to 18 fraction
 * digits as frac / scale, and whether dropped further digits were non-zero. */
typedef struct decimal {
    uint64_t whole;
    uint64_t frac;
    uint64_t scale;
    bool frac_tail;
    size_t used;
} decimal_t;

static bool parse_decimal(sl_span_t t, decimal_t *d)
{
    size_t i = 0;
    *d = (decimal_t){0, 0, 1, false, 0};
    while (i < t.len && is_digit(t.ptr[i]))
        if (!push_digit(&d->whole, t.ptr[i++]))
            return false;
    if (i == 0)
        return false;
    if (i < t.len && t.ptr[i] == '.') {
        size_t start = ++i;
        for (; i < t.len && is_digit(t.ptr[i]); i++) {
            if (d->scale < 1000000000000000000ull) {
                d->frac = d->frac * 10 + (uint64_t)(t.ptr[i] - '0');
                d->scale *= 10;
            } else if (t.ptr[i] != '0') {
                d->frac_tail = true;
            }
        }
        if (i == start)
            return false;
    }
    d->used = i;
    return true;
}

bool sl_parse_byte_size(sl_span_t text, uint64_t *bytes)
{
    static const char *const zero_words[] = {"0", "unlimited", "Unlimited", "none", "None"};
    *bytes = 0;
    if (text_is_any(text, zero_words, SL_ARRAY_LEN(zero_words)))
        return true;
    sl_span_t t = text_trim(text);
    decimal_t d;
    if (!parse_decimal(t, &d))
        return false;
    size_t i = d.used;
    while (i < t.len && is_space(t.ptr[i]))
        i++;
    byte_unit_t unit;
    if (!parse_byte_unit(sl_span(t.ptr + i, t.len - i), &unit))
        return false;
    /* Exact arithmetic: whole * m + frac * m / scale, rounded up. */
    unsigned __int128 whole = (unsigned __int128)d.whole * unit.multiplier;
    unsigned __int128 frac = (unsigned __int128)d.frac * unit.multiplier;
    unsigned __int128 total = whole + frac / d.scale;
    bool partial = frac % d.scale != 0 || d.frac_tail;
    if (unit.bits) {
        partial = partial || total % 8 != 0;
        total /= 8;
    }
    total += partial ? 1 : 0;
    if (total > UINT64_MAX)
        return false;
    *bytes = (uint64_t)total;
    return true;
}

bool sl_parse_max_topic_size(sl_span_t text, uint64_t *bytes)
{
    if (text_is(text, "unlimited")) {
        *bytes = SL_TOPIC_SIZE_UNLIMITED;
        return true;
    }
    if (text_is(text, "0") || text_is(text, "server_default")) {
        *bytes = SL_TOPIC_SIZE_SERVER_DEFAULT;
        return true;
    }
    return sl_parse_byte_size(text, bytes);
}

/* --- durations (humantime grammar, options.md 4.3) ------------------------- */

typedef struct duration_unit {
    const char *name;
    uint64_t seconds;    /* per unit, for units of a second or more */
    uint64_t per_second; /* units per second, for sub-second units */
} duration_unit_t;

static const duration_unit_t duration_units[] = {
    {"nanos", 0, 1000000000u},
    {"nsec", 0, 1000000000u},
    {"ns", 0, 1000000000u},
    {"usec", 0, 1000000u},
    {"us", 0, 1000000u},
    {"millis", 0, 1000u},
    {"msec", 0, 1000u},
    {"ms", 0, 1000u},
    {"seconds", 1, 0},
    {"second", 1, 0},
    {"secs", 1, 0},
    {"sec", 1, 0},
    {"s", 1, 0},
    {"minutes", 60, 0},
    {"minute", 60, 0},
    {"mins", 60, 0},
    {"min", 60, 0},
    {"m", 60, 0},
    {"hours", 3600, 0},
    {"hour", 3600, 0},
    {"hrs", 3600, 0},
    {"hr", 3600, 0},
    {"h", 3600, 0},
    {"days", 86400, 0},
    {"day", 86400, 0},
    {"d", 86400, 0},
    {"weeks", 604800, 0},
    {"week", 604800, 0},
    {"w", 604800, 0},
    {"months", 2630016, 0},
    {"month", 2630016, 0},
    {"M", 2630016, 0},
    {"years", 31557600, 0},
    {"year", 31557600, 0},
    {"y", 31557600, 0},
};

typedef struct duration {
    uint64_t seconds;
    uint64_t nanos; /* < 1e9 after every add */
} duration_t;

static bool duration_add(duration_t *d, uint64_t count, sl_span_t unit_name)
{
    for (size_t u = 0; u < SL_ARRAY_LEN(duration_units); u++) {
        const duration_unit_t *unit = &duration_units[u];
        if (!text_is(unit_name, unit->name))
            continue;
        uint64_t secs = count, nanos = 0;
        if (unit->per_second != 0) {
            secs = count / unit->per_second;
            nanos = (count % unit->per_second) * (1000000000u / unit->per_second);
        } else if (__builtin_mul_overflow(count, unit->seconds, &secs)) {
            return false;
        }
        d->nanos += nanos;
        if (d->nanos >= 1000000000u) {
            d->nanos -= 1000000000u;
            secs++; /* cannot wrap: secs is at most UINT64_MAX / 1000 here */
        }
        return !__builtin_add_overflow(d->seconds, secs, &d->seconds);
    }
    return false;
}

bool sl_parse_duration(sl_span_t text, uint64_t *micros)
{
    duration_t d = {0, 0};
    size_t i = 0, n = text.len;
    const uint8_t *s = text.ptr;
    *micros = 0;
    while (i < n && is_space(s[i]))
        i++;
    if (i == n)
        return false;
    while (i < n) {
        /* A group: digits (spaces inside the number are skipped), a unit. */
        if (!is_digit(s[i]))
            return false;
        uint64_t count = 0;
        for (; i < n && !is_alpha(s[i]); i++) {
            if (is_digit(s[i]) ? !push_digit(&count, s[i]) : !is_space(s[i]))
                return false;
        }
        size_t start = i;
        while (i < n && is_alpha(s[i]))
            i++;
        if (i < n && !is_digit(s[i]) && !is_space(s[i]))
            return false;
        if (!duration_add(&d, count, sl_span(s + start, i - start)))
            return false;
        while (i < n && is_space(s[i]))
            i++;
    }
    if (d.seconds > SL_EXPIRY_SECONDS_MAX)
        return false;
    *micros = d.seconds * 1000000u + d.nanos / 1000u;
    return true;
}

bool sl_parse_message_expiry(sl_span_t text, uint64_t *micros)
{
    static const char *const never[] = {"unlimited", "none", "None", "Unlimited", "never_expire"};
    static const char *const server_default[] = {"default", "server_default", "Default",
                                                 "Server_default"};
    if (text_is_any(text, never, SL_ARRAY_LEN(never))) {
        *micros = SL_TOPIC_EXPIRY_NEVER;
        return true;
    }
    if (text_is_any(text, server_default, SL_ARRAY_LEN(server_default))) {
        *micros = SL_TOPIC_EXPIRY_SERVER_DEFAULT;
        return true;
    }
    return sl_parse_duration(text, micros);
}

/* A plain decimal u32 as Rust's u32::from_str reads it (optional '+'). */
static bool parse_u32_text(sl_span_t t, uint64_t *out)
{
    size_t i = (t.len > 0 && t.ptr[0] == '+') ? 1 : 0;
    uint64_t v = 0;
    if (i == t.len)
        return false;
    for (; i < t.len; i++)
        if (!is_digit(t.ptr[i]) || !push_digit(&v, t.ptr[i]) || v > UINT32_MAX)
            return false;
    *out = v;
    return true;
}

/* --- per-key value parsing -------------------------------------------------- */

static bool value_fixed(const sl_tlv_field_t *v, uint8_t kind, size_t width)
{
    return v->kind == kind && v->data.len == width;
}

static bool parse_compression(const sl_tlv_field_t *v, uint64_t *out)
{
    if (value_fixed(v, SL_KIND_UINT8, 1)) {
        *out = v->data.ptr[0];
        return *out == SL_COMPRESSION_NONE || *out == SL_COMPRESSION_GZIP;
    }
    if (v->kind != SL_KIND_STRING)
        return false;
    if (text_is_nocase(v->data, "none"))
        *out = SL_COMPRESSION_NONE;
    else if (text_is_nocase(v->data, "gzip"))
        *out = SL_COMPRESSION_GZIP;
    else
        return false;
    return true;
}

static bool parse_bool(const sl_tlv_field_t *v, uint64_t *out)
{
    if (value_fixed(v, SL_KIND_BOOL, 1)) {
        *out = v->data.ptr[0];
        return *out <= 1;
    }
    if (v->kind != SL_KIND_STRING)
        return false;
    *out = text_is(v->data, "true") ? 1 : 0;
    return text_is(v->data, "true") || text_is(v->data, "false");
}

/* Uint64 verbatim, or a String through the key's text parser. */
static bool parse_u64_or(const sl_tlv_field_t *v, bool (*text)(sl_span_t, uint64_t *),
                         uint64_t *out)
{
    if (value_fixed(v, SL_KIND_UINT64, 8)) {
        *out = sl_load_u64(v->data.ptr);
        return true;
    }
    return v->kind == SL_KIND_STRING && text(v->data, out);
}

static bool parse_messages(const sl_tlv_field_t *v, uint64_t *out)
{
    bool ok = false;
    if (value_fixed(v, SL_KIND_UINT32, 4)) {
        *out = sl_load_u32(v->data.ptr);
        ok = true;
    } else if (v->kind == SL_KIND_STRING) {
        ok = parse_u32_text(v->data, out);
    }
    return ok && *out >= SL_MESSAGES_TO_SAVE_MIN && *out <= SL_MESSAGES_TO_SAVE_MAX;
}

int sl_topic_option_parse(sl_topic_key_t key, const sl_tlv_field_t *value, uint64_t *out)
{
    bool ok = false;
    *out = 0;
    switch (key) {
    case SL_TOPIC_KEY_COMPRESSION_ALGORITHM:
        ok = parse_compression(value, out);
        break;
    case SL_TOPIC_KEY_MESSAGE_EXPIRY:
        ok = parse_u64_or(value, sl_parse_message_expiry, out);
        break;
    case SL_TOPIC_KEY_MAX_TOPIC_SIZE:
        ok = parse_u64_or(value, sl_parse_max_topic_size, out);
        break;
    case SL_TOPIC_KEY_SEGMENT_SIZE:
        ok = parse_u64_or(value, sl_parse_byte_size, out);
        break;
    case SL_TOPIC_KEY_SIZE_OF_MESSAGES_REQUIRED_TO_SAVE:
        ok = parse_u64_or(value, sl_parse_byte_size, out) && *out <= SL_SIZE_TO_SAVE_MAX;
        break;
    case SL_TOPIC_KEY_ENFORCE_FSYNC:
    case SL_TOPIC_KEY_PREALLOCATE_SEGMENTS:
        ok = parse_bool(value, out);
        break;
    case SL_TOPIC_KEY_MESSAGES_REQUIRED_TO_SAVE:
        ok = parse_messages(value, out);
        break;
    case SL_TOPIC_KEY_COUNT:
        break;
    }
    if (!ok)
        *out = 0;
    return ok ? 0 : -SL_ERR_INVALID_OPTION_VALUE;
}

/* --- config access ----------------------------------------------------------- */

/* Keys whose value 0 asks for the server default rather than being a value. */
#define SENTINEL_ZERO_KEYS                                                                         \
    (SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_MESSAGE_EXPIRY) |                                               \
     SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_MAX_TOPIC_SIZE) | SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_SEGMENT_SIZE) | \
     SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_SIZE_OF_MESSAGES_REQUIRED_TO_SAVE))

static bool is_sentinel(sl_topic_key_t key, uint64_t value)
{
    return value == 0 && (SENTINEL_ZERO_KEYS & SL_TOPIC_KEY_BIT(key)) != 0;
}

static uint64_t config_get(const sl_topic_config_t *c, sl_topic_key_t key)
{
    sl_assert(key < SL_TOPIC_KEY_COUNT);
    switch (key) {
    case SL_TOPIC_KEY_COMPRESSION_ALGORITHM:
        return c->compression_algorithm;
    case SL_TOPIC_KEY_MESSAGE_EXPIRY:
        return c->message_expiry;
    case SL_TOPIC_KEY_MAX_TOPIC_SIZE:
        return c->max_topic_size;
    case SL_TOPIC_KEY_SEGMENT_SIZE:
        return c->segment_size;
    case SL_TOPIC_KEY_ENFORCE_FSYNC:
        return c->enforce_fsync;
    case SL_TOPIC_KEY_MESSAGES_REQUIRED_TO_SAVE:
        return c->messages_required_to_save;
    case SL_TOPIC_KEY_SIZE_OF_MESSAGES_REQUIRED_TO_SAVE:
        return c->size_of_messages_required_to_save;
    case SL_TOPIC_KEY_PREALLOCATE_SEGMENTS:
        return c->preallocate_segments;
    case SL_TOPIC_KEY_COUNT:
        break;
    }
    return 0;
}

/* Stores a value that sl_topic_option_parse produced for key. */
static void config_set(sl_topic_config_t *c, sl_topic_key_t key, uint64_t v)
{
    switch (key) {
    case SL_TOPIC_KEY_COMPRESSION_ALGORITHM:
        c->compression_algorithm = (uint8_t)v;
        break;
    case SL_TOPIC_KEY_MESSAGE_EXPIRY:
        c->message_expiry = v;
        break;
    case SL_TOPIC_KEY_MAX_TOPIC_SIZE:
        c->max_topic_size = v;
        break;
    case SL_TOPIC_KEY_SEGMENT_SIZE:
        c->segment_size = v;
        break;
    case SL_TOPIC_KEY_ENFORCE_FSYNC:
        c->enforce_fsync = v != 0;
        break;
    case SL_TOPIC_KEY_MESSAGES_REQUIRED_TO_SAVE:
        c->messages_required_to_save = (uint32_t)v;
        break;
    case SL_TOPIC_KEY_SIZE_OF_MESSAGES_REQUIRED_TO_SAVE:
        c->size_of_messages_required_to_save = v;
        break;
    case SL_TOPIC_KEY_PREALLOCATE_SEGMENTS:
        c->preallocate_segments = v != 0;
        break;
    case SL_TOPIC_KEY_COUNT:
        sl_assert(false);
    }
}

/* --- create ------------------------------------------------------------------ */

static bool segment_size_in_bounds(uint64_t size)
{
    return size >= SL_SEGMENT_SIZE_MIN && size <= SL_SEGMENT_SIZE_MAX &&
           size % SL_SEGMENT_SIZE_ALIGN == 0;
}

/* Step 2 of options.md 4.2: every entry in block order. */
static int absorb_create_entries(sl_span_t block, sl_topic_config_t *out)
{
    sl_tlv_iter_t it = sl_tlv_iter(block);
    sl_tlv_entry_t e;
    while (sl_tlv_next(&it, &e)) {
        sl_topic_key_t key;
        uint64_t value;
        if (!sl_topic_key_find(e.key.data, &key))
            return -SL_ERR_UNSUPPORTED_OPTION_KEY;
        int rc = sl_topic_option_parse(key, &e.value, &value);
        if (rc != 0)
            return rc;
        if (is_sentinel(key, value))
            continue; /* resolves like an absent key */
        config_set(out, key, value);
        out->explicit_keys |= SL_TOPIC_KEY_BIT(key);
    }
    /* A block that did not validate stops the walk early. */
    return sl_reader_done(&it.r) ? 0 : -SL_ERR_INVALID_COMMAND;
}

bool sl_topic_preallocation_fits(const sl_topic_config_t *c, uint64_t partitions_count)
{
    uint64_t reserved;
    return !c->preallocate_segments ||
           (!__builtin_mul_overflow(c->segment_size, partitions_count, &reserved) &&
            reserved <= SL_PREALLOCATE_TOTAL_MAX);
}

int sl_topic_options_resolve_create(sl_span_t block, uint32_t partitions_count,
                                    sl_topic_config_t *out)
{
    sl_topic_config_default(out);
    int rc = absorb_create_entries(block, out);
    if (rc != 0)
        return rc;
    if ((out->explicit_keys & SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_SEGMENT_SIZE)) &&
        !segment_size_in_bounds(out->segment_size))
        return -SL_ERR_INVALID_OPTION_VALUE;
    if (!sl_topic_preallocation_fits(out, partitions_count))
        return -SL_ERR_INVALID_OPTION_VALUE;
    if (partitions_count > SL_PARTITIONS_PER_REQUEST_MAX)
        return -SL_ERR_TOO_MANY_PARTITIONS;
    if ((out->explicit_keys & SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_MAX_TOPIC_SIZE)) &&
        out->max_topic_size < out->segment_size)
        return -SL_ERR_INVALID_TOPIC_SIZE;
    return 0;
}

/* Appends key and its canonical value; false when it cannot be encoded. */
static bool put_canonical(sl_buf_t *b, sl_topic_key_t key, uint64_t v)
{
    const char *name = sl_topic_key_name(key);
    uint8_t bytes[8];
    switch (sl_topic_option_catalog[key].kind) {
    case SL_KIND_STRING:
        if (v != SL_COMPRESSION_NONE && v != SL_COMPRESSION_GZIP)
            return false;
        return sl_tlv_put_pair(b, name, SL_KIND_STRING,
                               sl_span_str(v == SL_COMPRESSION_GZIP ? "gzip" : "none"));
    case SL_KIND_BOOL:
        bytes[0] = v != 0;
        return sl_tlv_put_pair(b, name, SL_KIND_BOOL, sl_span(bytes, 1));
    case SL_KIND_UINT32:
        sl_store_u32(bytes, (uint32_t)v);
        return sl_tlv_put_pair(b, name, SL_KIND_UINT32, sl_span(bytes, 4));
    default:
        sl_store_u64(bytes, v);
        return sl_tlv_put_pair(b, name, SL_KIND_UINT64, sl_span(bytes, 8));
    }
}

int sl_topic_options_encode(sl_buf_t *b, const sl_topic_config_t *cfg, bool explicit_side)
{
    bool ok = true;
    for (int i = 0; i < SL_TOPIC_KEY_COUNT && ok; i++) {
        sl_topic_key_t key = sorted_keys[i];
        bool is_explicit = (cfg->explicit_keys & SL_TOPIC_KEY_BIT(key)) != 0;
        if (is_explicit == explicit_side)
            ok = put_canonical(b, key, config_get(cfg, key)) || !sl_buf_ok(b);
    }
    if (!sl_buf_ok(b))
        return -SL_ERR_COMMAND_LENGTH_ERROR;
    return ok ? 0 : -SL_ERR_INVALID_COMMAND;
}

/* Folds the parseable catalog entries of a stored block into c. */
static void absorb_stored(sl_span_t block, bool is_explicit, sl_topic_config_t *c)
{
    sl_tlv_iter_t it = sl_tlv_iter(block);
    sl_tlv_entry_t e;
    while (sl_tlv_next(&it, &e)) {
        sl_topic_key_t key;
        uint64_t value;
        if (!sl_topic_key_find(e.key.data, &key))
            continue;
        if (is_explicit)
            c->explicit_keys |= SL_TOPIC_KEY_BIT(key);
        if (sl_topic_option_parse(key, &e.value, &value) == 0 && !is_sentinel(key, value))
            config_set(c, key, value);
    }
}

void sl_topic_config_from_blocks(sl_span_t explicit_block, sl_span_t derived_block,
                                 sl_topic_config_t *out)
{
    sl_topic_config_default(out);
    absorb_stored(derived_block, false, out);
    absorb_stored(explicit_block, true, out);
}

/* --- update ------------------------------------------------------------------ */

int sl_topic_patch_parse(sl_span_t block, sl_topic_patch_t *out)
{
    *out = (sl_topic_patch_t){0};
    sl_tlv_iter_t it = sl_tlv_iter(block);
    sl_tlv_entry_t e;
    sl_topic_key_t key;
    /* The reference gates every key before it parses any value. */
    while (sl_tlv_next(&it, &e)) {
        if (!sl_topic_key_find(e.key.data, &key) ||
            (SL_TOPIC_KEYS_UPDATABLE & SL_TOPIC_KEY_BIT(key)) == 0)
            return -SL_ERR_UNSUPPORTED_OPTION_KEY;
    }
    if (!sl_reader_done(&it.r))
        return -SL_ERR_INVALID_COMMAND;
    it = sl_tlv_iter(block);
    while (sl_tlv_next(&it, &e)) {
        uint64_t value;
        bool known = sl_topic_key_find(e.key.data, &key);
        sl_assert(known);
        int rc = sl_topic_option_parse(key, &e.value, &value);
        if (rc != 0)
            return rc;
        out->keys |= SL_TOPIC_KEY_BIT(key);
        if (key == SL_TOPIC_KEY_COMPRESSION_ALGORITHM)
            out->compression_algorithm = (uint8_t)value;
        else if (key == SL_TOPIC_KEY_MESSAGE_EXPIRY)
            out->message_expiry = value;
        else
            out->max_topic_size = value;
    }
    return 0;
}

int sl_topic_patch_check_size(const sl_topic_patch_t *patch, uint64_t stored_segment_size)
{
    if ((patch->keys & SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_MAX_TOPIC_SIZE)) == 0)
        return 0;
    uint64_t floor = stored_segment_size != 0 ? stored_segment_size : SL_SEGMENT_SIZE_DEFAULT;
    uint64_t cap = patch->max_topic_size;
    if (cap != SL_TOPIC_SIZE_SERVER_DEFAULT && cap != SL_TOPIC_SIZE_UNLIMITED && cap < floor)
        return -SL_ERR_INVALID_TOPIC_SIZE;
    return 0;
}

void sl_topic_patch_apply(const sl_topic_patch_t *patch, sl_topic_config_t *cfg)
{
    sl_assert((patch->keys & ~SL_TOPIC_KEYS_UPDATABLE) == 0);
    if (patch->keys & SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_COMPRESSION_ALGORITHM))
        cfg->compression_algorithm = patch->compression_algorithm;
    if ((patch->keys & SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_MESSAGE_EXPIRY)) &&
        patch->message_expiry != SL_TOPIC_EXPIRY_SERVER_DEFAULT)
        cfg->message_expiry = patch->message_expiry;
    if ((patch->keys & SL_TOPIC_KEY_BIT(SL_TOPIC_KEY_MAX_TOPIC_SIZE)) &&
        patch->max_topic_size != SL_TOPIC_SIZE_SERVER_DEFAULT)
        cfg->max_topic_size = patch->max_topic_size;
    cfg->explicit_keys |= patch->keys;
}

/* Entries of one stored block, at most one per catalog key and per sent key. */
#define PATCH_ENTRIES_MAX (2 * SL_TOPIC_KEY_COUNT)

typedef struct entry_list {
    sl_tlv_entry_t items[PATCH_ENTRIES_MAX];
    uint32_t count;
} entry_list_t;

static bool block_has_key(sl_span_t block, sl_span_t key)
{
    sl_tlv_iter_t it = sl_tlv_iter(block);
    sl_tlv_entry_t e;
    while (sl_tlv_next(&it, &e))
        if (sl_span_eq(e.key.data, key))
            return true;
    return false;
}

/* Appends the entries of block whose key the update block does not send. */
static bool collect(sl_span_t block, sl_span_t skip_keys_of, entry_list_t *list)
{
    sl_tlv_iter_t it = sl_tlv_iter(block);
    sl_tlv_entry_t e;
    uint32_t seen = 0;
    while (sl_tlv_next(&it, &e)) {
        if (++seen > SL_TOPIC_KEY_COUNT)
            return false;
        if (block_has_key(skip_keys_of, e.key.data))
            continue;
        list->items[list->count++] = e;
    }
    return sl_reader_done(&it.r);
}

static int compare_key_bytes(sl_span_t a, sl_span_t b)
{
    size_t n = a.len < b.len ? a.len : b.len;
    int c = n ? memcmp(a.ptr, b.ptr, n) : 0;
    return c != 0 ? c : (a.len > b.len) - (a.len < b.len);
}

/* Sorts by key bytes (insertion sort: at most 16 entries) and appends. */
static bool put_sorted(sl_buf_t *b, entry_list_t *list)
{
    for (uint32_t i = 1; i < list->count; i++) {
        sl_tlv_entry_t e = list->items[i];
        uint32_t j = i;
        for (; j > 0 && compare_key_bytes(list->items[j - 1].key.data, e.key.data) > 0; j--)
            list->items[j] = list->items[j - 1];
        list->items[j] = e;
    }
    bool ok = true;
    for (uint32_t i = 0; i < list->count && ok; i++)
        ok = sl_tlv_put(b, list->items[i].key.kind, list->items[i].key.data) &&
             sl_tlv_put(b, list->items[i].value.kind, list->items[i].value.data);
    return ok;
}

int sl_topic_options_patch_blocks(sl_span_t explicit_block, sl_span_t derived_block,
                                  sl_span_t update_block, sl_buf_t *explicit_out,
                                  sl_buf_t *derived_out)
{
    entry_list_t explicit_list = {.count = 0}, derived_list = {.count = 0};
    sl_span_t none = sl_span(NULL, 0);
    if (!collect(explicit_block, update_block, &explicit_list) ||
        !collect(update_block, none, &explicit_list) ||
        !collect(derived_block, update_block, &derived_list))
        return -SL_ERR_INVALID_FORMAT;
    if (!put_sorted(explicit_out, &explicit_list) || !put_sorted(derived_out, &derived_list))
        return -SL_ERR_COMMAND_LENGTH_ERROR;
    return 0;
}
