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
GEN_SRC     := codegen/main.c codegen/parser.c codegen/sema.c codegen/util.c \
               $(sort $(wildcard codegen/emit_*.c))
COMMON_SRC  := $(sort $(wildcard src/common/*.c))
GENERATED_C := $(sort $(wildcard generated/*.c))
RUNTIME_SRC := $(COMMON_SRC) $(GENERATED_C)
RT_INC      := -Isrc/common -Igenerated -Isrc/igwctl

.PHONY: all generate check-gen test test-unit test-codegen test-conformance test-json \
        test-sql test-openapi fuzz-smoke fuzz bench-decode clean deps
all: $(BUILD)/igw-gen $(BUILD)/igwctl

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
	$(CC) $(ALL_CFLAGS) $(RT_INC) -o $@ $(wildcard src/igwctl/*.c) $(RUNTIME_SRC) $(LDFLAGS)

# ---- tests ------------------------------------------------------------------
# Test binaries always carry AddressSanitizer and UBSan: they are small and the
# point of them is to catch what a plain build would let through.
T        := $(BUILD)/tests
TFLAGS   := $(CSTD) $(WARN) -O1 -g $(SANFLAGS) $(RT_INC)
JSON_SUITE ?= ../shared/testdata/JSONTestSuite/test_parsing
FUZZ_SECONDS ?= 3

$(T)/%: tests/json/%.c $(COMMON_SRC) $(wildcard src/common/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TFLAGS) -o $@ $< $(COMMON_SRC)

$(T)/conformance-run: tests/conformance/run.c $(RUNTIME_SRC) $(wildcard src/common/*.h generated/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TFLAGS) -o $@ $< $(RUNTIME_SRC)

$(T)/machines-spec: tests/machines/test_spec.c $(RUNTIME_SRC) $(wildcard src/common/*.h generated/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TFLAGS) -o $@ $< $(RUNTIME_SRC)

$(T)/igwctl: $(wildcard src/igwctl/*.c) $(RUNTIME_SRC) $(wildcard src/common/*.h generated/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TFLAGS) -o $@ $(wildcard src/igwctl/*.c) $(RUNTIME_SRC)

test-json: $(T)/test_scanner $(T)/test_jw $(T)/test_json_suite
	$(T)/test_scanner
	$(T)/test_jw
	$(T)/test_json_suite $(JSON_SUITE)

test-codegen: $(BUILD)/igw-gen
	tests/codegen/run.sh $(BUILD)/igw-gen

test-conformance: $(T)/conformance-run $(T)/machines-spec
	$(T)/conformance-run $(sort $(wildcard generated/conformance/*.jsonl))
	$(T)/machines-spec

test-igwctl: $(T)/igwctl
	tests/igwctl/check.sh $(T)/igwctl

test-sql:
	tests/sql/drift.sh

test-openapi:
	tests/openapi/run.sh

fuzz-smoke: $(T)/conformance-run
	CLANG=$(CLANG) tests/fuzz/smoke.sh $(FUZZ_SECONDS)

fuzz: $(T)/conformance-run
	CLANG=$(CLANG) tests/fuzz/smoke.sh $${FUZZ_SECONDS:-300}

# Every test; non-zero on any failure.
test: all check-gen test-codegen test-json test-conformance test-igwctl test-sql test-openapi fuzz-smoke
	@echo "make test: all passed"

clean:
	rm -rf $(BUILD)
