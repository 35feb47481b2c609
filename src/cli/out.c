/* Output of the sluice tool. Handlers describe a result once, as typed values
 * under named columns (cli_doc_t); this file renders it as an aligned table
 * for people or as JSON for scripts, so both formats always carry the same
 * data. */
#include "cli/cli.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void *cli_xalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (p == NULL) {
        fputs("sluice: error: out of memory\n", stderr);
        exit(CLI_EXIT_LOCAL);
    }
    return p;
}

/* --- UTF-8 and escaping ------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when it is not one. */
static size_t utf8_seq(const unsigned char *p, size_t left)
{
    unsigned char c = p[0];
    if (c < 0x80)
        return 1;
    size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
    if (n == 0 || n > left || c > 0xf4 || c == 0xc0 || c == 0xc1)
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    /* Overlong forms, surrogates and code points above U+10FFFF. */
    if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f) || (c == 0xf0 && p[1] < 0x90) ||
        (c == 0xf4 && p[1] > 0x8f))
        return 0;
    return n;
}

bool cli_utf8_valid(const void *s, size_t len)
{
    const unsigned char *p = s;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_seq(p + i, len - i);
        if (n == 0)
            return false;
        i += n;
    }
    return true;
}

void cli_json_string(FILE *f, const void *s, size_t len)
{
    const unsigned char *p = s;
    fputc('"', f);
    for (size_t i = 0; i < len;) {
        size_t n = utf8_seq(p + i, len - i);
        unsigned char c = p[i];
        if (n == 0) {
            fputs("\\ufffd", f);
            i++;
            continue;
        }
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c == '\r')
            fputs("\\r", f);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fwrite(p + i, 1, n, f);
        i += n;
    }
    fputc('"', f);
}

void cli_text_escaped(FILE *f, const void *s, size_t len)
{
    const unsigned char *p = s;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_seq(p + i, len - i);
        unsigned char c = p[i];
        if (n == 0 || c < 0x20 || c == 0x7f) {
            if (c == '\n')
                fputs("\\n", f);
            else if (c == '\t')
                fputs("\\t", f);
            else if (c == '\r')
                fputs("\\r", f);
            else
                fprintf(f, "\\x%02x", c);
            i++;
            continue;
        }
        fwrite(p + i, 1, n, f);
        i += n;
    }
}

/* Display width: code points (good enough for names and payload text). */
static size_t text_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xc0) != 0x80)
            w++;
    return w;
}

/* --- rendering one value -------------------------------------------------------------- */

static void print_time(FILE *f, uint64_t us)
{
    if (us == 0) {
        fputc('-', f);
        return;
    }
    time_t t = (time_t)(us / 1000000);
    struct tm tm;
    char buf[32];
    if (gmtime_r(&t, &tm) == NULL || strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm) == 0) {
        fprintf(f, "%llu", (unsigned long long)us);
        return;
    }
    fputs(buf, f);
}

static void print_size(FILE *f, uint64_t bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes == UINT64_MAX) {
        fputs("unlimited", f);
        return;
    }
    if (bytes < 1024) {
        fprintf(f, "%llu B", (unsigned long long)bytes);
        return;
    }
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 6) {
        v /= 1024;
        u++;
    }
    fprintf(f, "%.2f %s", v, units[u]);
}

static void print_duration(FILE *f, uint64_t us, bool expiry)
{
    static const struct {
        uint64_t factor;
        const char *name;
    } parts[] = {{86400000000ull, "d"}, {3600000000ull, "h"}, {60000000ull, "m"},
                 {1000000ull, "s"},     {1000ull, "ms"},      {1ull, "us"}};
    if (expiry && us == UINT64_MAX) {
        fputs("never", f);
        return;
    }
    if (us == 0) {
        fputs(expiry ? "server default" : "0s", f);
        return;
    }
    if (!expiry && us >= 1000000)
        us -= us % 1000000; /* whole seconds read better for an uptime */
    const char *sep = "";
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        if (us >= parts[i].factor) {
            fprintf(f, "%s%llu%s", sep, (unsigned long long)(us / parts[i].factor), parts[i].name);
            us %= parts[i].factor;
            sep = " ";
        }
    }
}

