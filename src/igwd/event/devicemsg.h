/* devicemsg.h - a device's stored messages (the edge's device_messages),
 * as SQL for the rooms that read them back: the session engine's open (the
 * camera's latest capability report) and presence (a camera without one is
 * asked for it). Written once so that the two cannot look in different
 * places. String literals built from the expressions given. */
#ifndef IGW_EVENT_DEVICEMSG_H
#define IGW_EVENT_DEVICEMSG_H

/* FROM-clause rows of the capability reports (schema/device.igw: media
 * capability report) of device (pid, dn), the table aliased `m`. */
#define IGW_SQL_CAPABILITY_REPORTS(m, pid, dn)                                                                       \
    "device_messages " m " WHERE " m ".product_id = " pid " AND " m ".device_name = " dn " AND " m                    \
    ".handle = 'media' AND " m ".msg_type = 'capability' AND " m ".method = 'report'"

#endif
