/* WebSocket transport of the client (websocket.md 6). */
#include "client/client_internal.h"

int sl_client_ws_open(sl_client_t *c, const char *host, uint16_t port, uint64_t deadline_us)
{
    (void)c;
    (void)host;
    (void)port;
    (void)deadline_us;
    return -SL_ERR_WEB_SOCKET_CONNECTION_ERROR;
}

int sl_client_ws_send(sl_client_t *c, const uint8_t *p, size_t n, uint64_t deadline_us)
{
    return sl_client_raw_send(c, p, n, deadline_us);
}

int sl_client_ws_recv(sl_client_t *c, uint8_t *p, size_t n, uint64_t deadline_us, size_t *got)
{
    return sl_client_raw_recv(c, p, n, deadline_us, got);
}

int sl_client_ws_peek(sl_client_t *c, uint8_t *p, size_t n)
{
    (void)c;
    (void)p;
    (void)n;
    return 0;
}

void sl_client_ws_free(sl_client_ws_t *ws)
{
    (void)ws;
}

ssize_t sl_client_ws_read_some(sl_client_t *c, uint8_t *p, size_t n, short *events)
{
    return sl_client_raw_read(c, p, n, events);
}

bool sl_client_ws_buffered(const sl_client_ws_t *ws)
{
    (void)ws;
    return false;
}
