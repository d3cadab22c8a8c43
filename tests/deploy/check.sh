#!/usr/bin/env bash
# Checks deploy/ without Docker or a cluster: hadolint on the Dockerfile, the Kubernetes
# manifests against the Kubernetes schemas, the compose file against the Compose
# specification, and every IGGY_KAFKA_* variable they set against the gateway itself.
#   usage: tests/deploy/check.sh
# Needs the tools of tests/deploy/requirements.txt in .venv (or VENV_BIN) and a
# release build of the gateway (or GATEWAY).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
BIN=${VENV_BIN:-$ROOT/.venv/bin}
GATEWAY=${GATEWAY:-$ROOT/target/release/iggy-kafka-gateway}

passed=0
failed=0
check() {
    local name=$1
    shift
    echo "-- $name"
    if "$@"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL: $name"
    fi
}

check "hadolint deploy/Dockerfile" "$BIN/hadolint" deploy/Dockerfile
check "Kubernetes schemas" "$BIN/kubernetes-validate" --strict --quiet \
    deploy/kubernetes/*.yaml deploy/examples/*.yaml deploy/examples/tls/secret.yaml
check "Compose specification" "$BIN/check-jsonschema" --builtin-schema vendor.compose-spec \
    deploy/docker-compose.yml
# Also the TLS example's patches, merged and validated (settings_known.py).
check "settings the gateway accepts" "$BIN/python" tests/deploy/settings_known.py "$GATEWAY"

# The plain summary line CI reads.
echo "deploy: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
