/* mqtt_test.c - src/igwd/mqtt.c against the local Mosquitto with the igw
 * auth plugin, driven by tests/igwd/mqtt_test.sh (which brings the services
 * up, provisions the devices and passes them in the environment). Devices
 * publish and subscribe with mosquitto_pub / mosquitto_sub.
 *
 * Environment: MQTT_HOST, MQTT_PORT, MQTT_USER, MQTT_PASSWORD (igwd),
 * DEV_PID, DEV_DN, DEV_USER, DEV_PASS (a device), GW_PID, GW_DN, GW_USER,
 * GW_PASS (a gateway), SUB_PID, SUB_DN (its bound sub-device), TEST_TMP (a
 * scratch directory). The cases run in order; prints one line per check,
 * each case's name and outcome, and a summary; exit 0 when every check
 * passed, 1 otherwise, 2 on a setup error. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "core/mqtt.h"

extern char **environ;

static int checks, failures;

__attribute__((format(printf, 2, 3))) static bool check(bool ok, const char *fmt, ...)
{
    va_list ap;
    checks++;
    if (!ok)
        failures++;
    printf("%s ", ok ? "ok  " : "FAIL");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    return ok;
}

static const char *need(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v) {
        fprintf(stderr, "mqtt_test: %s is not set (run tests/igwd/mqtt_test.sh)\n", name);
        exit(2);
    }
    return v;
}

/* CPU time of the whole process so far, in ms. */
static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- the uplink inbox ------------------------------------------------------------ */

#define INBOX_CAP 4096
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    igw_mqtt_uplink *q[INBOX_CAP];
    size_t head, n, overflow;
} inbox = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void on_uplink(void *arg, igw_mqtt_uplink *u)
{
    (void)arg;
    pthread_mutex_lock(&inbox.mu);
    if (inbox.n == INBOX_CAP) {
        inbox.overflow++;
        igw_mqtt_uplink_free(u);
    } else {
        inbox.q[(inbox.head + inbox.n++) % INBOX_CAP] = u;
        pthread_cond_broadcast(&inbox.cv);
    }
    pthread_mutex_unlock(&inbox.mu);
}

/* The next uplink, or NULL after timeout_ms. */
static igw_mqtt_uplink *next_up(unsigned timeout_ms)
{
    int64_t end = igw_clock_ms() + timeout_ms;
    igw_mqtt_uplink *u = NULL;
    pthread_mutex_lock(&inbox.mu);
    while (inbox.n == 0) {
        int64_t left = end - igw_clock_ms();
        struct timespec dl;
        if (left <= 0)
            break;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += left / 1000;
        dl.tv_nsec += (long)(left % 1000) * 1000000L;
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&inbox.cv, &inbox.mu, &dl);
    }
    if (inbox.n) {
        u = inbox.q[inbox.head];
        inbox.head = (inbox.head + 1) % INBOX_CAP;
        inbox.n--;
    }
    pthread_mutex_unlock(&inbox.mu);
    return u;
}

/* Frees every queued uplink; returns how many there were. */
static size_t drain(void)
{
    size_t k = 0;
    igw_mqtt_uplink *u;
    while ((u = next_up(0)) != NULL) {
        igw_mqtt_uplink_free(u);
        k++;
    }
    return k;
}

static bool up_is(const igw_mqtt_uplink *u, const char *handle, const char *type, const char *pid,
                  const char *dn, const char *payload)
{
    return u && strcmp(u->handle, handle) == 0 && strcmp(u->type, type) == 0 &&
           strcmp(u->product_id, pid) == 0 && strcmp(u->device_name, dn) == 0 &&
           u->len == strlen(payload) && memcmp(u->payload, payload, u->len) == 0 &&
           u->payload[u->len] == 0;
}

static void show(const char *what, const igw_mqtt_uplink *u)
{
    if (!u)
        printf("     %s: nothing\n", what);
    else
        printf("     %s: handle=%s type=%s product=%s device=%s len=%zu payload=%.80s\n", what,
               u->handle, u->type, u->product_id, u->device_name, u->len, u->payload);
}

/* Waits for the uplink whose payload is `marker`; the uplinks before it are
 * counted in *others (freed). true when it arrived. */
