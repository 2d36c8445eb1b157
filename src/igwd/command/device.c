/* device.c - see device.h. */
#include "command/device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "jw.h"
#include "paths.h"

int igw_device_action(igw_command_call *call)
{
    const igw_DeviceActionParams *p = &call->command->params.device_action;
    igw_json *e = call->err;
    if (!igw_thingmodel_action(call->model, p->actionID.ptr, p->actionID.len)) {
        igw_json_fail(e, IGW_JERR_UNKNOWN, "unknown action");
        snprintf(e->path, sizeof e->path, "%s", IGW_PATH_command_params_actionID);
        return -1;
    }
    igw_str input = p->has & IGW_DeviceActionParams_input ? p->input : (igw_str){"{}", 2};
    if (igw_thingmodel_check_action_input(call->model, p->actionID.ptr, p->actionID.len, input.ptr, input.len,
                                          IGW_PATH_command_params_input, call->arena, e))
        return e->err == IGW_JERR_NOMEM ? -2 : -1;
    igw_ActionDownlink *d = igw_arena_alloc(call->arena, sizeof *d);
    if (!d)
        return -2;
    *d = (igw_ActionDownlink){.has = IGW_ActionDownlink__REQUIRED,
                              .method = {call->down->method, strlen(call->down->method)},
                              .msgToken = call->device_token,
                              .actionID = p->actionID,
                              .params = input};
    call->message = d;
    return 0;
}

int igw_device_property_control(igw_command_call *call)
{
    igw_json *e = call->err;
    igw_str props = call->command->params.device_propertyControl.properties;
    if (igw_thingmodel_check_properties(call->model, props.ptr, props.len, IGW_TM_WRITABLE_ONLY,
                                        IGW_PATH_command_params_properties, call->arena, e))
        return e->err == IGW_JERR_NOMEM ? -2 : -1;
    igw_ControlDownlink *d = igw_arena_alloc(call->arena, sizeof *d);
    if (!d)
        return -2;
    *d = (igw_ControlDownlink){.has = IGW_ControlDownlink__REQUIRED,
                               .method = {call->down->method, strlen(call->down->method)},
                               .msgToken = call->device_token,
                               .params = props};
    call->message = d;
    return 0;
}

int igw_device_downlink(const igw_command_call *call, char **out, size_t *len)
{
    igw_jw jw;
    igw_jw_init(&jw);
    call->down->encode(&jw, call->message);
    *out = NULL;
    if (igw_jw_status(&jw) || !(*out = malloc(jw.len + 1))) {
        igw_jw_free(&jw);
        return -1;
    }
    memcpy(*out, jw.buf, jw.len);
    (*out)[jw.len] = '\0'; /* a message's is also a statement's parameter */
    *len = jw.len;
    igw_jw_free(&jw);
    return 0;
}

const igw_thingmodel *igw_device_model(igw_modelcache *mc, const char *product_id, const char *version,
                                       const char *text, size_t len, igw_arena *arena, bool *reread)
{
    const igw_thingmodel *model = NULL;
    const char *cv = NULL;
    igw_json e;
    *reread = false;
    if (!text) { /* version is the one the worker had when the read was sent */
        model = igw_modelcache_get(mc, product_id, &cv);
        if (!model || strcmp(cv, version) != 0) {
            *reread = true; /* replaced or evicted since: ask for the text */
            return NULL;
        }
        return model;
    }
    if (igw_modelcache_put(mc, product_id, version, text, len, &model, &e) == 0)
        return model;
    /* Not cacheable (too long a key or version, out of memory): as before the cache. */
    igw_thingmodel *m = NULL;
    if (igw_thingmodel_load(text, len, arena, &m, &e) == 0)
        return m;
    return NULL;
}

int igw_device_publish(igw_pending *pending, igw_mqtt *m, const igw_device_accepted *a)
{
    /* Before the publish: the reply may come at once. */
    if (pending) {
        igw_pending_cmd pc = {.product_id = a->product_id, .device_name = a->device_name,
                              .device_token = a->device_token, .endpoint_id = a->endpoint_id,
                              .msg_token = a->msg_token, .method = a->method, .enterprise_id = a->enterprise_id,
                              .deadline_ms = a->deadline_ms};
        (void)igw_pending_put(pending, &pc, igw_wall_ms());
    }
    return igw_mqtt_publish_down(m, a->down, a->product_id, a->device_name, a->payload, a->len) != 0 ? -1 : 0;
}
