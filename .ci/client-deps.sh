#!/usr/bin/env bash
# Installs the real Kafka clients the CI checks use (tests/clients/). Idempotent:
# apt runs only when something is missing, the venv is reused if present.
# Needs root on Debian (CI and dev machines run as root).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export DEBIAN_FRONTEND=noninteractive

pkgs=()
command -v kcat >/dev/null || pkgs+=(kcat)
# A JDK is already on the project's machines; only a bare Debian lacks one.
command -v javac >/dev/null || pkgs+=(default-jdk-headless)
# Debian's own python3 splits venv/ensurepip into python3-venv.
python3 -c 'import ensurepip, venv' 2>/dev/null || pkgs+=(python3-venv)
if [ ${#pkgs[@]} -gt 0 ]; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
fi

[ -x "$ROOT/.venv/bin/python" ] || python3 -m venv "$ROOT/.venv"
"$ROOT/.venv/bin/python" -m pip install -q --disable-pip-version-check -r "$ROOT/tests/clients/requirements.txt"

echo "kcat: $(kcat -V 2>&1 | sed -n 's/^Version \([^ ]*\).*\(librdkafka [0-9.]*\).*/\1 (system \2)/p')"
echo "javac: $(javac -version 2>&1)"
"$ROOT/.venv/bin/python" - <<'PY'
import sys, confluent_kafka
from importlib.metadata import version
print(f"python: {sys.version.split()[0]}")
print(f"confluent-kafka: {version('confluent-kafka')} (librdkafka {confluent_kafka.libversion()[0]})")
print(f"kafka-python: {version('kafka-python')}")
print(f"aiokafka: {version('aiokafka')}")
PY
