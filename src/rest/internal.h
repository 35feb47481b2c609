/* Helpers shared by the files of src/rest: JSON reading with the
 * reference's rejection statuses (json-c underneath), JSON writing, path
 * identifiers, query values, byte-size strings and base64. Not for use
 * outside src/rest. */
#ifndef SL_REST_INTERNAL_H
#define SL_REST_INTERNAL_H

#include <json-c/json.h>

#include "base/base64.h"
#include "rest/rest.h"

/* --- decoding --------------------------------------------------------------------- */

long sl_rest_percent_decode(sl_span_t src, bool plus_space, char *dst, size_t cap);

/* A decimal u32 as Rust's u32::from_str reads it (an optional '+', digits). */
bool sl_rest_parse_u32(sl_span_t text, uint32_t *out);
bool sl_rest_parse_u64(sl_span_t text, uint64_t *out);

/* A path identifier (http.md 1.1): numeric when the text is a u32, else a
 * name of 1..255 bytes (longer: 400 with error 6). The name borrows text. */
bool sl_rest_ident(sl_span_t text, sl_ident_t *out, sl_rest_error_t *err);

/* The decoded value of query parameter key into buf (cap bytes); false when
 * absent. A value that does not fit is reported as a 400. */
bool sl_rest_query_get(const sl_rest_query_t *q, const char *key, char *buf, size_t cap,
                       size_t *len, sl_rest_error_t *err);

/* --- JSON in ------------------------------------------------------------------------ */

/* Parses a request body that must be one JSON object. Syntax errors and
 * trailing bytes: 400 (plain); valid JSON that is not an object: 422. The
 * object is the caller's (json_object_put). */
json_object *sl_rest_json_object(sl_span_t body, sl_rest_error_t *err);

/* Field readers. A missing required field, a wrong type or a value out of
 * range is a 422 (plain text naming the field). An optional field that is
 * absent or null leaves *present false. */
bool sl_rest_json_str(json_object *o, const char *key, bool required, sl_span_t *out, bool *present,
                      sl_rest_error_t *err);
bool sl_rest_json_u32(json_object *o, const char *key, bool required, uint32_t *out, bool *present,
                      sl_rest_error_t *err);
bool sl_rest_json_u64(json_object *o, const char *key, bool required, uint64_t *out, bool *present,
                      sl_rest_error_t *err);
bool sl_rest_json_bool(json_object *o, const char *key, bool required, bool *out, bool *present,
                       sl_rest_error_t *err);
/* A JSON value as u64 (non-negative integer); false otherwise. */
bool sl_rest_json_as_u64(json_object *v, uint64_t *out);

/* --- JSON out ----------------------------------------------------------------------- */

json_object *sl_rest_json_string(sl_span_t s);
json_object *sl_rest_json_uint(uint64_t v);
/* A u128 written as a plain JSON number (may exceed 2^64). */
json_object *sl_rest_json_u128(sl_u128_t v);
/* The shortest decimal that reads back as the same f32 (serde's form). */
json_object *sl_rest_json_f32(float v);
/* A byte size as the reference's human string (http.md 1.3). */
json_object *sl_rest_json_bytes(uint64_t v);
void sl_rest_format_bytes(uint64_t v, char *buf, size_t len);

/* Serializes o into r's body as application/json with status; takes o. */
void sl_rest_response_json(sl_rest_response_t *r, uint16_t status, json_object *o);

/* --- command handlers (one table per family file) ----------------------------------- */

typedef int (*sl_rest_build_fn)(const sl_rest_request_t *req, sl_rest_call_t *call,
                                sl_rest_error_t *err);
/* 0, or -1 when the payload does not decode (answered 500). */
typedef int (*sl_rest_render_fn)(const sl_rest_request_t *req, const sl_rest_call_t *call,
                                 sl_span_t payload, sl_arena_t *arena, sl_rest_response_t *resp);

typedef struct sl_rest_handler {
    sl_rest_route_t route;
    uint8_t operation;
    uint32_t code; /* with operation 2 */
    bool json_body;
    sl_rest_build_fn build;
    sl_rest_render_fn render;
} sl_rest_handler_t;

extern const sl_rest_handler_t sl_rest_system_handlers[];
extern const size_t sl_rest_system_handlers_count;
extern const sl_rest_handler_t sl_rest_stream_handlers[];
extern const size_t sl_rest_stream_handlers_count;
extern const sl_rest_handler_t sl_rest_user_handlers[];
extern const size_t sl_rest_user_handlers_count;
extern const sl_rest_handler_t sl_rest_message_handlers[];
extern const size_t sl_rest_message_handlers_count;

/* Path parameter i as an identifier (http.md 1.1). */
bool sl_rest_path_ident(const sl_rest_request_t *req, uint32_t i, sl_ident_t *out,
                        sl_rest_error_t *err);
/* Path parameter i as a plain u32 (400 plain otherwise). */
bool sl_rest_path_u32(const sl_rest_request_t *req, uint32_t i, uint32_t *out,
                      sl_rest_error_t *err);
/* The request body as a JSON object (400 / 422 plain otherwise). */
json_object *sl_rest_body_object(const sl_rest_request_t *req, sl_rest_error_t *err);
/* A query parameter as a u32 / u64 / bool; absent leaves *out and returns
 * true with *present false. Bad values are 400 plain. */
bool sl_rest_query_u32(const sl_rest_request_t *req, const char *key, uint32_t *out, bool *present,
                       sl_rest_error_t *err);
bool sl_rest_query_u64(const sl_rest_request_t *req, const char *key, uint64_t *out, bool *present,
                       sl_rest_error_t *err);
bool sl_rest_query_bool(const sl_rest_request_t *req, const char *key, bool *out, bool *present,
                        sl_rest_error_t *err);

/* Renders shared by the families. */
int sl_rest_render_no_content(const sl_rest_request_t *req, const sl_rest_call_t *call,
                              sl_span_t payload, sl_arena_t *arena, sl_rest_response_t *resp);
int sl_rest_render_ok_empty(const sl_rest_request_t *req, const sl_rest_call_t *call,
                            sl_span_t payload, sl_arena_t *arena, sl_rest_response_t *resp);
/* 404 {"id": 404, "code": "not_found", ...} (http.md 3.3). */
void sl_rest_not_found(sl_rest_response_t *resp);
/* Option blocks rendered as {"key": {"value": text, "explicit": b}}, keys
 * sorted (http.md 1.2); either block may be empty. */
json_object *sl_rest_options_object(sl_span_t explicit_block, sl_span_t derived_block);

#endif