void cli_val_text(FILE *f, const cli_val_t *v)
{
    switch (v->kind) {
    case CLI_VAL_NULL:
        fputc('-', f);
        break;
    case CLI_VAL_STR:
        cli_text_escaped(f, v->s, strlen(v->s));
        break;
    case CLI_VAL_U64:
        fprintf(f, "%llu", (unsigned long long)v->u);
        break;
    case CLI_VAL_I64:
        fprintf(f, "%lld", (long long)v->i);
        break;
    case CLI_VAL_F64:
        fprintf(f, "%.2f", v->f);
        break;
    case CLI_VAL_BOOL:
        fputs(v->b ? "yes" : "no", f);
        break;
    case CLI_VAL_TIME_US:
        print_time(f, v->u);
        break;
    case CLI_VAL_SIZE:
        print_size(f, v->u);
        break;
    case CLI_VAL_EXPIRY_US:
    case CLI_VAL_DURATION_US:
        print_duration(f, v->u, v->kind == CLI_VAL_EXPIRY_US);
        break;
    case CLI_VAL_BYTES:
        cli_text_escaped(f, v->s, v->len);
        break;
    case CLI_VAL_JSON:
        fputs(v->alt ? v->alt : "", f);
        break;
    default:
        break;
    }
}

void cli_val_json(FILE *f, const cli_val_t *v)
{
    switch (v->kind) {
    case CLI_VAL_STR:
        cli_json_string(f, v->s, strlen(v->s));
        break;
    case CLI_VAL_U64:
    case CLI_VAL_TIME_US:
    case CLI_VAL_SIZE:
    case CLI_VAL_EXPIRY_US:
    case CLI_VAL_DURATION_US:
        fprintf(f, "%llu", (unsigned long long)v->u);
        break;
    case CLI_VAL_I64:
        fprintf(f, "%lld", (long long)v->i);
        break;
    case CLI_VAL_F64:
        if (isfinite(v->f))
            fprintf(f, "%.9g", v->f);
        else
            fputs("null", f);
        break;
    case CLI_VAL_BOOL:
        fputs(v->b ? "true" : "false", f);
        break;
    case CLI_VAL_BYTES:
        cli_json_string(f, v->s, v->len);
        break;
    case CLI_VAL_JSON:
        fputs(v->s, f);
        break;
    default:
        fputs("null", f);
        break;
    }
}

/* --- documents --------------------------------------------------------------------- */

static void table_init(cli_table_t *t, const char *key, const cli_col_t *cols, uint32_t count)
{
    *t = (cli_table_t){.key = key, .cols = cols, .cols_count = count};
}

void cli_doc_list(cli_doc_t *doc, const cli_col_t *cols, uint32_t cols_count)
{
    *doc = (cli_doc_t){0};
    table_init(&doc->main, NULL, cols, cols_count);
}

void cli_doc_object(cli_doc_t *doc, const cli_col_t *cols, uint32_t cols_count)
{
    cli_doc_list(doc, cols, cols_count);
    doc->object = true;
}

cli_table_t *cli_doc_sub(cli_doc_t *doc, const char *key, const cli_col_t *cols,
                         uint32_t cols_count)
{
    if (doc->subs_count >= CLI_DOC_SUBS_MAX)
        abort(); /* a handler asks for more nested lists than the document holds */
    cli_table_t *t = &doc->subs[doc->subs_count++];
    table_init(t, key, cols, cols_count);
    return t;
}

void cli_table_row(cli_table_t *t, const cli_val_t *vals)
{
    if (t->rows_count == t->rows_cap) {
        uint32_t cap = t->rows_cap ? t->rows_cap * 2 : 16;
        cli_val_t *cells = cli_xalloc((size_t)cap * t->cols_count * sizeof(*cells));
        if (t->cells != NULL)
            memcpy(cells, t->cells, (size_t)t->rows_count * t->cols_count * sizeof(*cells));
        free(t->cells);
        t->cells = cells;
        t->rows_cap = cap;
    }
    memcpy(&t->cells[(size_t)t->rows_count * t->cols_count], vals, t->cols_count * sizeof(*vals));
    t->rows_count++;
}

