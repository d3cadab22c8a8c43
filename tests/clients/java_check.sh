#!/usr/bin/env bash
# Compiles and runs one Java check (GroupsJava: group consumer and admin; ConfigsJava:
# AdminClient replaying framework configuration calls) against the kafka-clients 3.9
# jars .ci/client-deps.sh unpacks into .venv/kafka-java.
#   usage: java_check.sh CLASS HOST:PORT
set -euo pipefail

CLASS=${1:?usage: java_check.sh CLASS HOST:PORT}
BOOTSTRAP=${2:?usage: java_check.sh CLASS HOST:PORT}
HERE=$(cd "$(dirname "$0")" && pwd)
JARS=${KAFKA_JAVA_LIBS:-$HERE/../../.venv/kafka-java}
fail() { echo "FAIL java $CLASS: $*" >&2; exit 1; }
[ -f "$HERE/$CLASS.java" ] || fail "no $CLASS.java in $HERE"
[ -f "$JARS/kafka-clients.jar" ] || fail "no kafka-clients.jar in $JARS (run .ci/client-deps.sh)"

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
CP=$(printf '%s:' "$JARS"/*.jar)
javac -nowarn -d "$TMP" -cp "$CP" "$HERE/$CLASS.java" || fail "javac failed"
# No slf4j provider is on the class path: the client's own logging stays silent
# apart from slf4j's one-time notice, dropped here.
status=0
timeout 90 java -cp "$TMP:$CP" "$CLASS" "$BOOTSTRAP" 2> >(grep -v '^SLF4J' >&2) || status=$?
[ $status -ne 124 ] || fail "timed out after 90 s"
exit $status
