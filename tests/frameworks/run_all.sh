#!/usr/bin/env bash
# Runs every framework check (tests/frameworks/*/check.sh), FW_JOBS at a time (default
# 2, the machine's cores), longest first. Each starts gateways of its own (lib.sh), so
# they share no state; each is bounded by FW_TIMEOUT seconds (default 600). A check's
# output goes to FW_LOGS/NAME.log (default a temp dir), its tail to stdout if it fails.
# The last line: `frameworks: N passed, M failed` (N and M count checks); exit 1 when
# any failed. Needs tests/frameworks/deps.sh run first.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
JOBS=${FW_JOBS:-2}
TIMEOUT=${FW_TIMEOUT:-600}
LOGS=${FW_LOGS:-$(mktemp -d)}
mkdir -p "$LOGS"

# Longest first, so the slowest does not start last; then any other check found.
order=(franz-go connect kafka-tools streams streams-eos spring)
for dir in "$HERE"/*/; do
    name=$(basename "$dir")
    [ -f "$dir/check.sh" ] && [[ " ${order[*]} " != *" $name "* ]] && order+=("$name")
done

run() { # NAME: its check, bounded; its exit status in LOGS/NAME.rc
    local started=$SECONDS rc=0
    timeout --kill-after=10 "$TIMEOUT" bash "$HERE/$1/check.sh" >"$LOGS/$1.log" 2>&1 || rc=$?
    [ $rc -eq 124 ] && echo "FAIL $1: not done within $TIMEOUT s" >>"$LOGS/$1.log"
    echo "$rc $((SECONDS - started))" >"$LOGS/$1.rc"
}
checks=()
for name in "${order[@]}"; do
    [ -f "$HERE/$name/check.sh" ] || continue
    checks+=("$name")
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
    run "$name" &
done
wait

passed=0 failed=0
for name in "${checks[@]}"; do
    read -r rc took <"$LOGS/$name.rc"
    if [ "$rc" -eq 0 ]; then
        passed=$((passed + 1))
        # Its summary line; bash's notices of the gateways killed at its exit may follow.
        echo "PASS $name (${took} s): $(grep -E '^[a-z-]+: [0-9]+ passed, [0-9]+ failed$' "$LOGS/$name.log" | tail -n 1)"
    else
        failed=$((failed + 1))
        echo "FAIL $name (${took} s, exit $rc); the end of its output:"
        tail -n 80 "$LOGS/$name.log" | sed 's/^/    /'
    fi
done
echo "frameworks: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
