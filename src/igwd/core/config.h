/* config.h - igwd settings: documented defaults, an optional `key = value`
 * file, then IGW_* environment variables (the environment wins).
 *
 * Every setting is listed once in config.c's table (key, default, help);
 * docs/configuration.md describes the same list. Unknown keys, in the file
 * or as IGW_* variables, are errors. Nothing here allocates: strings live in
 * bounded buffers inside igw_config. */
#ifndef IGW_CONFIG_H
#define IGW_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/log.h"

#define IGW_CONFIG_HOST_MAX 256  /* host names and addresses, with the NUL */
#define IGW_CONFIG_DSN_MAX 1024  /* PostgreSQL connection string, with the NUL */
#define IGW_CONFIG_PATH_MAX 1024 /* file and directory paths, with the NUL */
#define IGW_CONFIG_MAX_THREADS 256
#define IGW_CONFIG_NODE_ID_MAX 128 /* bytes of node_id */

typedef struct igw_config {
    char listen_host[IGW_CONFIG_HOST_MAX]; /* address to bind, e.g. 127.0.0.1 or :: */
    uint16_t listen_port;                  /* 0: any free port (the first worker's, shared) */
    unsigned threads;                      /* HTTP worker threads; 0 until resolved: online CPUs */
    size_t max_body;                       /* h2o's global body cap; 0 until resolved: largest route cap */
    char pg_dsn[IGW_CONFIG_DSN_MAX];       /* "" = not configured */
    char redis_host[IGW_CONFIG_HOST_MAX];  /* "" = not configured */
    uint16_t redis_port;
    char mqtt_host[IGW_CONFIG_HOST_MAX]; /* "" = not configured */
    uint16_t mqtt_port;
    char mqtt_username[IGW_CONFIG_HOST_MAX];
    char mqtt_password_file[IGW_CONFIG_PATH_MAX];
    char mqtt_client_id[IGW_CONFIG_HOST_MAX];
    unsigned device_cache_ms;  /* edge: device record reuse; login: user record reuse */
    char jwt_key_file[IGW_CONFIG_PATH_MAX]; /* "" = no login (application routes answer 503) */
    unsigned command_timeout_ms; /* a device command without reply by then fails */
    unsigned batch_max;        /* edge: uplinks per group commit */
    unsigned db_connections;   /* per worker */
    char storage_root[IGW_CONFIG_PATH_MAX];
    size_t upload_max;         /* bytes */
    char url_key_file[IGW_CONFIG_PATH_MAX]; /* "" = random per process */
    unsigned url_ttl_s;
    char public_url[IGW_CONFIG_PATH_MAX];   /* "" = path-only download URLs */
    bool bench_routes;         /* POST /bench/bare, for make bench-edge */
    bool metrics_public;       /* /metrics to any peer; false: loopback peers only */
    char console_dir[IGW_CONFIG_PATH_MAX]; /* "" = no browser console under /console/ */
    unsigned db_timeout_ms;    /* igw_db_set_deadline of every database connection */
    bool signaling_enabled; /* routes with `gate signaling` need it */
    unsigned check_timeout_ms;   /* Redis commands; probes of idle connections (readiness) */
    unsigned probe_interval_ms;  /* idle time before a connection is probed; 0: never */
    unsigned shutdown_timeout_ms; /* bound on draining in-flight requests */
    unsigned media_threads;       /* 0: no media core */
    char media_address[IGW_CONFIG_HOST_MAX];
    char media_announced_address[IGW_CONFIG_HOST_MAX]; /* "" = media_address */
    unsigned media_port_min, media_port_max;           /* 0/0 = any */
    bool     media_shared_socket;                      /* ICE-lite peers on one socket per media thread */
    unsigned media_keyframe_interval_ms;               /* PLI toward a camera at most this often */
    bool media_fault_barrier;                          /* tests: the core's track changes fail */
    bool access_log;             /* JSON lines on stderr */
    igw_log_level log_level;     /* diagnostics at this level and more severe */
    igw_log_format log_format;   /* diagnostics as text or JSON lines */
    char node_id[IGW_CONFIG_NODE_ID_MAX + 1]; /* "" = the host name and the listening port */
    unsigned node_heartbeat_ms;  /* the nodes row's heartbeat */
    unsigned node_lapse_ms;      /* another node's heartbeat older than this: its sessions end */
    unsigned invite_timeout_ms;  /* a leg's camera must offer within this */
    unsigned leg_linger_ms;      /* a shared leg without viewers stays up this long (0: ends at once) */
    unsigned establish_timeout_ms; /* a session must be established within this of its open */
    unsigned max_sessions;       /* live sessions held by this node */
    unsigned max_sessions_per_enterprise, max_sessions_per_user; /* of one enterprise, one user (0: none) */
    unsigned rights_recheck_ms;  /* the periodic check of every live session's rights */
    unsigned doorbell_ring_timeout_ms; /* a ring nobody accepted ends (noAnswer) */
    unsigned endpoint_ttl_ms;          /* an endpoint's life from its registration */
    unsigned endpoint_grace_ms;        /* transfer and orphan window after its expiry */
    unsigned message_ttl_max_ms;       /* messageSend: expiresAt at most this far ahead */
    unsigned doorbell_retention_ms;    /* a door-bell decision's retry returns its result within it */
    unsigned ai_session_max_ms;        /* an AI session's deadline after its open */
    char processor_bin[IGW_CONFIG_PATH_MAX];       /* the processor program ("": igw-proc beside igwd) */
    char translation_grammar[IGW_CONFIG_PATH_MAX]; /* its recognizer's JSGF for translation ("": none) */
    bool im_standin;             /* the stand-in IM back end is the conference runtime (with Redis) */
    unsigned im_max_groups_per_user, im_max_calls_per_user, im_max_calls_per_group; /* its bounds */
    unsigned im_heartbeat_ms;    /* a call membership lapses without a heartbeat this long */
    bool talk_enabled;           /* ipcTalk is open */
    bool talk_members;           /* Signaling.IPC.Talk.Members: interaction.join is open */
} igw_config;

/* Fills *c with the documented defaults. 0, or -1 with err if a default in
 * the table does not parse (a programming error). */
int igw_config_defaults(igw_config *c, char *err, size_t errlen);

/* Sets one setting from its text form. 0, or -1 with a message in err
 * (unknown key, or a value out of range or malformed). */
int igw_config_set(igw_config *c, const char *key, const char *value, char *err, size_t errlen);

/* Reads a settings file: `key = value` lines, blank lines and lines whose
 * first non-blank character is '#'. A key may appear once. The value is the
 * rest of the line, trimmed (no inline comments, no quoting). 0, or -1 with
 * "FILE:LINE: message" in err. */
int igw_config_load_file(igw_config *c, const char *path, char *err, size_t errlen);

/* Applies IGW_<KEY> environment variables (key upper-cased). An IGW_*
 * variable that names no setting is an error. 0, or -1 with err. */
int igw_config_load_env(igw_config *c, char *err, size_t errlen);

/* Fills the values left to the machine: threads 0 → online CPUs (at most
 * IGW_CONFIG_MAX_THREADS), max_body 0 → `largest_route_cap`. */
void igw_config_resolve(igw_config *c, size_t largest_route_cap);

/* Prints every setting with its environment variable, default and help. */
void igw_config_print_help(FILE *out);

#endif
