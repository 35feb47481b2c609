/* Base64 (RFC 4648): the standard alphabet with '=' padding (JSON payloads
 * of the HTTP API, keys in files) and the URL alphabet without padding
 * (JWT parts). Pure functions over spans. */
#ifndef SL_BASE_BASE64_H
#define SL_BASE_BASE64_H

#include <stdbool.h>

#include "base/bytes.h"

/* Appends the encoding of in. */
void sl_base64_encode(sl_buf_t *out, sl_span_t in, bool url);
/* Appends the decoded bytes; false on a bad character, bad padding or
 * length (standard: padding required; url: no padding), or bits left over
 * that are not zero. */
bool sl_base64_decode(sl_buf_t *out, sl_span_t in, bool url);

#endif
