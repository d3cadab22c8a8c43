#!/usr/bin/env bash
# franz-go's own integration suite (suite.sh) against a gateway of its own, with a
# SASL_PLAINTEXT listener and a SCRAM-SHA-512 user so its SCRAM tests run too.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

gw_start franz \
    IGGY_KAFKA_LISTENERS=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0 \
    IGGY_KAFKA_SASL_SCRAM_USERS=franz:franz-secret
sasl=$(sed -n 's/.*listener SASL_PLAINTEXT on //p' "$FW_WORK/franz.stdout")
[ -n "$sasl" ] || { echo "FAIL franz-go: no SASL_PLAINTEXT listener line"; exit 1; }

log=$FW_WORK/franz-go.log
if ! FRANZ_GO_BACKEND=$FW_BACKEND KGO_TEST_SCRAM_SEEDS=$sasl KGO_TEST_SCRAM=franz:franz-secret:512 FRANZ_GO_LOG=$log \
    bash "$HERE/suite.sh" "${FW_ADDR[franz]}" | tee "$FW_WORK/summary"; then
    # What each failing test said (go test -v prints t.Errorf as "file_test.go:N: ..."),
    # then the log's end.
    grep -E '^[[:space:]]+[a-z_0-9]+_test\.go:[0-9]+: ' "$log" | head -n 40 || true
    tail -n 60 "$log"
    gw_log franz
    exit 1
fi
# Passed: every test franz-go ran (tests and subtests), named on its summary line; no
# fewer than this store's floor (floor.txt).
passed=$(sed -n 's/.*: \([0-9]*\) passed, 0 failed.*/\1/p' "$FW_WORK/summary")
floor=$(awk -v s="$FW_BACKEND" '$1 == s { print $2 }' "$HERE/floor.txt")
[ -n "$floor" ] || { echo "FAIL franz-go: floor.txt has no floor for $FW_BACKEND"; exit 1; }
[ "${passed:-0}" -ge "$floor" ] ||
    { echo "FAIL franz-go: ${passed:-0} tests passed, fewer than the floor of $floor on $FW_BACKEND (floor.txt)"; exit 1; }
# What franz-go skipped itself is exactly what self-skips.txt lists.
skipped=$(grep -E '^[[:space:]]*--- SKIP: ' "$log" | awk '{print $3}' | sort -u)
listed=$(grep -Ev '^[[:space:]]*(#|$)' "$HERE/self-skips.txt" | awk '{print $1}' | sort -u)
if [ "$skipped" != "$listed" ]; then
    echo "FAIL franz-go: its own skips differ from self-skips.txt:"
    comm -23 <(echo "$skipped") <(echo "$listed") | sed 's/^/    skipped, not listed: /'
    comm -13 <(echo "$skipped") <(echo "$listed") | sed 's/^/    listed, not skipped: /'
    exit 1
fi
echo "franz-go: $(echo "$listed" | grep -c .) self-skips as listed, floor $floor on $FW_BACKEND"
echo "franz-go: $passed passed, 0 failed"
