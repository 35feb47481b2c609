/* The commands only the HTTP door's internal connections may send
 * (docs/architecture.md, "The HTTP door"). They ride in operation-2
 * request frames with command codes far outside the protocol's (framing.md
 * 4.1 stops at 606): a public connection that sends one gets status 3
 * (InvalidCommand) like any unknown code, and the gate only looks at them on
 * a session marked internal, which only sl_loop_adopt'ed sockets of this
 * process are.
 *
 * Bodies and replies (little-endian):
 *   BIND [user_id u32][user_created_at u64] -> a login reply (Register
 *       operation, result-framed), or status 40. Binds the session as a
 *       login would: one Register commit.
 *   RESOLVE_PAT [token bytes] -> [user_id u32][user_created_at u64], or
 *       status 53 (unknown, expired) / 47 (inactive user).
 *   WHOAMI (empty) -> [user_id u32][user_created_at u64] of the bound
 *       session, or status 40.
 *   METRICS (empty) -> the Prometheus text of /metrics (metrics.h). */
#ifndef SL_SERVER_INTERNAL_H
#define SL_SERVER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#define SL_INTERNAL_CODE_BASE 0x5A1C0000u

typedef enum sl_internal_code {
    SL_INTERNAL_BIND = SL_INTERNAL_CODE_BASE + 1,
    SL_INTERNAL_RESOLVE_PAT = SL_INTERNAL_CODE_BASE + 2,
    SL_INTERNAL_WHOAMI = SL_INTERNAL_CODE_BASE + 3,
    SL_INTERNAL_METRICS = SL_INTERNAL_CODE_BASE + 4,
} sl_internal_code_t;

static inline bool sl_internal_code(uint32_t code)
{
    return code > SL_INTERNAL_CODE_BASE && code <= SL_INTERNAL_METRICS;
}

/* Size of the [user_id][user_created_at] reply. */
#define SL_INTERNAL_IDENTITY_SIZE 12u

#endif
