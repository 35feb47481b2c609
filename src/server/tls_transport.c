/* The TCP-TLS door (tls.md): a TLS session between the socket and frame
 * assembly. After the handshake the stream is exactly the plain-TCP one, so
 * this is only the adapter from the loop's transport hooks to tls.h. */
#include "server/loop.h"
#include "server/tls.h"

static int tls_open(void *ctx, sl_buf_t *out, void **state)
{
    return sl_tls_session_new(ctx, out, (sl_tls_session_t **)state);
}

static void tls_close(void *state)
{
    sl_tls_session_free(state);
}

static int tls_input(void *state, const uint8_t *data, uint32_t n)
{
    return sl_tls_input(state, data, n);
}

static int tls_read(void *state, uint8_t *dst, uint32_t n)
{
    return sl_tls_read(state, dst, n);
}

static int tls_write(void *state, const uint8_t *src, size_t n)
{
    return sl_tls_write(state, src, n);
}

static bool tls_established(const void *state)
{
    return sl_tls_established(state);
}

static const char *tls_why(const void *state)
{
    return sl_tls_last_error(state);
}

static uint32_t tls_need(void *state, uint32_t stream_bytes)
{
    return (uint32_t)sl_tls_need(state, stream_bytes);
}

const sl_conn_transport_t sl_tls_transport = {
    .name = "tls",
    .report_code = 0, /* TCP-TLS is listed as TCP, as the reference does */
    .open = tls_open,
    .close = tls_close,
    .input = tls_input,
    .read = tls_read,
    .write = tls_write,
    .established = tls_established,
    .why = tls_why,
    .need = tls_need,
};
