# igw - IoT interaction gateway. `make` builds everything into build/;
# `make test` runs every test; `make check-gen` fails on stale generated/.
# Variables: CC (cc), CLANG (clang), SAN=1 (AddressSanitizer + UBSan build).

CC      ?= cc
CLANG   ?= clang
RE2C    ?= re2c
BUILD   ?= build
O       := $(BUILD)/obj
CSTD    := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
WARN    := -Wall -Wextra -Werror
CFLAGS  ?= -O2 -g
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
ifeq ($(SAN),1)
  CFLAGS += $(SANFLAGS)
  LDFLAGS += $(SANFLAGS)
endif
ALL_CFLAGS = $(CSTD) $(WARN) $(CFLAGS)

SCHEMA      := $(sort $(wildcard schema/*.igw))
GEN_SRC     := codegen/main.c codegen/parser.c codegen/sema.c codegen/util.c codegen/ruletext.c \
               $(sort $(wildcard codegen/emit_*.c))
COMMON_SRC  := $(sort $(wildcard src/common/*.c))
GENERATED_C := $(sort $(wildcard generated/*.c))
RUNTIME_SRC := $(COMMON_SRC) $(GENERATED_C)
RT_INC      := -Isrc/common -Igenerated -Isrc/igwctl
RT_LIBS     := -lcrypto -lm
CTL_CFLAGS   = $(shell pkg-config --cflags libpq)
CTL_LIBS     = $(shell pkg-config --libs libpq)

# Debian packages the build and the tests need; `make deps` installs the
# missing ones (as root), and `make run` / `make test` call it first.
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
                iproute2 python3
DEB_NODE     := nodejs npm
# What only the benchmarks need (`make deps-bench`, run by every bench-* target):
# wrk (bench-edge), janus and gst-launch-1.0 (bench-media).
BENCH_DEB_PACKAGES := wrk janus gstreamer1.0-tools

.PHONY: test-media-unit test-media bench-media bench-srtp all deps run stop generate services-up services-down test-ops test-edge test-mqtt test-db test-upload test-redis test-app test-outbox test-pending test-ws test-devauth test-jwt test-thingmodel test-igwd test-mqttauth check-gen test test-unit test-codegen test-conformance test-json \
        test-sql test-openapi fuzz-smoke fuzz bench-decode bench-edge bench-app clean deps deps-bench check-deps
all: $(BUILD)/igw-gen $(BUILD)/igwctl $(BUILD)/igwd $(BUILD)/igw-mqtt-auth.so $(BUILD)/igw-vcam

# deb_install PACKAGES: apt-get install those not installed yet.
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

# Every header, library, program and npm module the build, tests and benchmarks
# use comes from DEB_PACKAGES/DEB_NODE/BENCH_DEB_PACKAGES or a pinned install
# (after `deps`: dpkg knows the files of installed packages only).
check-deps: deps
	src/ops/check-deps.sh

# Builds everything, starts PostgreSQL, Redis and Mosquitto under var/ and
# runs igwd in the foreground (src/ops/run.sh). Ctrl-C stops igwd.
run: deps all
	src/ops/run.sh

# Stops the local services (data under var/ is kept for the next run).
stop:
	src/ops/services.sh down

# Local PostgreSQL 15, Redis and Mosquitto under var/ (src/ops/README.md).
services-up: deps
	src/ops/services.sh up

services-down:
	src/ops/services.sh down

# ---- the generator --------------------------------------------------------
$(BUILD)/codegen/lexer.c: codegen/lexer.re
	@mkdir -p $(dir $@)
	$(RE2C) -W -i --no-generation-date --no-version $< -o $@

$(BUILD)/igw-gen: $(GEN_SRC) $(BUILD)/codegen/lexer.c $(wildcard codegen/*.h)
	$(CC) $(ALL_CFLAGS) -Icodegen -o $@ $(GEN_SRC) $(BUILD)/codegen/lexer.c $(LDFLAGS)

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

# ---- runtime and tools ----------------------------------------------------
$(BUILD)/igwctl: $(wildcard src/igwctl/*.c) $(RUNTIME_SRC) $(wildcard src/common/*.h generated/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(RT_INC) $(CTL_CFLAGS) -o $@ $(wildcard src/igwctl/*.c) $(RUNTIME_SRC) $(LDFLAGS) $(CTL_LIBS) $(RT_LIBS)

# ---- the server -------------------------------------------------------------
IGWD_SRC    := $(sort $(wildcard src/igwd/*.c))
IGWD_PKGS   := libh2o-evloop libpq hiredis libmosquitto
IGWD_CFLAGS  = -DH2O_USE_LIBUV=0 $(shell pkg-config --cflags $(IGWD_PKGS))
IGWD_LIBS    = $(shell pkg-config --libs $(IGWD_PKGS)) -lwslay -lssl -lcrypto -lpthread -lm

$(BUILD)/igwd: $(IGWD_SRC) $(RUNTIME_SRC) $(wildcard src/igwd/*.h src/common/*.h generated/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(RT_INC) $(IGWD_CFLAGS) -o $@ $(IGWD_SRC) $(RUNTIME_SRC) $(IGWD_LIBS) $(LDFLAGS)

# ---- the Mosquitto auth plugin ----------------------------------------------
# Loaded into the distribution's (unsanitized) mosquitto: never built with SAN.
MQTTAUTH_SRC    := $(sort $(wildcard src/mqttauth/*.c)) src/common/devauth.c src/common/base64.c
MQTTAUTH_CFLAGS  = $(CSTD) $(WARN) $(filter-out $(SANFLAGS),$(CFLAGS)) -fPIC -fvisibility=hidden \
                   -Isrc/common $(shell pkg-config --cflags libpq)
MQTTAUTH_LIBS    = $(shell pkg-config --libs libpq) -lcrypto

$(BUILD)/igw-mqtt-auth.so: $(MQTTAUTH_SRC) $(wildcard src/mqttauth/*.h) src/common/devauth.h src/common/base64.h
	@mkdir -p $(dir $@)
	$(CC) $(MQTTAUTH_CFLAGS) -shared -o $@ $(MQTTAUTH_SRC) $(MQTTAUTH_LIBS)

# ---- the media core (src/media: a library, no HTTP) and the virtual camera ----
MEDIA_SRC    := $(sort $(wildcard src/media/*.c))
MEDIA_PKGS   := nice libsrtp2 gio-2.0 glib-2.0 openssl
MEDIA_CFLAGS  = $(shell pkg-config --cflags $(MEDIA_PKGS)) -Isrc/media
MEDIA_LIBS    = $(shell pkg-config --libs $(MEDIA_PKGS)) -lpthread -lm
VCAM_PKGS    := gstreamer-1.0 gstreamer-webrtc-1.0 gstreamer-sdp-1.0 nice
VCAM_CFLAGS   = $(shell pkg-config --cflags $(VCAM_PKGS))
VCAM_LIBS     = $(shell pkg-config --libs $(VCAM_PKGS))

$(BUILD)/igw-vcam: $(wildcard src/vcam/*.c src/vcam/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(VCAM_CFLAGS) -o $@ $(wildcard src/vcam/*.c) $(VCAM_LIBS) $(LDFLAGS)

# ---- tests ------------------------------------------------------------------
# Test binaries always carry AddressSanitizer and UBSan: they are small and the
# point of them is to catch what a plain build would let through.
T        := $(BUILD)/tests
TFLAGS   := $(CSTD) $(WARN) -O1 -g $(SANFLAGS) $(RT_INC)
JSON_SUITE ?= tests/json/JSONTestSuite/test_parsing
FUZZ_SECONDS ?= 3

$(T)/%: tests/json/%.c tests/check.h $(COMMON_SRC) $(wildcard src/common/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TFLAGS) -o $@ $< $(COMMON_SRC) $(RT_LIBS)

$(T)/conformance-run: tests/conformance/run.c $(RUNTIME_SRC) $(wildcard src/common/*.h generated/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TFLAGS) -o $@ $< $(RUNTIME_SRC) $(RT_LIBS)

$(T)/machines-spec: tests/machines/test_spec.c tests/check.h $(RUNTIME_SRC) $(wildcard src/common/*.h generated/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TFLAGS) -o $@ $< $(RUNTIME_SRC) $(RT_LIBS)

$(T)/test_devauth: tests/devauth/test_devauth.c tests/check.h $(COMMON_SRC) $(wildcard src/common/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TFLAGS) -o $@ $< $(COMMON_SRC) $(RT_LIBS)

$(T)/test_jwt: tests/jwt/test_jwt.c tests/check.h $(COMMON_SRC) $(wildcard src/common/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TFLAGS) -o $@ $< $(COMMON_SRC) $(RT_LIBS)

$(T)/test_thingmodel: tests/thingmodel/test_thingmodel.c tests/check.h $(COMMON_SRC) $(wildcard src/common/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TFLAGS) -o $@ $< $(COMMON_SRC) $(RT_LIBS)

$(T)/igwctl: $(wildcard src/igwctl/*.c) $(RUNTIME_SRC) $(wildcard src/common/*.h generated/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TFLAGS) $(CTL_CFLAGS) -o $@ $(wildcard src/igwctl/*.c) $(RUNTIME_SRC) $(CTL_LIBS) $(RT_LIBS)

test-json: $(T)/test_scanner $(T)/test_jw $(T)/test_json_suite
	$(T)/test_scanner
	$(T)/test_jw
	$(T)/test_json_suite $(JSON_SUITE)

test-codegen: $(BUILD)/igw-gen
	tests/codegen/run.sh $(BUILD)/igw-gen

test-conformance: $(T)/conformance-run $(T)/machines-spec
	$(T)/conformance-run $(sort $(wildcard generated/conformance/*.jsonl))
	$(T)/machines-spec

$(T)/igwd: $(IGWD_SRC) $(RUNTIME_SRC) $(wildcard src/igwd/*.h src/common/*.h generated/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TFLAGS) $(IGWD_CFLAGS) -o $@ $(IGWD_SRC) $(RUNTIME_SRC) $(IGWD_LIBS)

test-igwd: $(T)/igwd
	tests/igwd/smoke.sh $(T)/igwd

$(T)/db_test: tests/igwd/db_test.c tests/check.h src/igwd/db.c src/igwd/db.h
	@mkdir -p $(dir $@)
	$(CC) $(TFLAGS) -Isrc/igwd $(IGWD_CFLAGS) -o $@ tests/igwd/db_test.c src/igwd/db.c $(IGWD_LIBS)

# igwd's PostgreSQL pipeline against a throwaway server.
test-db: $(T)/db_test
	tests/igwd/db_test.sh $(T)/db_test

$(T)/pending_test: tests/igwd/pending_test.c tests/check.h src/igwd/pending.c src/igwd/pending.h src/common/lock.h
	@mkdir -p $(dir $@)
	$(CC) $(TFLAGS) -Isrc/igwd -o $@ tests/igwd/pending_test.c src/igwd/pending.c -lpthread

$(T)/pending_test_tsan: tests/igwd/pending_test.c tests/check.h src/igwd/pending.c src/igwd/pending.h src/common/lock.h
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) -O1 -g -fsanitize=thread $(RT_INC) -Isrc/igwd -o $@ tests/igwd/pending_test.c src/igwd/pending.c -lpthread

# The map of published device commands (no services), also under ThreadSanitizer.
test-pending: $(T)/pending_test $(T)/pending_test_tsan
	$(T)/pending_test
	$(T)/pending_test_tsan

$(T)/redis_test: tests/igwd/redis_test.c tests/check.h src/igwd/redis.c src/igwd/redis.h
	@mkdir -p $(dir $@)
	$(CC) $(TFLAGS) -Isrc/igwd $(IGWD_CFLAGS) -o $@ tests/igwd/redis_test.c src/igwd/redis.c $(IGWD_LIBS)

# igwd's Redis connection against a throwaway redis-server (port 63797).
test-redis: $(T)/redis_test
	tests/igwd/redis_test.sh $(T)/redis_test

$(T)/outbox_test: tests/igwd/outbox_test.c tests/check.h src/igwd/outbox.c src/igwd/outbox.h src/igwd/db.c src/igwd/db.h \
                  src/common/base64.c generated/machines.c
	@mkdir -p $(dir $@)
	$(CC) $(TFLAGS) -Isrc/igwd $(IGWD_CFLAGS) -o $@ tests/igwd/outbox_test.c src/igwd/outbox.c src/igwd/db.c \
	    src/common/base64.c generated/machines.c $(IGWD_LIBS)

# The event outbox against a throwaway PostgreSQL with the migrations applied.
test-outbox: $(T)/outbox_test
	tests/igwd/outbox_test.sh $(T)/outbox_test

$(T)/ws_test: tests/igwd/ws_test.c tests/check.h src/igwd/ws.c src/igwd/ws.h
	@mkdir -p $(dir $@)
	$(CC) $(TFLAGS) -Isrc/igwd $(IGWD_CFLAGS) -o $@ tests/igwd/ws_test.c src/igwd/ws.c $(IGWD_LIBS)

# igw_ws (WebSocket transport) against the npm `ws` client (installed once under $(T)/ws-node).
test-ws: $(T)/ws_test
	tests/igwd/ws_test.sh $(T)/ws_test

$(T)/mqtt_test: tests/igwd/mqtt_test.c src/igwd/mqtt.c src/igwd/mqtt.h src/common/devauth.c src/common/base64.c $(wildcard src/common/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TFLAGS) -Isrc/igwd $(IGWD_CFLAGS) -o $@ tests/igwd/mqtt_test.c src/igwd/mqtt.c src/common/devauth.c src/common/base64.c $(IGWD_LIBS)

# igwd's MQTT client against the local Mosquitto with the project's plugin.
test-mqtt: $(T)/mqtt_test $(BUILD)/igw-mqtt-auth.so $(BUILD)/igwctl
	tests/igwd/mqtt_test.sh $(T)/mqtt_test $(BUILD)/igw-mqtt-auth.so

# Area B transport (login, gate, endpoints) against real services.
test-app: $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-mqtt-auth.so
	tests/igwd/app_test.sh $(T)/igwd $(BUILD)/igwctl

# Area A against real PostgreSQL, Redis and Mosquitto (own ports and var/).
test-edge: $(T)/igwd $(BUILD)/igwctl $(BUILD)/igw-mqtt-auth.so
	tests/igwd/edge_test.sh $(T)/igwd $(BUILD)/igwctl

$(T)/test_%: tests/upload/test_%.c tests/check.h $(COMMON_SRC) $(wildcard src/common/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TFLAGS) -o $@ $< $(COMMON_SRC) $(RT_LIBS)

# The upload building blocks: multipart parser, file names, signed URLs, storage.
test-upload: $(T)/test_multipart $(T)/test_filename $(T)/test_signedurl $(T)/test_storage
	$(T)/test_multipart
	$(T)/test_filename
	$(T)/test_signedurl
	$(T)/test_storage

# Media building blocks, each alone (pure functions or in-memory peers).
$(T)/media_test_sdp: tests/media/test_sdp.c tests/check.h src/media/sdp.c src/media/sdp.h
	@mkdir -p $(dir $@)
	$(CC) $(TFLAGS) -Isrc/media -o $@ tests/media/test_sdp.c src/media/sdp.c

$(T)/media_test_rtp: tests/media/test_rtp.c tests/check.h src/media/rtp.c src/media/rtp.h
	@mkdir -p $(dir $@)
	$(CC) $(TFLAGS) -Isrc/media -o $@ tests/media/test_rtp.c src/media/rtp.c

$(T)/media_test_dtls: tests/media/test_dtls.c tests/check.h src/media/dtls.c src/media/dtls.h
	@mkdir -p $(dir $@)
	$(CC) $(TFLAGS) $(MEDIA_CFLAGS) -o $@ tests/media/test_dtls.c src/media/dtls.c $(MEDIA_LIBS)

# The media core behind a JSON-lines interface: the real-peer tests' host.
MEDIA_HOST_SRC := tests/media/host.c $(MEDIA_SRC) src/common/json.c src/common/jw.c src/common/arena.c \
                  generated/machines.c
MEDIA_HOST_DEP := $(MEDIA_HOST_SRC) $(wildcard src/media/*.h src/common/*.h generated/*.h)

$(T)/igw-media-host: $(MEDIA_HOST_DEP)
	@mkdir -p $(dir $@)
	$(CC) $(TFLAGS) $(MEDIA_CFLAGS) -o $@ $(MEDIA_HOST_SRC) $(MEDIA_LIBS)

test-media-unit: $(T)/media_test_sdp $(T)/media_test_rtp $(T)/media_test_dtls
	$(T)/media_test_sdp
	$(T)/media_test_rtp
	$(T)/media_test_dtls

# The media core with real peers (tests/media/README.md): igw-vcam against
# Chromium alone, then igw-vcam -> igw-media-host (sanitizers) -> Chromium viewers.
test-media: $(T)/igw-media-host $(BUILD)/igw-vcam
	tests/media/vcam_direct.sh $(BUILD)/igw-vcam
	tests/media/media_test.sh $(T)/igw-media-host $(BUILD)/igw-vcam

test-devauth: $(T)/test_devauth
	$(T)/test_devauth

test-jwt: $(T)/test_jwt
	$(T)/test_jwt

test-thingmodel: $(T)/test_thingmodel
	$(T)/test_thingmodel tests/thingmodel/demo-model.json

test-igwctl: $(T)/igwctl
	tests/igwctl/check.sh $(T)/igwctl
	tests/igwctl/admin_test.sh $(T)/igwctl

test-sql:
	tests/sql/drift.sh

test-ops:
	tests/ops/services_test.sh

test-mqttauth: $(BUILD)/igw-mqtt-auth.so
	tests/mqttauth/plugin_test.sh $(BUILD)/igw-mqtt-auth.so

test-openapi:
	tests/openapi/run.sh

fuzz-smoke: $(T)/conformance-run
	CLANG=$(CLANG) tests/fuzz/smoke.sh $(FUZZ_SECONDS)

fuzz: $(T)/conformance-run
	CLANG=$(CLANG) tests/fuzz/smoke.sh $${FUZZ_SECONDS:-300}

# Every test; non-zero on any failure.
test: check-deps deps all check-gen test-codegen test-json test-conformance test-devauth test-jwt test-thingmodel test-upload test-igwctl test-igwd test-pending test-db test-outbox test-ws test-redis test-mqtt test-edge test-app test-sql test-ops test-mqttauth test-openapi test-media-unit test-media fuzz-smoke
	@echo "make test: all passed"

# ---- benchmark ----------------------------------------------------------------
# A benchmark, not a test: -O2 without sanitizers whatever CFLAGS/SAN say, no
# -march=native (the CI machine may differ). Needs libsimdjson-dev, libjansson-dev.
BENCH     := $(BUILD)/bench
BENCH_OPT := -O2 -g
BENCH_C   := tests/bench/bench_decode.c tests/bench/hand_validate.c

$(BENCH)/bench_simdjson.o: tests/bench/bench_simdjson.cc tests/bench/bench_simdjson.h
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 $(WARN) $(BENCH_OPT) -c -o $@ $<

$(BENCH)/bench_decode: $(BENCH_C) $(BENCH)/bench_simdjson.o $(RUNTIME_SRC) \
                       $(wildcard tests/bench/*.h src/common/*.h generated/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(BENCH_OPT) $(RT_INC) -Itests/bench -o $@ $(BENCH_C) $(RUNTIME_SRC) \
	    $(BENCH)/bench_simdjson.o -lsimdjson -ljansson -lstdc++ $(RT_LIBS)

# Durable device ingestion vs the same binary's no-database reply, with wrk.
bench-edge: deps-bench all
	tests/bench/bench_edge.sh $(BUILD)/igwd

# Area B under load: acceptance, command-to-push, pull-and-ack (node + npm ws, mqtt).
bench-app: deps-bench all $(BENCH)/igw-loadgen $(BENCH)/igw-benchdevice
	tests/bench/bench_app.sh $(BUILD)/igwd $(BENCH)/igw-loadgen $(BENCH)/igw-benchdevice

$(BENCH)/igw-loadgen: tests/bench/loadgen.c
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(BENCH_OPT) -o $@ $<

$(BENCH)/igw-benchdevice: tests/bench/device.c
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(BENCH_OPT) $$(pkg-config --cflags libmosquitto) -o $@ $< $$(pkg-config --libs libmosquitto)

$(BENCH)/igw-media-host: $(MEDIA_HOST_DEP)
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(BENCH_OPT) $(RT_INC) $(MEDIA_CFLAGS) -o $@ $(MEDIA_HOST_SRC) $(MEDIA_LIBS)

$(BENCH)/bench_srtp: tests/media/bench_srtp.c src/media/dtls.c src/media/dtls.h
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(BENCH_OPT) $(MEDIA_CFLAGS) -o $@ tests/media/bench_srtp.c src/media/dtls.c $(MEDIA_LIBS)

# Outbound SRTP protect: igw's OpenSSL path against libsrtp2 (Debian's, NSS) per profile.
bench-srtp: deps-bench $(BENCH)/bench_srtp
	$(BENCH)/bench_srtp

# The media core against Janus 1.1.2: CPU per forwarded packet, memory per viewer, loss.
bench-media: deps-bench $(BENCH)/igw-media-host
	tests/bench/bench_media.sh $(BENCH)/igw-media-host

bench-decode: deps-bench $(BENCH)/bench_decode
	$(BENCH)/bench_decode $(sort $(wildcard generated/conformance/*.jsonl))

clean:
	rm -rf $(BUILD)
