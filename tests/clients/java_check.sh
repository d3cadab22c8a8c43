#!/usr/bin/env bash
# Compiles and runs one Java check (GroupsJava: group consumer and admin; ConfigsJava:
# AdminClient replaying framework configuration calls; BrokerConfigsJava: broker
# configurations as Kafka 4.4 answers them; QuotasJava, ScramJava, AclsJava,
# TransactionsJava, TxnAdminJava; DescribeJava: describeTopics, kafka-topics' health
# reports, describeLogDirs; CompressionJava: every codec produced and read back)
# against the kafka-clients jars in KAFKA_JAVA_LIBS: by default the 3.9 ones
# .ci/client-deps.sh unpacks into .venv/kafka-java; run_all.sh also points it at the
# 4.x ones in .venv/kafka-java-4 (java4-* checks).
#   usage: java_check.sh CLASS HOST:PORT [ARG...]   (ARGs go to the check; it may run
#   JAVA_CHECK_TIMEOUT seconds, 90 by default)
set -euo pipefail

CLASS=${1:?usage: java_check.sh CLASS HOST:PORT [ARG...]}
BOOTSTRAP=${2:?usage: java_check.sh CLASS HOST:PORT [ARG...]}
shift 2
LIMIT=${JAVA_CHECK_TIMEOUT:-90}
HERE=$(cd "$(dirname "$0")" && pwd)
JARS=${KAFKA_JAVA_LIBS:-$HERE/../../.venv/kafka-java}
fail() { echo "FAIL java $CLASS: $*" >&2; exit 1; }
[ -f "$HERE/$CLASS.java" ] || fail "no $CLASS.java in $HERE"
[ -f "$JARS/kafka-clients.jar" ] || fail "no kafka-clients.jar in $JARS (run .ci/client-deps.sh)"

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
CP=$(printf '%s:' "$JARS"/*.jar)
javac -nowarn -d "$TMP" -cp "$CP" "$HERE/$CLASS.java" || fail "javac failed"
echo "java $CLASS: kafka-clients $(cat "$JARS/kafka-clients.version" 2>/dev/null || echo '(version unknown)'), $(java -version 2>&1 | head -n 1)"
# No slf4j provider is on the class path: the client's own logging stays silent
# apart from slf4j's one-time notice, dropped here.
status=0
timeout "$LIMIT" java -cp "$TMP:$CP" "$CLASS" "$BOOTSTRAP" "$@" 2> >(grep -v '^SLF4J' >&2) || status=$?
[ $status -ne 124 ] || fail "timed out after $LIMIT s"
exit $status
