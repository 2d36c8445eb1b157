/* webrtcbin.c - see webrtcbin.h. */
/* webrtcbin's library is "unstable API" in 1.22; we accept that knowingly. */
#define GST_USE_UNSTABLE_API 1

#include "webrtcbin.h"

#include <gst/webrtc/webrtc.h>
#include <nice/agent.h>
#include <stdio.h>

int igw_webrtcbin_check_elements(const char *prog, const char *const need[][2], size_t n)
{
    int missing = 0;
    for (size_t i = 0; i < n; i++) {
        GstElementFactory *f = gst_element_factory_find(need[i][0]);
        if (!f) {
            fprintf(stderr, "%s: error: GStreamer element %s is missing (Debian package %s)\n", prog, need[i][0],
                    need[i][1]);
            missing++;
        } else {
            gst_object_unref(f);
        }
    }
    return missing ? -1 : 0;
}

int igw_webrtcbin_restrict_ice(GstElement *webrtc, const char *address, char *err, size_t errlen)
{
    GstWebRTCICE *ice = NULL;
    NiceAgent *agent = NULL;
    NiceAddress addr;
    int rc = -1;

    g_object_get(webrtc, "ice-agent", &ice, NULL);
    if (!ice || !g_object_class_find_property(G_OBJECT_GET_CLASS(ice), "agent")) {
        snprintf(err, errlen, "webrtcbin's ICE agent is not libnice's: cannot restrict it to %s", address);
        goto out;
    }
    g_object_get(ice, "agent", &agent, NULL);
    if (!agent || !NICE_IS_AGENT(agent)) {
        snprintf(err, errlen, "no NiceAgent behind webrtcbin");
        goto out;
    }
    nice_address_init(&addr);
    if (!nice_address_set_from_string(&addr, address)) {
        snprintf(err, errlen, "--address %s is not an IP address", address);
        goto out;
    }
    if (!nice_agent_add_local_address(agent, &addr)) {
        snprintf(err, errlen, "libnice refused local address %s", address);
        goto out;
    }
    /* No UPnP: with it libnice holds gathering open for its upnp-timeout
     * (200 ms) waiting for a gateway that a host on a LAN or loopback never
     * has, and a camera's offer (sent once gathered) waits with it. */
    g_object_set(agent, "upnp", FALSE, NULL);
    /* UDP only: a WebRTC media server offers no ICE-TCP worth pairing with. */
    if (g_object_class_find_property(G_OBJECT_GET_CLASS(ice), "ice-tcp"))
        g_object_set(ice, "ice-tcp", FALSE, NULL);
    rc = 0;
out:
    if (agent)
        g_object_unref(agent);
    if (ice)
        gst_object_unref(ice);
    return rc;
}
