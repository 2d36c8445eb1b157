/* spec_test.c - the spec's state tables, asserted by hand against the
 * generated machines (the vectors check the tables against the generator;
 * this checks them against service-spec.md "States and transitions"). */
#include <stdio.h>
#include <string.h>

#include "../check.h"
#include "machines.h"

#define EXPECT(cond, what) check((cond), __FILE__, __LINE__, (what), NULL)

static void session(void)
{
    igw_err err = IGW_ERR_OK;
    igw_session_state s = igw_session_next(IGW_SESSION_NONE, IGW_SESSION_ON_OPEN, 0, &err);
    EXPECT(s == IGW_SESSION_INVITED, "open creates an invited session");
    EXPECT(!igw_session_can_fire(IGW_SESSION_INVITED, IGW_SESSION_ON_ESTABLISH, 0),
           "invited -> established needs real negotiation, not the application's say-so");
    s = igw_session_next(s, IGW_SESSION_ON_ESTABLISH, IGW_SESSION_IF_NEGOTIATED, &err);
    EXPECT(s == IGW_SESSION_ESTABLISHED, "negotiated session is established");
    EXPECT(!igw_session_can_fire(IGW_SESSION_ESTABLISHED, IGW_SESSION_ON_END, 0),
           "only a participant who may end the session ends it");
    s = igw_session_next(s, IGW_SESSION_ON_END, IGW_SESSION_IF_MAYEND, &err);
    EXPECT(s == IGW_SESSION_ENDED, "end moves to ended");
    for (int t = 0; t < IGW_SESSION__TRIGGERS; t++) {
        err = IGW_ERR_OK;
        igw_session_state n = igw_session_next(IGW_SESSION_ENDED, (igw_session_trigger)t, UINT32_MAX, &err);
        EXPECT(n == IGW_SESSION_ENDED && err == IGW_ERR_CONFLICT, "a terminal session is never revived");
    }
    EXPECT(igw_session_can_fire(IGW_SESSION_INVITED, IGW_SESSION_ON_FAIL, 0), "failure ends an invited session");
    EXPECT(!igw_session_can_fire(IGW_SESSION_INVITED, IGW_SESSION_ON_OPEN, 0), "open does not re-create");
}

static void track(void)
{
    igw_err err = IGW_ERR_OK;
    EXPECT(igw_track_next(IGW_TRACK_NONE, IGW_TRACK_ON_START, 0, &err) == IGW_TRACK_ACTIVE,
           "default subscription is active");
    EXPECT(igw_track_next(IGW_TRACK_NONE, IGW_TRACK_ON_STARTVISION, 0, &err) == IGW_TRACK_PAUSED,
           "vision camera track starts paused");
    EXPECT(igw_track_next(IGW_TRACK_ACTIVE, IGW_TRACK_ON_PAUSE, 0, &err) == IGW_TRACK_PAUSED, "pause");
    EXPECT(igw_track_next(IGW_TRACK_PAUSED, IGW_TRACK_ON_RESUME, 0, &err) == IGW_TRACK_ACTIVE, "resume");
    EXPECT(igw_track_next(IGW_TRACK_PAUSED, IGW_TRACK_ON_UNSUBSCRIBE, 0, &err) == IGW_TRACK_STOPPED, "unsubscribe");
    EXPECT(igw_track_next(IGW_TRACK_ACTIVE, IGW_TRACK_ON_UNSUBSCRIBE, 0, &err) == IGW_TRACK_STOPPED, "unsubscribe");
    EXPECT(!igw_track_can_fire(IGW_TRACK_STOPPED, IGW_TRACK_ON_SUBSCRIBE, 0), "subscribe needs the same track");
    EXPECT(igw_track_next(IGW_TRACK_STOPPED, IGW_TRACK_ON_SUBSCRIBE, IGW_TRACK_IF_SAMETRACK, &err) == IGW_TRACK_ACTIVE,
           "resubscribe to the same authorized track");
    err = IGW_ERR_OK;
    EXPECT(igw_track_next(IGW_TRACK_STOPPED, IGW_TRACK_ON_PAUSE, 0, &err) == IGW_TRACK_STOPPED &&
               err == IGW_ERR_CONFLICT,
           "pause on stopped is rejected: subscribe first");
    err = IGW_ERR_OK;
    EXPECT(igw_track_next(IGW_TRACK_STOPPED, IGW_TRACK_ON_RESUME, 0, &err) == IGW_TRACK_STOPPED &&
               err == IGW_ERR_CONFLICT,
           "resume on stopped is rejected: subscribe first");
    for (int s = IGW_TRACK_ACTIVE; s <= IGW_TRACK_STOPPED; s++) {
        err = IGW_ERR_OK;
        igw_track_next((igw_track_state)s, IGW_TRACK_ON_PUBLISH, UINT32_MAX, &err);
        EXPECT(err == IGW_ERR_PARAMETER, "publish is rejected on an IPC viewer's track");
        err = IGW_ERR_OK;
        igw_track_next((igw_track_state)s, IGW_TRACK_ON_STOP, UINT32_MAX, &err);
        EXPECT(err == IGW_ERR_PARAMETER, "stop is rejected on an IPC viewer's track");
    }
    /* "Mute stops a microphone track ... without hanging up the call": the
     * application's own uplink. */
    err = IGW_ERR_OK;
    EXPECT(igw_uplink_next(IGW_UPLINK_ACTIVE, IGW_UPLINK_ON_STOP, 0, &err) == IGW_UPLINK_STOPPED, "mute stops the uplink");
    EXPECT(igw_uplink_next(IGW_UPLINK_STOPPED, IGW_UPLINK_ON_PUBLISH, 0, &err) == IGW_UPLINK_ACTIVE, "unmute publishes it");
    igw_uplink_next(IGW_UPLINK_ACTIVE, IGW_UPLINK_ON_PAUSE, 0, &err);
    EXPECT(err == IGW_ERR_PARAMETER, "the uplink is not paused");
}

