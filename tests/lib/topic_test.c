/* topic_test.c - unit tests of the device topic grammar (topic.c). */
#include <stdio.h>
#include <string.h>

#include "topic.h"

#include "../check.h"

static bool parses(const char *topic, unsigned flags, igw_topic_dir dir, const char *h, const char *t, const char *p,
                   const char *d)
{
    igw_topic x;
    memset(&x, 0x5a, sizeof x);
    if (igw_topic_parse(topic, flags, &x) != 0) {
        printf("  %s: refused\n", topic);
        return false;
    }
    if (x.dir != dir || strcmp(x.handle, h) || strcmp(x.type, t) || strcmp(x.product_id, p) ||
        strcmp(x.device_name, d)) {
        printf("  %s: %d %s %s %s %s\n", topic, (int)x.dir, x.handle, x.type, x.product_id, x.device_name);
        return false;
    }
    return true;
}

static bool refused(const char *topic, unsigned flags)
{
    igw_topic x;
    if (igw_topic_parse(topic, flags, &x) == 0) {
        printf("  %s: accepted\n", topic);
        return false;
    }
    return true;
}

static void test_parse(void)
{
    char longtype[IGW_TOPIC_TYPE_MAX + 2], longname[IGW_TOPIC_NAME_MAX + 2], t[512];
    static const char *const hs[] = {"thing", "ota", "config", "log", "gateway", "media", "ext"};

    CHECK(parses("$thing/up/property/p1/d1", 0, IGW_TOPIC_UP, "thing", "property", "p1", "d1"));
    CHECK(parses("$ext/down/custom_1-x/p1/d-1", 0, IGW_TOPIC_DOWN, "ext", "custom_1-x", "p1", "d-1"));
    for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++) {
        snprintf(t, sizeof t, "$%s/up/x/p/d", hs[i]);
        CHECK(parses(t, 0, IGW_TOPIC_UP, hs[i], "x", "p", "d"), "%s", hs[i]);
        snprintf(t, sizeof t, "igw/%s/down/x/p/d", hs[i]);
        CHECK(parses(t, IGW_TOPIC_RELAY, IGW_TOPIC_DOWN, hs[i], "x", "p", "d"), "%s", hs[i]);
    }
    /* The relay form only with its flag, and the '$' form only without. */
    CHECK(refused("igw/thing/up/property/p/d", 0));
    CHECK(refused("$thing/up/property/p/d", IGW_TOPIC_RELAY));
    CHECK(refused("igw$thing/up/property/p/d", IGW_TOPIC_RELAY));
    CHECK(refused("thing/up/property/p/d", 0));
    CHECK(refused("$$thing/up/property/p/d", 0));
    /* "+" as the type: only with IGW_TOPIC_PLUS_TYPE, and only alone. */
    CHECK(parses("$thing/down/+/p/d", IGW_TOPIC_PLUS_TYPE, IGW_TOPIC_DOWN, "thing", "+", "p", "d"));
    CHECK(refused("$thing/down/+/p/d", 0));
    CHECK(refused("$thing/down/a+/p/d", IGW_TOPIC_PLUS_TYPE));
    CHECK(refused("$thing/down/#/p/d", IGW_TOPIC_PLUS_TYPE));
    CHECK(refused("$thing/down/property/+/d", IGW_TOPIC_PLUS_TYPE));
    CHECK(refused("$thing/down/property/p/#", IGW_TOPIC_PLUS_TYPE));
    /* Levels, handles, directions. */
    CHECK(refused("$thing/up/property/p", 0));
    CHECK(refused("$thing/up/property/p/d/extra", 0));
    CHECK(refused("$thing/up/property/p/", 0));
    CHECK(refused("$thing/up//p/d", 0));
    CHECK(refused("$thing/up", 0));
    CHECK(refused("$", 0));
    CHECK(refused("", 0));
    CHECK(refused("igw/", IGW_TOPIC_RELAY));
    CHECK(refused(NULL, 0));
    CHECK(refused("$nothing/up/property/p/d", 0));
    CHECK(refused("$Thing/up/property/p/d", 0));
    CHECK(refused("$thing/UP/property/p/d", 0));
    CHECK(refused("$thing/sideways/property/p/d", 0));
    CHECK(refused("$share/igw/thing/up/p/d", 0));
    /* Bounds: a type of 64 bytes passes, 65 not; names likewise. */
    memset(longtype, 'a', sizeof longtype - 1);
    longtype[sizeof longtype - 1] = 0;
    snprintf(t, sizeof t, "$thing/up/%s/p/d", longtype);
    CHECK(refused(t, 0));
    longtype[IGW_TOPIC_TYPE_MAX] = 0;
    snprintf(t, sizeof t, "$thing/up/%s/p/d", longtype);
    CHECK(parses(t, 0, IGW_TOPIC_UP, "thing", longtype, "p", "d"));
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    snprintf(t, sizeof t, "$thing/up/x/%s/d", longname);
    CHECK(refused(t, 0));
    longname[IGW_TOPIC_NAME_MAX] = 0;
    snprintf(t, sizeof t, "igw/gateway/down/%s/%s/%s", longtype, longname, longname);
    CHECK(strlen(t) <= IGW_TOPIC_MAX, "the longest topic fits IGW_TOPIC_MAX: %zu", strlen(t));
    CHECK(parses(t, IGW_TOPIC_RELAY, IGW_TOPIC_DOWN, "gateway", longtype, longname, longname));
    CHECK(refused("$thing/up/x/p&q/d", 0), "a name with '&' (devauth's rule)");
    CHECK(refused("$thing/up/x/p/d e", 0));
    CHECK(refused("$thing/up/x y/p/d", 0));
}

