/* method.h - what a handler of /commands' methods gets: the call the walk
 * (command.c) makes and the device methods' handlers (device.c) take (a
 * session method's handler is the engine's: session/op.h).
 * Apart from command.h so that the handlers need not include the walk's
 * header, which includes theirs (tests/layers.sh: no circle between files). */
#ifndef IGW_COMMAND_METHOD_H
#define IGW_COMMAND_METHOD_H

#include "api.h"
#include "arena.h"
#include "igwd/methods.h"
#include "json.h"
#include "thingmodel.h"

/* What the node lends handlers (the walk's env): not owned. */
typedef struct igw_command_site {
    const unsigned char *url_key; /* signs download URLs (signedurl.h) */
    size_t url_keylen;
    const char *public_url;       /* the base those URLs start with */
    uint64_t message_ttl_max_ms;  /* messageSend: expiresAt at most this far ahead */
} igw_command_site;

/* What a method's handler gets (generated/igwd/methods.h: one function per
 * method, named in schema/commands.igw). A `device` method's handler checks
 * `command` against `model` and says the downlink: 0; -1, refused (err's
 * reason and path say why, reasons allocated in arena); -2, out of memory. */
struct igw_CommandMethod_call {
    const igw_Command *command;
    const igw_thingmodel *model; /* device: the product's thing model */
    igw_arena *arena;
    igw_json *err;               /* initialized; set on -1 */
    /* device: the method's downlink (schema: `downlink MESSAGE`, a `down`
     * row of the device protocol) and the msgToken the platform gave it;
     * the handler sets `message` to a struct of the downlink's message type
     * (in arena), its `method` the row's and its `msgToken` device_token. */
    const igw_proto_down *down;
    igw_str device_token;
    const void *message;
    int64_t now_ms;               /* the walk's clock (Unix ms) */
    const igw_command_site *site;
    /* device, optional: when the command gives up on its device (Unix ms;
     * 0: the node's command timeout from now). */
    int64_t deadline_ms;
    /* A message (messageSend: delivery_id.len > 0): its row (table
     * messages), written with the acceptance, which it refuses when
     * file_id is no upload of the caller or delivery_id is the caller's
     * already. Strings point into command. */
    igw_str delivery_id, file_id;
    int64_t expires_at_ms;
};
typedef struct igw_CommandMethod_call igw_command_call;

#endif