const char *cli_doc_printf(cli_doc_t *doc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = cli_xalloc((size_t)(n > 0 ? n : 0) + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return cli_doc_adopt(doc, s);
}

const char *cli_doc_adopt(cli_doc_t *doc, char *s)
{
    if (doc->owned_count == doc->owned_cap) {
        uint32_t cap = doc->owned_cap ? doc->owned_cap * 2 : 16;
        char **owned = cli_xalloc(cap * sizeof(*owned));
        if (doc->owned != NULL)
            memcpy(owned, doc->owned, doc->owned_count * sizeof(*owned));
        free(doc->owned);
        doc->owned = owned;
        doc->owned_cap = cap;
    }
    doc->owned[doc->owned_count++] = s;
    return s;
}

FILE *cli_memstream(char **buf, size_t *len)
{
    FILE *m = open_memstream(buf, len);
    if (m == NULL) {
        fputs("sluice: error: out of memory\n", stderr);
        exit(CLI_EXIT_LOCAL);
    }
    return m;
}

const char *cli_doc_hex(cli_doc_t *doc, const void *p, size_t len)
{
    static const char digits[] = "0123456789abcdef";
    char *s = (char *)cli_doc_printf(doc, "%*s", (int)(len * 2), "");
    const uint8_t *b = p;
    for (size_t i = 0; i < len; i++) {
        s[2 * i] = digits[b[i] >> 4];
        s[2 * i + 1] = digits[b[i] & 15];
    }
    return s;
}

void cli_doc_free(cli_doc_t *doc)
{
    free(doc->main.cells);
    for (uint32_t i = 0; i < doc->subs_count; i++)
        free(doc->subs[i].cells);
    for (uint32_t i = 0; i < doc->owned_count; i++)
        free(doc->owned[i]);
    free(doc->owned);
    *doc = (cli_doc_t){0};
}

/* --- JSON ------------------------------------------------------------------------------- */

static void json_row(FILE *f, const cli_table_t *t, uint32_t row)
{
    const cli_val_t *cells = &t->cells[(size_t)row * t->cols_count];
    const char *sep = "";
    fputc('{', f);
    for (uint32_t c = 0; c < t->cols_count; c++) {
        if ((t->cols[c].flags & CLI_COL_TABLE_ONLY) || cells[c].kind == CLI_VAL_ABSENT)
            continue;
        fprintf(f, "%s\"%s\": ", sep, t->cols[c].key);
        cli_val_json(f, &cells[c]);
        sep = ", ";
    }
    fputc('}', f);
}

static void json_array(FILE *f, const cli_table_t *t, const char *indent)
{
    if (t->rows_count == 0) {
        fputs("[]", f);
        return;
    }
    fputs("[\n", f);
    for (uint32_t r = 0; r < t->rows_count; r++) {
        fprintf(f, "%s  ", indent);
        json_row(f, t, r);
        fputs(r + 1 < t->rows_count ? ",\n" : "\n", f);
    }
    fprintf(f, "%s]", indent);
}

static void json_doc(FILE *f, const cli_doc_t *doc)
{
    if (!doc->object) {
        json_array(f, &doc->main, "");
        fputc('\n', f);
        return;
    }
    const cli_table_t *t = &doc->main;
    const char *sep = "\n";
    fputc('{', f);
    for (uint32_t c = 0; t->rows_count > 0 && c < t->cols_count; c++) {
        if ((t->cols[c].flags & CLI_COL_TABLE_ONLY) || t->cells[c].kind == CLI_VAL_ABSENT)
            continue;
        fprintf(f, "%s  \"%s\": ", sep, t->cols[c].key);
        cli_val_json(f, &t->cells[c]);
        sep = ",\n";
    }
    for (uint32_t s = 0; s < doc->subs_count; s++) {
        fprintf(f, "%s  \"%s\": ", sep, doc->subs[s].key);
        json_array(f, &doc->subs[s], "  ");
        sep = ",\n";
    }
    fputs("\n}\n", f);
}

/* --- tables ------------------------------------------------------------------------------- */

/* The table text of every cell, rendered once for measuring and printing. */
static char **render_cells(const cli_table_t *t, uint32_t from)
{
    size_t n = (size_t)(t->rows_count - from) * t->cols_count;
    char **texts = cli_xalloc((n ? n : 1) * sizeof(*texts));
    for (size_t i = 0; i < n; i++) {
        size_t len;
        FILE *m = cli_memstream(&texts[i], &len);
        cli_val_text(m, &t->cells[(size_t)from * t->cols_count + i]);
        fclose(m);
    }
    return texts;
}

/* keep: column widths carried over from earlier calls (grown here), or NULL. */
static void table_rows(FILE *f, const cli_table_t *t, uint32_t from, bool heading, size_t *keep)
{
    uint32_t rows = t->rows_count - from;
    char **texts = render_cells(t, from);
    size_t *width = cli_xalloc(t->cols_count * sizeof(*width));
    int last = -1;
    for (uint32_t c = 0; c < t->cols_count; c++) {
        if (t->cols[c].flags & CLI_COL_JSON_ONLY)
            continue;
        width[c] = heading || keep ? text_width(t->cols[c].title) : 0;
        if (keep != NULL && keep[c] > width[c])
            width[c] = keep[c];
        for (uint32_t r = 0; r < rows; r++) {
            size_t w = text_width(texts[(size_t)r * t->cols_count + c]);
            width[c] = w > width[c] ? w : width[c];
        }
        if (keep != NULL)
            keep[c] = width[c];
        last = (int)c;
    }
    for (int64_t r = heading ? -1 : 0; r < (int64_t)rows; r++) {
        for (uint32_t c = 0; c < t->cols_count; c++) {
            if (t->cols[c].flags & CLI_COL_JSON_ONLY)
                continue;
            const char *s = r < 0 ? t->cols[c].title : texts[(size_t)r * t->cols_count + c];
            fputs(s, f);
            if ((int)c != last)
                fprintf(f, "%*s", (int)(width[c] - text_width(s) + 2), "");
        }
        fputc('\n', f);
    }
    for (size_t i = 0; i < (size_t)rows * t->cols_count; i++)
        free(texts[i]);
    free(texts);
    free(width);
}

static void table_object(FILE *f, const cli_table_t *t)
{
    size_t width = 0;
    for (uint32_t c = 0; c < t->cols_count; c++)
        if (!(t->cols[c].flags & CLI_COL_JSON_ONLY) && text_width(t->cols[c].title) > width)
            width = text_width(t->cols[c].title);
    char **texts = render_cells(t, 0);
    for (uint32_t c = 0; t->rows_count > 0 && c < t->cols_count; c++) {
        if (!(t->cols[c].flags & CLI_COL_JSON_ONLY) && t->cells[c].kind != CLI_VAL_ABSENT)
            fprintf(f, "%-*s  %s\n", (int)width, t->cols[c].title, texts[c]);
    }
    for (uint32_t c = 0; t->rows_count > 0 && c < t->cols_count; c++)
        free(texts[c]);
    free(texts);
}

/* List mode: one line per row, the table texts joined by '|', no heading. */
static void list_rows(FILE *f, const cli_table_t *t, uint32_t from)
{
    for (uint32_t r = from; r < t->rows_count; r++) {
        bool first = true;
        for (uint32_t c = 0; c < t->cols_count; c++) {
            if (t->cols[c].flags & CLI_COL_JSON_ONLY)
                continue;
            fputs(first ? "" : "|", f);
            cli_val_text(f, &t->cells[(size_t)r * t->cols_count + c]);
            first = false;
        }
        fputc('\n', f);
    }
}

/* List mode of one object: a "title|value" line per field. */
static void list_object(FILE *f, const cli_table_t *t)
{
    for (uint32_t c = 0; t->rows_count > 0 && c < t->cols_count; c++) {
        if ((t->cols[c].flags & CLI_COL_JSON_ONLY) || t->cells[c].kind == CLI_VAL_ABSENT)
            continue;
        fprintf(f, "%s|", t->cols[c].title);
        cli_val_text(f, &t->cells[c]);
        fputc('\n', f);
    }
}

void cli_table_print_rows(FILE *f, cli_format_t format, const cli_table_t *t, uint32_t from,
                          bool with_heading, size_t *widths)
{
    if (format == CLI_FORMAT_LIST) {
        list_rows(f, t, from);
    } else if (format == CLI_FORMAT_JSON) {
        for (uint32_t r = from; r < t->rows_count; r++) {
            json_row(f, t, r);
            fputc('\n', f);
        }
    } else {
        table_rows(f, t, from, with_heading, widths);
    }
    fflush(f);
}

void cli_doc_print(const cli_run_t *run, const cli_doc_t *doc)
{
    FILE *f = run->out;
    if (run->format == CLI_FORMAT_JSON) {
        json_doc(f, doc);
        return;
    }
    if (run->format == CLI_FORMAT_LIST) {
        if (doc->object)
            list_object(f, &doc->main);
        else
            list_rows(f, &doc->main, 0);
        for (uint32_t s = 0; s < doc->subs_count; s++)
            list_rows(f, &doc->subs[s], 0);
        return;
    }
    if (!doc->object)
        table_rows(f, &doc->main, 0, true, NULL);
    else
        table_object(f, &doc->main);
    for (uint32_t s = 0; s < doc->subs_count; s++) {
        const cli_table_t *t = &doc->subs[s];
        fprintf(f, "\n%s:%s\n", t->key, t->rows_count ? "" : " none");
        if (t->rows_count)
            table_rows(f, t, 0, true, NULL);
    }
}

void cli_done(const cli_run_t *run, const char *fmt, ...)
{
    if (run->quiet)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (run->format == CLI_FORMAT_JSON) {
        fputs("{\"status\": \"ok\", \"message\": ", run->out);
        cli_json_string(run->out, msg, strlen(msg));
        fputs("}\n", run->out);
    } else {
        fprintf(run->out, "%s\n", msg);
    }
}

void cli_created(const cli_run_t *run, const cli_doc_t *doc, const char *fmt, ...)
{
    if (run->format == CLI_FORMAT_JSON) {
        cli_doc_print(run, doc);
        return;
    }
    if (run->quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(run->out, fmt, ap);
    va_end(ap);
    fputc('\n', run->out);
}

/* Little-endian integer of n bytes (n <= 8). */
static uint64_t load_le(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = n; i > 0; i--)
        v = v << 8 | p[i - 1];
    return v;
}

/* A 16-byte little-endian integer in decimal. */
static const char *int128_text(cli_doc_t *doc, const uint8_t *p, bool is_signed)
{
    unsigned __int128 v = (unsigned __int128)load_le(p + 8, 8) << 64 | load_le(p, 8);
    bool negative = is_signed && (p[15] & 0x80);
    if (negative)
        v = ~v + 1;
    char digits[48];
    size_t n = sizeof(digits) - 1;
    digits[n] = '\0';
    do {
        digits[--n] = (char)('0' + (unsigned)(v % 10));
        v /= 10;
    } while (v != 0 && n > 1);
    if (negative)
        digits[--n] = '-';
    return cli_doc_printf(doc, "%s", digits + n);
}

static const char *text_and_json(cli_doc_t *doc, cli_val_t *v, const char *text, bool quoted)
{
    v->kind = CLI_VAL_JSON;
    v->alt = text;
    if (!quoted)
        return v->s = text;
    char *json;
    size_t len;
    FILE *m = cli_memstream(&json, &len);
    cli_json_string(m, text, strlen(text));
    fclose(m);
    return v->s = cli_doc_adopt(doc, json);
}

cli_val_t cli_typed_value(cli_doc_t *doc, uint8_t kind, const uint8_t *bytes, size_t len)
{
    static const uint8_t widths[16] = {0, 0, 0, 1, 1, 2, 4, 8, 16, 1, 2, 4, 8, 16, 4, 8};
    cli_val_t v = {0};
    if (kind == SL_HEADER_KIND_STRING) {
        v = cli_bytes(bytes, len);
        return v;
    }
    if ((kind == SL_HEADER_KIND_INT128 || kind == SL_HEADER_KIND_UINT128) && len == 16) {
        text_and_json(doc, &v, int128_text(doc, bytes, kind == SL_HEADER_KIND_INT128), false);
        return v;
    }
    if (kind >= 16 || widths[kind] == 0 || widths[kind] != len) {
        /* Raw bytes and unknown kinds: hex. */
        text_and_json(doc, &v, cli_doc_hex(doc, bytes, len), true);
        return v;
    }
    uint64_t u = load_le(bytes, len);
    const char *text;
    if (kind == SL_HEADER_KIND_BOOL) {
        text = u ? "true" : "false";
    } else if (kind == SL_HEADER_KIND_FLOAT32 || kind == SL_HEADER_KIND_FLOAT64) {
        double d;
        if (kind == SL_HEADER_KIND_FLOAT32) {
            float f32;
            uint32_t bits = (uint32_t)u;
            memcpy(&f32, &bits, 4);
            d = f32;
        } else {
            memcpy(&d, &u, 8);
        }
        text = isfinite(d) ? cli_doc_printf(doc, "%.9g", d) : "null";
    } else if (kind >= SL_HEADER_KIND_INT8 && kind <= SL_HEADER_KIND_INT64) {
        unsigned shift = 64 - 8 * (unsigned)len;
        int64_t i = (int64_t)(u << shift) >> shift;
        text = cli_doc_printf(doc, "%lld", (long long)i);
    } else {
        text = cli_doc_printf(doc, "%llu", (unsigned long long)u);
    }
    text_and_json(doc, &v, text, false);
    return v;
}
