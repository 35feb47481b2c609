/* Raw protocol sessions for integration tests: frames built with the wire
 * codecs and sent over a plain socket to the real sluiced, so tests can say
 * exactly which bytes go out (bad headers, replays, fenced sessions). */
#ifndef SL_TEST_RAW_H
#define SL_TEST_RAW_H

#include <stdbool.h>
#include <stdint.h>

#include "base/bytes.h"
#include "wire/header.h"

typedef struct raw_session {
    int fd;
    sl_u128_t client;
    uint64_t session;
    uint64_t request; /* last number used */
    uint32_t user_id;
    uint8_t frame[1 << 20];
    int frame_len;
} raw_session_t;

/* What came back for one request. */
typedef struct raw_reply {
    bool evicted;
    uint8_t reason;     /* eviction reason */
    bool closed;        /* the connection closed (or nothing came back) */
    sl_reply_header_t header;
    uint32_t status;    /* header status */
    uint32_t result;    /* result-section code when the reply operation is framed */
    sl_span_t body;     /* whole body (borrowed from the session's frame) */
    sl_span_t payload;  /* body after the result section */
} raw_reply_t;

void raw_open(raw_session_t *r, uint16_t port);
void raw_close(raw_session_t *r);
/* A fresh random client id. */
sl_u128_t raw_client_id(void);

/* Sends one request without waiting for its answer; false when the socket refused it. */
bool raw_send(raw_session_t *r, uint8_t operation, uint32_t code, uint64_t request,
              uint64_t session, sl_span_t body, bool stamp);
/* Reads the next frame (an answer or an eviction); closed when none came in timeout_ms. */
raw_reply_t raw_receive(raw_session_t *r, int timeout_ms);
/* Sends one request and reads its answer. code is used for operation 2. */
raw_reply_t raw_call(raw_session_t *r, uint8_t operation, uint32_t code, uint64_t request,
                     uint64_t session, sl_span_t body, bool stamp);
/* LoginRegister with username/password; on success fills session/user. */
raw_reply_t raw_login(raw_session_t *r, const char *user, const char *password);
/* LoginRegisterWithPat with a personal access token; like raw_login. */
raw_reply_t raw_login_token(raw_session_t *r, const char *token);
/* A metadata operation with the next request number and a stamp. */
raw_reply_t raw_meta(raw_session_t *r, uint8_t operation, sl_span_t body);
/* An operation-2 read with the current request number. */
raw_reply_t raw_read(raw_session_t *r, uint32_t code, sl_span_t body);

#endif
