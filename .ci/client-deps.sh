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
# KafkaJS (tests/clients/package.json) runs on Node.
command -v npm >/dev/null || pkgs+=(nodejs npm)
# librdkafka (the rdkafka crate in cargo test) links OpenSSL for TLS and SCRAM.
dpkg -s libssl-dev >/dev/null 2>&1 || pkgs+=(libssl-dev)
command -v pkg-config >/dev/null || pkgs+=(pkg-config)
# The Go checks (tests/clients/go/) build with the go tool; an older one than go.mod
# names (Go >= 1.21) fetches that toolchain from the module proxy itself (GOTOOLCHAIN).
[ -x /usr/local/go/bin/go ] && export PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || pkgs+=(golang-go)
if [ ${#pkgs[@]} -gt 0 ]; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
fi

[ -x "$ROOT/.venv/bin/python" ] || python3 -m venv "$ROOT/.venv"
"$ROOT/.venv/bin/python" -m pip install -q --disable-pip-version-check -r "$ROOT/tests/clients/requirements.txt"

npm install --prefix "$ROOT/tests/clients" --no-audit --no-fund --loglevel=error >/dev/null

# Java kafka-clients 3.9.1 and the codec jars it loads, for tests/clients/java_check.sh.
# No Maven here: they come from inside a PyPI wheel (pyflink/lib/), downloaded, not
# installed, and unpacked into the gitignored venv.
JARS=$ROOT/.venv/kafka-java
FLINK_LIBS=shigawire-apache-flink-libraries==2.0.0.post1
if ! ls "$JARS"/{kafka-clients,slf4j-api,lz4-java,snappy-java,zstd-jni}.jar >/dev/null 2>&1; then
    tmp=$(mktemp -d)
    "$ROOT/.venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps -d "$tmp" "$FLINK_LIBS"
    "$ROOT/.venv/bin/python" - "$tmp" "$JARS" <<'PY'
import glob, os, sys, zipfile
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst, exist_ok=True)
with zipfile.ZipFile(glob.glob(os.path.join(src, "*.whl"))[0]) as whl:
    for name in ("kafka-clients", "slf4j-api", "lz4-java", "snappy-java", "zstd-jni"):
        with whl.open(f"pyflink/lib/{name}.jar") as jar, open(os.path.join(dst, f"{name}.jar.tmp"), "wb") as out:
            out.write(jar.read())
        os.replace(os.path.join(dst, f"{name}.jar.tmp"), os.path.join(dst, f"{name}.jar"))
PY
    rm -rf "$tmp"
fi

# Java kafka-clients 4.x beside 3.9 (every Java check runs with both): straight from
# Maven Central, with exactly the runtime dependencies its POM names (4.x takes lz4
# from at.yawk.lz4, no longer org.lz4). Each jar is checked against Maven Central's
# .sha1 and must open as a zip. VERSIONS in the gitignored dir records what is there:
# skipped when it matches, fetched again when the list below changes.
JARS4=$ROOT/.venv/kafka-java-4
KAFKA4=4.4.0
java4_jars=(
    org.apache.kafka:kafka-clients:$KAFKA4
    at.yawk.lz4:lz4-java:1.11.2
    org.xerial.snappy:snappy-java:1.1.10.7
    com.github.luben:zstd-jni:1.5.7-17
    org.slf4j:slf4j-api:1.7.36
)
maven_jar() { # group:artifact:version DEST.jar
    local g a v url sha
    IFS=: read -r g a v <<<"$1"
    url=https://repo1.maven.org/maven2/${g//.//}/$a/$v/$a-$v.jar
    fetch() { curl -fsSL --retry 5 --retry-delay 2 --retry-all-errors --connect-timeout 20 --max-time 300 "$@"; }
    fetch -o "$2.tmp" "$url" || { echo "client-deps: cannot fetch $url" >&2; return 1; }
    sha=$(fetch "$url.sha1" | grep -oE '^[0-9a-f]{40}') || { echo "client-deps: no sha1 for $url" >&2; return 1; }
    echo "$sha  $2.tmp" | sha1sum -c --quiet - >/dev/null || { echo "client-deps: $url does not match its .sha1" >&2; return 1; }
    "$ROOT/.venv/bin/python" -c 'import sys, zipfile; sys.exit(not zipfile.is_zipfile(sys.argv[1]))' "$2.tmp" \
        || { echo "client-deps: $url is not a jar (zip)" >&2; return 1; }
    mv "$2.tmp" "$2"
}
if [ "$(cat "$JARS4/VERSIONS" 2>/dev/null)" != "${java4_jars[*]}" ]; then
    rm -rf "$JARS4"
    mkdir -p "$JARS4"
    for coord in "${java4_jars[@]}"; do
        a=${coord#*:}
        maven_jar "$coord" "$JARS4/${a%%:*}.jar"
    done
    echo "${java4_jars[*]}" >"$JARS4/VERSIONS"
fi

# The Go checks: Sarama and segmentio/kafka-go, at the versions tests/clients/go/go.mod
# pins (go.sum checks them), built into the gitignored .venv/go-checks. Go's module and
# build caches make a second run a no-op.
GO_CHECKS=$ROOT/.venv/go-checks
(cd "$ROOT/tests/clients/go" && go mod download && go build -trimpath -buildvcs=false -o "$GO_CHECKS/" ./cmd/...)

# The framework projects (tests/frameworks/*/pom.xml: Connect, Kafka's tools, Streams,
# Spring), built with Maven from Maven Central; ~/.m2 caches the jars, so a second run
# is quick.
command -v mvn >/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends maven >/dev/null; }
bash "$ROOT/tests/frameworks/deps.sh"

kafka_version() {
    "$ROOT/.venv/bin/python" -c 'import sys, zipfile; print(zipfile.ZipFile(sys.argv[1]).read("kafka/kafka-version.properties").decode().split("version=")[1].split()[0])' "$1"
}
echo "kcat: $(kcat -V 2>&1 | sed -n 's/^Version \([^ ]*\).*\(librdkafka [0-9.]*\).*/\1 (system \2)/p')"
echo "javac: $(javac -version 2>&1)"
# Each jar dir's version, also in a file java_check.sh names its runs by.
kafka_version "$JARS/kafka-clients.jar" >"$JARS/kafka-clients.version"
kafka_version "$JARS4/kafka-clients.jar" >"$JARS4/kafka-clients.version"
echo "kafka-clients (Java): $(cat "$JARS/kafka-clients.version")"
echo "kafka-clients 4.x (Java): $(cat "$JARS4/kafka-clients.version")"
go_module() { (cd "$ROOT/tests/clients/go" && go list -m -f '{{.Version}}' "$1"); }
echo "$(cd "$ROOT/tests/clients/go" && go version), sarama: $(go_module github.com/IBM/sarama), kafka-go: $(go_module github.com/segmentio/kafka-go)"
echo "node: $(node --version), kafkajs: $(node -p "require('$ROOT/tests/clients/node_modules/kafkajs/package.json').version")"
"$ROOT/.venv/bin/python" - <<'PY'
import sys, confluent_kafka
from importlib.metadata import version
print(f"python: {sys.version.split()[0]}")
print(f"confluent-kafka: {version('confluent-kafka')} (librdkafka {confluent_kafka.libversion()[0]})")
print(f"kafka-python: {version('kafka-python')}")
print(f"aiokafka: {version('aiokafka')}")
PY
