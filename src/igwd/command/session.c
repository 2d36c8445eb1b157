/* session.c - see session.h. */
#include "command/session.h"

int igw_session_command(igw_command_call *call)
{
    if (!call->engine || !call->session || !call->back)
        return -1;
    return igw_engine_command_submit(call->engine, call->session, call->back, call->session_done,
                                     call->session_arg);
}
