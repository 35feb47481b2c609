/* Golden vectors and byte comparison for the unit tests. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint8_t *tu_hex(const char *hex, size_t *len)
{
    size_t n = strlen(hex);
    uint8_t *out = malloc(n / 2 + 1);
    assert_non_null(out);
    size_t o = 0;
    int hi = -1;
    for (size_t i = 0; i < n; i++) {
        int v = sl_hex_digit((unsigned char)hex[i]);
        if (v < 0)
            continue;
        if (hi < 0) {
            hi = v;
        } else {
            out[o++] = (uint8_t)(hi << 4 | v);
            hi = -1;
        }
    }
    assert_int_equal(hi, -1);
    *len = o;
    return out;
}

uint8_t *tu_vector(const char *name, size_t *len)
{
    const char *dir = getenv("SLUICE_VECTORS_DIR");
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/vectors", name);
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot open vector %s", path);
    uint8_t *out = malloc(1 << 20);
    assert_non_null(out);
    size_t o = 0;
    char line[256];
    while (fgets(line, sizeof(line), f)) {
        size_t n = strlen(line);
        if (n < 12)
            continue;
        /* The hex column is characters 10..58 of each line. */
        for (size_t i = 10; i < 58 && i + 1 < n; i += 3) {
            int a = sl_hex_digit((unsigned char)line[i]), b = sl_hex_digit((unsigned char)line[i + 1]);
            if (a < 0 || b < 0)
                break;
            out[o++] = (uint8_t)(a << 4 | b);
        }
    }
    fclose(f);
    *len = o;
    return out;
}

void tu_assert_bytes(const void *got, size_t got_len, const void *want, size_t want_len,
                     const char *file, int line)
{
    const uint8_t *g = got, *w = want;
    size_t n = got_len < want_len ? got_len : want_len;
    size_t i = 0;
    while (i < n && g[i] == w[i])
        i++;
    if (i == n && got_len == want_len)
        return;
    char msg[512];
    int o = snprintf(msg, sizeof(msg), "bytes differ at offset %zu (got %zu bytes, want %zu)\n",
                     i, got_len, want_len);
    size_t from = i >= 8 ? i - 8 : 0;
    o += snprintf(msg + o, sizeof(msg) - (size_t)o, " got :");
    for (size_t k = from; k < got_len && k < from + 24 && o < 400; k++)
        o += snprintf(msg + o, sizeof(msg) - (size_t)o, " %02x", g[k]);
    o += snprintf(msg + o, sizeof(msg) - (size_t)o, "\n want:");
    for (size_t k = from; k < want_len && k < from + 24 && o < 500; k++)
        o += snprintf(msg + o, sizeof(msg) - (size_t)o, " %02x", w[k]);
    print_error("%s\n", msg);
    _fail(file, line);
}
