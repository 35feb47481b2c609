/* Names of the protocol error codes (include/sluice/error_codes.h). */
#include <sluice/error.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int code;
    const char *name;
} error_name_t;

static const error_name_t error_names[] = {
    {0, "Ok"},
#define SL_ERROR(num, cname, pname) {num, pname},
#include <sluice/error_codes.h>
#undef SL_ERROR
};

#define ERROR_NAME_COUNT (sizeof(error_names) / sizeof(error_names[0]))

/* |code| without overflow: -INT_MIN does not fit an int. */
static long long magnitude(int code)
{
    return code < 0 ? -(long long)code : code;
}

const char *sl_err_name(int code)
{
    long long want = magnitude(code);
    /* The table is sorted by number; a binary search keeps lookups cheap. */
    size_t lo = 0, hi = ERROR_NAME_COUNT;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (error_names[mid].code == want)
            return error_names[mid].name;
        if (error_names[mid].code < want)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const char *sl_strerror(int code)
{
    static _Thread_local char text[96];
    long long number = magnitude(code);
    const char *name = sl_err_name(code);
    if (!name) {
        snprintf(text, sizeof(text), "unknown error (%lld)", number);
        return text;
    }
    /* "InvalidCommand" -> "invalid command (3)" */
    size_t o = 0;
    for (size_t i = 0; name[i] && o + 2 < sizeof(text) - 16; i++) {
        unsigned char c = (unsigned char)name[i];
        if (isupper(c) && i > 0)
            text[o++] = ' ';
        text[o++] = (char)tolower(c);
    }
    snprintf(text + o, sizeof(text) - o, " (%lld)", number);
    return text;
}
