#!/bin/sh
# run.sh - validates generated/openapi.json with a real OpenAPI 3.1 validator
# plus content checks (see validate.js). Installs the pinned validator from
# package-lock.json on first use (npm ci; the npm cache makes later runs
# offline). Usage: tests/openapi/run.sh [path/to/openapi.json]
set -eu

here=$(cd "$(dirname "$0")" && pwd)
spec=${1:-$here/../../generated/openapi.json}

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "tests/openapi: node and npm are required (apt-get install nodejs npm)" >&2
    exit 2
fi
if [ ! -f "$spec" ]; then
    echo "tests/openapi: $spec not found; run 'make generate' first" >&2
    exit 2
fi
# Reinstall when the lock file changed since the last install.
if [ ! -f "$here/node_modules/.package-lock.json" ] ||
    [ "$here/package-lock.json" -nt "$here/node_modules/.package-lock.json" ]; then
    (cd "$here" && npm ci --silent --no-audit --no-fund --prefer-offline)
fi
exec node "$here/validate.js" "$spec"
