/* Base64 (RFC 4648) in the standard alphabet with padding and the URL
 * alphabet without (base/base64.h). */
#include "base/base64.h"

static const char b64_std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64_url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void sl_base64_encode(sl_buf_t *out, sl_span_t in, bool url)
{
    const char *a = url ? b64_url : b64_std;
    size_t i = 0;
    for (; i + 3 <= in.len; i += 3) {
        uint32_t x = (uint32_t)in.ptr[i] << 16 | (uint32_t)in.ptr[i + 1] << 8 | in.ptr[i + 2];
        char q[4] = {a[x >> 18], a[(x >> 12) & 63], a[(x >> 6) & 63], a[x & 63]};
        sl_put_bytes(out, q, 4);
    }
    size_t rest = in.len - i;
    if (rest == 0)
        return;
    uint32_t x = (uint32_t)in.ptr[i] << 16 | (rest == 2 ? (uint32_t)in.ptr[i + 1] << 8 : 0);
    char q[4] = {a[x >> 18], a[(x >> 12) & 63], rest == 2 ? a[(x >> 6) & 63] : '=', '='};
    sl_put_bytes(out, q, url ? rest + 1 : 4);
}

static int b64_value(uint8_t c, bool url)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == (url ? '-' : '+'))
        return 62;
    if (c == (url ? '_' : '/'))
        return 63;
    return -1;
}

bool sl_base64_decode(sl_buf_t *out, sl_span_t in, bool url)
{
    size_t len = in.len;
    size_t pad = 0;
    if (!url) {
        if (len % 4 != 0)
            return false;
        while (pad < 2 && len > 0 && in.ptr[len - 1] == '=') {
            len--;
            pad++;
        }
    } else if (len % 4 == 1) {
        return false;
    }
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64_value(in.ptr[i], url);
        if (v < 0)
            return false;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            sl_put_u8(out, (uint8_t)(acc >> bits));
        }
    }
    /* Leftover bits must be zero (canonical encoding), as Rust's decoder
     * insists. */
    if (bits > 0 && (acc & ((1u << bits) - 1)) != 0)
        return false;
    return sl_buf_ok(out);
}
