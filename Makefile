# igw - IoT interaction gateway. `make` builds everything into build/;
# `make test` runs every test (tiers: test-unit, test-services, test-media),
# then every benchmark in a tiny configuration (bench-smoke);
# `make check-gen` fails on stale generated/.
# Variables: CC (cc), CLANG (clang), SAN=1 (AddressSanitizer + UBSan build).
#
# Each source is compiled once per flavour into an object beside its path
# under $(BUILD)/<flavour>/ with its header dependencies (-MMD -MP); each
# room (src/rt, src/lib, generated, src/igwd/<room>, src/media) becomes a
# static library, and binaries link the libraries of the rooms they use, in
# dependency order (a reference against that order fails to link). Flavours:
#   obj   the binaries (CFLAGS, SAN=1 adds the sanitizers)
#   tobj  the tests' binaries (always AddressSanitizer + UBSan, -O1)
#   pic   the Mosquitto plugin (-fPIC, never sanitized)
#   bobj  the benchmarks (-O2, never sanitized)

CC      ?= cc
CLANG   ?= clang
RE2C    ?= re2c
AR      ?= ar
BUILD   ?= build
CSTD    := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
WARN    := -Wall -Wextra -Werror
CFLAGS  ?= -O2 -g
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
ifeq ($(SAN),1)
  CFLAGS += $(SANFLAGS)
  LDFLAGS += $(SANFLAGS)
endif
INC         := -Isrc/rt -Isrc/lib -Igenerated -Isrc/igwd
ALL_CFLAGS   = $(CSTD) $(WARN) $(CFLAGS)
T           := $(BUILD)/tests
# IGW_STRICT_CONTRACTS: a broken contract (a route answering an error class
# its schema does not declare) aborts, so the test that reaches it fails.
TFLAGS      := $(CSTD) $(WARN) -O1 -g $(SANFLAGS) -DIGW_STRICT_CONTRACTS
BENCH       := $(BUILD)/bench
BENCH_OPT   := -O2 -g
DEPFLAGS     = -MMD -MP

# Debian packages the build and the tests need; `make deps` installs the
# missing ones (as root), and `make run` calls it first (`make test` calls
# `make deps-bench`, which adds BENCH_DEB_PACKAGES).
# `make check-deps` (src/ops/check-deps.sh, first in `make test`) fails when a
# header, library or program the sources, tests or benchmarks use comes from a
# package missing here. DEB_NODE is installed only when no node/npm is on PATH
# (Debian's Node 18 is enough; a newer one already installed is kept).
DEB_PACKAGES := re2c clang libclang-rt-14-dev libssl-dev libsimdjson-dev libjansson-dev \
                postgresql-15 postgresql-client-15 redis-server mosquitto mosquitto-clients mosquitto-dev \
                libh2o-evloop-dev libwslay-dev libpq-dev libhiredis-dev libmosquitto-dev curl jq \
                libnice-dev libsrtp2-dev libglib2.0-dev libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev \
                libgstreamer-plugins-bad1.0-dev gstreamer1.0-nice gstreamer1.0-plugins-base \
                gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly chromium nftables \
                iproute2 python3 python3-aiortc gstreamer1.0-tools \
                pocketsphinx pocketsphinx-en-us libpocketsphinx-dev libsphinxbase-dev apertium apertium-en-es \
                espeak-ng libespeak-ng-dev gstreamer1.0-opencv opencv-data sox haproxy
DEB_NODE     := nodejs npm
# What only the benchmarks need (`make deps-bench`, run by every bench-* target
# and by `make test`, whose bench-smoke runs them all): wrk (bench-edge) and
# janus (bench-media; its gst-launch-1.0, gstreamer1.0-tools, is in
# DEB_PACKAGES: test-message makes its sounds with it too).
BENCH_DEB_PACKAGES := wrk janus

# ---- packages ------------------------------------------------------------------
PKG_IGWD  := libh2o-evloop libpq hiredis libmosquitto
PKG_MEDIA := nice libsrtp2 gio-2.0 glib-2.0 openssl
PKG_VCAM  := gstreamer-1.0 gstreamer-app-1.0 gstreamer-webrtc-1.0 gstreamer-sdp-1.0 nice libmosquitto
PKG_PROC  := gstreamer-1.0 gstreamer-app-1.0 gstreamer-rtp-1.0 gio-unix-2.0 pocketsphinx espeak-ng
# Evaluated once, when first used (pkg-config may be missing before `make deps`).
pkg_cflags = $(or $(PKGC_$1),$(eval PKGC_$1 := $(shell pkg-config --cflags $($1)))$(PKGC_$1))
pkg_libs   = $(or $(PKGL_$1),$(eval PKGL_$1 := $(shell pkg-config --libs $($1)))$(PKGL_$1))
IGWD_CFLAGS  = -DH2O_USE_LIBUV=0 $(call pkg_cflags,PKG_IGWD) -Isrc/media
IGWD_LIBS    = $(call pkg_libs,PKG_IGWD) $(call pkg_libs,PKG_MEDIA) -lwslay -lssl -lcrypto -lpthread -lm
MEDIA_CFLAGS = -Isrc/media $(call pkg_cflags,PKG_MEDIA)
MEDIA_LIBS   = $(call pkg_libs,PKG_MEDIA) -lpthread -lm
VCAM_CFLAGS  = $(call pkg_cflags,PKG_VCAM)
VCAM_LIBS    = $(call pkg_libs,PKG_VCAM)
PROC_CFLAGS  = $(call pkg_cflags,PKG_PROC)
PROC_LIBS    = $(call pkg_libs,PKG_PROC)
PQ_CFLAGS    = $(shell pkg-config --cflags libpq)
PQ_LIBS      = $(shell pkg-config --libs libpq)
RT_LIBS     := -lcrypto -lm

