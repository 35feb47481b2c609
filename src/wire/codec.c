/* The result section of framed replies (wire/codec.h). */
#include "wire/codec.h"

int sl_result_split(sl_span_t body, uint32_t *result, sl_span_t *payload)
{
    sl_reader_t r = sl_reader(body);
    uint32_t count;
    *result = 0;
    *payload = sl_span(NULL, 0);
    if (!sl_read_u32(&r, &count))
        return -SL_ERR_INVALID_COMMAND;
    if (count == 0) {
        *payload = sl_read_rest(&r);
        return 0;
    }
    /* count entries of 8 bytes must be present; the first one decides. */
    if ((uint64_t)count * 8 > sl_reader_left(&r))
        return -SL_ERR_INVALID_COMMAND;
    uint32_t index, code;
    sl_read_u32(&r, &index);
    sl_read_u32(&r, &code);
    if (code == 0)
        return -SL_ERR_INVALID_COMMAND;
    *result = code;
    return 0;
}
