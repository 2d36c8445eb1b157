/* handlers.c - see handlers.h. */
#include "handlers.h"

#include "http.h"

/* The placeholder of every route until its issue lands. */
static int handle_not_implemented(void *ctx, const igw_request *req)
{
    (void)req;
    igw_http_reply_error(ctx, IGW_ERR_NOT_IMPLEMENTED, "handler not implemented yet", "");
    return 0;
}

const igw_handler_fn igw_handlers[IGW_ROUTE__COUNT] = {
    [IGW_ROUTE_CONSENT_CREATE] = handle_not_implemented,
    [IGW_ROUTE_CONSENT_GET_ONE] = handle_not_implemented,
    [IGW_ROUTE_CONSENT_REVOKE] = handle_not_implemented,
    [IGW_ROUTE_DEVICE_SEND] = igw_handle_device_send,
    [IGW_ROUTE_DEVICE_UPLOAD] = igw_handle_device_upload,
    [IGW_ROUTE_ENDPOINTS_REGISTER] = handle_not_implemented,
    [IGW_ROUTE_EVENTS_PULL] = handle_not_implemented,
    [IGW_ROUTE_EVENTS_ACK] = handle_not_implemented,
    [IGW_ROUTE_COMMANDS] = handle_not_implemented,
    [IGW_ROUTE_RECORDINGS_QUERY] = handle_not_implemented,
    [IGW_ROUTE_TALK_AUDIO_ACCESS] = handle_not_implemented,
};
