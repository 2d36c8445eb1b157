/* device.c - igw-benchdevice: a real MQTT device for the benchmarks that
 * answers every downlink at once (controlReply to a property control,
 * actionReply to an action, code 200), light enough not to be what is
 * measured.
 *
 *   igw-benchdevice -p PORT -t PRODUCT_ID -n DEVICE_NAME -u USERNAME -P PASSWORD
 *
 * Connects to 127.0.0.1:PORT as "PRODUCT_ID&DEVICE_NAME" (the device
 * credentials of the device protocol), subscribes to its two downlink
 * topics, prints "ready" once the broker granted both, and runs until
 * stdin closes. Exit status 0, 2 on bad arguments, 1 when the broker
 * refuses or drops it. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mosquitto.h>

static char up_property[300], up_action[300];
static int granted, failed;

static void on_connect(struct mosquitto *m, void *arg, int rc)
{
    (void)arg;
    if (rc != 0) {
        fprintf(stderr, "igw-benchdevice: broker refused the connection: %s\n", mosquitto_connack_string(rc));
        failed = 1;
        return;
    }
    const char *pid = up_property + strlen("$thing/up/property/"); /* "PID/DN" */
    char down[2][340];
    snprintf(down[0], sizeof down[0], "$thing/down/property/%s", pid);
    snprintf(down[1], sizeof down[1], "$thing/down/action/%s", pid);
    for (int i = 0; i < 2; i++)
        if (mosquitto_subscribe(m, NULL, down[i], 1) != MOSQ_ERR_SUCCESS)
            failed = 1;
}

static void on_subscribe(struct mosquitto *m, void *arg, int mid, int n, const int *qos)
{
    (void)m, (void)arg, (void)mid;
    if (n != 1 || qos[0] > 2) {
        fprintf(stderr, "igw-benchdevice: subscription refused\n");
        failed = 1;
    } else if (++granted == 2) {
        printf("ready\n");
        fflush(stdout);
    }
}

/* The value of "msgToken" in a downlink: server-made, no escapes. */
static int token(const char *p, size_t n, char *out, size_t cap)
{
    const char *key = "\"msgToken\":\"";
    const char *k = memmem(p, n, key, strlen(key));
    if (!k)
        return -1;
    const char *v = k + strlen(key), *end = memchr(v, '"', n - (size_t)(v - p));
    if (!end || (size_t)(end - v) >= cap || memchr(v, '\\', (size_t)(end - v)))
        return -1;
    memcpy(out, v, (size_t)(end - v));
    out[end - v] = '\0';
    return 0;
}

static void on_message(struct mosquitto *m, void *arg, const struct mosquitto_message *msg)
{
    (void)arg;
    char tok[200], reply[400];
    if (!msg->payload || token(msg->payload, (size_t)msg->payloadlen, tok, sizeof tok) != 0)
        return;
    bool action = strstr(msg->topic, "/action/") != NULL;
    int n = action ? snprintf(reply, sizeof reply,
                              "{\"method\":\"actionReply\",\"msgToken\":\"%s\",\"code\":200,\"response\":{}}", tok)
                   : snprintf(reply, sizeof reply, "{\"method\":\"controlReply\",\"msgToken\":\"%s\",\"code\":200}", tok);
    if (n > 0 && (size_t)n < sizeof reply &&
        mosquitto_publish(m, NULL, action ? up_action : up_property, n, reply, 1, false) != MOSQ_ERR_SUCCESS)
        failed = 1;
}

int main(int argc, char **argv)
{
    const char *pid = NULL, *dn = NULL, *user = NULL, *pass = NULL;
    int port = 0, o;
    while ((o = getopt(argc, argv, "p:t:n:u:P:")) != -1) {
        switch (o) {
        case 'p': port = atoi(optarg); break;
        case 't': pid = optarg; break;
        case 'n': dn = optarg; break;
        case 'u': user = optarg; break;
        case 'P': pass = optarg; break;
        default: return 2;
        }
    }
    if (!pid || !dn || !user || !pass || port <= 0 || port > 65535 || strlen(pid) > 64 || strlen(dn) > 64) {
        fprintf(stderr, "usage: igw-benchdevice -p PORT -t PRODUCT_ID -n DEVICE_NAME -u USERNAME -P PASSWORD\n");
        return 2;
    }
    snprintf(up_property, sizeof up_property, "$thing/up/property/%.64s/%.64s", pid, dn);
    snprintf(up_action, sizeof up_action, "$thing/up/action/%.64s/%.64s", pid, dn);
    char id[256];
    snprintf(id, sizeof id, "%.64s&%.64s", pid, dn);
    mosquitto_lib_init();
    struct mosquitto *m = mosquitto_new(id, true, NULL);
    if (!m || mosquitto_username_pw_set(m, user, pass) != MOSQ_ERR_SUCCESS ||
        mosquitto_int_option(m, MOSQ_OPT_TCP_NODELAY, 1) != MOSQ_ERR_SUCCESS ||
        mosquitto_int_option(m, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311) != MOSQ_ERR_SUCCESS) {
        fprintf(stderr, "igw-benchdevice: client setup failed\n");
        return 1;
    }
    mosquitto_connect_callback_set(m, on_connect);
    mosquitto_subscribe_callback_set(m, on_subscribe);
    mosquitto_message_callback_set(m, on_message);
    if (mosquitto_connect(m, "127.0.0.1", port, 30) != MOSQ_ERR_SUCCESS) {
        fprintf(stderr, "igw-benchdevice: cannot connect to 127.0.0.1:%d\n", port);
        return 1;
    }
    /* Our own loop: the broker's socket and stdin (its end ends the run). */
    for (;;) {
        struct pollfd p[2] = {{.fd = mosquitto_socket(m), .events = POLLIN}, {.fd = 0, .events = POLLIN}};
        if (mosquitto_want_write(m))
            p[0].events |= POLLOUT;
        if (poll(p, 2, 1000) < 0 && errno != EINTR)
            break;
        int rc = MOSQ_ERR_SUCCESS;
        if (p[0].revents & (POLLIN | POLLERR | POLLHUP))
            rc = mosquitto_loop_read(m, 1);
        if (rc == MOSQ_ERR_SUCCESS && mosquitto_want_write(m))
            rc = mosquitto_loop_write(m, 1);
        if (rc == MOSQ_ERR_SUCCESS)
            rc = mosquitto_loop_misc(m);
        if (rc != MOSQ_ERR_SUCCESS || failed) {
            fprintf(stderr, "igw-benchdevice: %s\n", failed ? "refused" : mosquitto_strerror(rc));
            return 1;
        }
        if (p[1].revents & (POLLIN | POLLHUP)) {
            char buf[256];
            if (read(0, buf, sizeof buf) <= 0)
                break;
        }
    }
    mosquitto_disconnect(m);
    mosquitto_destroy(m);
    mosquitto_lib_cleanup();
    return 0;
}
