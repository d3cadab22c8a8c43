#!/usr/bin/env bash
# kcat round trip: produce keyed records with headers to partition 0 of a new
# topic (created by the broker's auto-creation on Metadata), read them back
# with kcat's simple consumer (no group) and compare line by line.
#   usage: kcat_roundtrip.sh HOST:PORT
set -euo pipefail

BOOTSTRAP=${1:?usage: kcat_roundtrip.sh HOST:PORT}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-$ROOT/.venv/bin/python}
N=100
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL kcat: $*" >&2; exit 1; }

command -v kcat >/dev/null || fail "kcat not installed (run .ci/client-deps.sh)"

. "$(dirname "$0")/kcat_env.sh"
use_wheel_librdkafka "$PY" "$TMP"
echo "kcat: $(kcat -V | grep -o 'librdkafka [0-9.]*')" >&2

topic="kcat-roundtrip-$(date +%s)-$$"
# -q: no informational chatter; stderr goes to a file shown on failure.
kc() { timeout 30 kcat -b "$BOOTSTRAP" -q -t "$topic" -p 0 "$@" 2>>"$TMP/kcat.err"; }
run() { "$@" || { cat "$TMP/kcat.err" >&2; fail "command failed: $*"; }; }

# 1) N keyed records, gzip-compressed, each with the same headers: a repeated
#    key (order matters), an empty value and a value containing '='.
for i in $(seq 0 $((N - 1))); do echo "key-$i:value $i: with colon"; done >"$TMP/in1"
run kc -P -K: -z gzip -H dup=1 -H dup=2 -H empty= -H eq=a=b <"$TMP/in1"
# 2) -Z turns empty key/value into NULL: null value, then null key.
printf 'null-value:\n:null-key\n' >"$TMP/in2"
run kc -P -K: -Z <"$TMP/in2"
# 3) without -Z the same shapes stay empty (distinct from NULL).
printf 'empty-value:\n:empty-key\n' >"$TMP/in3"
run kc -P -K: <"$TMP/in3"

# Expected: partition|offset|key|key len|value|value len|headers
# (length -1 = NULL, 0 = empty).
{
    for i in $(seq 0 $((N - 1))); do
        k="key-$i" v="value $i: with colon"
        echo "0|$i|$k|${#k}|$v|${#v}|dup=1,dup=2,empty=,eq=a=b"
    done
    echo "0|$N|null-value|10||-1|"
    echo "0|$((N + 1))||-1|null-key|8|"
    echo "0|$((N + 2))|empty-value|11||0|"
    echo "0|$((N + 3))||0|empty-key|9|"
} >"$TMP/want"

run kc -C -e -o beginning -f '%p|%o|%k|%K|%s|%S|%h\n' >"$TMP/got"
if ! diff -u "$TMP/want" "$TMP/got" >"$TMP/diff"; then
    head -40 "$TMP/diff" >&2
    fail "consumed records differ from produced (topic $topic)"
fi
echo "PASS kcat"
