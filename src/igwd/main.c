/* main.c - igwd: the igw server.
 *
 * igwd [-c FILE]: loads the settings (defaults, then FILE, then IGW_*
 * variables), binds the listeners, starts the workers and waits for
 * SIGTERM or SIGINT, then stops accepting, lets in-flight requests finish
 * (bounded by shutdown_timeout_ms) and exits 0. */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "app.h"
#include "core/config.h"
#include "core/log.h"
#include "http/http.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: igwd [-c FILE]\n"
                 "  -c FILE   read settings from FILE (key = value lines, # comments)\n"
                 "  --help    show this help\n"
                 "Environment variables IGW_<KEY> override the file.\n\n");
    igw_config_print_help(out);
}

static size_t largest_route_cap(void)
{
    size_t cap = 0;
    for (unsigned i = 0; i < IGW_ROUTE__COUNT; i++)
        if (igw_routes[i].body_limit > cap)
            cap = igw_routes[i].body_limit;
    return cap;
}

int main(int argc, char **argv)
{
    const char *file = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "-c") == 0 && i + 1 < argc && !file) {
            file = argv[++i];
            continue;
        }
        /* Command-line usage, not a diagnostic: plain text for the person typing. */
        fprintf(stderr, "igwd: unexpected argument \"%s\"\n", argv[i]);
        usage(stderr);
        return 2;
    }

    igw_config cfg;
    char err[1024];
    if (igw_config_defaults(&cfg, err, sizeof err) || (file && igw_config_load_file(&cfg, file, err, sizeof err)) ||
        igw_config_load_env(&cfg, err, sizeof err)) {
        igw_log(IGW_LOG_ERROR, NULL, "config: %s", err); /* the logger's defaults: text, fd 2 */
        return 2;
    }
    igw_config_resolve(&cfg, largest_route_cap());
    igw_log_setup(cfg.log_level, cfg.log_format, 2);

    /* Signals are taken synchronously by this thread (sigwait); the
     * workers inherit the blocked mask. A closed peer must not kill us. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    struct sigaction ign = {.sa_handler = SIG_IGN};
    sigemptyset(&ign.sa_mask);
    int e = pthread_sigmask(SIG_BLOCK, &stop, NULL);
    if (e || sigaction(SIGPIPE, &ign, NULL)) {
        igw_log(IGW_LOG_ERROR, NULL, "cannot set up signals: %s", strerror(e ? e : 1));
        return 1;
    }

    static igw_app app; /* outlives the workers */
    if (igw_app_init(&app, &cfg, err, sizeof err)) {
        igw_log(IGW_LOG_ERROR, NULL, "%s", err);
        return 1;
    }
    igw_http_app hooks = igw_app_http_hooks(&app);
    igw_server *srv = igw_http_create(&cfg, &hooks, err, sizeof err);
    if (!srv) {
        igw_log(IGW_LOG_ERROR, NULL, "%s", err);
        igw_app_free(&app);
        return 1;
    }
    int rc = 0;
    if (igw_app_start_engine(&app, srv, err, sizeof err) || igw_http_start(srv, err, sizeof err) ||
        igw_app_start_mqtt(&app, srv, err, sizeof err)) {
        igw_log(IGW_LOG_ERROR, NULL, "%s", err);
        rc = 1;
    } else {
        const char *h = cfg.listen_host;
        bool v6 = strchr(h, ':') != NULL;
        printf("igwd: listening on http://%s%s%s:%u (%u threads)\n", v6 ? "[" : "", h, v6 ? "]" : "",
               (unsigned)igw_http_port(srv), cfg.threads);
        fflush(stdout);
        int sig = 0;
        while (sigwait(&stop, &sig) != 0)
            ;
        printf("igwd: %s received, draining (up to %u ms)\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
               cfg.shutdown_timeout_ms);
        fflush(stdout);
    }
    /* No more uplinks are read; the workers drain connections and uplinks
     * (replies still go out); then the MQTT client stops; destroy fails
     * whatever the deadline left. */
    igw_app_pause_mqtt(&app);
    igw_http_stop(srv);
    if (igw_http_join(srv)) {
        igw_log(IGW_LOG_WARN, NULL, "connections still open at the shutdown deadline were dropped");
    }
    igw_app_stop_mqtt(&app);
    igw_app_stop_engine(&app);
    igw_http_destroy(srv);
    igw_app_free(&app);
    if (rc == 0) {
        printf("igwd: stopped\n");
        fflush(stdout);
    }
    return rc;
}