static void consent(void)
{
    igw_err err = IGW_ERR_OK;
    EXPECT(igw_consent_next(IGW_CONSENT_NONE, IGW_CONSENT_ON_GRANT, 0, &err) == IGW_CONSENT_GRANTED, "grant");
    EXPECT(!igw_consent_can_fire(IGW_CONSENT_GRANTED, IGW_CONSENT_ON_REVOKE, 0),
           "revoke with a stale expectedRevision is refused");
    EXPECT(igw_consent_next(IGW_CONSENT_GRANTED, IGW_CONSENT_ON_REVOKE, IGW_CONSENT_IF_REVISIONMATCHES, &err) ==
               IGW_CONSENT_REVOKED,
           "revoke with the current revision");
    EXPECT(igw_consent_next(IGW_CONSENT_REVOKED, IGW_CONSENT_ON_REVOKE, IGW_CONSENT_IF_SAMEREVOKE, &err) ==
               IGW_CONSENT_REVOKED,
           "a repeated revoke returns the first result");
    EXPECT(!igw_consent_can_fire(IGW_CONSENT_REVOKED, IGW_CONSENT_ON_REVOKE, IGW_CONSENT_IF_REVISIONMATCHES),
           "a revoked consent is not revoked again under another revision");
    EXPECT(igw_consent_next(IGW_CONSENT_GRANTED, IGW_CONSENT_ON_EXPIRE, 0, &err) == IGW_CONSENT_GRANTED,
           "expiry keeps the consent queryable");
    EXPECT(!igw_consent_can_fire(IGW_CONSENT_REVOKED, IGW_CONSENT_ON_GRANT, 0), "revoked is never granted again");
}

static void delivery(void)
{
    igw_err err = IGW_ERR_OK;
    EXPECT(igw_delivery_next(IGW_DELIVERY_PENDING, IGW_DELIVERY_ON_PULL, 0, &err) == IGW_DELIVERY_PENDING,
           "pull keeps the delivery pending");
    EXPECT(igw_delivery_next(IGW_DELIVERY_PENDING, IGW_DELIVERY_ON_ACK, 0, &err) == IGW_DELIVERY_ACKNOWLEDGED, "ack");
    EXPECT(igw_delivery_next(IGW_DELIVERY_ACKNOWLEDGED, IGW_DELIVERY_ON_ACK, 0, &err) == IGW_DELIVERY_ACKNOWLEDGED,
           "ack again is idempotent");
    EXPECT(igw_delivery_next(IGW_DELIVERY_PENDING, IGW_DELIVERY_ON_REPLAY, 0, &err) == IGW_DELIVERY_PENDING,
           "replay of an unacknowledged result reuses the delivery");
    EXPECT(igw_delivery_next(IGW_DELIVERY_ACKNOWLEDGED, IGW_DELIVERY_ON_REPLAY, 0, &err) == IGW_DELIVERY_REDELIVERED,
           "replay after ack redelivers under a new id");
    EXPECT(!igw_delivery_can_fire(IGW_DELIVERY_EXPIRED, IGW_DELIVERY_ON_REPLAY, 0), "expired is never redelivered");
    err = IGW_ERR_OK;
    igw_delivery_next(IGW_DELIVERY_EXPIRED, IGW_DELIVERY_ON_ACK, 0, &err);
    EXPECT(err == IGW_ERR_NOT_FOUND, "ack of an expired delivery is refused");
    EXPECT(!igw_delivery_can_fire(IGW_DELIVERY_ACKNOWLEDGED, IGW_DELIVERY_ON_PULL, 0),
           "an acknowledged delivery is not pulled again");
}

int main(void)
{
    session();
    track();
    consent();
    delivery();
    return check_summary("machines spec");
}
