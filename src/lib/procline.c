/* procline.c - see procline.h. */
#include "procline.h"

#include <string.h>

#include "arena.h"
#include "json.h"

igw_procfield *igw_procline_field(igw_procfield *fields, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(fields[i].name, name) == 0)
            return &fields[i];
    return NULL;
}

static igw_procfield *by_key(igw_procfield *fields, size_t n, igw_str key)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(fields[i].name) == key.len && memcmp(fields[i].name, key.ptr, key.len) == 0)
            return &fields[i];
    return NULL;
}

int igw_procline_read(const char *line, size_t len, igw_procfield *fields, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        fields[i].present = false;
        fields[i].num = 0;
        fields[i].flag = false;
        if (fields[i].str && fields[i].cap)
            fields[i].str[0] = '\0';
    }
    if (len > IGW_PROCLINE_MAX)
        return -1;
    igw_arena a;
    igw_arena_init(&a, 2 * IGW_PROCLINE_MAX);
    igw_json j;
    igw_json_init(&j, line, len, &a, 1);
    int rc = -1;
    igw_str key;
    if (igw_json_object_begin(&j) != 0)
        goto out;
    for (;;) {
        int more = igw_json_object_next(&j, &key);
        if (more < 0)
            goto out;
        if (more == 0)
            break;
        igw_procfield *f = by_key(fields, n, key);
        if (f && f->present) /* twice: which one counts is nobody's guess */
            goto out;
        if (!f) { /* unknown: skipped */
            igw_str raw;
            if (igw_json_value(&j, IGW_JSON_STRICT, 0, IGW_PROCLINE_MAX, &raw) != 0)
                goto out;
            continue;
        }
        if (f->kind == IGW_PROCLINE_STR) {
            igw_str s;
            if (igw_json_string(&j, &s) != 0 || !f->str || s.len >= f->cap)
                goto out;
            memcpy(f->str, s.ptr, s.len);
            f->str[s.len] = '\0';
        } else if (f->kind == IGW_PROCLINE_INT) {
            if (igw_json_int(&j, &f->num, -INT64_C(9007199254740991), INT64_C(9007199254740991)) != 0)
                goto out;
        } else if (igw_json_bool(&j, &f->flag) != 0) {
            goto out;
        }
        f->present = true;
    }
    rc = igw_json_finish(&j) == 0 ? 0 : -1;
out:
    igw_arena_free(&a);
    return rc;
}
