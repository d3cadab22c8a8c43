#!/usr/bin/env bash
# Runs every real-client check against one broker; stops at the first failure.
#   usage: run_all.sh HOST:PORT [extra roundtrip.py args, e.g. --skip-end-offsets]
set -euo pipefail

BOOTSTRAP=${1:?usage: run_all.sh HOST:PORT [roundtrip.py args]}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-$(cd "$HERE/../.." && pwd)/.venv/bin/python}
[ -x "$PY" ] || { echo "FAIL: no python venv at $PY (run .ci/client-deps.sh)" >&2; exit 1; }

checks=(confluent kafka-python aiokafka kcat)
passed=0
for check in "${checks[@]}"; do
    if [ "$check" = kcat ]; then
        cmd=(bash "$HERE/kcat_roundtrip.sh" "$BOOTSTRAP")
    else
        cmd=("$PY" "$HERE/roundtrip.py" --bootstrap "$BOOTSTRAP" --client "$check" "$@")
    fi
    if ! PYTHON=$PY "${cmd[@]}"; then
        # Summary line in the plain 'N passed, N failed' form CI reads.
        echo "clients: $passed passed, 1 failed"
        exit 1
    fi
    passed=$((passed + 1))
done
echo "clients: $passed passed, 0 failed"
