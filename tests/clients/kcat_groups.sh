#!/usr/bin/env bash
# kcat in group mode (-G: librdkafka's balanced KafkaConsumer, auto commit on):
# produce 20 records to a new topic, consume 10 with `kcat -G group` (its close
# commits them), then a second `kcat -G` run in the same group must resume at
# offset 10 and read the other 10, not the first ones again.
#   usage: kcat_groups.sh HOST:PORT
set -euo pipefail

BOOTSTRAP=${1:?usage: kcat_groups.sh HOST:PORT}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-$ROOT/.venv/bin/python}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL kcat-groups: $*" >&2; exit 1; }

command -v kcat >/dev/null || fail "kcat not installed (run .ci/client-deps.sh)"
. "$(dirname "$0")/kcat_env.sh"
use_wheel_librdkafka "$PY" "$TMP"

topic="kcat-groups-$(date +%s)-$$"
group="$topic"
run() { "$@" 2>>"$TMP/kcat.err" || { tail -20 "$TMP/kcat.err" >&2; fail "command failed: $*"; }; }

seq 0 19 | sed 's/^/record-/' >"$TMP/in"
run timeout 30 kcat -b "$BOOTSTRAP" -q -P -t "$topic" -p 0 <"$TMP/in"

# -c 10: exit after 10 records; closing the consumer commits what it delivered.
group_read() {
    run timeout 30 kcat -b "$BOOTSTRAP" -q -G "$group" -X auto.offset.reset=earliest \
        -X session.timeout.ms=6000 -c 10 -f '%t|%p|%o|%s\n' "$topic"
}
group_read >"$TMP/got1"
group_read >"$TMP/got2"

for run_no in 1 2; do
    first=$(( (run_no - 1) * 10 ))
    for o in $(seq $first $((first + 9))); do echo "$topic|0|$o|record-$o"; done >"$TMP/want$run_no"
    if ! diff -u "$TMP/want$run_no" "$TMP/got$run_no" >"$TMP/diff"; then
        head -30 "$TMP/diff" >&2
        [ $run_no = 2 ] && fail "second kcat -G run did not resume after the first one's commit"
        fail "kcat -G consumed other records than produced"
    fi
done
echo "PASS kcat-groups"
