/* Error codes shared by the server, the client library and the tools.
 *
 * The numbers are the Iggy protocol's IggyError codes, so a status or result
 * code read off the wire can be compared with these names directly.
 * Functions that can fail return 0 or the negated code: `-SL_ERR_INVALID_COMMAND`.
 */
#ifndef SLUICE_ERROR_H
#define SLUICE_ERROR_H

typedef enum sl_err {
    SL_OK = 0,
#define SL_ERROR(num, cname, pname) SL_ERR_##cname = num,
#include <sluice/error_codes.h>
#undef SL_ERROR
} sl_err_t;

/* The protocol name of a code ("InvalidCommand"), or NULL when the number is
 * not a defined code. Accepts the code or its negation. The string is static
 * (never freed, never changes); safe from any thread. */
const char *sl_err_name(int code);

/* A short English description for people ("invalid command (3)";
 * "unknown error (N)" for a number that is not a defined code, such as a
 * code a newer server sent). Accepts the code or its negation. Never NULL.
 * The text is written into a buffer private to the calling thread: it stays
 * valid until that thread calls sl_strerror again (copy it to keep it), and
 * calls from different threads do not interfere. The caller never frees it. */
const char *sl_strerror(int code);

#endif
