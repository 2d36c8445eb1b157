/* message.h - messageSend (docs/messages.md): a voice message or a
 * broadcast to a device, as a `device` method of the schema's table
 * (schema/commands.igw) whose downlink is `media message play`. The
 * handler checks the expiry and builds the play downlink with a signed
 * URL of the caller's upload; the ledger's write (ledger.h) checks the
 * upload is the caller's and the deliveryId new for the caller, and
 * writes the message's row with the acceptance; the result (results.h)
 * carries the deliveryId and the device's outcome: played, expired or
 * failed. A device that was offline asks for its waiting messages
 * (`media message get`, edge.c). Any thread: no I/O here. */
#ifndef IGW_COMMAND_MESSAGE_H
#define IGW_COMMAND_MESSAGE_H

#include <stddef.h>

#include "command/method.h"

/* The directory below the storage root of the applications' uploads. */
#define IGW_MESSAGE_FILE_DIR "app"
/* Bytes of an upload's id (its contentRef): base64url of 16 random bytes. */
#define IGW_MESSAGE_FILE_ID_LEN 22

/* The storage path of the upload id[0..len): app/<its first two
 * characters>/<id>, NUL-terminated into out. 0, or -1 when id cannot be an
 * upload's (not IGW_MESSAGE_FILE_ID_LEN base64url characters) or cap is
 * too small. */
int igw_message_file_path(const char *id, size_t len, char *out, size_t cap);

/* The handler of messageSend (method.h's contract): 0 with call->message
 * a MessagePlay and the message's row set; -1 refused (expiresAt passed or
 * too far ahead, a contentRef that is no upload id); -2 out of memory or
 * the URL could not be signed. */
int igw_message_send(igw_command_call *call);

#endif