# ---- sources by room -------------------------------------------------------------
SCHEMA      := $(sort $(wildcard schema/*.igw))
GEN_SRC     := codegen/main.c codegen/parser.c codegen/sema.c codegen/util.c codegen/ruletext.c \
               $(sort $(wildcard codegen/emit_*.c))
RT_SRC      := $(sort $(wildcard src/rt/*.c))
LIB_SRC     := $(sort $(wildcard src/lib/*.c))
GENERATED_C := $(sort $(wildcard generated/*.c))
MEDIA_SRC   := $(sort $(wildcard src/media/*.c))
VCAM_SRC    := $(sort $(wildcard src/vcam/*.c))
PROC_SRC    := $(sort $(wildcard src/proc/*.c))
CTL_SRC     := $(sort $(wildcard src/igwctl/*.c))
# igwd's rooms in link order: each may use those after it, never one before.
IGWD_ROOMS  := routes ops edge command consent session call catalog event auth http core
IGWD_TOP    := src/igwd/main.c src/igwd/app.c

# Per-source flags, by where the source lives (GNU make pattern-specific values).
XCFLAGS :=
$(BUILD)/obj/src/igwd/%.o $(BUILD)/tobj/src/igwd/%.o $(BUILD)/bobj/src/igwd/%.o: XCFLAGS = $(IGWD_CFLAGS)
$(BUILD)/tobj/tests/igwd/%.o: XCFLAGS = $(IGWD_CFLAGS)
$(BUILD)/obj/src/igwctl/%.o $(BUILD)/tobj/src/igwctl/%.o: XCFLAGS = $(PQ_CFLAGS)
$(BUILD)/obj/src/media/%.o $(BUILD)/tobj/src/media/%.o $(BUILD)/bobj/src/media/%.o: XCFLAGS = $(MEDIA_CFLAGS)
$(BUILD)/tobj/tests/media/%.o $(BUILD)/bobj/tests/media/%.o: XCFLAGS = $(MEDIA_CFLAGS)
$(BUILD)/obj/src/vcam/%.o: XCFLAGS = $(VCAM_CFLAGS)
$(BUILD)/obj/src/proc/%.o: XCFLAGS = $(PROC_CFLAGS)
$(BUILD)/obj/codegen/%.o: XCFLAGS = -Icodegen
$(BUILD)/pic/src/mqttauth/%.o: XCFLAGS = $(PQ_CFLAGS)
$(BUILD)/bobj/tests/bench/%.o: XCFLAGS = -Itests/bench

# call.lua (the stand-in IM's Redis script) as a C string for standin.c, so
# the file Redis runs is the file a reader (and make bench-talk) sees.
$(BUILD)/gen/call_lua.h: src/igwd/call/call.lua
	@mkdir -p $(@D)
	@awk 'BEGIN { print "/* generated from src/igwd/call/call.lua by the Makefile */"; print "#define IGW_CALL_LUA \\" } \
	     { gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); printf "    \"%s\\n\" \\\n", $$0 } END { print "    \"\"" }' $< > $@.tmp && mv $@.tmp $@
$(foreach f,obj tobj bobj,$(BUILD)/$f/src/igwd/call/standin.o): $(BUILD)/gen/call_lua.h
$(BUILD)/obj/src/igwd/call/%.o $(BUILD)/tobj/src/igwd/call/%.o $(BUILD)/bobj/src/igwd/call/%.o: \
    XCFLAGS = $(IGWD_CFLAGS) -I$(BUILD)/gen

# ---- one compile rule per flavour ---------------------------------------------------
$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(INC) $(XCFLAGS) $(DEPFLAGS) -c -o $@ $<

$(BUILD)/tobj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(TFLAGS) $(INC) $(XCFLAGS) $(DEPFLAGS) -c -o $@ $<

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(filter-out $(SANFLAGS),$(CFLAGS)) -fPIC -fvisibility=hidden $(INC) $(XCFLAGS) \
	    $(DEPFLAGS) -c -o $@ $<

$(BUILD)/bobj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(BENCH_OPT) $(INC) $(XCFLAGS) $(DEPFLAGS) -c -o $@ $<

-include $(shell find $(addprefix $(BUILD)/,obj tobj pic bobj) -name '*.d' 2>/dev/null)

# ---- one static library per room and flavour ---------------------------------------
# $(call room,NAME,SOURCES): $(BUILD)/<flavour>/lib/libNAME.a for obj, tobj, bobj.
define room
ROOM_$1 := $2
$$(BUILD)/obj/lib/lib$1.a: $$(patsubst %.c,$$(BUILD)/obj/%.o,$2)
$$(BUILD)/tobj/lib/lib$1.a: $$(patsubst %.c,$$(BUILD)/tobj/%.o,$2)
$$(BUILD)/bobj/lib/lib$1.a: $$(patsubst %.c,$$(BUILD)/bobj/%.o,$2)
endef
$(eval $(call room,rt,$(RT_SRC)))
$(eval $(call room,lib,$(LIB_SRC)))
$(eval $(call room,gen,$(GENERATED_C)))
$(eval $(call room,media,$(MEDIA_SRC)))
# The generated tables that name igwd's functions (generated/igwd/, not in
# libgen, which igwctl and the tests link): each in the room that dispatches
# through it, so its references resolve within that room's library.
IGWD_GEN_routes  := generated/igwd/handlers.c
IGWD_GEN_command := generated/igwd/methods.c
IGWD_GEN_session := generated/igwd/sessions.c generated/igwd/purposes.c
$(foreach r,$(IGWD_ROOMS),$(eval $(call room,igwd_$r,$(sort $(wildcard src/igwd/$r/*.c src/igwd/$r/*/*.c)) $(IGWD_GEN_$r))))

$(BUILD)/%.a:
	@mkdir -p $(@D)
	@echo "  AR   $@" && rm -f $@ && $(AR) rcs $@ $^

# Libraries of a flavour, in link order.
libs = $(foreach l,$2,$(BUILD)/$1/lib/lib$l.a)
IGWD_LINK := $(addprefix igwd_,$(IGWD_ROOMS)) media gen lib rt

# $(call link,FLAVOUR-FLAGS,EXTRA-LIBS): links the target from its objects and libraries.
link = @mkdir -p $(@D) && echo "  LINK $@" && $(CC) $1 -o $@ $(filter %.o,$^) $(filter %.a,$^) $2

.PHONY: all deps deps-bench check-deps run stop generate check-gen services-up services-down clean \
        test test-unit test-services test-media test-layers \
        test-codegen test-json test-conformance test-devauth test-topic test-jwt test-thingmodel test-upload test-igwctl \
        test-igwd test-framing test-conn test-loop test-pending test-log test-db test-outbox test-ws test-redis test-mqtt test-edge test-app test-nodes \
        test-nodes-own test-presence test-live test-forward test-cluster test-talk test-doorbell test-message test-ai test-recordings test-sql test-console \
        test-ops test-mqttauth test-openapi test-media-unit fuzz-smoke fuzz \
        test-catalog-decide test-edge-decide test-call-decide test-routes-decide \
        bench-decode bench-edge bench-app bench-media bench-srtp bench-live bench-talk bench-recordings bench-doorbell bench-ai bench-nodes \
        bench-smoke test-build

all: $(BUILD)/igw-gen $(BUILD)/igwctl $(BUILD)/igwd $(BUILD)/igw-mqtt-auth.so $(BUILD)/igw-vcam $(BUILD)/igw-proc

# deb_install PACKAGES[,EXTRA-SHELL]: apt-get install those not installed yet.
deb_install = @missing=$$(for p in $(1); do \
	    dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	$(2) \
	if [ -n "$$(echo $$missing)" ]; then \
	    echo "$@: installing" $$missing; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

deps:
	$(call deb_install,$(DEB_PACKAGES),command -v node >/dev/null && command -v npm >/dev/null || missing="$$missing $(DEB_NODE)";)

deps-bench: deps
	$(call deb_install,$(BENCH_DEB_PACKAGES))

# Builds everything, starts PostgreSQL, Redis and Mosquitto under var/ and
# runs igwd in the foreground (src/ops/run.sh). Ctrl-C stops igwd. NODES=N:
# N igwd nodes behind HAProxy on the same URL.
run: deps all
	NODES=$(or $(NODES),1) src/ops/run.sh

# Stops the local services (data under var/ is kept for the next run).
stop:
	src/ops/services.sh down

# Local PostgreSQL 15, Redis and Mosquitto under var/ (src/ops/README.md).
services-up: deps
	src/ops/services.sh up

services-down:
	src/ops/services.sh down

# ---- the generator --------------------------------------------------------------
$(BUILD)/codegen/lexer.c: codegen/lexer.re
	@mkdir -p $(@D)
	$(RE2C) -W -i --no-generation-date --no-version $< -o $@

$(BUILD)/obj/codegen/lexer.o: $(BUILD)/codegen/lexer.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Icodegen $(DEPFLAGS) -c -o $@ $<

$(BUILD)/igw-gen: $(patsubst %.c,$(BUILD)/obj/%.o,$(GEN_SRC)) $(BUILD)/obj/codegen/lexer.o
	$(call link,$(LDFLAGS))

# Regenerates generated/ and the generated parts of docs/ from schema/.
generate: $(BUILD)/igw-gen
	$(BUILD)/igw-gen -o generated -d docs $(SCHEMA)

# Regenerates into a scratch tree and fails on any difference.
check-gen: $(BUILD)/igw-gen
	@rm -rf $(BUILD)/check-gen
	$(BUILD)/igw-gen -o $(BUILD)/check-gen/generated -d $(BUILD)/check-gen/docs $(SCHEMA)
	diff -r generated $(BUILD)/check-gen/generated
	diff $(BUILD)/check-gen/docs/api.md docs/api.md
	diff -r $(BUILD)/check-gen/docs/machines docs/machines
	@echo "check-gen: generated/ is up to date"

# ---- binaries ---------------------------------------------------------------------
$(BUILD)/igwctl: $(patsubst %.c,$(BUILD)/obj/%.o,$(CTL_SRC)) $(call libs,obj,gen lib rt)
	$(call link,$(LDFLAGS),$(PQ_LIBS) $(RT_LIBS))

$(BUILD)/igwd: $(patsubst %.c,$(BUILD)/obj/%.o,$(IGWD_TOP)) $(call libs,obj,$(IGWD_LINK))
	$(call link,$(LDFLAGS),$(IGWD_LIBS))

# Loaded into the distribution's (unsanitized) mosquitto: never built with SAN.
MQTTAUTH_SRC := $(sort $(wildcard src/mqttauth/*.c)) src/lib/devauth.c src/lib/topic.c src/rt/base64.c
$(BUILD)/igw-mqtt-auth.so: $(patsubst %.c,$(BUILD)/pic/%.o,$(MQTTAUTH_SRC))
	$(call link,-shared $(filter-out $(SANFLAGS),$(LDFLAGS)),$(PQ_LIBS) -lcrypto)

# igw-proc, the reference processor (docs/ai.md): the processor protocol's
# lines by src/lib/procline.c, written with src/rt's JSON writer.
$(BUILD)/igw-proc: $(patsubst %.c,$(BUILD)/obj/%.o,$(PROC_SRC)) $(call libs,obj,lib rt)
	$(call link,$(LDFLAGS),$(PROC_LIBS) $(RT_LIBS))

# igw-vcam signs its device credentials with src/lib/devauth.c.
$(BUILD)/igw-vcam: $(patsubst %.c,$(BUILD)/obj/%.o,$(VCAM_SRC)) $(call libs,obj,lib rt)
	$(call link,$(LDFLAGS),$(VCAM_LIBS) $(RT_LIBS))

# ---- test binaries ----------------------------------------------------------------
# Test binaries always carry AddressSanitizer and UBSan: they are small and the
# point of them is to catch what a plain build would let through.
# $(call test_bin,NAME,SOURCES,ROOMS,LDLIBS): $(T)/NAME from SOURCES' objects and the rooms' libraries.
define test_bin
TEST_BINS += $$(T)/$1
$$(T)/$1: $$(patsubst %.c,$$(BUILD)/tobj/%.o,$2) $$(call libs,tobj,$3)
	$$(call link,$$(TFLAGS),$4)
endef
$(eval $(call test_bin,json_test,tests/rt/json_test.c,rt,$$(RT_LIBS)))
$(eval $(call test_bin,jw_test,tests/rt/jw_test.c,rt,$$(RT_LIBS)))
$(eval $(call test_bin,json_suite_test,tests/rt/json_suite_test.c,rt,$$(RT_LIBS)))
$(foreach t,devauth jwt thingmodel multipart filename signedurl storage topic,\
    $(eval $(call test_bin,$t_test,tests/lib/$t_test.c,lib rt,$$(RT_LIBS))))
$(eval $(call test_bin,conformance-run,tests/conformance/run.c,gen lib rt,$$(RT_LIBS)))
$(eval $(call test_bin,machines_spec_test,tests/machines/spec_test.c,gen lib rt,$$(RT_LIBS)))
$(eval $(call test_bin,igwctl,$(CTL_SRC),gen lib rt,$$(PQ_LIBS) $$(RT_LIBS)))
$(eval $(call test_bin,igwd,$(IGWD_TOP),$(IGWD_LINK),$$(IGWD_LIBS)))
$(eval $(call test_bin,conn_test,tests/igwd/conn_test.c,igwd_core rt,$$(IGWD_LIBS)))
$(eval $(call test_bin,db_test,tests/igwd/db_test.c,igwd_core rt,$$(IGWD_LIBS)))
$(eval $(call test_bin,loop_test,tests/igwd/loop_test.c,igwd_core rt,$$(IGWD_LIBS)))
$(eval $(call test_bin,redis_test,tests/igwd/redis_test.c,igwd_core rt,$$(IGWD_LIBS)))
$(eval $(call test_bin,mqtt_test,tests/igwd/mqtt_test.c,igwd_core lib rt,$$(IGWD_LIBS)))
$(eval $(call test_bin,ws_test,tests/igwd/ws_test.c,igwd_http rt,$$(IGWD_LIBS)))
$(eval $(call test_bin,pending_test,tests/igwd/pending_test.c,igwd_command rt,-lpthread))
$(eval $(call test_bin,decide_test,tests/igwd/decide_test.c,$(IGWD_LINK),$$(IGWD_LIBS)))
$(eval $(call test_bin,log_test,tests/igwd/log_test.c,igwd_core rt,-lpthread))
$(eval $(call test_bin,outbox_test,tests/igwd/outbox_test.c,igwd_event igwd_core gen rt,$$(IGWD_LIBS)))
# The rooms' decisions without services (issue 23, item 6): each test links its room and what
# the room's objects it uses call.
$(eval $(call test_bin,catalog_decide_test,tests/igwd/catalog_decide_test.c,igwd_catalog igwd_core gen lib rt,$$(IGWD_LIBS)))
$(eval $(call test_bin,edge_decide_test,tests/igwd/edge_decide_test.c,igwd_edge gen lib rt,$$(RT_LIBS)))
# call_decide_test reads call.lua as igwd embeds it (build/gen/call_lua.h).
$(BUILD)/tobj/tests/igwd/call_decide_test.o: $(BUILD)/gen/call_lua.h
$(BUILD)/tobj/tests/igwd/call_decide_test.o: XCFLAGS = $(IGWD_CFLAGS) -I$(BUILD)/gen
$(eval $(call test_bin,call_decide_test,tests/igwd/call_decide_test.c,igwd_call gen lib rt,$$(RT_LIBS)))
$(eval $(call test_bin,routes_decide_test,tests/igwd/routes_decide_test.c,$(IGWD_LINK),$$(IGWD_LIBS)))
# The interaction.state text PostgreSQL builds (generated/igwd/state_sql.h) against the C encoder's.
$(eval $(call test_bin,state_sql_test,tests/igwd/state_sql_test.c,gen rt,$$(PQ_LIBS) $$(RT_LIBS)))
$(eval $(call test_bin,sdp_test,tests/media/sdp_test.c,media,))
$(eval $(call test_bin,rtp_test,tests/media/rtp_test.c,media,))
$(eval $(call test_bin,dtls_test,tests/media/dtls_test.c,media,$$(MEDIA_LIBS)))
$(eval $(call test_bin,stun_test,tests/media/stun_test.c,media,$$(MEDIA_LIBS)))
$(eval $(call test_bin,mux_test,tests/media/mux_test.c,media,$$(MEDIA_LIBS)))
# The media core behind a JSON-lines interface: the real-peer tests' host.
$(eval $(call test_bin,igw-media-host,tests/media/host.c,media gen rt,$$(MEDIA_LIBS)))
# A non-browser WebRTC viewer (GStreamer webrtcbin, JSON lines) for the live
# view: igw-vcam's GStreamer flags and its flat JSON reader.
# tests/media/gstpeer.c: the offer/answer over JSON lines it shares with gst_talkcam.
$(BUILD)/tobj/tests/igwd/gst_viewer.o $(BUILD)/tobj/src/vcam/webrtcbin.o $(BUILD)/tobj/tests/media/gstpeer.o: XCFLAGS = $(VCAM_CFLAGS)
$(eval $(call test_bin,gst_viewer,tests/igwd/gst_viewer.c tests/media/gstpeer.c src/vcam/flatjson.c src/vcam/webrtcbin.c,,$$(VCAM_LIBS)))
# A camera with a speaker (webrtcbin, audio sendrecv) for the talk test.
$(BUILD)/tobj/tests/media/gst_talkcam.o: XCFLAGS = $(VCAM_CFLAGS)
$(eval $(call test_bin,gst_talkcam,tests/media/gst_talkcam.c tests/media/gstpeer.c src/vcam/flatjson.c src/vcam/webrtcbin.c,,$$(VCAM_LIBS)))

# core/loop under ThreadSanitizer: threads post, the loop's thread runs.
$(T)/loop_test_tsan: tests/igwd/loop_test.c src/igwd/core/loop.c src/igwd/core/loop.h tests/check.h src/rt/lock.h
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) -O1 -g -fsanitize=thread $(INC) $(IGWD_CFLAGS) -o $@ tests/igwd/loop_test.c \
	    src/igwd/core/loop.c $(call pkg_libs,PKG_IGWD) -lssl -lcrypto -lpthread

# The map of published device commands under ThreadSanitizer (not with ASan).
$(T)/pending_test_tsan: tests/igwd/pending_test.c src/igwd/command/pending.c tests/check.h \
                        src/igwd/command/pending.h src/rt/lock.h
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) -O1 -g -fsanitize=thread $(INC) -o $@ tests/igwd/pending_test.c \
	    src/igwd/command/pending.c -lpthread

# ---- tests --------------------------------------------------------------------------
JSON_SUITE ?= tests/rt/JSONTestSuite/test_parsing
FUZZ_SECONDS ?= 3

# Every header, library, program and npm module the build, tests and benchmarks
# use comes from DEB_PACKAGES/DEB_NODE/BENCH_DEB_PACKAGES or a pinned install
# (after `deps`: dpkg knows the files of installed packages only).
check-deps: deps
	src/ops/check-deps.sh

# The rooms' dependencies point one way and the transport knows no route.
test-layers:
	tests/layers.sh

test-json: $(T)/json_test $(T)/jw_test $(T)/json_suite_test
	$(T)/json_test
	$(T)/jw_test
	$(T)/json_suite_test $(JSON_SUITE)

test-codegen: $(BUILD)/igw-gen
	tests/codegen/run.sh $(BUILD)/igw-gen

test-conformance: $(T)/conformance-run $(T)/machines_spec_test
	$(T)/conformance-run $(sort $(wildcard generated/conformance/*.jsonl))
	$(T)/machines_spec_test

test-devauth: $(T)/devauth_test
	$(T)/devauth_test

# The device MQTT topic grammar (parse and build), shared by igwd and the auth plugin.
test-topic: $(T)/topic_test
	$(T)/topic_test

test-jwt: $(T)/jwt_test
	$(T)/jwt_test

test-thingmodel: $(T)/thingmodel_test
	$(T)/thingmodel_test tests/lib/demo-model.json

# The upload building blocks: multipart parser, file names, signed URLs, storage.
test-upload: $(T)/multipart_test $(T)/filename_test $(T)/signedurl_test $(T)/storage_test
	$(T)/multipart_test
	$(T)/filename_test
	$(T)/signedurl_test
	$(T)/storage_test

# The connection supervisor of PostgreSQL and Redis (a real h2o loop, no server).
test-conn: $(T)/conn_test
	$(T)/conn_test

# A thread running one event loop, posted to from others (no services), also under ThreadSanitizer.
test-loop: $(T)/loop_test $(T)/loop_test_tsan
	LSAN_OPTIONS=suppressions=tests/lsan.supp:print_suppressions=0 $(T)/loop_test
	$(T)/loop_test_tsan

# The map of published device commands (no services), also under ThreadSanitizer.
# The session engine's decisions on the schema's purposes table, without services.
test-decide: $(T)/decide_test
	$(T)/decide_test

test-pending: $(T)/pending_test $(T)/pending_test_tsan
	$(T)/pending_test
	$(T)/pending_test_tsan

# igwd's logger: line formats, escaping, bounds, levels, whole lines from several threads.
test-log: $(T)/log_test
	$(T)/log_test

# The recordings catalog's check of a camera's report (no services).
test-catalog-decide: $(T)/catalog_decide_test
	$(T)/catalog_decide_test

# The edge's decisions: the gateway rule, credentials, replies, the batch, presence facts (no services).
test-edge-decide: $(T)/edge_decide_test
	$(T)/edge_decide_test

# The conference runtime's decisions against call.lua's words and bounds, and its routes' contracts (no services).
test-call-decide: $(T)/call_decide_test
	$(T)/call_decide_test

# The routes' answers to the domains' results and their requests' translations, against each route's
# declared error classes (no services).
test-routes-decide: $(T)/routes_decide_test
	$(T)/routes_decide_test

# Media building blocks, each alone (pure functions or in-memory peers).
test-media-unit: $(T)/sdp_test $(T)/rtp_test $(T)/dtls_test $(T)/stun_test $(T)/mux_test
	$(T)/sdp_test
	$(T)/rtp_test
	$(T)/dtls_test
	$(T)/stun_test
	$(T)/mux_test

fuzz-smoke: $(T)/conformance-run
	CLANG=$(CLANG) tests/fuzz/run.sh --seconds $(FUZZ_SECONDS)

fuzz: $(T)/conformance-run
	CLANG=$(CLANG) tests/fuzz/run.sh --runs $${FUZZ_RUNS:-10000000} $(FUZZ_TARGETS)

test-openapi:
	tests/openapi/run.sh

# -- with services (each test starts its own PostgreSQL, Redis, Mosquitto on free ports)
test-igwctl: $(T)/igwctl
	tests/igwctl/check.sh $(T)/igwctl
	tests/igwctl/admin_test.sh $(T)/igwctl

test-igwd: $(T)/igwd
	tests/igwd/smoke.sh $(T)/igwd

# Request framing over raw sockets (issue 14): smuggling, Host, duplicate singleton headers.
test-framing: $(T)/igwd
	tests/igwd/framing_test.sh $(T)/igwd

# igwd's PostgreSQL pipeline against a throwaway server.
test-db: $(T)/db_test
	tests/igwd/db_test.sh $(T)/db_test

# The event outbox against a throwaway PostgreSQL with the migrations applied; then the
# interaction.state events built in SQL (IGW_SQL_STATE_EVENTS) against the C encoder.
test-outbox: $(T)/outbox_test $(T)/state_sql_test
	tests/igwd/outbox_test.sh $(T)/outbox_test
	tests/igwd/outbox_test.sh $(T)/state_sql_test

# igw_ws (WebSocket transport) against the npm `ws` client (installed once under $(T)/ws-node).
test-ws: $(T)/ws_test
	tests/igwd/ws_test.sh $(T)/ws_test

# igwd's Redis connection against a throwaway redis-server (port 63797).
test-redis: $(T)/redis_test
	tests/igwd/redis_test.sh $(T)/redis_test

# igwd's MQTT client against the local Mosquitto with the project's plugin.
test-mqtt: $(T)/mqtt_test $(BUILD)/igw-mqtt-auth.so $(BUILD)/igwctl
	tests/igwd/mqtt_test.sh $(T)/mqtt_test $(BUILD)/igw-mqtt-auth.so

# Area B transport (login, gate, endpoints) against real services.
test-app: $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-mqtt-auth.so
	tests/igwd/app_test.sh $(T)/igwd $(BUILD)/igwctl

# The recordings catalog against real PostgreSQL (its writer, the cameras' reports, and
# /recordings/query), then recordPlayback end to end: igw-vcam recording and
# playing back, Chromium viewers through the public API (issue 17).
test-recordings: $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-mqtt-auth.so $(BUILD)/igw-vcam
	tests/igwd/recordings_test.sh $(T)/igwd $(BUILD)/igwctl
	tests/igwd/playback_test.sh $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-vcam

# The conference runtime (the stand-in IM's groups and calls) and
# /talk/audio-access against real PostgreSQL and Redis; then ipcTalk end to
# end with real audio: Chromium members, igw-vcam's speaker (issue 16).
test-talk: $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-mqtt-auth.so $(BUILD)/igw-vcam
	tests/igwd/talk_test.sh $(T)/igwd $(BUILD)/igwctl
	tests/igwd/talk_media.sh $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-vcam

# The door-bell end to end: igw-vcam rings, Chromium answers, the others
# are answered elsewhere; the first-accept race (issue 25).
test-doorbell: $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-mqtt-auth.so $(BUILD)/igw-vcam
	tests/igwd/doorbell_test.sh $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-vcam

# messageSend end to end: audio uploads, igw-vcam fetching and playing a
# voice message, expiry, the offline camera's get.
test-message: $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-mqtt-auth.so $(BUILD)/igw-vcam
	tests/igwd/message_test.sh $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-vcam

# AI sessions and vision consents (issue 27; docs/ai.md): the reference
# processor looks at a real picture with faces, scikit-image's astronaut
# (the file alone, out of Debian's python3-skimage package).
test-ai: $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-mqtt-auth.so $(BUILD)/igw-vcam $(BUILD)/igw-proc $(BUILD)/testdata/astronaut.png
	tests/igwd/ai_test.sh $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-vcam $(BUILD)/igw-proc $(BUILD)/testdata/astronaut.png

$(BUILD)/testdata/astronaut.png:
	@mkdir -p $(@D)/deb
	@cd $(@D)/deb && { apt-get download python3-skimage >/dev/null 2>&1 || \
	    { apt-get update -qq && apt-get download python3-skimage >/dev/null; }; } && \
	    dpkg-deb -x python3-skimage_*.deb x && cp x/usr/lib/python3/dist-packages/skimage/data/astronaut.png ../ && \
	    cd .. && rm -rf deb

# PostgreSQL and Redis frozen under a running igwd: answers within the
# deadline, /readyz down by the probes, recovery after they resume.
test-deadline: $(T)/igwd
	tests/igwd/deadline_test.sh $(T)/igwd

# Area A against real PostgreSQL, Redis and Mosquitto (own ports and var/).
test-edge: $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-mqtt-auth.so
	tests/igwd/edge_test.sh $(T)/igwd $(BUILD)/igwctl

# Two igwd nodes on one broker: each MQTT uplink stored exactly once, both take part.
test-nodes: $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-mqtt-auth.so
	tests/igwd/nodes_test.sh $(T)/igwd $(BUILD)/igwctl

# igwd as a node: the nodes row and its epoch, the heartbeat and its fence, the
# sweep of the sessions of a restarted or lapsed owner with their events.
test-nodes-own: $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-mqtt-auth.so
	tests/igwd/nodes_own_test.sh $(T)/igwd $(BUILD)/igwctl

# Device presence from the broker: the auth plugin's facts into devices.online
# (connect, disconnect, SIGKILL, keepalive, takeover, forgery, broker restart).
test-presence: $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-mqtt-auth.so
	tests/igwd/presence_test.sh $(T)/igwd $(BUILD)/igwctl

# A camera's capability report whoever was subscribed when it went: igw-vcam
# before igwd, a broker restart, a camera asked for it (issue 24, item 3).
test-report: $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-mqtt-auth.so $(BUILD)/igw-vcam
	tests/igwd/report_test.sh $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-vcam

# The browser console (console/) served by igwd, in headless Chromium against real services.
test-console: $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-mqtt-auth.so $(BUILD)/igw-vcam
	tests/console/console_test.sh $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-vcam

test-sql:
	tests/sql/drift.sh

# services.sh alone; then run.sh as `make run` runs it (the -O2 build): the
# camera's lifetime, one camera per run, provisioning (tests/ops/run_test.sh).
test-ops: $(BUILD)/igwd $(BUILD)/igwctl $(BUILD)/igw-vcam $(BUILD)/igw-mqtt-auth.so
	tests/ops/services_test.sh
	tests/ops/run_test.sh

test-mqttauth: $(BUILD)/igw-mqtt-auth.so
	tests/mqttauth/plugin_test.sh $(BUILD)/igw-mqtt-auth.so

# -- with real media peers (tests/media/README.md): igw-vcam against Chromium alone,
# then igw-vcam -> igw-media-host (sanitizers) -> Chromium viewers, then igw-vcam
# as an MQTT device (Mosquitto on 18901) whose legs igw-media-host answers.
test-media: $(T)/igw-media-host $(BUILD)/igw-vcam $(T)/gst_talkcam
	tests/media/vcam_direct.sh $(BUILD)/igw-vcam
	tests/media/media_test.sh $(T)/igw-media-host $(BUILD)/igw-vcam
	tests/media/talk_test.sh $(T)/igw-media-host $(T)/gst_talkcam
	tests/media/vcam_mqtt.sh $(T)/igw-media-host $(BUILD)/igw-vcam

# IPC live view through the public API: igw-vcam on the broker, igwd's
# session engine (sanitizers), Chromium viewers (tests/igwd/live_test.mjs), then
# GStreamer's webrtcbin as the viewer (tests/igwd/live_gst.mjs, $(T)/gst_viewer).
test-live: $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-mqtt-auth.so $(BUILD)/igw-vcam $(T)/gst_viewer
	tests/igwd/live_test.sh $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-vcam $(T)/gst_viewer

# Two nodes on one PostgreSQL (issue 28): a live view opened on node A and
# driven through node B, which forwards every command to A.
test-forward: $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-mqtt-auth.so $(BUILD)/igw-vcam
	tests/igwd/forward_test.sh $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-vcam

# Three nodes behind HAProxy (services.sh balancer-up), as make run NODES=3:
# a live view through the balancer, kill -9 of a session's node under a load
# of uplinks and commands, nothing acknowledged lost (tests/igwd/cluster_test.sh).
test-cluster: $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-mqtt-auth.so $(BUILD)/igw-vcam
	tests/igwd/cluster_test.sh $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-vcam

# The tiers: no services, real services, real media peers (fuzz-smoke, a few
# seconds per decoder plus its clang builds, runs in `make test` beside them).
test-unit: check-gen test-layers test-codegen test-json test-conformance test-devauth test-topic test-jwt test-thingmodel \
           test-upload test-conn test-loop test-pending test-decide test-log test-media-unit test-openapi \
           test-catalog-decide test-edge-decide test-call-decide test-routes-decide
test-services: test-igwctl test-igwd test-framing test-deadline test-db test-outbox test-ws test-redis test-mqtt test-edge test-app test-nodes \
               test-nodes-own test-presence test-report test-talk test-doorbell test-message test-ai test-recordings test-console test-sql test-ops \
               test-mqttauth

# Every test, then every benchmark in a tiny configuration (bench-smoke, in a
# make of its own: never beside the tests, whatever -j says); non-zero on any
# failure. `make deps-bench` (deps and the benchmarks' packages) first, in a
# make of its own: the rest of the build reads pkg-config, which a fresh
# machine gets from it.
# The tests' and benchmarks' databases are thrown away: initdb need not sync them.
test test-% fuzz-smoke bench-%: export IGW_PG_NOSYNC = 1

# What the tests run, built first with a job per core: a fresh clone
# compiles for minutes, three flavours of most sources (the tests' sanitized
# build, the programs, the benchmarks'); the tests themselves then run one at
# a time. A binary missing from the list is only built later, serially.
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
test-build: all $(TEST_BINS) $(T)/loop_test_tsan $(T)/pending_test_tsan \
            $(addprefix $(BENCH)/,bench_decode bench_srtp igwd igw-media-host igw-live-viewers igw-loadgen \
                                  igw-benchdevice igw-talkload igw-recload igw-recordings-sql)

test: deps-bench
	$(MAKE) --no-print-directory check-deps
	$(MAKE) --no-print-directory -j$(TEST_JOBS) test-build
	$(MAKE) --no-print-directory all test-unit fuzz-smoke test-services test-media test-live test-forward test-cluster
	$(MAKE) --no-print-directory bench-smoke
	@echo "make test: all passed"

# ---- benchmarks ----------------------------------------------------------------------
# Not tests: -O2 without sanitizers whatever CFLAGS/SAN say, no -march=native
# (the CI machine may differ).
$(BENCH)/bench_simdjson.o: tests/bench/bench_simdjson.cc tests/bench/bench_simdjson.h
	@mkdir -p $(@D)
	$(CXX) -std=c++17 $(WARN) $(BENCH_OPT) -c -o $@ $<

$(BENCH)/bench_decode: $(BUILD)/bobj/tests/bench/bench_decode.o $(BUILD)/bobj/tests/bench/hand_validate.o \
                       $(BENCH)/bench_simdjson.o $(call libs,bobj,gen lib rt)
	@mkdir -p $(@D)
	$(CC) -o $@ $(filter %.o,$^) $(filter %.a,$^) -lsimdjson -ljansson -lstdc++ $(RT_LIBS)

$(BENCH)/igw-loadgen: $(BUILD)/bobj/tests/bench/loadgen.o $(BUILD)/bobj/tests/bench/httpload.o
	$(call link,,)

# /talk/audio-access sets at a fixed rate, each a real change; also call.lua's
# audio_set by EVALSHA on Redis (hiredis's formatter and reader only).
$(BENCH)/igw-talkload: $(BUILD)/bobj/tests/bench/talk_load.o $(BUILD)/bobj/tests/bench/httpload.o
	$(call link,,$(shell pkg-config --libs hiredis))

# /recordings/query at a fixed rate, random cameras and windows, every answer checked
# (the runtime's JSON scanner).
$(BENCH)/igw-recload: $(BUILD)/bobj/tests/bench/rec_load.o $(BUILD)/bobj/tests/bench/httpload.o $(call libs,bobj,rt)
	$(call link,,$(RT_LIBS))
# The statement catalog/recordings.c prepares, printed from that file compiled in
# whole: bench-recordings's SQL reference runs igwd's text, not a copy.
$(BUILD)/bobj/tests/bench/recordings_sql.o: XCFLAGS = -Itests/bench $(IGWD_CFLAGS)
$(BENCH)/igw-recordings-sql: $(BUILD)/bobj/tests/bench/recordings_sql.o $(call libs,bobj,igwd_core rt)
	$(call link,,$(IGWD_LIBS))
$(BUILD)/bobj/tests/bench/device.o: XCFLAGS = $(shell pkg-config --cflags libmosquitto)
$(BENCH)/igw-benchdevice: $(BUILD)/bobj/tests/bench/device.o
	$(call link,,$(shell pkg-config --libs libmosquitto))

$(BENCH)/igw-media-host: $(BUILD)/bobj/tests/media/host.o $(call libs,bobj,media gen rt)
	$(call link,,$(MEDIA_LIBS))

$(BENCH)/bench_srtp: $(BUILD)/bobj/tests/media/bench_srtp.o $(call libs,bobj,media)
	$(call link,,$(MEDIA_LIBS))

# igwd as the benchmarks build their binaries (-O2, never sanitized).
$(BENCH)/igwd: $(patsubst %.c,$(BUILD)/bobj/%.o,$(IGWD_TOP)) $(call libs,bobj,$(IGWD_LINK))
	$(call link,,$(IGWD_LIBS))

# The live-view load client: N recvonly WebRTC viewers on the media library's peer (full ICE).
$(BENCH)/igw-live-viewers: $(BUILD)/bobj/tests/bench/live_viewers.o $(call libs,bobj,media gen rt)
	$(call link,,$(MEDIA_LIBS))
$(BUILD)/bobj/tests/bench/live_viewers.o: XCFLAGS = -Itests/bench $(MEDIA_CFLAGS)

bench-decode: deps-bench $(BENCH)/bench_decode
	$(BENCH)/bench_decode $(sort $(wildcard generated/conformance/*.jsonl))

# Durable device ingestion vs the same binary's no-database reply, with wrk.
bench-edge: deps-bench all
	tests/bench/bench_edge.sh $(BUILD)/igwd

# Area B under load: acceptance, command-to-push, pull-and-ack (node + npm ws, mqtt).
bench-app: deps-bench all $(BENCH)/igw-loadgen $(BENCH)/igw-benchdevice
	tests/bench/bench_app.sh $(BUILD)/igwd $(BENCH)/igw-loadgen $(BENCH)/igw-benchdevice

# Outbound SRTP protect: igw's OpenSSL path against libsrtp2 (Debian's, NSS) per profile
# (SRTP_PACKETS per round, default 200000).
bench-srtp: deps-bench $(BENCH)/bench_srtp
	$(BENCH)/bench_srtp $${SRTP_PACKETS:-200000}

# The media core against Janus 1.1.2: CPU per forwarded packet, memory per viewer, loss.
bench-media: deps-bench $(BENCH)/igw-media-host
	tests/bench/bench_media.sh $(BENCH)/igw-media-host

# Live view through igwd's public API: open-to-first-frame (Chromium), 100
# viewers on one camera (igw-live-viewers), igwd's CPU per forwarded packet
# beside the library alone (bench-media's igw setup) in the same run.
bench-live: deps-bench all $(BENCH)/igwd $(BENCH)/igw-media-host $(BENCH)/igw-live-viewers
	tests/bench/bench_live.sh $(BENCH)/igwd $(BUILD)/igwctl $(BUILD)/igw-vcam $(BENCH)/igw-media-host \
	    $(BENCH)/igw-live-viewers

# Several nodes (issue 28): a command on a node that does not hold its
# session against the same command on its owner, kill -9 of a live view's
# node to a new view's first frame, what is lost meanwhile, commands per
# second over 1, 2, 3 nodes (tests/bench/bench_nodes.sh).
bench-nodes: deps-bench all $(BENCH)/igwd
	tests/bench/bench_nodes.sh $(BENCH)/igwd $(BUILD)/igwctl $(BUILD)/igw-vcam

# The door-bell (issue 25): ring to the ringing event at 10 endpoints, accept
# to the first frame in Chromium, 200 rings raced by three accepts each.
bench-doorbell: deps-bench all $(BENCH)/igwd
	tests/bench/bench_doorbell.sh $(BENCH)/igwd $(BUILD)/igwctl $(BUILD)/igw-vcam

# AI sessions (issue 27): a vision consent's creation, the revoke to the last
# frame, a processor's frame take, speech to translated caption (bench_ai.sh).
bench-ai: deps-bench all $(BENCH)/igwd
	tests/bench/bench_ai.sh $(BENCH)/igwd $(BUILD)/igwctl $(BUILD)/igw-vcam $(BUILD)/igw-proc

# The conference audio permission (issue 16): /talk/audio-access set and read at
# 1000/s on a live call, beside call.lua's bare EVALSHA at the same rate; then
# the time from a mute to the member's last forwarded packet (talk_mute.sh).
bench-talk: deps-bench all $(BENCH)/igwd $(BENCH)/igw-talkload
	IGWCTL_BIN=$(BUILD)/igwctl VCAM_BIN=$(BUILD)/igw-vcam tests/bench/bench_talk.sh $(BENCH)/igwd $(BENCH)/igw-talkload

# Recordings (issue 17, section 5): /recordings/query over 1 000 000 catalog rows
# at a fixed rate, beside the statement's own execution time in PostgreSQL
# (EXPLAIN ANALYZE of the same parameters) and igwd's no-database reply
# (igw-loadgen) in the same run; then recordPlayback of igw-vcam's recordings in
# Chromium, play to first frame, beside live views of the same camera.
bench-recordings: deps-bench all $(BENCH)/igwd $(BENCH)/igw-recload $(BENCH)/igw-recordings-sql $(BENCH)/igw-loadgen
	tests/bench/bench_recordings.sh $(BENCH)/igwd $(BENCH)/igw-recload $(BENCH)/igw-recordings-sql $(BENCH)/igw-loadgen \
	    $(BUILD)/igwctl $(BUILD)/igw-vcam

# Every bench-* target above, one after the other, in a tiny configuration
# (tests/bench/smoke.sh: the same code paths, seconds each, no thresholds):
# fails when one fails or prints no RESULT line, then lists their RESULT lines.
# Part of `make test`: the benchmarks cannot rot.
bench-smoke: deps-bench
	MAKE="$(MAKE)" tests/bench/smoke.sh

clean:
	rm -rf $(BUILD)
