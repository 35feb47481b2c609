/* The exporter's transport (otel.h): one export request to one collector
 * endpoint over libcurl, OTLP/HTTP (a protobuf POST to the URL as given) or
 * OTLP/gRPC (the unary Export call over HTTP/2). Used by the exporter thread
 * only; a sender keeps its connection open between requests. */
#ifndef SL_SERVER_OTEL_EXPORT_H
#define SL_SERVER_OTEL_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/assert.h"

typedef struct sl_otel_sender sl_otel_sender_t;

/* Once per process, before any thread starts: libcurl's global set-up. */
SL_WUR int sl_otel_export_global_init(void);

/* A sender for one signal ("logs" or "traces") to endpoint over transport
 * ("http" or "grpc"). 0, or a negative error with err filled. */
SL_WUR int sl_otel_sender_create(const char *signal, const char *transport, const char *endpoint,
                                 sl_otel_sender_t **out, char *err, size_t err_len);
void sl_otel_sender_destroy(sl_otel_sender_t *s);
/* Bytes to keep free in front of a message for the transport's framing. */
size_t sl_otel_sender_headroom(const sl_otel_sender_t *s);
/* Sends one export request whose protobuf message is body[headroom..len)
 * (body[0..headroom) is the sender's to fill). True when the collector took
 * it; false with why filled (a short reason for the log) otherwise. Blocks
 * at most SL_OTEL_EXPORT_TIMEOUT_MS. */
bool sl_otel_send(sl_otel_sender_t *s, uint8_t *body, size_t len, char *why, size_t why_len);
/* Where it sends to, for the log: the URL with any user:password@ shown as
 * ***@. */
const char *sl_otel_sender_url(const sl_otel_sender_t *s);

#endif
