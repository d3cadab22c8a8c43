#!/usr/bin/env bash
# kcat over an SSL listener, or a SASL_SSL one logging in with SCRAM-SHA-512 when a
# user and password are given: produce 50 keyed records to a new topic and read them
# back, the server certificate checked against the CA and the host name. Then two
# refusals, each checked for its own cause in librdkafka's log, not for any failure:
# plaintext Kafka on the listener, and TLS trusting a CA that did not sign the certificate.
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
# usage: refused WHAT REGEX [kcat -X options]: metadata must fail, with REGEX in the log.
refused() {
    local what=$1 pattern=$2
    shift 2
    if timeout 20 kcat -b "$BOOTSTRAP" -L -m 5 "$@" >/dev/null 2>"$TMP/refused.err"; then
        fail "$what: metadata answered"
    fi
    grep -qE "$pattern" "$TMP/refused.err" || { tail -5 "$TMP/refused.err" >&2; fail "$what: failed, but not with '$pattern'"; }
}
# The TLS listener reads the plaintext ApiVersions request as a bad TLS record and closes
# the connection (a closed port would be "Connection refused ... in state CONNECT").
refused "plaintext Kafka on the TLS listener" "connection closed by peer.*in state APIVERSION_QUERY"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=other-ca -keyout "$TMP/other-ca.key" \
    -out "$TMP/other-ca.pem" 2>/dev/null
refused "TLS trusting another CA" "certificate verify failed" "${protocol[@]}" \
    -X ssl.ca.location="$TMP/other-ca.pem" -X ssl.endpoint.identification.algorithm=https
echo "PASS $name"
