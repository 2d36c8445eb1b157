/* live.c - ipcLiveView: the camera's picture on its shared leg, its
 * microphone when the open asks (listenAudio). Everything else is the
 * engine's and the row's (schema/commands.igw `purposes`). */
#include "session/purpose.h"

static bool live_check(igw_engine *e, const igw_OpenParams *p, uint32_t *guards, live_refusal *r)
{
    (void)e;
    (void)r;
    if ((p->has & IGW_OpenParams_listenAudio) && p->listenAudio)
        *guards |= IGW_PURPOSE_IF_LISTENAUDIO;
    return false;
}

const struct igw_purpose_hooks igw_purpose_live = {
    .check = live_check,
    .establish_on_flow = true, /* a live camera sends at once */
};