static void test_build(void)
{
    char b[IGW_TOPIC_MAX + 1], small[8];
    igw_topic x;
    int n = igw_topic_build(b, sizeof b, 0, IGW_TOPIC_DOWN, "thing", "action", "p1", "d1");
    CHECK(n == (int)strlen("$thing/down/action/p1/d1") && strcmp(b, "$thing/down/action/p1/d1") == 0, "%d %s", n, b);
    n = igw_topic_build(b, sizeof b, IGW_TOPIC_RELAY, IGW_TOPIC_UP, "log", "status", "p1", "d1");
    CHECK(n > 0 && strcmp(b, "igw/log/up/status/p1/d1") == 0, "%s", b);
    CHECK(igw_topic_parse(b, IGW_TOPIC_RELAY, &x) == 0 && x.dir == IGW_TOPIC_UP && strcmp(x.type, "status") == 0,
          "a built topic parses back");
    /* Nothing outside the grammar can be built: no wildcard, no extra level. */
    CHECK(igw_topic_build(b, sizeof b, 0, IGW_TOPIC_DOWN, "thing", "+", "p", "d") == -1 && b[0] == 0);
    CHECK(igw_topic_build(b, sizeof b, 0, IGW_TOPIC_DOWN, "thing", "a", "+", "d") == -1);
    CHECK(igw_topic_build(b, sizeof b, 0, IGW_TOPIC_DOWN, "thing", "a", "p", "d/e") == -1);
    CHECK(igw_topic_build(b, sizeof b, 0, IGW_TOPIC_DOWN, "thing", "a", "p", "#") == -1);
    CHECK(igw_topic_build(b, sizeof b, 0, IGW_TOPIC_DOWN, "$thing", "a", "p", "d") == -1);
    CHECK(igw_topic_build(b, sizeof b, 0, IGW_TOPIC_DOWN, "nothing", "a", "p", "d") == -1);
    CHECK(igw_topic_build(b, sizeof b, 0, IGW_TOPIC_DOWN, "thing", "", "p", "d") == -1);
    CHECK(igw_topic_build(b, sizeof b, 0, IGW_TOPIC_DOWN, NULL, "a", "p", "d") == -1);
    CHECK(igw_topic_build(b, sizeof b, 0, (igw_topic_dir)7, "thing", "a", "p", "d") == -1);
    /* Too small a buffer: refused, and left empty. */
    CHECK(igw_topic_build(small, sizeof small, 0, IGW_TOPIC_DOWN, "thing", "a", "p", "d") == -1 && small[0] == 0);
    CHECK(igw_topic_build(small, 0, 0, IGW_TOPIC_DOWN, "thing", "a", "p", "d") == -1);
    CHECK(strcmp(IGW_TOPIC_RELAY_SUB, "$share/igw/igw/+/up/#") == 0);
}

