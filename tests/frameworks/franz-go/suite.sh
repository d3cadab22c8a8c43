#!/usr/bin/env bash
# franz-go's own test suite (pkg/kgo and pkg/kadm) against one broker, the way franz-go
# runs it against Kafka: its tests talk to KGO_SEEDS; there is no switch that enables
# them, the tests that need no broker just never dial it.
#   usage: suite.sh HOST:PORT   (any broker: the gateway, or Kafka to compare)
# Needs a Go toolchain (franz-go v1.22.3 asks for go 1.26). The sources come from the Go
# module proxy (`go mod download`) at the pinned versions and are copied once, writable,
# into FRANZ_GO_CACHE (default .venv/franz-go). Settings, as franz-go's helpers_test.go
# reads them:
#   KGO_TEST_RF=1          one replica per partition (the gateway lists one; default 3)
#   KGO_TEST_RECORDS=10000 records per ETL test (default 500000, minutes per test here)
#   KGO_LOG_LEVEL=none     franz-go's own client logging (debug|info|none)
# Tests named in skips.txt (one `TestName  reason` a line, # comments) are not
# run: what needs an API the gateway does not serve yet (none today); with
# FRANZ_GO_BACKEND=iggy, those in skips-iggy.txt neither. franz-go skips others itself:
# KIP-848 (no ConsumerGroupHeartbeat), share groups (no ShareFetch), SCRAM/OAuth unless
# KGO_TEST_SCRAM_SEEDS (a SASL_PLAINTEXT address) with KGO_TEST_SCRAM=user:password:512,
# or KGO_TEST_OAUTH_SEEDS, are set; they pass through from the environment. The whole run is bounded by
# FRANZ_GO_TIMEOUT seconds (default 900, or what is left before FW_DEADLINE when
# run_all.sh set it); the log goes to FRANZ_GO_LOG (default
# target/franz-go.log). Exit status 0 when every test run passed.
set -euo pipefail

BOOTSTRAP=${1:?usage: suite.sh HOST:PORT}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
FRANZ_GO_VERSION=v1.22.3
KADM_VERSION=v1.20.0 # the kadm release that requires franz-go v1.22.3
CACHE=${FRANZ_GO_CACHE:-$ROOT/.venv/franz-go}
TIMEOUT=${FRANZ_GO_TIMEOUT:-900}
# Inside run_all.sh, whatever is left before it kills the check, less a margin to report.
[ -n "${FW_DEADLINE:-}" ] && TIMEOUT=$((FW_DEADLINE - $(date +%s) - 20))
LOG=${FRANZ_GO_LOG:-$ROOT/target/franz-go.log}
fail() { echo "FAIL franz-go: $*" >&2; exit 1; }

[ -x /usr/local/go/bin/go ] && PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || fail "no go toolchain on PATH"

# fetch MODULE VERSION DEST: the module's source, writable, at DEST.
fetch() {
    [ -f "$3/go.mod" ] && return 0
    local dir
    dir=$(go mod download -json "$1@$2" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [ -n "$dir" ] && [ -d "$dir" ] || fail "go mod download $1@$2 gave no source dir"
    mkdir -p "$(dirname "$3")"
    rm -rf "$3.tmp"
    cp -r "$dir" "$3.tmp"
    chmod -R u+w "$3.tmp"
    mv "$3.tmp" "$3"
}
SRC=$CACHE/franz-go-$FRANZ_GO_VERSION
KADM=$CACHE/kadm-$KADM_VERSION
fetch github.com/twmb/franz-go "$FRANZ_GO_VERSION" "$SRC"
fetch github.com/twmb/franz-go/pkg/kadm "$KADM_VERSION" "$KADM"

skip_files=("$HERE/skips.txt")
[ "${FRANZ_GO_BACKEND:-}" = iggy ] && skip_files+=("$HERE/skips-iggy.txt")
# A skip file may hold comments alone: grep then finds nothing, which is no error.
skips=$(cat "${skip_files[@]}" | { grep -Ev '^[[:space:]]*(#|$)' || true; } | awk '{print $1}' | paste -s -d '|' -)
skip_args=()
[ -n "$skips" ] && skip_args=(-skip "^($skips)\$")

mkdir -p "$(dirname "$LOG")"
: >"$LOG"
export KGO_SEEDS=$BOOTSTRAP
export KGO_TEST_RF=${KGO_TEST_RF:-1}
export KGO_TEST_RECORDS=${KGO_TEST_RECORDS:-10000}
export KGO_LOG_LEVEL=${KGO_LOG_LEVEL:-none}
status=0
# The test binaries are built first, so go's own -timeout (which panics with every
# goroutine's stack, naming the test that hung) counts only the run, and is set to what
# is left of TIMEOUT: a hang is reported before anything outside kills the check.
started=$SECONDS
bins=$CACHE/bin
mkdir -p "$bins"
(cd "$SRC" && timeout --kill-after=10 "$TIMEOUT" go test -c -o "$bins/kgo.test" ./pkg/kgo) >>"$LOG" 2>&1 ||
    fail "building franz-go's tests: see $LOG"
(cd "$KADM" && timeout --kill-after=10 "$TIMEOUT" go test -c -o "$bins/kadm.test" .) >>"$LOG" 2>&1 ||
    fail "building kadm's tests: see $LOG"
KADM_LIMIT=120
left=$((TIMEOUT - (SECONDS - started) - KADM_LIMIT - 30))
[ "$left" -ge 300 ] || fail "only ${left}s left for franz-go's suite after building it"
skip_args=("${skip_args[@]/#-skip/-test.skip}")
(cd "$SRC/pkg/kgo" && timeout --kill-after=10 "$((left + 20))" \
    "$bins/kgo.test" -test.count=1 -test.v -test.timeout "${left}s" "${skip_args[@]}") >>"$LOG" 2>&1 || status=$?
(cd "$KADM" && timeout --kill-after=10 "$KADM_LIMIT" \
    "$bins/kadm.test" -test.count=1 -test.v -test.timeout "$((KADM_LIMIT - 10))s") >>"$LOG" 2>&1 || status=$?

count() { grep -cE "^[[:space:]]*--- $1: " "$LOG" || true; }
grep -E '^[[:space:]]*--- FAIL: ' "$LOG" >&2 || true
grep -E '^panic: ' "$LOG" >&2 || true
echo "franz-go $FRANZ_GO_VERSION (kadm $KADM_VERSION) against $BOOTSTRAP:" \
     "$(count PASS) passed, $(count FAIL) failed, $(count SKIP) skipped by franz-go" \
     "(tests and subtests), $(cat "${skip_files[@]}" | grep -cEv '^[[:space:]]*(#|$)') not run" \
     "($(basename -a "${skip_files[@]}" | paste -s -d ' ' -)); log $LOG"
[ $status -eq 0 ] || fail "go test exit status $status"
