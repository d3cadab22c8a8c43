#!/usr/bin/env bash
# kcat over an SSL listener, or a SASL_SSL one logging in with SCRAM-SHA-512 when a
# user and password are given: produce 50 keyed records to a new topic and read them
# back, the server certificate checked against the CA and the host name.
#   usage: kcat_ssl.sh HOST:PORT CA_FILE [USER PASSWORD]
set -euo pipefail

usage="usage: kcat_ssl.sh HOST:PORT CA_FILE [USER PASSWORD]"
BOOTSTRAP=${1:?$usage}
CA=${2:?$usage}
USER_NAME=${3:-}
PASSWORD=${4:-}
name=kcat-ssl
protocol=(-X security.protocol=ssl)
if [ -n "$USER_NAME" ]; then
    name=kcat-sasl-ssl
    protocol=(-X security.protocol=sasl_ssl -X sasl.mechanisms=SCRAM-SHA-512
              -X sasl.username="$USER_NAME" -X sasl.password="$PASSWORD")
fi
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-$ROOT/.venv/bin/python}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL $name: $*" >&2; exit 1; }

command -v kcat >/dev/null || fail "kcat not installed (run .ci/client-deps.sh)"
. "$(dirname "$0")/kcat_env.sh"
use_wheel_librdkafka "$PY" "$TMP"

topic="$name-$(date +%s)-$$"
kc() {
    timeout 30 kcat -b "$BOOTSTRAP" -q -t "$topic" -p 0 "${protocol[@]}" \
        -X ssl.ca.location="$CA" -X ssl.endpoint.identification.algorithm=https \
        "$@" 2>>"$TMP/kcat.err"
}
for i in $(seq 0 49); do echo "key-$i:value $i"; done >"$TMP/in"
kc -P -K: <"$TMP/in" || { cat "$TMP/kcat.err" >&2; fail "produce failed"; }
kc -C -e -o beginning -f '%k:%s\n' >"$TMP/got" || { cat "$TMP/kcat.err" >&2; fail "consume failed"; }
diff -u "$TMP/in" "$TMP/got" >&2 || fail "consumed records differ from produced (topic $topic)"
# Plaintext Kafka on the SSL listener gets nowhere.
if timeout 20 kcat -b "$BOOTSTRAP" -L -m 5 >/dev/null 2>&1; then
    fail "plaintext metadata answered on the SSL listener"
fi
echo "PASS $name"
