/* topic.c - see topic.h. */
#include "topic.h"

#include <stdio.h>
#include <string.h>

#include "protocol.h" /* the schema's handles: generated, header only */

static const char *const handles[] = {IGW_PROTO_DEVICE_HANDLES};
#define NHANDLES (sizeof handles / sizeof handles[0])
#define RELAY_PREFIX "igw/"
#define PRESENCE_DEVICE "igw/presence/device/"

bool igw_topic_handle_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < NHANDLES; i++)
        if (n == strlen(handles[i]) && memcmp(s, handles[i], n) == 0)
            return true;
    return false;
}

bool igw_topic_type_ok(const char *s, size_t n)
{
    if (n < 1 || n > IGW_TOPIC_TYPE_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == '-'))
            return false;
    }
    return true;
}

static bool dir_of(const char *s, size_t n, igw_topic_dir *d)
{
    if (n == 2 && memcmp(s, "up", 2) == 0)
        *d = IGW_TOPIC_UP;
    else if (n == 4 && memcmp(s, "down", 4) == 0)
        *d = IGW_TOPIC_DOWN;
    else
        return false;
    return true;
}

int igw_topic_parse(const char *topic, unsigned flags, igw_topic *out)
{
    const char *lv[5], *start;
    size_t ln[5], k = 0, len, skip = (flags & IGW_TOPIC_RELAY) ? sizeof RELAY_PREFIX - 1 : 1;

    if (!topic || !out)
        return -1;
    len = strnlen(topic, IGW_TOPIC_MAX + 1);
    if (len > IGW_TOPIC_MAX || len < skip)
        return -1;
    if ((flags & IGW_TOPIC_RELAY) ? memcmp(topic, RELAY_PREFIX, skip) != 0 : topic[0] != '$')
        return -1;
    start = topic + skip;
    for (size_t i = skip; i <= len; i++) {
        if (i == len || topic[i] == '/') {
            if (k == 5)
                return -1;
            lv[k] = start;
            ln[k] = (size_t)(topic + i - start);
            k++;
            start = topic + i + 1;
        }
    }
    if (k != 5 || !igw_topic_handle_ok(lv[0], ln[0]) || !dir_of(lv[1], ln[1], &out->dir))
        return -1;
    if (!((flags & IGW_TOPIC_PLUS_TYPE) && ln[2] == 1 && lv[2][0] == '+') && !igw_topic_type_ok(lv[2], ln[2]))
        return -1;
    if (!igw_devauth_name_ok(lv[3], ln[3]) || !igw_devauth_name_ok(lv[4], ln[4]))
        return -1;
    /* Each length was checked against its field's size above. */
    memcpy(out->handle, lv[0], ln[0]);
    out->handle[ln[0]] = 0;
    memcpy(out->type, lv[2], ln[2]);
    out->type[ln[2]] = 0;
    memcpy(out->product_id, lv[3], ln[3]);
    out->product_id[ln[3]] = 0;
    memcpy(out->device_name, lv[4], ln[4]);
    out->device_name[ln[4]] = 0;
    return 0;
}

int igw_topic_build(char *buf, size_t cap, unsigned flags, igw_topic_dir dir, const char *handle, const char *type,
                    const char *product_id, const char *device_name)
{
    int n;
    if (!buf || cap == 0)
        return -1;
    buf[0] = 0;
    if (!handle || !type || !product_id || !device_name || (dir != IGW_TOPIC_UP && dir != IGW_TOPIC_DOWN) ||
        !igw_topic_handle_ok(handle, strnlen(handle, IGW_TOPIC_HANDLE_MAX + 1)) || !igw_topic_type_ok(type, strnlen(type, IGW_TOPIC_TYPE_MAX + 1)) ||
        !igw_devauth_name_ok(product_id, strnlen(product_id, IGW_TOPIC_NAME_MAX + 1)) ||
        !igw_devauth_name_ok(device_name, strnlen(device_name, IGW_TOPIC_NAME_MAX + 1)))
        return -1;
    n = snprintf(buf, cap, "%s%s/%s/%s/%s/%s", (flags & IGW_TOPIC_RELAY) ? RELAY_PREFIX : "$", handle,
                 dir == IGW_TOPIC_UP ? "up" : "down", type, product_id, device_name);
    if (n < 0 || (size_t)n >= cap) {
        buf[0] = 0;
        return -1;
    }
    return n;
}

int igw_topic_presence_parse(const char *topic, igw_topic_presence *out)
{
    const char *p, *slash;
    size_t len, skip = sizeof PRESENCE_DEVICE - 1, pn, dn;

    if (!topic || !out)
        return -1;
    len = strnlen(topic, IGW_TOPIC_PRESENCE_MAX + 1);
    if (len > IGW_TOPIC_PRESENCE_MAX)
        return -1;
    if (strcmp(topic, IGW_TOPIC_PRESENCE_BROKER) == 0) {
        out->broker = true;
        out->product_id[0] = out->device_name[0] = 0;
        return 0;
    }
    if (len < skip || memcmp(topic, PRESENCE_DEVICE, skip) != 0)
        return -1;
    p = topic + skip;
    slash = memchr(p, '/', len - skip);
    if (!slash)
        return -1;
    pn = (size_t)(slash - p);
    dn = len - skip - pn - 1;
    /* name_ok refuses '/', '+', '#': exactly two more levels, no wildcard. */
    if (pn > IGW_TOPIC_NAME_MAX || dn > IGW_TOPIC_NAME_MAX || !igw_devauth_name_ok(p, pn) ||
        !igw_devauth_name_ok(slash + 1, dn))
        return -1;
    out->broker = false;
    memcpy(out->product_id, p, pn);
    out->product_id[pn] = 0;
    memcpy(out->device_name, slash + 1, dn);
    out->device_name[dn] = 0;
    return 0;
}

int igw_topic_presence_build(char *buf, size_t cap, const char *product_id, const char *device_name)
{
    int n;
    if (!buf || cap == 0)
        return -1;
    buf[0] = 0;
    if (!product_id || !device_name ||
        !igw_devauth_name_ok(product_id, strnlen(product_id, IGW_TOPIC_NAME_MAX + 1)) ||
        !igw_devauth_name_ok(device_name, strnlen(device_name, IGW_TOPIC_NAME_MAX + 1)))
        return -1;
    n = snprintf(buf, cap, PRESENCE_DEVICE "%s/%s", product_id, device_name);
    if (n < 0 || (size_t)n >= cap) {
        buf[0] = 0;
        return -1;
    }
    return n;
}
