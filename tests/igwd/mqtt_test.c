/* mqtt_test.c - src/igwd/mqtt.c against the local Mosquitto with the igw
 * auth plugin, driven by tests/igwd/mqtt_test.sh (which brings the services
 * up, provisions the devices and passes them in the environment). Devices
 * publish and subscribe with mosquitto_pub / mosquitto_sub.
 *
 * Environment: MQTT_HOST, MQTT_PORT, MQTT_USER, MQTT_PASSWORD (igwd),
 * DEV_PID, DEV_DN, DEV_USER, DEV_PASS (a device), GW_PID, GW_DN, GW_USER,
 * GW_PASS (a gateway), SUB_PID, SUB_DN (its bound sub-device), TEST_TMP (a
 * scratch directory). Prints one line per check and a summary; exit 0 when
 * every check passed, 1 otherwise, 2 on a setup error. */
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

static const char *host, *port;

typedef struct cred {
    const char *pid, *dn, *user, *pass;
    char client_id[160];
} cred;

/* mosquitto_pub as c: QoS 1; payload from `msg`, or from the file `file`,
 * or empty (both NULL); retained when retain. Exit status 0 on success. */
static int pub(const cred *c, const char *topic, const char *msg, const char *file, bool retain)
{
    char *argv[24];
    int k = 0;
    argv[k++] = "mosquitto_pub";
    argv[k++] = "-h";
    argv[k++] = (char *)host;
    argv[k++] = "-p";
    argv[k++] = (char *)port;
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

static igw_mqtt *start_on(const char *on_port, const char *client_id, const char *password, char *err,
                          size_t errlen)
{
    igw_mqtt_config cfg = {
        .host = host,
        .port = (uint16_t)atoi(on_port),
        .username = need("MQTT_USER"),
        .password = password,
        .client_id = client_id,
        .keepalive_s = 10,
    };
    return igw_mqtt_start(&cfg, on_uplink, NULL, err, errlen);
}

static igw_mqtt *start(const char *client_id, const char *password, char *err, size_t errlen)
{
    return start_on(port, client_id, password, err, errlen);
}

int main(void)
{
    char err[256], client_id[64], topic[512], marker[64];
    const char *tmp = need("TEST_TMP"), *password = need("MQTT_PASSWORD");
    cred dev = {need("DEV_PID"), need("DEV_DN"), need("DEV_USER"), need("DEV_PASS"), ""};
    cred gw = {need("GW_PID"), need("GW_DN"), need("GW_USER"), need("GW_PASS"), ""};
    cred admin = {"", "", need("MQTT_USER"), password, ""};
    const char *sub_pid = need("SUB_PID"), *sub_dn = need("SUB_DN");
    igw_mqtt_stats s0, s1;
    igw_mqtt_uplink *u;
    igw_mqtt *m;
    size_t others;
    int64_t t0;
    double c0;

    host = need("MQTT_HOST");
    port = need("MQTT_PORT");
    setvbuf(stdout, NULL, _IOLBF, 0);
    snprintf(dev.client_id, sizeof dev.client_id, "%s&%s", dev.pid, dev.dn);
    snprintf(gw.client_id, sizeof gw.client_id, "%s&%s", gw.pid, gw.dn);
    snprintf(admin.client_id, sizeof admin.client_id, "igwd-test-pub-%d", (int)getpid());
    snprintf(client_id, sizeof client_id, "igwd-mqtt-test-%d", (int)getpid());

    /* ---- settings ---- */
    {
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
    }

    /* ---- nothing listening: retries without spinning, stop is prompt ---- */
    m = start_on("1", client_id, password, err, sizeof err);
    if (!check(m != NULL, "start against a closed port returns a client (it retries)"))
        printf("     %s\n", err);
    c0 = cpu_ms();
    check(igw_mqtt_wait_connected(m, 1000) != 0, "... which is not connected after 1 s");
    check(cpu_ms() - c0 < 100, "... using %.1f ms of CPU meanwhile", cpu_ms() - c0);
    t0 = igw_clock_ms();
    igw_mqtt_stop(m);
    check(igw_clock_ms() - t0 < 1000, "... and stops in %lld ms", (long long)(igw_clock_ms() - t0));

    /* ---- a wrong password: no connection, and stop is prompt ---- */
    m = start(client_id, "not-the-password", err, sizeof err);
    if (!check(m != NULL, "start with a wrong password returns a client (it retries)"))
        printf("     %s\n", err);
    check(igw_mqtt_wait_connected(m, 1500) != 0 && !igw_mqtt_connected(m),
          "... which is not connected after 1.5 s");
    t0 = igw_clock_ms();
    igw_mqtt_stop(m);
    check(igw_clock_ms() - t0 < 1000, "... and stops in %lld ms while backing off", (long long)(igw_clock_ms() - t0));

    /* ---- connect ---- */
    m = start(client_id, password, err, sizeof err);
    if (!check(m != NULL, "start with igwd's credentials")) {
        printf("     %s\n", err);
        return 1;
    }
    if (!check(igw_mqtt_wait_connected(m, 5000) == 0 && igw_mqtt_connected(m),
               "connected and subscribed within 5 s"))
        return 1;
    c0 = cpu_ms();
    sleep_ms(1000);
    check(cpu_ms() - c0 < 50, "idle connected client: %.1f ms of CPU in 1 s", cpu_ms() - c0);

    /* ---- device uplinks ---- */
    const char *report = "{\"method\":\"report\",\"msgToken\":\"t-1\",\"params\":{\"power_switch\":true}}";
    snprintf(topic, sizeof topic, "$thing/up/property/%s/%s", dev.pid, dev.dn);
    check(pub(&dev, topic, report, NULL, false) == 0, "device publishes a report (QoS 1)");
    u = next_up(5000);
    if (!check(up_is(u, "thing", "property", dev.pid, dev.dn, report),
               "uplink: handle thing, type property, the device's ids, the exact payload"))
        show("got", u);
    igw_mqtt_uplink_free(u);

    snprintf(topic, sizeof topic, "$ext/up/custom_1-x/%s/%s", dev.pid, dev.dn);
    check(pub(&dev, topic, "ext payload", NULL, false) == 0, "device publishes on $ext");
    u = next_up(5000);
    if (!check(up_is(u, "ext", "custom_1-x", dev.pid, dev.dn, "ext payload"), "uplink: handle ext, type custom_1-x"))
        show("got", u);
    igw_mqtt_uplink_free(u);

    /* ---- a gateway for its sub-device ---- */
    const char *ev = "{\"method\":\"eventPost\",\"msgToken\":\"g-1\",\"eventID\":\"alarm\",\"params\":{}}";
    snprintf(topic, sizeof topic, "$thing/up/event/%s/%s", sub_pid, sub_dn);
    check(pub(&gw, topic, ev, NULL, false) == 0, "gateway publishes on its bound sub-device's topic");
    u = next_up(5000);
    if (!check(up_is(u, "thing", "event", sub_pid, sub_dn, ev), "uplink carries the sub-device's ids"))
        show("got", u);
    igw_mqtt_uplink_free(u);

    /* ---- a downlink to the device ---- */
    {
        const char *ctl = "{\"method\":\"control\",\"msgToken\":\"d-1\",\"params\":{\"power_switch\":false}}";
        char out[512];
        char *argv[] = {"mosquitto_sub", "-h", (char *)host, "-p", (char *)port, "-i", dev.client_id, "-u",
                        (char *)dev.user, "-P", (char *)dev.pass, "-q", "1", "-t", topic, "-C", "1", "-W",
                        "8", NULL};
        size_t n = 0;
        char *got = NULL;
        int sent = 0, failed = 0;
        snprintf(topic, sizeof topic, "$thing/down/property/%s/%s", dev.pid, dev.dn);
        snprintf(out, sizeof out, "%s/downlink.out", tmp);
        igw_mqtt_stats_get(m, &s0);
        pid_t p = spawn(argv, out);
        /* Until the subscriber is in place, publish again every 100 ms. */
        for (int i = 0; p > 0 && i < 60; i++) {
            struct stat st;
            if (igw_mqtt_publish(m, topic, ctl, strlen(ctl), 1) == 0)
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
        igw_mqtt_stats_get(m, &s1);
        check(failed == 0 && s1.out - s0.out == (uint64_t)sent && s1.out_failed == s0.out_failed,
              "... publishes counted: out +%d", sent);
        free(got);
    }

    /* ---- publish refusals ---- */
    {
        static char big[IGW_MQTT_PAYLOAD_MAX + 1];
        igw_mqtt_stats_get(m, &s0);
        check(igw_mqtt_publish(m, "$thing/down/property/+/x", "x", 1, 1) == -1, "publish to a topic with + fails");
        check(igw_mqtt_publish(m, topic, big, sizeof big, 1) == -1, "publish of %zu bytes fails", sizeof big);
        check(igw_mqtt_publish(m, topic, "x", 1, 3) == -1, "publish with QoS 3 fails");
        check(igw_mqtt_publish(NULL, topic, "x", 1, 1) == -1, "publish on NULL fails");
        igw_mqtt_stats_get(m, &s1);
        check(s1.out_failed - s0.out_failed == 3 && s1.out == s0.out, "... counted as out_failed (3)");
    }

    /* ---- malformed topics (only igwd itself can publish them) ---- */
    {
        char longtype[IGW_MQTT_TYPE_MAX + 2];
        char t[6][512];
        memset(longtype, 'a', sizeof longtype - 1);
        longtype[sizeof longtype - 1] = 0;
        /* On the relay topics igwd shares (the plugin relays well-formed uplinks only). */
        snprintf(t[0], sizeof t[0], "igw/thing/up/property/%s", dev.pid);
        snprintf(t[1], sizeof t[1], "igw/thing/up/property/%s/%s/extra", dev.pid, dev.dn);
        snprintf(t[2], sizeof t[2], "igw/thing/up//%s/%s", dev.pid, dev.dn);
        snprintf(t[3], sizeof t[3], "igw/thing/up/property/%s/", dev.pid);
        snprintf(t[4], sizeof t[4], "igw/thing/up");
        snprintf(t[5], sizeof t[5], "igw/thing/up/%s/%s/%s", longtype, dev.pid, dev.dn);
        igw_mqtt_stats_get(m, &s0);
        bool ok = true;
        for (int i = 0; i < 6; i++)
            ok &= pub(&admin, t[i], "malformed", NULL, false) == 0;
        snprintf(marker, sizeof marker, "marker-topics");
        snprintf(topic, sizeof topic, "$ext/up/marker/%s/%s", dev.pid, dev.dn);
        ok &= pub(&admin, topic, marker, NULL, false) == 0;
        check(ok, "igwd publishes 6 malformed uplink topics and a marker");
        check(wait_marker(marker, &others) && others == 0, "... only the marker is delivered");
        igw_mqtt_stats_get(m, &s1);
        check(s1.dropped_topic - s0.dropped_topic == 6 && s1.dropped - s0.dropped == 6,
              "... the 6 are counted as dropped (topic): %llu",
              (unsigned long long)(s1.dropped_topic - s0.dropped_topic));
    }

    /* ---- payload bound ---- */
    {
        char at[512], over[512];
        snprintf(at, sizeof at, "%s/at-limit.bin", tmp);
        snprintf(over, sizeof over, "%s/over-limit.bin", tmp);
        if (!write_file(at, 'a', IGW_MQTT_PAYLOAD_MAX) || !write_file(over, 'o', IGW_MQTT_PAYLOAD_MAX + 1)) {
            fprintf(stderr, "mqtt_test: cannot write %s\n", tmp);
            return 2;
        }
        snprintf(topic, sizeof topic, "$thing/up/property/%s/%s", dev.pid, dev.dn);
        igw_mqtt_stats_get(m, &s0);
        check(pub(&dev, topic, NULL, over, false) == 0, "device publishes %d bytes", IGW_MQTT_PAYLOAD_MAX + 1);
        check(pub(&dev, topic, NULL, at, false) == 0, "device publishes %d bytes", IGW_MQTT_PAYLOAD_MAX);
        u = next_up(5000);
        bool all_a = u && u->len == IGW_MQTT_PAYLOAD_MAX && u->payload[u->len] == 0;
        for (size_t i = 0; all_a && i < u->len; i++)
            all_a = u->payload[i] == 'a';
        check(all_a, "... the %d-byte one arrives intact (the larger one does not)", IGW_MQTT_PAYLOAD_MAX);
        if (!all_a)
            show("got", u);
        igw_mqtt_uplink_free(u);
        igw_mqtt_stats_get(m, &s1);
        check(s1.dropped_size - s0.dropped_size == 1 && s1.dropped - s0.dropped == 1,
              "... the oversize one is counted as dropped (size)");
    }

    /* ---- concurrent publishers ---- */
    {
        pthread_t th[STRESS_THREADS];
        stress_arg a[STRESS_THREADS];
        int next[STRESS_THREADS] = {0}, failed = 0, disorder = 0, strange = 0, got = 0;
        igw_mqtt_stats_get(m, &s0);
        t0 = igw_clock_ms();
        for (int k = 0; k < STRESS_THREADS; k++) {
            a[k] = (stress_arg){.m = m, .dev = &dev, .k = k};
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
        igw_mqtt_stats_get(m, &s1);
        check(failed == 0 && got == STRESS_THREADS * STRESS_EACH && strange == 0,
              "%d threads x %d QoS 1 publishes: all accepted and looped back as uplinks (%d) in %lld ms",
              STRESS_THREADS, STRESS_EACH, got, (long long)(igw_clock_ms() - t0));
        check(disorder == 0, "... each thread's messages in order");
        check(s1.out - s0.out == STRESS_THREADS * STRESS_EACH && s1.in - s0.in == STRESS_THREADS * STRESS_EACH,
              "... stats: out +%llu, in +%llu", (unsigned long long)(s1.out - s0.out),
              (unsigned long long)(s1.in - s0.in));
    }

    /* ---- persistent session: uplinks while igwd is away ---- */
    {
        bool ok = true;
        t0 = igw_clock_ms();
        igw_mqtt_stop(m);
        check(igw_clock_ms() - t0 < 1500, "stop (clean disconnect) in %lld ms", (long long)(igw_clock_ms() - t0));
        snprintf(topic, sizeof topic, "$log/up/operation/%s/%s", dev.pid, dev.dn);
        for (int i = 1; i <= 3; i++) {
            snprintf(marker, sizeof marker, "offline-%d", i);
            ok &= pub(&dev, topic, marker, NULL, false) == 0;
        }
        check(ok, "device publishes 3 QoS 1 messages while the client is stopped");
        m = start(client_id, password, err, sizeof err);
        check(m && igw_mqtt_wait_connected(m, 5000) == 0, "restart with the same client id");
        if (!m)
            return 1;
        for (int i = 1; i <= 3; i++) {
            snprintf(marker, sizeof marker, "offline-%d", i);
            u = next_up(5000);
            if (!check(up_is(u, "log", "operation", dev.pid, dev.dn, marker), "queued uplink %d delivered after the restart", i))
                show("got", u);
            igw_mqtt_uplink_free(u);
        }
    }

    /* ---- session takeover by a clean client with our id: reconnect + resubscribe ---- */
    {
        cred thief = admin;
        igw_mqtt_stats_get(m, &s0);
        snprintf(thief.client_id, sizeof thief.client_id, "%s", client_id);
        snprintf(topic, sizeof topic, "$ext/up/takeover/%s/%s", dev.pid, dev.dn);
        check(pub(&thief, topic, "takeover", NULL, false) == 0,
              "another client takes over the session with a clean one");
        int64_t end = igw_clock_ms() + 6000;
        do {
            igw_mqtt_stats_get(m, &s1);
            if (s1.reconnects > s0.reconnects && igw_mqtt_connected(m))
                break;
            sleep_ms(50);
        } while (igw_clock_ms() < end);
        check(s1.reconnects == s0.reconnects + 1 && igw_mqtt_connected(m),
              "... the client reconnects (reconnects %llu) and resubscribes", (unsigned long long)s1.reconnects);
        drain(); /* "takeover" may or may not have been delivered */
        snprintf(topic, sizeof topic, "$thing/up/property/%s/%s", dev.pid, dev.dn);
        check(pub(&dev, topic, "after-takeover", NULL, false) == 0, "device publishes again");
        u = next_up(5000);
        if (!check(up_is(u, "thing", "property", dev.pid, dev.dn, "after-takeover"),
                   "... and it is delivered (subscriptions restored)"))
            show("got", u);
        igw_mqtt_uplink_free(u);
    }

    /* ---- retained uplinks: live once, not replayed on resubscription ---- */
    {
        char relay[256];
        snprintf(topic, sizeof topic, "$thing/up/property/%s/%s", dev.pid, dev.dn);
        snprintf(relay, sizeof relay, "igw/thing/up/property/%s/%s", dev.pid, dev.dn);
        check(pub(&dev, topic, "retained-1", NULL, true) == 0, "device publishes a retained uplink");
        u = next_up(5000);
        if (!check(up_is(u, "thing", "property", dev.pid, dev.dn, "retained-1"), "... delivered live once"))
            show("got", u);
        igw_mqtt_uplink_free(u);
        /* The plugin relays without the retain flag; a retained message on
         * the relay topic itself (only igwd may publish there) is what a
         * resubscription could replay (Mosquitto 2.0.11 replays retained
         * messages to a new shared subscription, 2.0.13 and later do not). */
        check(pub(&admin, relay, "retained-relay", NULL, true) == 0, "a retained message on the relay topic");
        u = next_up(5000);
        if (!check(up_is(u, "thing", "property", dev.pid, dev.dn, "retained-relay"), "... delivered live once"))
            show("got", u);
        igw_mqtt_uplink_free(u);
        igw_mqtt_stop(m);
        m = start(client_id, password, err, sizeof err);
        check(m && igw_mqtt_wait_connected(m, 5000) == 0, "restart (resubscribes)");
        if (!m)
            return 1;
        check(pub(&dev, topic, NULL, NULL, true) == 0, "device clears its retained uplink (empty payload)");
        u = next_up(5000);
        if (!check(up_is(u, "thing", "property", dev.pid, dev.dn, ""),
                   "... that arrives as an empty payload (len 0), not the replayed retained one"))
            show("got", u);
        igw_mqtt_uplink_free(u);
        igw_mqtt_stats_get(m, &s1);
        check(s1.dropped_retained <= 1 && s1.dropped == s1.dropped_retained,
              "... a replay (%llu) is counted as dropped (retained), never delivered",
              (unsigned long long)s1.dropped_retained);
        check(pub(&admin, relay, NULL, NULL, true) == 0, "the relay topic's retained message is cleared");
        u = next_up(5000);
        if (!check(up_is(u, "thing", "property", dev.pid, dev.dn, ""), "... which arrives as an empty uplink"))
            show("got", u);
        igw_mqtt_uplink_free(u);
    }

    size_t left = drain();
    check(left == 0 && inbox.overflow == 0, "no stray uplinks (%zu)", left);
    igw_mqtt_stop(m);
    printf("mqtt_test: %d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
