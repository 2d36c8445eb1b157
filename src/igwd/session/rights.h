/* rights.h - the rights of every live session's holder, kept true while it
 * lives (docs/sessions.md, "Rights while a session lives"). A change of
 * grants, users, enterprises or device ownership sends NOTIFY igw_rights
 * at commit (schema/tables.igw); the engine's database connection listens,
 * and one statement reads, for every live session this node owns, whether
 * its holder is still active and still owns or is granted the device. A
 * session whose purpose's access (decide.h, live_rights_hold) no longer
 * holds ends `rightsRevoked`, its media closed at once. The same check runs
 * every rights_recheck_ms as the safety net for a notification missed
 * while the connection was down, and whenever it (re)connects. The
 * periodic check also ends, `endpointExpired`, a session whose endpoint
 * expired more than endpoint_grace_ms ago: nobody moved it to a new one
 * (session/transfer.h), and its media is not kept for nobody.
 *
 * Checks never overlap: a notification during one asks for one more after
 * it, however many arrive. On the engine's loop. */
#ifndef IGW_SESSION_RIGHTS_H
#define IGW_SESSION_RIGHTS_H

#include <stdint.h>

#include "session/live.h"

/* The reason of a session ended by a lost right. */
#define LIVE_RIGHTS_REVOKED "rightsRevoked"
/* The reason of a session whose endpoint expired and was not renewed. */
#define LIVE_ENDPOINT_EXPIRED "endpointExpired"

/* Listens on the engine's database (call right after igw_db_create). 0, or -1. */
int live_rights_listen(igw_engine *e);

/* A check soon (a notification, a connection made). */
void live_rights_changed(igw_engine *e);

/* The periodic check, when due (from the engine's tick). */
void live_rights_tick(igw_engine *e, int64_t now_ms);

#endif
