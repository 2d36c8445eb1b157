/* ready.c - see ready.h. */
#include "core/ready.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <libpq-fe.h>

#include "clock.h"

/* Waits for `events` on fd until deadline; 1 ready, 0 timeout, -1 error. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - igw_clock_ms();
        if (left <= 0)
            return 0;
        struct pollfd p = {.fd = fd, .events = events};
        int rc = poll(&p, 1, (int)left);
        if (rc < 0 && errno == EINTR)
            continue;
        return rc < 0 ? -1 : rc > 0 ? 1 : 0;
    }
}

/* 0 when a TCP connection to host:port completes before the timeout. */
static int probe_tcp(const char *host, unsigned port, unsigned timeout_ms)
{
    int64_t deadline = igw_clock_ms() + timeout_ms;
    char service[8];
    snprintf(service, sizeof service, "%u", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    if (getaddrinfo(host, service, &hints, &res) != 0)
        return -1;
    int ok = -1;
    for (struct addrinfo *ai = res; ai && ok != 0; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0)
            continue;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            ok = 0;
        } else if (errno == EINPROGRESS && wait_fd(fd, POLLOUT, deadline) == 1) {
            int soerr = 0;
            socklen_t sl = sizeof soerr;
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0)
                ok = 0;
        }
        close(fd);
    }
    freeaddrinfo(res);
    return ok;
}

/* 0 when a connection with the DSN completes before the timeout. Stricter
 * than PQping (which calls a server that refuses our credentials "up"):
 * igwd needs a working login. */
static int probe_postgres(const char *dsn, unsigned timeout_ms)
{
    int64_t deadline = igw_clock_ms() + timeout_ms;
    const char *const keys[] = {"dbname", NULL};
    const char *const values[] = {dsn, NULL};
    PGconn *conn = PQconnectStartParams(keys, values, 1);
    if (!conn)
        return -1;
    int ok = -1;
    if (PQstatus(conn) != CONNECTION_BAD) {
        PostgresPollingStatusType st = PGRES_POLLING_WRITING;
        for (;;) {
            if (st == PGRES_POLLING_OK) {
                ok = 0;
                break;
            }
            if (st == PGRES_POLLING_FAILED)
                break;
            int fd = PQsocket(conn);
            if (fd < 0 || wait_fd(fd, st == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline) != 1)
                break;
            st = PQconnectPoll(conn);
        }
    }
    PQfinish(conn);
    return ok;
}

/* 0 when Redis answers PING with PONG before the timeout. */
static int probe_redis(const char *host, unsigned port, unsigned timeout_ms)
{
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    redisContext *rc = redisConnectWithTimeout(host, (int)port, tv);
    if (!rc)
        return -1;
    int ok = -1;
    if (!rc->err && redisSetTimeout(rc, tv) == REDIS_OK) {
        redisReply *reply = redisCommand(rc, "PING");
        if (reply && reply->type == REDIS_REPLY_STATUS && reply->str && strcmp(reply->str, "PONG") == 0)
            ok = 0;
        if (reply)
            freeReplyObject(reply);
    }
    redisFree(rc);
    return ok;
}

unsigned igw_ready_check(const igw_config *c, unsigned known)
{
    unsigned down = 0;
    if (!(known & IGW_READY_POSTGRES) && (!c->pg_dsn[0] || probe_postgres(c->pg_dsn, c->check_timeout_ms)))
        down |= IGW_READY_POSTGRES;
    if (!(known & IGW_READY_REDIS) &&
        (!c->redis_host[0] || probe_redis(c->redis_host, c->redis_port, c->check_timeout_ms)))
        down |= IGW_READY_REDIS;
    if (!(known & IGW_READY_MQTT) && (!c->mqtt_host[0] || probe_tcp(c->mqtt_host, c->mqtt_port, c->check_timeout_ms)))
        down |= IGW_READY_MQTT;
    return down;
}

const char *igw_ready_name(unsigned bit)
{
    switch (bit) {
    case IGW_READY_POSTGRES: return "postgres";
    case IGW_READY_REDIS: return "redis";
    case IGW_READY_MQTT: return "mqtt";
    default: return "unknown";
    }
}
