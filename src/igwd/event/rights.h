/* rights.h - who may act, as SQL: the rules every statement that accepts
 * a command checks in its own transaction, written once so that the ledger
 * (command/ledger.c) and the session engine (session/commands.c, op.c) cannot
 * drift apart. Each macro is a string literal built from the SQL
 * expressions it is given (column references or parameters). Here, beside
 * the endpoints' life (endpoint.h), because both rooms that accept commands
 * stand on this one. */
#ifndef IGW_EVENT_RIGHTS_H
#define IGW_EVENT_RIGHTS_H

/* The database's now in Unix milliseconds, the unit of every expires_at_ms. */
#define IGW_SQL_NOW_MS "floor(extract(epoch FROM now()) * 1000)::bigint"

/* The fingerprint (hex) of an earlier acceptance of the key (ent, ep,
 * token) in the ledger, or NULL: a replay or a conflict. */
#define IGW_SQL_PRIOR_FP(ent, ep, token)                                                                             \
    "(SELECT encode(k.fingerprint, 'hex') FROM commands k WHERE k.enterprise_id = " ent " AND k.endpoint_id = " ep    \
    " AND k.msg_token = " token ")"

/* True when `usr` owns the device row `d` (an alias of devices). */
#define IGW_SQL_USER_OWNS(d, usr) "(" d ".owner_user_id = " usr ")"

/* True when the device row `d` is granted to `usr`. */
#define IGW_SQL_USER_GRANTED(d, usr)                                                                                 \
    "EXISTS (SELECT 1 FROM device_grants g WHERE g.product_id = " d ".product_id AND g.device_name = " d             \
    ".device_name AND g.user_id = " usr ")"

/* True when `usr` may command the device row `d`: its owner, or a user
 * granted it. The caller also matches d's enterprise. */
#define IGW_SQL_USER_MAY(d, usr) "(" IGW_SQL_USER_OWNS(d, usr) " OR " IGW_SQL_USER_GRANTED(d, usr) ")"

/* True when user `usr` is active, still of enterprise `ent`, and that
 * enterprise is active (what a login checks, session/rights.c again for
 * every live session). */
#define IGW_SQL_HOLDER_ACTIVE(ent, usr)                                                                              \
    "EXISTS (SELECT 1 FROM users u JOIN enterprises x ON x.enterprise_id = u.enterprise_id WHERE u.user_id = " usr   \
    " AND u.enterprise_id = " ent " AND u.active AND x.active)"

/* The channel every change of the above sends on at commit (the `notify
 * igw_rights` clauses of schema/tables.igw): live sessions are checked again. */
#define IGW_RIGHTS_CHANNEL "igw_rights"

/* True when `usr` of enterprise `ent` may command device (pid, dn); an
 * unknown device is false, like one without rights. */
#define IGW_SQL_DEVICE_RIGHTS(pid, dn, ent, usr)                                                                     \
    "EXISTS (SELECT 1 FROM devices d WHERE d.product_id = " pid " AND d.device_name = " dn " AND d.enterprise_id = " \
    ent " AND " IGW_SQL_USER_MAY("d", usr) ")"

/* True when endpoint `ep` is (ent, usr)'s and unexpired at `now` (ms). */
#define IGW_SQL_ENDPOINT_LIVE(ep, ent, usr, now)                                                                     \
    "EXISTS (SELECT 1 FROM endpoints p WHERE p.endpoint_id = " ep " AND p.enterprise_id = " ent                       \
    " AND p.user_id = " usr " AND p.expires_at_ms > " now ")"

#endif