static bool wait_marker(const char *marker, size_t *others)
{
    igw_mqtt_uplink *u;
    *others = 0;
    while ((u = next_up(5000)) != NULL) {
        bool hit = strcmp(u->payload, marker) == 0;
        if (!hit)
            show("unexpected uplink", u);
        igw_mqtt_uplink_free(u);
        if (hit)
            return true;
        (*others)++;
    }
    return false;
}

/* ---- child processes ------------------------------------------------------------- */

/* Starts argv with stdout to out_path (NULL: /dev/null). The pid, or -1. */
static pid_t spawn(char *const argv[], const char *out_path)
{
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int e;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return -1;
    if (posix_spawn_file_actions_addopen(&fa, 1, out_path ? out_path : "/dev/null",
                                         O_WRONLY | O_CREAT | O_TRUNC, 0600) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return -1;
    }
    e = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (e != 0) {
        fprintf(stderr, "mqtt_test: cannot run %s: %s\n", argv[0], strerror(e));
        return -1;
    }
    return pid;
}

/* Exit status of pid (-1 when it did not exit normally). */
static int reap(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

typedef struct cred {
    const char *pid, *dn, *user, *pass;
    char client_id[160];
} cred;

/* What main reads from the environment for every case, and the client
 * under test (the cases stop it and start it again). */
typedef struct fixture {
    const char *host, *port;      /* the broker */
    const char *tmp;              /* a scratch directory */
    const char *password;         /* igwd's */
    cred dev, gw;                 /* a device, a gateway */
    cred admin;                   /* igwd's credentials, for mosquitto_pub */
    const char *sub_pid, *sub_dn; /* the gateway's bound sub-device */
    char client_id[64];           /* the client's */
    igw_mqtt *m;                  /* the client, from test_connect on */
} fixture;

/* mosquitto_pub as c: QoS 1; payload from `msg`, or from the file `file`,
 * or empty (both NULL); retained when retain. Exit status 0 on success. */
static int pub(fixture *f, const cred *c, const char *topic, const char *msg, const char *file, bool retain)
{
    char *argv[24];
    int k = 0;
    argv[k++] = "mosquitto_pub";
    argv[k++] = "-h";
    argv[k++] = (char *)f->host;
    argv[k++] = "-p";
    argv[k++] = (char *)f->port;
    argv[k++] = "-i";
    argv[k++] = (char *)c->client_id;
    argv[k++] = "-u";
    argv[k++] = (char *)c->user;
    argv[k++] = "-P";
    argv[k++] = (char *)c->pass;
    argv[k++] = "-q";
    argv[k++] = "1";
    argv[k++] = "-t";
    argv[k++] = (char *)topic;
    if (msg) {
        argv[k++] = "-m";
        argv[k++] = (char *)msg;
    } else if (file) {
        argv[k++] = "-f";
        argv[k++] = (char *)file;
    } else {
        argv[k++] = "-n";
    }
    if (retain)
        argv[k++] = "-r";
    argv[k] = NULL;
    pid_t p = spawn(argv, NULL);
    int rc = p < 0 ? -1 : reap(p);
    if (rc != 0)
        printf("     mosquitto_pub as %s to %s: exit %d\n", c->client_id, topic, rc);
    return rc;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    size_t n = 0, cap = 1 << 16;
    if (!f)
        return NULL;
    buf = malloc(cap + 1);
    if (buf)
        n = fread(buf, 1, cap, f);
    fclose(f);
    if (buf)
        buf[n] = 0;
    *len = n;
    return buf;
}

static bool write_file(const char *path, char fill, size_t n)
{
    FILE *f = fopen(path, "wb");
    bool ok = f != NULL;
    for (size_t i = 0; ok && i < n; i++)
        ok = fputc(fill, f) != EOF;
    if (f && fclose(f) != 0)
        ok = false;
    return ok;
}

/* ---- concurrent publishers ------------------------------------------------------------ */

#define STRESS_THREADS 4
#define STRESS_EACH 250

typedef struct stress_arg {
    igw_mqtt *m;
    const cred *dev;
    int k, failed;
} stress_arg;

static void *stress_main(void *p)
{
    stress_arg *a = p;
    char topic[256], payload[64];
    snprintf(topic, sizeof topic, "$ext/up/stress-%d/%s/%s", a->k, a->dev->pid, a->dev->dn);
    for (int i = 0; i < STRESS_EACH; i++) {
        int n = snprintf(payload, sizeof payload, "%d %d", a->k, i);
        if (igw_mqtt_publish(a->m, topic, payload, (size_t)n, 1) != 0)
            a->failed++;
    }
    return NULL;
}

/* ---- the test ------------------------------------------------------------------------------ */

static igw_mqtt *start_on(fixture *f, const char *on_port, const char *client_id, const char *password, char *err,
                                      size_t errlen)
{
    igw_mqtt_config cfg = {
        .host = f->host,
        .port = (uint16_t)atoi(on_port),
        .username = need("MQTT_USER"),
        .password = password,
        .client_id = client_id,
        .keepalive_s = 10,
    };
    return igw_mqtt_start(&cfg, on_uplink, NULL, err, errlen);
}

static igw_mqtt *start(fixture *f, const char *client_id, const char *password, char *err, size_t errlen)
{
    return start_on(f, f->port, client_id, password, err, errlen);
}

/* start refuses no host, a client id with '&' (a device's form), keepalive 2 s */
static int test_settings_refused(fixture *f)
{
    (void)f;
    char err[256];
    igw_mqtt *m;
    igw_mqtt_config bad = {.host = "", .port = 1, .username = "u", .password = "p", .client_id = "c"};
    err[0] = 0;
    m = igw_mqtt_start(&bad, on_uplink, NULL, err, sizeof err);
    check(!m && strstr(err, "host"), "start without a host fails: %s", err);
    igw_mqtt_stop(m);
    bad.host = "127.0.0.1";
    bad.client_id = "a&b";
    m = igw_mqtt_start(&bad, on_uplink, NULL, err, sizeof err);
    check(!m && strstr(err, "client id"), "a client id with '&' (a device's form) is refused: %s", err);
    igw_mqtt_stop(m);
    bad.client_id = "c";
    bad.keepalive_s = 2;
    m = igw_mqtt_start(&bad, on_uplink, NULL, err, sizeof err);
    check(!m && strstr(err, "keepalive"), "keepalive 2 s is refused: %s", err);
    igw_mqtt_stop(m);
    return 0;
}

/* nothing listening: the client retries without spinning, and stops promptly */
static int test_closed_port_retries_quietly(fixture *f)
{
    char err[256];
    int64_t t0;
    double c0;
    igw_mqtt *m = start_on(f, "1", f->client_id, f->password, err, sizeof err);
    if (!check(m != NULL, "start against a closed port returns a client (it retries)"))
        printf("     %s\n", err);
    c0 = cpu_ms();
    check(igw_mqtt_wait_connected(m, 1000) != 0, "... which is not connected after 1 s");
    check(cpu_ms() - c0 < 100, "... using %.1f ms of CPU meanwhile", cpu_ms() - c0);
    t0 = igw_clock_ms();
    igw_mqtt_stop(m);
    check(igw_clock_ms() - t0 < 1000, "... and stops in %lld ms", (long long)(igw_clock_ms() - t0));
    return 0;
}

/* a wrong password: no connection, and stop is prompt while backing off */
static int test_wrong_password_no_connection(fixture *f)
{
    char err[256];
    int64_t t0;
    igw_mqtt *m = start(f, f->client_id, "not-the-password", err, sizeof err);
    if (!check(m != NULL, "start with a wrong password returns a client (it retries)"))
        printf("     %s\n", err);
    check(igw_mqtt_wait_connected(m, 1500) != 0 && !igw_mqtt_connected(m),
          "... which is not connected after 1.5 s");
    t0 = igw_clock_ms();
    igw_mqtt_stop(m);
    check(igw_clock_ms() - t0 < 1000, "... and stops in %lld ms while backing off", (long long)(igw_clock_ms() - t0));
    return 0;
}

/* igwd's credentials: connected and subscribed within 5 s; idle, it uses no CPU */
static int test_connect(fixture *f)
{
    char err[256];
    double c0;
    f->m = start(f, f->client_id, f->password, err, sizeof err);
    if (!check(f->m != NULL, "start with igwd's credentials")) {
        printf("     %s\n", err);
        return 1;
    }
    if (!check(igw_mqtt_wait_connected(f->m, 5000) == 0 && igw_mqtt_connected(f->m),
               "connected and subscribed within 5 s"))
        return 1;
    c0 = cpu_ms();
    sleep_ms(1000);
    check(cpu_ms() - c0 < 50, "idle connected client: %.1f ms of CPU in 1 s", cpu_ms() - c0);
    return 0;
}

/* a device's uplinks on $thing and $ext arrive with the handle, type, ids and exact payload */
/* Needs test_connect. */
static int test_device_uplinks(fixture *f)
{
    char topic[512];
    igw_mqtt_uplink *u;
    const char *report = "{\"method\":\"report\",\"msgToken\":\"t-1\",\"params\":{\"power_switch\":true}}";
    snprintf(topic, sizeof topic, "$thing/up/property/%s/%s", f->dev.pid, f->dev.dn);
    check(pub(f, &f->dev, topic, report, NULL, false) == 0, "device publishes a report (QoS 1)");
    u = next_up(5000);
    if (!check(up_is(u, "thing", "property", f->dev.pid, f->dev.dn, report),
               "uplink: handle thing, type property, the device's ids, the exact payload"))
        show("got", u);
    igw_mqtt_uplink_free(u);

    snprintf(topic, sizeof topic, "$ext/up/custom_1-x/%s/%s", f->dev.pid, f->dev.dn);
    check(pub(f, &f->dev, topic, "ext payload", NULL, false) == 0, "device publishes on $ext");
    u = next_up(5000);
    if (!check(up_is(u, "ext", "custom_1-x", f->dev.pid, f->dev.dn, "ext payload"),
               "uplink: handle ext, type custom_1-x"))
        show("got", u);
    igw_mqtt_uplink_free(u);
    return 0;
}

/* a gateway publishing for its bound sub-device: the uplink carries the sub-device's ids */
/* Needs test_connect. */
static int test_gateway_sub_device(fixture *f)
{
    char topic[512];
    igw_mqtt_uplink *u;
    const char *ev = "{\"method\":\"eventPost\",\"msgToken\":\"g-1\",\"eventID\":\"alarm\",\"params\":{}}";
    snprintf(topic, sizeof topic, "$thing/up/event/%s/%s", f->sub_pid, f->sub_dn);
    check(pub(f, &f->gw, topic, ev, NULL, false) == 0, "gateway publishes on its bound sub-device's topic");
    u = next_up(5000);
    if (!check(up_is(u, "thing", "event", f->sub_pid, f->sub_dn, ev), "uplink carries the sub-device's ids"))
        show("got", u);
    igw_mqtt_uplink_free(u);
    return 0;
}

/* igw_mqtt_publish to $thing/down/... reaches mosquitto_sub running as the device; counted */
/* Needs test_connect. */
static int test_downlink_to_device(fixture *f)
{
    char topic[512];
    igw_mqtt_stats s0, s1;
    const char *ctl = "{\"method\":\"control\",\"msgToken\":\"d-1\",\"params\":{\"power_switch\":false}}";
    char out[512];
    char *argv[] = {"mosquitto_sub", "-h", (char *)f->host, "-p", (char *)f->port, "-i", f->dev.client_id, "-u",
                    (char *)f->dev.user, "-P", (char *)f->dev.pass, "-q", "1", "-t", topic, "-C", "1", "-W",
                    "8", NULL};
    size_t n = 0;
    char *got = NULL;
    int sent = 0, failed = 0;
    snprintf(topic, sizeof topic, "$thing/down/property/%s/%s", f->dev.pid, f->dev.dn);
    snprintf(out, sizeof out, "%s/downlink.out", f->tmp);
    igw_mqtt_stats_get(f->m, &s0);
    pid_t p = spawn(argv, out);
    /* Until the subscriber is in place, publish again every 100 ms. */
    for (int i = 0; p > 0 && i < 60; i++) {
        struct stat st;
        if (igw_mqtt_publish(f->m, topic, ctl, strlen(ctl), 1) == 0)
            sent++;
        else
            failed++;
        sleep_ms(100);
        if (stat(out, &st) == 0 && st.st_size > 0)
            break;
    }
    int rc = p > 0 ? reap(p) : -1;
    got = slurp(out, &n);
    check(rc == 0 && got && n == strlen(ctl) + 1 && memcmp(got, ctl, strlen(ctl)) == 0,
          "igw_mqtt_publish to $thing/down/property/... reaches mosquitto_sub running as the device");
    igw_mqtt_stats_get(f->m, &s1);
    check(failed == 0 && s1.out - s0.out == (uint64_t)sent && s1.out_failed == s0.out_failed,
          "... publishes counted: out +%d", sent);
    free(got);
    return 0;
}

/* publish refuses a wildcard topic, an oversize payload, QoS 3, no client; counted */
/* Needs test_connect. */
static int test_publish_refusals(fixture *f)
{
    char topic[512];
    igw_mqtt_stats s0, s1;
    snprintf(topic, sizeof topic, "$thing/down/property/%s/%s", f->dev.pid, f->dev.dn);
    static char big[IGW_MQTT_PAYLOAD_MAX + 1];
    igw_mqtt_stats_get(f->m, &s0);
    check(igw_mqtt_publish(f->m, "$thing/down/property/+/x", "x", 1, 1) == -1, "publish to a topic with + fails");
    check(igw_mqtt_publish(f->m, topic, big, sizeof big, 1) == -1, "publish of %zu bytes fails", sizeof big);
    check(igw_mqtt_publish(f->m, topic, "x", 1, 3) == -1, "publish with QoS 3 fails");
    check(igw_mqtt_publish(NULL, topic, "x", 1, 1) == -1, "publish on NULL fails");
    igw_mqtt_stats_get(f->m, &s1);
    check(s1.out_failed - s0.out_failed == 3 && s1.out == s0.out, "... counted as out_failed (3)");
    return 0;
}

/* malformed relay topics (only igwd can publish them) are dropped and counted */
/* Needs test_connect. */
static int test_malformed_topics_dropped(fixture *f)
{
    char topic[512], marker[64];
    igw_mqtt_stats s0, s1;
    size_t others;
    char longtype[IGW_MQTT_TYPE_MAX + 2];
    char t[6][512];
    memset(longtype, 'a', sizeof longtype - 1);
    longtype[sizeof longtype - 1] = 0;
    /* On the relay topics igwd shares (the plugin relays well-formed uplinks only). */
    snprintf(t[0], sizeof t[0], "igw/thing/up/property/%s", f->dev.pid);
    snprintf(t[1], sizeof t[1], "igw/thing/up/property/%s/%s/extra", f->dev.pid, f->dev.dn);
    snprintf(t[2], sizeof t[2], "igw/thing/up//%s/%s", f->dev.pid, f->dev.dn);
    snprintf(t[3], sizeof t[3], "igw/thing/up/property/%s/", f->dev.pid);
    snprintf(t[4], sizeof t[4], "igw/thing/up");
    snprintf(t[5], sizeof t[5], "igw/thing/up/%s/%s/%s", longtype, f->dev.pid, f->dev.dn);
    igw_mqtt_stats_get(f->m, &s0);
    bool ok = true;
    for (int i = 0; i < 6; i++)
        ok &= pub(f, &f->admin, t[i], "malformed", NULL, false) == 0;
    snprintf(marker, sizeof marker, "marker-topics");
    snprintf(topic, sizeof topic, "$ext/up/marker/%s/%s", f->dev.pid, f->dev.dn);
    ok &= pub(f, &f->admin, topic, marker, NULL, false) == 0;
    check(ok, "igwd publishes 6 malformed uplink topics and a marker");
    check(wait_marker(marker, &others) && others == 0, "... only the marker is delivered");
    igw_mqtt_stats_get(f->m, &s1);
    check(s1.dropped_topic - s0.dropped_topic == 6 && s1.dropped - s0.dropped == 6,
          "... the 6 are counted as dropped (topic): %llu",
          (unsigned long long)(s1.dropped_topic - s0.dropped_topic));
    return 0;
}

/* a payload of IGW_MQTT_PAYLOAD_MAX bytes arrives intact; one byte more is dropped and counted */
/* Needs test_connect. */
static int test_payload_bound(fixture *f)
{
    char topic[512];
    igw_mqtt_stats s0, s1;
    igw_mqtt_uplink *u;
    char at[512], over[512];
    snprintf(at, sizeof at, "%s/at-limit.bin", f->tmp);
    snprintf(over, sizeof over, "%s/over-limit.bin", f->tmp);
    if (!write_file(at, 'a', IGW_MQTT_PAYLOAD_MAX) || !write_file(over, 'o', IGW_MQTT_PAYLOAD_MAX + 1)) {
        fprintf(stderr, "mqtt_test: cannot write %s\n", f->tmp);
        return 2;
    }
    snprintf(topic, sizeof topic, "$thing/up/property/%s/%s", f->dev.pid, f->dev.dn);
    igw_mqtt_stats_get(f->m, &s0);
    check(pub(f, &f->dev, topic, NULL, over, false) == 0, "device publishes %d bytes", IGW_MQTT_PAYLOAD_MAX + 1);
    check(pub(f, &f->dev, topic, NULL, at, false) == 0, "device publishes %d bytes", IGW_MQTT_PAYLOAD_MAX);
    u = next_up(5000);
    bool all_a = u && u->len == IGW_MQTT_PAYLOAD_MAX && u->payload[u->len] == 0;
    for (size_t i = 0; all_a && i < u->len; i++)
        all_a = u->payload[i] == 'a';
    check(all_a, "... the %d-byte one arrives intact (the larger one does not)", IGW_MQTT_PAYLOAD_MAX);
    if (!all_a)
        show("got", u);
    igw_mqtt_uplink_free(u);
    igw_mqtt_stats_get(f->m, &s1);
    check(s1.dropped_size - s0.dropped_size == 1 && s1.dropped - s0.dropped == 1,
          "... the oversize one is counted as dropped (size)");
    return 0;
}

/* threads publishing at once: all accepted, looped back in order per thread; the stats */
/* Needs test_connect. */
static int test_concurrent_publishers(fixture *f)
{
    igw_mqtt_stats s0, s1;
    igw_mqtt_uplink *u;
    int64_t t0;
    pthread_t th[STRESS_THREADS];
    stress_arg a[STRESS_THREADS];
    int next[STRESS_THREADS] = {0}, failed = 0, disorder = 0, strange = 0, got = 0;
    igw_mqtt_stats_get(f->m, &s0);
    t0 = igw_clock_ms();
    for (int k = 0; k < STRESS_THREADS; k++) {
        a[k] = (stress_arg){.m = f->m, .dev = &f->dev, .k = k};
        if (pthread_create(&th[k], NULL, stress_main, &a[k]) != 0) {
            fprintf(stderr, "mqtt_test: pthread_create failed\n");
            return 2;
        }
    }
    for (int k = 0; k < STRESS_THREADS; k++) {
        pthread_join(th[k], NULL);
        failed += a[k].failed;
    }
    while (got < STRESS_THREADS * STRESS_EACH && (u = next_up(5000)) != NULL) {
        int k = -1, i = -1;
        if (sscanf(u->payload, "%d %d", &k, &i) == 2 && k >= 0 && k < STRESS_THREADS &&
            strcmp(u->handle, "ext") == 0) {
            if (i != next[k])
                disorder++;
            next[k] = i + 1;
            got++;
        } else {
            strange++;
            show("unexpected uplink", u);
        }
        igw_mqtt_uplink_free(u);
    }
    igw_mqtt_stats_get(f->m, &s1);
    check(failed == 0 && got == STRESS_THREADS * STRESS_EACH && strange == 0,
          "%d threads x %d QoS 1 publishes: all accepted and looped back as uplinks (%d) in %lld ms",
          STRESS_THREADS, STRESS_EACH, got, (long long)(igw_clock_ms() - t0));
    check(disorder == 0, "... each thread's messages in order");
    check(s1.out - s0.out == STRESS_THREADS * STRESS_EACH && s1.in - s0.in == STRESS_THREADS * STRESS_EACH,
          "... stats: out +%llu, in +%llu", (unsigned long long)(s1.out - s0.out),
          (unsigned long long)(s1.in - s0.in));
    return 0;
}

/* uplinks while the client is stopped are delivered after its restart (persistent session) */
/* Needs test_connect; restarts the client. */
static int test_persistent_session(fixture *f)
{
    char err[256], topic[512], marker[64];
    igw_mqtt_uplink *u;
    int64_t t0;
    bool ok = true;
    t0 = igw_clock_ms();
    igw_mqtt_stop(f->m);
    check(igw_clock_ms() - t0 < 1500, "stop (clean disconnect) in %lld ms", (long long)(igw_clock_ms() - t0));
    snprintf(topic, sizeof topic, "$log/up/operation/%s/%s", f->dev.pid, f->dev.dn);
    for (int i = 1; i <= 3; i++) {
        snprintf(marker, sizeof marker, "offline-%d", i);
        ok &= pub(f, &f->dev, topic, marker, NULL, false) == 0;
    }
    check(ok, "device publishes 3 QoS 1 messages while the client is stopped");
    f->m = start(f, f->client_id, f->password, err, sizeof err);
    check(f->m && igw_mqtt_wait_connected(f->m, 5000) == 0, "restart with the same client id");
    if (!f->m)
        return 1;
    for (int i = 1; i <= 3; i++) {
        snprintf(marker, sizeof marker, "offline-%d", i);
        u = next_up(5000);
        if (!check(up_is(u, "log", "operation", f->dev.pid, f->dev.dn, marker),
                   "queued uplink %d delivered after the restart", i))
            show("got", u);
        igw_mqtt_uplink_free(u);
    }
    return 0;
}

/* a clean client taking over the session: the client reconnects and resubscribes */
/* Needs test_persistent_session (one reconnect so far). */
static int test_takeover_reconnects(fixture *f)
{
    char topic[512];
    igw_mqtt_stats s0, s1;
    igw_mqtt_uplink *u;
    cred thief = f->admin;
    igw_mqtt_stats_get(f->m, &s0);
    snprintf(thief.client_id, sizeof thief.client_id, "%s", f->client_id);
    snprintf(topic, sizeof topic, "$ext/up/takeover/%s/%s", f->dev.pid, f->dev.dn);
    check(pub(f, &thief, topic, "takeover", NULL, false) == 0,
          "another client takes over the session with a clean one");
    int64_t end = igw_clock_ms() + 6000;
    do {
        igw_mqtt_stats_get(f->m, &s1);
        if (s1.reconnects > s0.reconnects && igw_mqtt_connected(f->m))
            break;
        sleep_ms(50);
    } while (igw_clock_ms() < end);
    check(s1.reconnects == s0.reconnects + 1 && igw_mqtt_connected(f->m),
          "... the client reconnects (reconnects %llu) and resubscribes", (unsigned long long)s1.reconnects);
    drain(); /* "takeover" may or may not have been delivered */
    snprintf(topic, sizeof topic, "$thing/up/property/%s/%s", f->dev.pid, f->dev.dn);
    check(pub(f, &f->dev, topic, "after-takeover", NULL, false) == 0, "device publishes again");
    u = next_up(5000);
    if (!check(up_is(u, "thing", "property", f->dev.pid, f->dev.dn, "after-takeover"),
               "... and it is delivered (subscriptions restored)"))
        show("got", u);
    igw_mqtt_uplink_free(u);
    return 0;
}

/* retained uplinks are delivered live once and not replayed on resubscription */
/* Needs test_connect; restarts the client. */
static int test_retained_not_replayed(fixture *f)
{
    char err[256], topic[512];
    igw_mqtt_stats s1;
    igw_mqtt_uplink *u;
    char relay[256];
    snprintf(topic, sizeof topic, "$thing/up/property/%s/%s", f->dev.pid, f->dev.dn);
    snprintf(relay, sizeof relay, "igw/thing/up/property/%s/%s", f->dev.pid, f->dev.dn);
    check(pub(f, &f->dev, topic, "retained-1", NULL, true) == 0, "device publishes a retained uplink");
    u = next_up(5000);
    if (!check(up_is(u, "thing", "property", f->dev.pid, f->dev.dn, "retained-1"), "... delivered live once"))
        show("got", u);
    igw_mqtt_uplink_free(u);
    /* The plugin relays without the retain flag; a retained message on
     * the relay topic itself (only igwd may publish there) is what a
     * resubscription could replay (Mosquitto 2.0.11 replays retained
     * messages to a new shared subscription, 2.0.13 and later do not). */
    check(pub(f, &f->admin, relay, "retained-relay", NULL, true) == 0, "a retained message on the relay topic");
    u = next_up(5000);
    if (!check(up_is(u, "thing", "property", f->dev.pid, f->dev.dn, "retained-relay"), "... delivered live once"))
        show("got", u);
    igw_mqtt_uplink_free(u);
    igw_mqtt_stop(f->m);
    f->m = start(f, f->client_id, f->password, err, sizeof err);
    check(f->m && igw_mqtt_wait_connected(f->m, 5000) == 0, "restart (resubscribes)");
    if (!f->m)
        return 1;
    check(pub(f, &f->dev, topic, NULL, NULL, true) == 0, "device clears its retained uplink (empty payload)");
    u = next_up(5000);
    if (!check(up_is(u, "thing", "property", f->dev.pid, f->dev.dn, ""),
               "... that arrives as an empty payload (len 0), not the replayed retained one"))
        show("got", u);
    igw_mqtt_uplink_free(u);
    igw_mqtt_stats_get(f->m, &s1);
    check(s1.dropped_retained <= 1 && s1.dropped == s1.dropped_retained,
          "... a replay (%llu) is counted as dropped (retained), never delivered",
          (unsigned long long)s1.dropped_retained);
    check(pub(f, &f->admin, relay, NULL, NULL, true) == 0, "the relay topic's retained message is cleared");
    u = next_up(5000);
    if (!check(up_is(u, "thing", "property", f->dev.pid, f->dev.dn, ""), "... which arrives as an empty uplink"))
        show("got", u);
    igw_mqtt_uplink_free(u);
    return 0;
}

/* no uplink is left over, and none overflowed the inbox */
/* Needs every case before. */
static int test_no_stray_uplinks(fixture *f)
{
    (void)f;
    size_t left = drain();
    check(left == 0 && inbox.overflow == 0, "no stray uplinks (%zu)", left);
    return 0;
}

/* In this order: a case needs the client the ones before it left (it says which). */
static const struct {
    const char *name;
    int (*fn)(fixture *); /* 0, or the exit status when the test cannot go on */
} cases[] = {
    {"test_settings_refused", test_settings_refused},
    {"test_closed_port_retries_quietly", test_closed_port_retries_quietly},
    {"test_wrong_password_no_connection", test_wrong_password_no_connection},
    {"test_connect", test_connect},
    {"test_device_uplinks", test_device_uplinks},
    {"test_gateway_sub_device", test_gateway_sub_device},
    {"test_downlink_to_device", test_downlink_to_device},
    {"test_publish_refusals", test_publish_refusals},
    {"test_malformed_topics_dropped", test_malformed_topics_dropped},
    {"test_payload_bound", test_payload_bound},
    {"test_concurrent_publishers", test_concurrent_publishers},
    {"test_persistent_session", test_persistent_session},
    {"test_takeover_reconnects", test_takeover_reconnects},
    {"test_retained_not_replayed", test_retained_not_replayed},
    {"test_no_stray_uplinks", test_no_stray_uplinks},
};

int main(void)
{
    fixture f = {.tmp = need("TEST_TMP"), .password = need("MQTT_PASSWORD")};
    f.dev = (cred){need("DEV_PID"), need("DEV_DN"), need("DEV_USER"), need("DEV_PASS"), ""};
    f.gw = (cred){need("GW_PID"), need("GW_DN"), need("GW_USER"), need("GW_PASS"), ""};
    f.admin = (cred){"", "", need("MQTT_USER"), f.password, ""};
    f.sub_pid = need("SUB_PID"), f.sub_dn = need("SUB_DN");

    f.host = need("MQTT_HOST");
    f.port = need("MQTT_PORT");
    setvbuf(stdout, NULL, _IOLBF, 0);
    snprintf(f.dev.client_id, sizeof f.dev.client_id, "%s&%s", f.dev.pid, f.dev.dn);
    snprintf(f.gw.client_id, sizeof f.gw.client_id, "%s&%s", f.gw.pid, f.gw.dn);
    snprintf(f.admin.client_id, sizeof f.admin.client_id, "igwd-test-pub-%d", (int)getpid());
    snprintf(f.client_id, sizeof f.client_id, "igwd-mqtt-test-%d", (int)getpid());

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int before = failures, rc = cases[i].fn(&f);
        printf("case %s: %s\n", cases[i].name, rc == 0 && failures == before ? "ok" : "FAILED");
        if (rc != 0)
            return rc; /* no client to go on with (1), or a setup error (2) */
    }
    igw_mqtt_stop(f.m);
    printf("mqtt_test: %d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
