#!/usr/bin/env bash
# Runs every real-client check against one broker; stops at the first failure.
#   usage: run_all.sh HOST:PORT [extra roundtrip.py args, e.g. --skip-end-offsets]
# The consumer-group checks (*-groups) wait out the broker's initial rebalance delay
# (3 s on Kafka and the gateway by default) once or twice each.
set -euo pipefail

BOOTSTRAP=${1:?usage: run_all.sh HOST:PORT [roundtrip.py args]}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-$(cd "$HERE/../.." && pwd)/.venv/bin/python}
[ -x "$PY" ] || { echo "FAIL: no python venv at $PY (run .ci/client-deps.sh)" >&2; exit 1; }

checks=(confluent kafka-python aiokafka kcat kafkajs-topics java-configs confluent-configs
        confluent-groups kafka-python-groups kafkajs-groups java-groups kcat-groups)
passed=0
for check in "${checks[@]}"; do
    case $check in
        kcat) cmd=(bash "$HERE/kcat_roundtrip.sh" "$BOOTSTRAP") ;;
        kafkajs-topics) cmd=(node "$HERE/topics_kafkajs.js" "$BOOTSTRAP") ;;
        java-configs) cmd=(bash "$HERE/java_check.sh" ConfigsJava "$BOOTSTRAP") ;;
        confluent-configs) cmd=("$PY" "$HERE/configs_confluent.py" --bootstrap "$BOOTSTRAP") ;;
        confluent-groups) cmd=("$PY" "$HERE/groups_confluent.py" --bootstrap "$BOOTSTRAP") ;;
        kafka-python-groups) cmd=("$PY" "$HERE/groups_kafka_python.py" --bootstrap "$BOOTSTRAP") ;;
        kafkajs-groups) cmd=(node "$HERE/groups_kafkajs.js" "$BOOTSTRAP") ;;
        java-groups) cmd=(bash "$HERE/java_check.sh" GroupsJava "$BOOTSTRAP") ;;
        kcat-groups) cmd=(bash "$HERE/kcat_groups.sh" "$BOOTSTRAP") ;;
        *) cmd=("$PY" "$HERE/roundtrip.py" --bootstrap "$BOOTSTRAP" --client "$check" "$@") ;;
    esac
    if ! PYTHON=$PY "${cmd[@]}"; then
        echo "failed check: $check"
        # Summary line in the plain 'N passed, N failed' form CI reads.
        echo "clients: $passed passed, 1 failed"
        exit 1
    fi
    passed=$((passed + 1))
done
echo "clients: $passed passed, 0 failed"
