/* Which command codes libsluice offers a typed call for (rendered into
 * docs/compatibility.md by tests/unit/test_command_table.c). */
#include "client/client_internal.h"
#include "wire/command.h"

const char *sl_client_support(uint32_t code)
{
    switch (code) {
    case SL_CMD_LOGIN_USER:
    case SL_CMD_LOGIN_WITH_PERSONAL_ACCESS_TOKEN:
        return "no: legacy, the server evicts it (sl_client_login instead)";
    case SL_CMD_LOGOUT_USER:
    case SL_CMD_LOGIN_REGISTER:
    case SL_CMD_LOGIN_REGISTER_WITH_PAT:
        return "yes";
    default:
        return sl_command_by_code(code) ? "yes" : "no";
    }
}
