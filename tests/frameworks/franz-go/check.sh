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
    tail -n 60 "$log"
    gw_log franz
    exit 1
fi
# Passed: every test franz-go ran (tests and subtests), named on its summary line.
passed=$(sed -n 's/.*: \([0-9]*\) passed, 0 failed.*/\1/p' "$FW_WORK/summary")
[ "${passed:-0}" -gt 0 ] || { echo "FAIL franz-go: no test passed"; exit 1; }
echo "franz-go: $passed passed, 0 failed"
