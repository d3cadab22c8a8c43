#!/usr/bin/env bash
# Runs the framework checks (tests/frameworks/*/check.sh) on both stores, FW_JOBS at a
# time (default 2, the machine's cores), longest first. A run is NAME (the embedded
# store) or NAME@iggy (FW_BACKEND=iggy: the check's gateways on a real iggy-server,
# IGGY_SERVER_BIN, default the shared one beside the checkout). FW_CHECKS picks runs
# (space-separated); by default every check on the embedded store and the ones in
# ON_IGGY on Iggy. Each starts gateways of its own (lib.sh), so runs share no state;
# each is bounded by FW_TIMEOUT seconds (default 900). A run's output goes to
# FW_LOGS/RUN.log (default a temp dir), its tail to stdout if it fails.
# A run passes only when it exits 0 AND its last summary line says `NAME: N passed, 0
# failed` with N > 0: a check that exits 0 having checked nothing fails.
# The last line: `frameworks: N passed, M failed` (runs); exit 1 when any failed.
# Needs tests/frameworks/deps.sh run first.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
JOBS=${FW_JOBS:-2}
TIMEOUT=${FW_TIMEOUT:-900}
LOGS=${FW_LOGS:-$(mktemp -d)}
mkdir -p "$LOGS"
export IGGY_SERVER_BIN=${IGGY_SERVER_BIN:-$(cd "$HERE/../.." && pwd)/../shared/iggy/iggy-server}

# Longest first (measured), so the slowest does not start last; then any other check.
ON_IGGY=(franz-go connect kafka-tools streams-eos apicurio spring)
order=(franz-go@iggy franz-go connect@iggy connect streams-eos@iggy kafka-tools@iggy
    kafka-tools streams-eos apicurio@iggy apicurio streams spring@iggy spring)
for dir in "$HERE"/*/; do
    name=$(basename "$dir")
    [ -f "$dir/check.sh" ] && [[ " ${order[*]} " != *" $name "* ]] && order+=("$name")
done
[ -n "${FW_CHECKS:-}" ] && read -r -a order <<<"$FW_CHECKS"

run() { # RUN: its check, bounded; its exit status and duration in LOGS/RUN.rc
    local name=${1%@*} backend=embedded started=$SECONDS rc=0
    [[ $1 == *@iggy ]] && backend=iggy
    # FW_DEADLINE: when the check is killed, for checks that bound their own steps.
    FW_DEADLINE=$(($(date +%s) + TIMEOUT)) FW_BACKEND=$backend \
        timeout --kill-after=10 "$TIMEOUT" bash "$HERE/$name/check.sh" \
        >"$LOGS/$1.log" 2>&1 || rc=$?
    [ $rc -eq 124 ] && echo "FAIL $1: not done within $TIMEOUT s" >>"$LOGS/$1.log"
    echo "$rc $((SECONDS - started))" >"$LOGS/$1.rc"
}
runs=()
for r in "${order[@]}"; do
    [ -f "$HERE/${r%@*}/check.sh" ] || { echo "frameworks: no check ${r%@*} (FW_CHECKS?)"; exit 1; }
    if [[ $r == *@iggy ]]; then
        [[ " ${ON_IGGY[*]} " == *" ${r%@*} "* ]] || [ -n "${FW_CHECKS:-}" ] || continue
        [ -x "$IGGY_SERVER_BIN" ] || { echo "frameworks: $r needs an iggy-server; IGGY_SERVER_BIN=$IGGY_SERVER_BIN is none"; exit 1; }
    fi
    runs+=("$r")
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
    run "$r" &
done
wait

passed=0 failed=0
for r in "${runs[@]}"; do
    read -r rc took <"$LOGS/$r.rc"
    # Its summary line; bash's notices of the gateways killed at its exit may follow.
    summary=$(grep -E '^[a-z-]+: [0-9]+ passed, [0-9]+ failed$' "$LOGS/$r.log" | tail -n 1 || true)
    count=$(sed -n 's/^[a-z-]*: \([0-9]*\) passed, 0 failed$/\1/p' <<<"$summary")
    if [ "$rc" -eq 0 ] && [ "${count:-0}" -gt 0 ]; then
        passed=$((passed + 1))
        echo "PASS $r (${took} s): $summary"
    else
        failed=$((failed + 1))
        why="exit $rc"
        [ "$rc" -eq 0 ] && why="exit 0 but ${summary:-no summary line}: a check must pass N > 0 and fail 0"
        echo "FAIL $r (${took} s, $why); the end of its output:"
        tail -n 80 "$LOGS/$r.log" | sed 's/^/    /'
    fi
done
echo "frameworks: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