static bool presence_is(const char *topic, bool broker, const char *p, const char *d)
{
    igw_topic_presence x;
    memset(&x, 0x5a, sizeof x);
    if (igw_topic_presence_parse(topic, &x) != 0) {
        printf("  %s: refused\n", topic);
        return false;
    }
    if (x.broker != broker || strcmp(x.product_id, p) || strcmp(x.device_name, d)) {
        printf("  %s: %d %s %s\n", topic, (int)x.broker, x.product_id, x.device_name);
        return false;
    }
    return true;
}

static bool presence_refused(const char *topic)
{
    igw_topic_presence x;
    if (igw_topic_presence_parse(topic, &x) == 0) {
        printf("  %s: accepted\n", topic);
        return false;
    }
    return true;
}

static void test_presence(void)
{
    char b[IGW_TOPIC_PRESENCE_MAX + 1], small[23], longname[IGW_TOPIC_NAME_MAX + 2], t[512];
    igw_topic x;
    int n;

    CHECK(presence_is("igw/presence/device/p1/d-1", false, "p1", "d-1"));
    CHECK(presence_is("igw/presence/broker", true, "", ""));
    /* A product named "up" is still a presence topic, never a relayed uplink. */
    CHECK(presence_is("igw/presence/device/up/d", false, "up", "d"));
    CHECK(igw_topic_parse("igw/presence/device/up/d", IGW_TOPIC_RELAY, &x) != 0);
    CHECK(presence_refused("igw/presence/device/p"));
    CHECK(presence_refused("igw/presence/device/p/"));
    CHECK(presence_refused("igw/presence/device//d"));
    CHECK(presence_refused("igw/presence/device/p/d/e"));
    CHECK(presence_refused("igw/presence/device/+/d"));
    CHECK(presence_refused("igw/presence/device/p/#"));
    CHECK(presence_refused("igw/presence/device/p&q/d"));
    CHECK(presence_refused("igw/presence/p/d"));
    CHECK(presence_refused("igw/presence/broker/x"));
    CHECK(presence_refused("igw/presence/brokers"));
    CHECK(presence_refused("igw/presence"));
    CHECK(presence_refused(IGW_TOPIC_PRESENCE_SYNC));
    CHECK(presence_refused("$presence/device/p/d"));
    CHECK(presence_refused("igw/thing/up/property/p/d"));
    CHECK(presence_refused(""));
    CHECK(presence_refused(NULL));
    /* "presence" is no handle: a device cannot publish $presence/up/... */
    CHECK(igw_topic_parse("$presence/up/state/p/d", 0, &x) != 0);
    CHECK(!igw_topic_handle_ok("presence", 8));
    /* Bounds: 64-byte names pass, 65 not. */
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    snprintf(t, sizeof t, "igw/presence/device/%s/d", longname);
    CHECK(presence_refused(t));
    longname[IGW_TOPIC_NAME_MAX] = 0;
    snprintf(t, sizeof t, "igw/presence/device/%s/%s", longname, longname);
    CHECK(strlen(t) == IGW_TOPIC_PRESENCE_MAX, "the longest presence topic is IGW_TOPIC_PRESENCE_MAX: %zu", strlen(t));
    CHECK(presence_is(t, false, longname, longname));
    n = igw_topic_presence_build(b, sizeof b, longname, longname);
    CHECK(n == (int)IGW_TOPIC_PRESENCE_MAX && strcmp(b, t) == 0, "%d", n);
    /* Build: parses back; nothing outside the grammar. */
    n = igw_topic_presence_build(b, sizeof b, "p1", "d1");
    CHECK(n > 0 && strcmp(b, "igw/presence/device/p1/d1") == 0, "%s", b);
    CHECK(presence_is(b, false, "p1", "d1"));
    CHECK(igw_topic_presence_build(b, sizeof b, "+", "d") == -1 && b[0] == 0);
    CHECK(igw_topic_presence_build(b, sizeof b, "p", "d/e") == -1);
    CHECK(igw_topic_presence_build(b, sizeof b, "p", "") == -1);
    CHECK(igw_topic_presence_build(b, sizeof b, NULL, "d") == -1);
    CHECK(igw_topic_presence_build(small, sizeof small, "p", "d") == -1 && small[0] == 0);
    CHECK(strcmp(IGW_TOPIC_PRESENCE_SUB, "$share/igw/igw/presence/#") == 0);
}

int main(void)
{
    test_parse();
    test_build();
    test_presence();
    return check_summary("topic_test");
}
