#!/usr/bin/env bash
# Kafka's own command-line tools (issue 17) against a gateway of their own, run as the
# kafka-*.sh scripts run them: `java -cp <kafka_2.13 + kafka-tools 4.4.0> <MainClass>`.
# Each step reads what a tool printed and compares it with what was done before it
# (records produced, offsets listed, configurations set), as a Kafka broker would
# answer. A tool that needs an API the gateway does not serve yet (the list comes from
# kafka-broker-api-versions, not from this file) prints `KNOWN GAP NAME: needs API`
# and is checked as soon as the API is advertised. docs/COMPATIBILITY.md ("Kafka's
# command-line tools") lists every tool and subcommand run here, with the differences.
# The last line is "kafka-tools: N passed, M failed".
# Needs tests/frameworks/deps.sh run first. FW_BACKEND=iggy runs it on an iggy-server.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$HERE/../lib.sh"

CP=$(fw_classpath kafka-tools)
# One JVM a tool run: C1 only and the serial collector start a tool in about a second,
# and a class data archive of the first run (below) halves that for the others on 2
# cores. slf4j-simple logs warnings and errors to stderr (the scripts' tools-log4j2
# does too); so does the JVM's own logging, which would go to stdout.
JAVA_OPTS=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xlog:disable -Xlog:all=warning:stderr
    -Dorg.slf4j.simpleLogger.defaultLogLevel=warn)

passed=0
failed=0
gaps=()
LAST=
RC=0
OUT=
mkdir -p "$FW_WORK/runs"
echo 0 >"$FW_WORK/runs/count"

# ---------------------------------------------------------------- helpers
# tool MAIN ARGS...: one run of a tool class. Its stdout in OUT (and $LAST.out), stderr
# in $LAST.err, exit status in RC (and $LAST.rc); never fails itself. Stdin from
# $TOOL_IN (/dev/null); a run that hangs is ended after 120 s (RC 124). Runs are
# numbered through a file, so that a run inside $(...) gets a number of its own too;
# OUT, RC and LAST are only set in the shell that ran it.
tool() {
    local main=$1 n
    shift
    n=$(($(cat "$FW_WORK/runs/count") + 1))
    echo $n >"$FW_WORK/runs/count"
    LAST=$FW_WORK/runs/$(printf %03d $n)-${main##*.}
    printf '%s\n' "$main $*" >"$LAST.cmd"
    RC=0
    timeout --kill-after=5 120 java "${JAVA_OPTS[@]}" -cp "$CP" "$main" "$@" <"${TOOL_IN:-/dev/null}" \
        >"$LAST.out" 2>"$LAST.err" || RC=$?
    echo $RC >"$LAST.rc"
    OUT=$(cat "$LAST.out")
}
# bg_tool MAIN ARGS...: the same in the background, its pid in BG_PID, its files BG_RUN.*
bg_tool() {
    local main=$1 n
    shift
    n=$(($(cat "$FW_WORK/runs/count") + 1))
    echo $n >"$FW_WORK/runs/count"
    BG_RUN=$FW_WORK/runs/$(printf %03d $n)-${main##*.}
    printf '%s\n' "$main $*" >"$BG_RUN.cmd"
    java "${JAVA_OPTS[@]}" -cp "$CP" "$main" "$@" </dev/null >"$BG_RUN.out" 2>"$BG_RUN.err" &
    BG_PID=$!
    FW_EXTRA_PIDS="${FW_EXTRA_PIDS:-} $BG_PID"
}
# The scripts' classes (bin/kafka-*.sh of Kafka 4.4 run these).
kafka_topics() { tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$B" "$@"; }
kafka_configs() { tool org.apache.kafka.tools.ConfigCommand --bootstrap-server "$B" "$@"; }
kafka_consumer_groups() { tool org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --bootstrap-server "$B" "$@"; }
kafka_acls() { tool org.apache.kafka.tools.AclCommand --bootstrap-server "$B" "$@"; }
kafka_console_producer() { tool org.apache.kafka.tools.ConsoleProducer "$@"; }
kafka_console_consumer() { tool org.apache.kafka.tools.consumer.ConsoleConsumer "$@"; }
kafka_get_offsets() { tool org.apache.kafka.tools.GetOffsetShell --bootstrap-server "$B" "$@"; }
kafka_delete_records() { tool org.apache.kafka.tools.DeleteRecordsCommand --bootstrap-server "$B" "$@"; }
kafka_leader_election() { tool org.apache.kafka.tools.LeaderElectionCommand --bootstrap-server "$B" "$@"; }
kafka_log_dirs() { tool org.apache.kafka.tools.LogDirsCommand --bootstrap-server "$B" "$@"; }
kafka_features() { tool org.apache.kafka.tools.FeatureCommand --bootstrap-server "$B" "$@"; }
kafka_cluster() { tool org.apache.kafka.tools.ClusterTool "$1" --bootstrap-server "$B" "${@:2}"; }
kafka_broker_api_versions() { tool org.apache.kafka.tools.BrokerApiVersionsCommand --bootstrap-server "$B" "$@"; }
kafka_reassign_partitions() { tool org.apache.kafka.tools.reassign.ReassignPartitionsCommand --bootstrap-server "$B" "$@"; }
kafka_transactions() { tool org.apache.kafka.tools.TransactionsCommand --bootstrap-server "$B" "$@"; }

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { # NAME WHY: counted, with the latest tool run's command and output
    local run
    echo "FAIL $1: $2"
    failed=$((failed + 1))
    # A dead gateway would fail every later check, each after the tools' timeouts.
    if ! kill -0 "${FW_PID[kt]}" 2>/dev/null; then
        echo "FAIL gateway: it exited"
        gw_log kt
        echo "kafka-tools: $passed passed, $((failed + 1)) failed"
        exit 1
    fi
    run=$(ls "$FW_WORK"/runs/*.cmd 2>/dev/null | tail -n 1)
    if [ -n "$run" ]; then
        run=${run%.cmd}
        echo "--- latest tool run (exit $(cat "$run.rc" 2>/dev/null || echo '?')): $(cat "$run.cmd")"
        tail -n 15 "$run.out"
        grep -v '^[[:space:]]*at ' "$run.err" | tail -n 15 || true
    fi >&2
}
gap() { # NAME API: the tool needs an API the gateway does not advertise yet
    echo "KNOWN GAP $1: needs $2, not served by the gateway yet"
    gaps+=("$1")
}
flat() { paste -sd'|' <<<"$1"; }
same() { # NAME GOT WANT: PASS when equal (both shown flattened otherwise)
    if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "got [$(flat "$2")], want [$(flat "$3")]"; fi
}
ok() { # NAME WHY COMMAND...: PASS when the command succeeds
    local name=$1 why=$2
    shift 2
    if "$@"; then pass "$name"; else fail "$name" "$why"; fi
}
has() { grep -qE "$1" <<<"$OUT"; }     # OUT has a line matching the ERE
said() { grep -qE "$1" "$LAST.out" "$LAST.err"; } # so does the last run's stdout or stderr
served() { grep -qE "\($1\): [0-9]" <<<"$APIS"; } # API key $1 advertised (kafka-broker-api-versions)
max_version() { sed -nE "s/.*\($1\): ([0-9]+ to )?([0-9]+) \[.*/\2/p" <<<"$APIS"; } # its newest version

# offsets TOPIC [TIME]: kafka-get-offsets for one topic, as "partition offset" lines
offsets() {
    kafka_get_offsets --topic "$1" ${2:+--time "$2"}
    awk -F: -v t="$1" '$1 == t { print $2, $3 }' <<<"$OUT" | sort -n
}
# group_offsets GROUP TOPIC: kafka-consumer-groups --describe, "partition current end lag"
group_offsets() {
    kafka_consumer_groups --describe --group "$1"
    awk -v g="$1" -v t="$2" '$1 == g && $2 == t { print $3, $4, $5, $6 }' <<<"$OUT" | sort -n
}
# reset GROUP TOPIC ARGS...: kafka-consumer-groups --reset-offsets, "partition new-offset"
reset() {
    local g=$1 t=$2
    shift 2
    kafka_consumer_groups --reset-offsets --group "$g" --topic "$t" "$@"
    awk -v g="$g" -v t="$t" '$1 == g && $2 == t { print $3, $4 }' <<<"$OUT" | sort -n
}
committed() { # GROUP TOPIC: "partition current" of group_offsets
    group_offsets "$1" "$2" | awk '{ print $1, $2 }'
}
# configs_of ENTITY-ARGS...: kafka-configs --describe as "key=value SOURCE" lines, sorted
configs_of() {
    kafka_configs --describe "$@"
    sed -nE 's/^  ([^ =]+)=(.*) sensitive=(true|false) synonyms=\{([A-Z_]+):.*$/\1=\2 \4/p' <<<"$OUT" | sort
}
now_ms() { date +%s%3N; }
iso_utc() { date -u -d "@${1:0:-3}.${1: -3}" +%Y-%m-%dT%H:%M:%S.%3NZ; } # MS: kafka's --to-datetime form

# ---------------------------------------------------------------- the gateway
# PLAINTEXT for the tools (the anonymous principal, a super user) and SASL_PLAINTEXT
# for a SCRAM user made with kafka-configs, whom kafka-acls then grants and denies. The
# standard authorizer with no allow-everyone: a user sees only what ACLs grant.
CLUSTER_ID=kt-cluster-$RANDOM$RANDOM
gw_start kt IGGY_KAFKA_LISTENERS=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0 \
    IGGY_KAFKA_AUTHORIZER=standard IGGY_KAFKA_SUPER_USERS=User:ANONYMOUS \
    IGGY_KAFKA_CLUSTER_ID="$CLUSTER_ID" IGGY_KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=500
B=${FW_ADDR[kt]}
# The first run writes the class data archive every later run maps (a missing or
# unusable archive only makes them slower: -Xshare:auto).
JSA=$FW_WORK/tools.jsa
JAVA_OPTS+=(-XX:ArchiveClassesAtExit="$JSA")
kafka_topics --list
JAVA_OPTS[-1]=-XX:SharedArchiveFile=$JSA
SASL=$(sed -n 's/.*listener SASL_PLAINTEXT on //p' "$FW_WORK/kt.stdout")
[ -n "$SASL" ] || { echo "FAIL kafka-tools: no SASL_PLAINTEXT listener line"; exit 1; }
t0=$SECONDS

# ---------------------------------------------------------------- kafka-broker-api-versions
kafka_broker_api_versions
APIS=$OUT
ok api-versions-node "no line for node 0 at $B" grep -qxF "$B (id: 0 rack: null isFenced: false) -> (" <<<"$APIS"
# What the tool found usable, "key min max", is exactly COMPATIBILITY.md's table of
# APIs served: nothing advertised that is not documented, nothing documented missing.
usable=$(sed -nE 's/^[[:space:]]*[A-Za-z]+\(([0-9]+)\): ([0-9]+)( to ([0-9]+))? \[usable: [0-9]+\],?$/\1 \2 \4/p' <<<"$APIS" |
    awk '{ print $1, $2, ($3 == "" ? $2 : $3) }' | sort -n)
documented=$(sed -nE 's/^\| ([0-9]+) \| [A-Za-z]+ \| ([0-9]+)(–([0-9]+))? \|.*/\1 \2 \4/p' "$ROOT/docs/COMPATIBILITY.md" |
    awk '{ print $1, $2, ($3 == "" ? $2 : $3) }' | sort -n)
same api-versions-documented "$usable" "$documented"

# ---------------------------------------------------------------- kafka-cluster
kafka_cluster cluster-id
same cluster-id "$OUT" "Cluster ID: $CLUSTER_ID"
kafka_cluster list-endpoints
same cluster-list-endpoints "$(awk 'NR > 1 { print $1, $2, $3, $5, $6 }' <<<"$OUT")" "0 ${B%:*} ${B##*:} unfenced broker"

# ---------------------------------------------------------------- kafka-topics
T=kt-orders
kafka_topics --create --topic $T --partitions 3 --replication-factor 1 \
    --config retention.ms=3600000 --config max.message.bytes=65536
same topics-create "$OUT" "Created topic $T."
kafka_topics --create --topic $T --partitions 3
ok topics-create-existing "a second create did not fail with TopicExistsException" \
    eval '[ $RC = 1 ] && said TopicExistsException'
kafka_topics --create --topic $T --partitions 3 --if-not-exists
ok topics-create-if-not-exists "--if-not-exists on an existing topic: exit $RC, [$OUT]" eval '[ $RC = 0 ] && [ -z "$OUT" ]'
kafka_topics --create --topic kt-bad --config no.such.config=1
ok topics-create-bad-config "an unknown config was not refused (InvalidConfigurationException)" \
    eval '[ $RC = 1 ] && said InvalidConfigurationException'

kafka_topics --list --exclude-internal
same topics-list "$(grep '^kt-' <<<"$OUT")" "$T"
kafka_topics --list
ok topics-list-internal "--list without --exclude-internal does not show __consumer_offsets" has '^__consumer_offsets$'

# described TOPIC: of kafka-topics --describe's OUT, the header as "count rf configs"
# (configs sorted), then "partition leader replicas isr" a partition
described() {
    local configs
    configs=$(sed -nE "s/^Topic: $1\t.*\tConfigs: (.*)$/\1/p" <<<"$OUT" | tr , '\n' | sort | paste -sd, -)
    awk -F'\t' -v t="Topic: $1" -v c="$configs" '
        $1 == t { sub(/^PartitionCount: /, "", $3); sub(/^ReplicationFactor: /, "", $4); print $3, $4, c }
        $1 == "" && $2 == t { for (i = 3; i <= 6; i++) sub(/^[A-Za-z]+: /, "", $i); print $3, $4, $5, $6 }' <<<"$OUT"
}
topic_id() { sed -nE "s/^Topic: $1\tTopicId: ([^\t]+)\t.*/\1/p" <<<"$OUT"; }
kafka_topics --describe --topic $T
got=$(described $T)
id_before=$(topic_id $T)
# min.insync.replicas=1 on every topic: Kafka 4.1+ sets it for the whole cluster
# (KIP-966, DYNAMIC_DEFAULT_BROKER_CONFIG), so Kafka 4.4 lists it too.
same topics-describe "$got" "3 1 max.message.bytes=65536,min.insync.replicas=1,retention.ms=3600000
0 0 0 0
1 0 0 0
2 0 0 0"
# by its id (Metadata by topic id): the same topic
kafka_topics --describe --topic-id "$id_before"
same topics-describe-by-id "$(described $T)" "$got"
# Kafka 4's TopicCommand asks DescribeTopicPartitions (75) first, Metadata without it:
# then it knows no eligible leader replicas and prints "Elr: N/A".
if served 75; then
    # By name (by id the admin client asks Metadata, and N/A is right there too).
    kafka_topics --describe --topic $T
    ok topics-describe-elr "Elr is N/A though DescribeTopicPartitions is served" eval '! has "Elr: N/A"'
else
    gap "kafka-topics --describe Elr/LastKnownElr (prints N/A)" "DescribeTopicPartitions (75)"
fi

kafka_topics --alter --topic $T --partitions 5
kafka_topics --describe --topic $T
got=$(described $T)
same topics-alter-partitions "$got" "5 1 max.message.bytes=65536,min.insync.replicas=1,retention.ms=3600000
0 0 0 0
1 0 0 0
2 0 0 0
3 0 0 0
4 0 0 0"
same topics-id-kept "$(topic_id $T)" "$id_before"
kafka_topics --alter --topic $T --partitions 4
ok topics-alter-fewer "shrinking to 4 partitions was not refused (InvalidPartitionsException)" \
    eval '[ $RC = 1 ] && said InvalidPartitionsException'

# A healthy cluster: every partition has its one replica in sync and a leader. With
# min.insync.replicas=2 and one replica a partition is under min ISR, as on a
# one-broker Kafka; with the default 1 it is at min ISR.
for report in under-replicated-partitions under-min-isr-partitions unavailable-partitions; do
    kafka_topics --describe --$report
    ok topics-$report "not empty on a healthy cluster (exit $RC): $(flat "$OUT")" eval '[ $RC = 0 ] && [ -z "$OUT" ]'
done
kafka_topics --create --topic kt-minisr --partitions 1 --config min.insync.replicas=2
kafka_topics --create --topic kt-plain --partitions 1
kafka_topics --describe --under-min-isr-partitions
same topics-under-min-isr-set "$(awk -F'\t' '{ print $2, $3 }' <<<"$OUT")" "Topic: kt-minisr Partition: 0"
kafka_topics --describe --at-min-isr-partitions --topic 'kt-.*'
same topics-at-min-isr "$(awk -F'\t' '{ print $2, $3 }' <<<"$OUT" | sort)" \
    "$( (for p in 0 1 2 3 4; do echo "Topic: $T Partition: $p"; done; echo "Topic: kt-plain Partition: 0") | sort)"
kafka_topics --describe --topics-with-overrides --topic 'kt-.*'
# Kafka 4.4 lists kt-plain too: its cluster-wide min.insync.replicas (KIP-966) is
# not a default to the tool.
same topics-with-overrides "$(for t in $(sed -nE 's/^Topic: ([^\t]+)\t.*/\1/p' <<<"$OUT" | sort); do
    echo "$t $(described "$t" | head -n 1)"; done)" "kt-minisr 1 1 min.insync.replicas=2
$T 5 1 max.message.bytes=65536,min.insync.replicas=1,retention.ms=3600000
kt-plain 1 1 min.insync.replicas=1"
kafka_topics --delete --topic kt-minisr
kafka_topics --delete --topic kt-plain
kafka_topics --list --exclude-internal
same topics-delete "$(grep '^kt-' <<<"$OUT")" "$T"
kafka_topics --describe --topic kt-minisr
ok topics-describe-deleted "describing the deleted topic did not say it does not exist" \
    eval '[ $RC = 1 ] && said "Topic .kt-minisr. does not exist"'

# ---------------------------------------------------------------- kafka-configs: topics
same configs-topic-describe "$(configs_of --entity-type topics --entity-name $T)" \
    "max.message.bytes=65536 DYNAMIC_TOPIC_CONFIG
retention.ms=3600000 DYNAMIC_TOPIC_CONFIG"
kafka_configs --alter --entity-type topics --entity-name $T --add-config 'retention.ms=7200000,cleanup.policy=[compact,delete]'
same configs-topic-alter "$OUT" "Completed updating config for topic $T."
same configs-topic-add-config "$(configs_of --entity-type topics --entity-name $T)" \
    "cleanup.policy=compact,delete DYNAMIC_TOPIC_CONFIG
max.message.bytes=65536 DYNAMIC_TOPIC_CONFIG
retention.ms=7200000 DYNAMIC_TOPIC_CONFIG"
kafka_configs --alter --entity-type topics --entity-name $T --delete-config retention.ms,cleanup.policy
same configs-topic-delete-config "$(configs_of --entity-type topics --entity-name $T)" \
    "max.message.bytes=65536 DYNAMIC_TOPIC_CONFIG"
# --all: what is not set comes from the defaults
got=$(configs_of --entity-type topics --entity-name $T --all | grep -E '^(retention\.ms|cleanup\.policy|max\.message\.bytes)=' || true)
same configs-topic-all "$got" "cleanup.policy=delete DEFAULT_CONFIG
max.message.bytes=65536 DYNAMIC_TOPIC_CONFIG
retention.ms=604800000 DEFAULT_CONFIG"
kafka_configs --alter --entity-type topics --entity-name $T --add-config no.such.config=1
ok configs-topic-unknown "an unknown topic config was not refused (InvalidConfigurationException)" \
    eval '[ $RC != 0 ] && said InvalidConfigurationException'
# max.message.bytes=65536 is enforced: a 70000-byte record is refused, nothing stored
head -c 70000 /dev/zero | tr '\0' x >"$FW_WORK/big.txt"
echo >>"$FW_WORK/big.txt"
before=$(offsets $T)
TOOL_IN=$FW_WORK/big.txt kafka_console_producer --bootstrap-server "$B" --topic $T
ok configs-max-message-bytes-enforced "a 70000-byte record was not refused with RecordTooLargeException" \
    said RecordTooLargeException
same configs-max-message-bytes-nothing-stored "$(offsets $T)" "$before"

# ---------------------------------------------------------------- kafka-configs: brokers
same configs-broker-describe-empty "$(configs_of --entity-type brokers --entity-name 0)" ""
kafka_configs --alter --entity-type brokers --entity-name 0 --add-config log.retention.ms=86400000
same configs-broker-alter "$OUT" "Completed updating config for broker 0."
same configs-broker-describe "$(configs_of --entity-type brokers --entity-name 0)" "log.retention.ms=86400000 DYNAMIC_BROKER_CONFIG"
kafka_configs --alter --entity-type brokers --entity-default --add-config message.max.bytes=2000000
same configs-broker-default-alter "$OUT" "Completed updating default config for brokers in the cluster."
# min.insync.replicas: set for every broker by Kafka 4.1+'s controller (KIP-966).
same configs-broker-default-describe "$(configs_of --entity-type brokers --entity-default)" \
    "message.max.bytes=2000000 DYNAMIC_DEFAULT_BROKER_CONFIG
min.insync.replicas=1 DYNAMIC_DEFAULT_BROKER_CONFIG"
# A topic inherits them through the synonyms (retention.ms <- log.retention.ms,
# max.message.bytes <- message.max.bytes), as Kafka's DescribeConfigs answers.
kafka_topics --create --topic kt-inherit --partitions 1
got=$(configs_of --entity-type topics --entity-name kt-inherit --all | grep -E '^(retention\.ms|max\.message\.bytes)=' || true)
same configs-broker-inherited "$got" "max.message.bytes=2000000 DYNAMIC_DEFAULT_BROKER_CONFIG
retention.ms=86400000 DYNAMIC_BROKER_CONFIG"
kafka_configs --alter --entity-type brokers --entity-name 0 --add-config broker.id=7
ok configs-broker-read-only "altering broker.id was not refused (InvalidRequestException)" \
    eval '[ $RC != 0 ] && said "InvalidRequestException.*broker.id"'
kafka_configs --alter --entity-type brokers --entity-name 0 --delete-config log.retention.ms
kafka_configs --alter --entity-type brokers --entity-default --delete-config message.max.bytes
same configs-broker-delete-config "$(configs_of --entity-type brokers --entity-name 0)$(configs_of --entity-type brokers --entity-default)" \
    "min.insync.replicas=1 DYNAMIC_DEFAULT_BROKER_CONFIG"
kafka_topics --delete --topic kt-inherit

# ---------------------------------------------------------------- kafka-configs: client quotas
# Principals and addresses no client of this check uses: nothing here throttles them.
kafka_configs --alter --entity-type users --entity-name alice --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152
same quotas-user-alter "$OUT" "Completed updating config for user alice."
kafka_configs --alter --entity-type clients --entity-name kt-client --add-config request_percentage=50
kafka_configs --alter --entity-type users --entity-name alice --entity-type clients --entity-name kt-client --add-config producer_byte_rate=1000
kafka_configs --alter --entity-type users --entity-default --add-config request_percentage=200
kafka_configs --alter --entity-type ips --entity-name 127.0.0.9 --add-config connection_creation_rate=10
kafka_configs --describe --entity-type users --entity-name alice
same quotas-user-describe "$OUT" "Quota configs for user-principal 'alice' are consumer_byte_rate=2097152.0, producer_byte_rate=1048576.0"
kafka_configs --describe --entity-type clients --entity-name kt-client
same quotas-client-describe "$OUT" "Quota configs for client-id 'kt-client' are request_percentage=50.0"
kafka_configs --describe --entity-type users --entity-name alice --entity-type clients --entity-name kt-client
same quotas-user-client-describe "$OUT" "Quota configs for user-principal 'alice', client-id 'kt-client' are producer_byte_rate=1000.0"
kafka_configs --describe --entity-type ips --entity-name 127.0.0.9
same quotas-ip-describe "$OUT" "Quota configs for ip '127.0.0.9' are connection_creation_rate=10.0"
kafka_configs --describe --entity-type users
same quotas-users-describe "$(grep '^Quota' <<<"$OUT" | sort)" \
    "Quota configs for the default user-principal are request_percentage=200.0
Quota configs for user-principal 'alice' are consumer_byte_rate=2097152.0, producer_byte_rate=1048576.0"
kafka_configs --alter --entity-type users --entity-name alice --delete-config consumer_byte_rate
kafka_configs --describe --entity-type users --entity-name alice
same quotas-delete-config "$OUT" "Quota configs for user-principal 'alice' are producer_byte_rate=1048576.0"
kafka_configs --alter --entity-type users --entity-default --delete-config request_percentage
kafka_configs --alter --entity-type users --entity-name alice --delete-config producer_byte_rate
kafka_configs --describe --entity-type users
same quotas-all-deleted "$(grep '^Quota' <<<"$OUT")" ""

# ---------------------------------------------------------------- kafka-configs: SCRAM users
cat >"$FW_WORK/bob.properties" <<EOF
security.protocol=SASL_PLAINTEXT
sasl.mechanism=SCRAM-SHA-256
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="bob-secret";
EOF
sed 's/bob-secret/not-the-secret/' "$FW_WORK/bob.properties" >"$FW_WORK/bob-wrong.properties"
sed 's/SCRAM-SHA-256/SCRAM-SHA-512/' "$FW_WORK/bob.properties" >"$FW_WORK/bob-512.properties"
kafka_configs --alter --entity-type users --entity-name bob --add-config 'SCRAM-SHA-256=[password=bob-secret]'
same scram-add "$OUT" "Completed updating config for user bob."
kafka_configs --describe --entity-type users --entity-name bob
same scram-describe "$OUT" "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-256=iterations=4096"
# Two mechanisms of one user in one request: Kafka's controller refuses both
# (ScramControlManager: DUPLICATE_RESOURCE), changing nothing; one request each works.
kafka_configs --alter --entity-type users --entity-name bob \
    --add-config 'SCRAM-SHA-256=[password=other],SCRAM-SHA-512=[password=bob-secret]'
ok scram-two-in-one-request "not refused with DuplicateResourceException" said DuplicateResourceException
kafka_configs --alter --entity-type users --entity-name bob --add-config 'SCRAM-SHA-512=[iterations=8192,password=bob-secret]'
kafka_configs --describe --entity-type users --entity-name bob
same scram-describe-two "$OUT" "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-256=iterations=4096, SCRAM-SHA-512=iterations=8192"
# The credentials log in on the SASL listener (bob has no ACL yet: he sees no topic)
tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$SASL" --command-config "$FW_WORK/bob.properties" --list
ok scram-login "bob could not log in with SCRAM-SHA-256 (exit $RC) or saw topics: $(flat "$OUT")" eval '[ $RC = 0 ] && [ -z "$OUT" ]'
tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$SASL" --command-config "$FW_WORK/bob-wrong.properties" --list
ok scram-login-wrong-password "a wrong password was not refused (SaslAuthenticationException)" \
    eval '[ $RC = 1 ] && said SaslAuthenticationException'
kafka_configs --alter --entity-type users --entity-name bob --delete-config SCRAM-SHA-512
kafka_configs --describe --entity-type users --entity-name bob
same scram-delete-config "$OUT" "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-256=iterations=4096"
tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$SASL" --command-config "$FW_WORK/bob-512.properties" --list
ok scram-deleted-mechanism-refused "a login with the deleted SCRAM-SHA-512 credential was not refused" \
    eval '[ $RC = 1 ] && said SaslAuthenticationException'

# ---------------------------------------------------------------- console producer and consumer
# Two runs: 20 keyed records, then (after time T) 10 keyed records with headers. Every
# check below derives what it expects from these and from what kafka-get-offsets says.
for i in $(seq 1 20); do echo "k$((i % 7)):v$i"; done >"$FW_WORK/run1.txt"
for i in $(seq 21 30); do echo "src:run2,n:$i|k$((i % 7)):v$i"; done >"$FW_WORK/run2.txt"
TOOL_IN=$FW_WORK/run1.txt kafka_console_producer --bootstrap-server "$B" --topic $T \
    --reader-property parse.key=true --reader-property key.separator=:
ok console-producer-keys "the producer failed (exit $RC)" [ $RC = 0 ]
sleep 0.2
T_MS=$(now_ms) # every record of run 1 is older, every record of run 2 newer
sleep 0.2
TOOL_IN=$FW_WORK/run2.txt kafka_console_producer --bootstrap-server "$B" --topic $T \
    --reader-property parse.key=true --reader-property key.separator=: --reader-property parse.headers=true \
    --reader-property headers.delimiter='|' --reader-property headers.separator=, --reader-property headers.key.separator=:
ok console-producer-headers "the producer failed (exit $RC)" [ $RC = 0 ]
ENDS=$(offsets $T)
same get-offsets-latest-sum "$(awk '{ n += $2 } END { print n }' <<<"$ENDS")" 30

kafka_console_consumer --bootstrap-server "$B" --topic $T --group kt-console --from-beginning \
    --max-messages 30 --timeout-ms 30000 --formatter-property print.partition=true --formatter-property print.offset=true \
    --formatter-property print.headers=true --formatter-property print.key=true
# "Partition:P<TAB>Offset:O<TAB>HEADERS<TAB>KEY<TAB>VALUE" -> "P O HEADERS KEY VALUE"
CONSUMED=$(sed -nE 's/^Partition:([0-9]+)\tOffset:([0-9]+)\t([^\t]*)\t([^\t]*)\t(.*)$/\1 \2 \3 \4 \5/p' <<<"$OUT")
# what was produced as the consumer prints it: "HEADERS KEY VALUE", NO_HEADERS for none
want=$( (sed -E 's/^([^:]*):(.*)$/NO_HEADERS \1 \2/' "$FW_WORK/run1.txt"
    sed -E 's/^([^|]*)\|([^:]*):(.*)$/\1 \2 \3/' "$FW_WORK/run2.txt") | sort)
same console-consumer-records "$(awk '{ print $3, $4, $5 }' <<<"$CONSUMED" | sort)" "$want"
# each partition's records at offsets 0..end-1, none twice, none missing
same console-consumer-offsets "$(awk '{ print $1, $2 }' <<<"$CONSUMED" | sort -n -k1,1 -k2,2)" \
    "$(awk '{ for (o = 0; o < $2; o++) print $1, o }' <<<"$ENDS")"
same console-consumer-key-one-partition "$(awk '{ print $4, $1 }' <<<"$CONSUMED" | sort -u | awk '{ print $1 }' | uniq -d)" ""
# the group committed the ends when it closed
same console-consumer-group-committed "$(group_offsets kt-console $T)" "$(awk '{ print $1, $2, $2, 0 }' <<<"$ENDS")"

# ---------------------------------------------------------------- kafka-get-offsets
same get-offsets-earliest "$(offsets $T -2)" "$(awk '{ print $1, 0 }' <<<"$ENDS")"
same get-offsets-earliest-name "$(offsets $T earliest)" "$(awk '{ print $1, 0 }' <<<"$ENDS")"
# by time: the first record of run 2 in each partition that has one (Kafka prints no
# line for a partition with no record at or after the time)
first_run2() { # EARLIEST: per partition, the first offset of run 2 at or after the log start
    awk 'NR == FNR { s[$1] = $2; next }
         $3 != "NO_HEADERS" && $2 >= s[$1] && (!($1 in m) || $2 < m[$1]) { m[$1] = $2 }
         END { for (p in m) print p, m[p] }' <(echo "$1") <(echo "$CONSUMED") | sort -n
}
same get-offsets-by-time "$(offsets $T "$T_MS")" "$(first_run2 "$(awk '{ print $1, 0 }' <<<"$ENDS")")"
got=$(offsets $T max-timestamp)
ok get-offsets-max-timestamp "max-timestamp offsets [$(flat "$got")] are not each a run-2 record of its partition" \
    eval '[ -n "$got" ] && [ -z "$(comm -23 <(echo "$got") <(awk '\''$3 != "NO_HEADERS" { print $1, $2 }'\'' <<<"$CONSUMED" | sort))" ]'
kafka_get_offsets --topic-partitions "$T:0,$T:2"
same get-offsets-topic-partitions "$OUT" "$(awk -v t=$T '$1 == 0 || $1 == 2 { print t ":" $1 ":" $2 }' <<<"$ENDS")"
# No tiered storage: the earliest local offset is the log start, and no offset is
# tiered (Kafka answers -1, which the tool leaves out), as on a broker without it.
same get-offsets-earliest-local "$(offsets $T earliest-local)" "$(awk '{ print $1, 0 }' <<<"$ENDS")"
same get-offsets-latest-tiered "$(offsets $T latest-tiered)" ""
if [ "$(max_version 2)" -ge 11 ]; then
    same get-offsets-earliest-pending-upload "$(offsets $T earliest-pending-upload)" ""
else
    gap "kafka-get-offsets --time earliest-pending-upload (-6)" "ListOffsets (2) v11"
fi

# ---------------------------------------------------------------- kafka-delete-records
# Each partition with two records or more starts at 1 afterwards.
awk -v t=$T 'BEGIN { printf "{\"version\":1,\"partitions\":[" }
    $2 >= 2 { printf "%s{\"topic\":\"%s\",\"partition\":%d,\"offset\":1}", (n++ ? "," : ""), t, $1 }
    END { print "]}" }' <<<"$ENDS" >"$FW_WORK/delete.json"
kafka_delete_records --offset-json-file "$FW_WORK/delete.json"
same delete-records "$(sed -nE "s/^partition: $T-([0-9]+)\tlow_watermark: ([0-9]+)$/\1 \2/p" <<<"$OUT" | sort -n)" \
    "$(awk '$2 >= 2 { print $1, 1 }' <<<"$ENDS")"
EARLIEST=$(offsets $T -2)
same delete-records-earliest "$EARLIEST" "$(awk '{ print $1, ($2 >= 2 ? 1 : 0) }' <<<"$ENDS")"
echo "{\"version\":1,\"partitions\":[{\"topic\":\"$T\",\"partition\":0,\"offset\":1000}]}" >"$FW_WORK/delete-far.json"
kafka_delete_records --offset-json-file "$FW_WORK/delete-far.json"
ok delete-records-past-end "an offset past the end was not refused with OffsetOutOfRangeException" \
    has "^partition: $T-0.error: .*OffsetOutOfRangeException"
# the records below the start are gone for a consumer too
kafka_console_consumer --bootstrap-server "$B" --topic $T --partition 0 --offset earliest \
    --max-messages 1 --timeout-ms 30000 --formatter-property print.offset=true
same delete-records-consumer-starts "$(sed -n 's/^Offset:\([0-9]*\).*/\1/p' <<<"$OUT")" "$(awk '$1 == 0 { print $2 }' <<<"$EARLIEST")"

# ---------------------------------------------------------------- kafka-consumer-groups
kafka_consumer_groups --list
ok groups-list "kt-console is not listed: $(flat "$OUT")" grep -qx kt-console <<<"$OUT"
kafka_consumer_groups --describe --group kt-console --state
same groups-describe-state "$(awk '$1 == "kt-console" { print $(NF - 1), $NF }' <<<"$OUT")" "Empty 0"

same groups-reset-to-earliest "$(reset kt-console $T --to-earliest --execute)" "$EARLIEST"
same groups-reset-to-earliest-committed "$(committed kt-console $T)" "$EARLIEST"
same groups-reset-to-latest-dry-run "$(reset kt-console $T --to-latest --dry-run)" "$ENDS"
same groups-reset-dry-run-changes-nothing "$(committed kt-console $T)" "$EARLIEST"
same groups-reset-to-latest "$(reset kt-console $T --to-latest --execute)" "$ENDS"
same groups-reset-to-latest-committed "$(committed kt-console $T)" "$ENDS"
shifted=$(awk 'NR == FNR { s[$1] = $2; next } { o = $2 - 3; print $1, (o < s[$1] ? s[$1] : o) }' <(echo "$EARLIEST") <(echo "$ENDS"))
same groups-reset-shift-by "$(reset kt-console $T --shift-by -3 --execute)" "$shifted"
same groups-reset-shift-by-committed "$(committed kt-console $T)" "$shifted"
# to T: run 2's first record in a partition that has one, the end in the others
# (the tool falls back to the latest offset, as against Kafka)
by_time=$(awk 'NR == FNR { m[$1] = $2; next } { print $1, ($1 in m ? m[$1] : $2) }' \
    <(first_run2 "$EARLIEST") <(echo "$ENDS"))
same groups-reset-to-datetime "$(reset kt-console $T --to-datetime "$(iso_utc "$T_MS")" --execute)" "$by_time"
same groups-reset-to-datetime-committed "$(committed kt-console $T)" "$by_time"

# A live member: a console consumer in the background, group kt-live.
bg_tool org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "$B" --topic $T \
    --group kt-live --consumer-property client.id=kt-live-client --timeout-ms 90000
live_pid=$BG_PID
state_is() { # GROUP "STATE MEMBERS"
    kafka_consumer_groups --describe --group "$1" --state
    [ "$(awk -v g="$1" '$1 == g { print $(NF - 1), $NF }' <<<"$OUT")" = "$2" ]
}
wait_state() { # GROUP "STATE MEMBERS" SECONDS
    local deadline=$((SECONDS + $3))
    until state_is "$1" "$2"; do [ $SECONDS -lt $deadline ] || return 1; sleep 0.5; done
}
ok groups-live-stable "kt-live not Stable with 1 member within 30 s" wait_state kt-live "Stable 1" 30
kafka_consumer_groups --describe --group kt-live --state
same groups-live-state "$(awk '$1 == "kt-live" { print $2, $3, $4 }' <<<"$OUT")" "$B (0) range"
kafka_consumer_groups --describe --group kt-live --members
same groups-live-members "$(awk '$1 == "kt-live" { print substr($2, 1, 15), $3, $4, $5 }' <<<"$OUT")" \
    "kt-live-client- /127.0.0.1 kt-live-client 5"
kafka_consumer_groups --describe --group kt-live --members --verbose
same groups-live-assignment "$(grep -oE "$T:[0-9,]+" <<<"$OUT")" "$T:0,1,2,3,4"
kafka_consumer_groups --describe --group kt-live
same groups-live-owners "$(awk '$1 == "kt-live" { print $3, substr($7, 1, 15), $9 }' <<<"$OUT" | sort -n)" \
    "$(awk '{ print $1, "kt-live-client-", "kt-live-client" }' <<<"$ENDS")"
reset kt-live $T --to-earliest --execute >/dev/null
ok groups-live-reset-refused "reset of an active group was not refused" \
    has "Assignments can only be reset if the group 'kt-live' is inactive, but the current state is Stable"
kafka_consumer_groups --delete --group kt-live
ok groups-live-delete-refused "deleting an active group was not refused with GroupNotEmptyException" has GroupNotEmptyException
kafka_consumer_groups --delete-offsets --group kt-live --topic $T
ok groups-live-delete-offsets-refused "deleting offsets of a subscribed topic was not refused" \
    eval '[ "$(grep -c GroupSubscribedToTopicException <<<"$OUT")" = 5 ]'
kill -TERM $live_pid 2>/dev/null || true
wait $live_pid 2>/dev/null || true
ok groups-live-left "kt-live not Empty within 10 s of its consumer's close" wait_state kt-live "Empty 0" 10

# A KIP-848 group (group.protocol=consumer: ConsumerGroupHeartbeat, and the tool's
# ConsumerGroupDescribe): two console consumers in the background, group kt-848, on a
# topic of 4 partitions with 40 keyed records, committing every second. Kafka's server
# assignor (uniform) gives each 2 partitions; the tool shows the group as Kafka does.
T848=kt-848
kafka_topics --create --topic $T848 --partitions 4
for i in $(seq 1 40); do echo "k$i:v$i"; done >"$FW_WORK/run848.txt"
TOOL_IN=$FW_WORK/run848.txt kafka_console_producer --bootstrap-server "$B" --topic $T848 \
    --reader-property parse.key=true --reader-property key.separator=:
ENDS848=$(offsets $T848)
same groups-848-produced "$(awk '{ n += $2 } END { print n }' <<<"$ENDS848")" 40
kt848_pids=()
for c in kt-848-a kt-848-b; do
    bg_tool org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "$B" --topic $T848 \
        --group kt-848 --from-beginning --timeout-ms 90000 --consumer-property group.protocol=consumer \
        --consumer-property client.id=$c --consumer-property auto.commit.interval.ms=1000
    kt848_pids+=("$BG_PID")
done
ok groups-848-stable "kt-848 not Stable with 2 members within 30 s" wait_state kt-848 "Stable 2" 30
committed_ends() { [ "$(group_offsets kt-848 $T848)" = "$(awk '{ print $1, $2, $2, 0 }' <<<"$ENDS848")" ]; }
deadline=$((SECONDS + 30))
until committed_ends || [ $SECONDS -ge $deadline ]; do sleep 0.5; done
kafka_consumer_groups --list --type
same groups-848-list-type "$(awk '$1 == "kt-848" || $1 == "kt-console" { print $1, $2 }' <<<"$OUT" | sort)" \
    "kt-848 Consumer
kt-console Classic"
kafka_consumer_groups --describe --group kt-848 --state
same groups-848-state "$(awk '$1 == "kt-848" { print $2, $3, $4, $5, $6 }' <<<"$OUT")" "$B (0) uniform Stable 2"
kafka_consumer_groups --describe --group kt-848 --state --verbose
# GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE GROUP-EPOCH TARGET-ASSIGNMENT-EPOCH #MEMBERS
same groups-848-state-verbose "$(awk '$1 == "kt-848" { print $5, ($6 == $7 && $6 > 0 ? "epochs-equal" : $6 "/" $7), $8 }' <<<"$OUT")" \
    "Stable epochs-equal 2"
kafka_consumer_groups --describe --group kt-848 --members
same groups-848-members "$(awk '$1 == "kt-848" { print length($2), $3, $4, $5 }' <<<"$OUT" | sort -k3)" \
    "22 /127.0.0.1 kt-848-a 2
22 /127.0.0.1 kt-848-b 2"
kafka_consumer_groups --describe --group kt-848 --members --verbose
# ... CLIENT-ID #PARTITIONS CURRENT-EPOCH CURRENT-ASSIGNMENT TARGET-EPOCH TARGET-ASSIGNMENT
members848=$(awk '$1 == "kt-848" { print $2, $4, $5, $6, $7, $8, $9 }' <<<"$OUT")
same groups-848-members-reconciled "$(awk '{ print $2, $3, ($4 == $6 && $5 == $7 ? "at-target" : $4 " " $5 " " $6 " " $7) }' <<<"$members848" | sort)" \
    "kt-848-a 2 at-target
kt-848-b 2 at-target"
# "partition member-id client-id" of each member's current assignment (kt-848:0,1)
owners848=$(awk -v t=$T848 '{ sub(t ":", "", $5); n = split($5, p, ","); for (i = 1; i <= n; i++) print p[i], $1, $2 }' \
    <<<"$members848" | sort -n)
same groups-848-assignment "$(awk '{ print $1 }' <<<"$owners848" | paste -sd,)" "0,1,2,3"
kafka_consumer_groups --describe --group kt-848
# GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID
same groups-848-offsets "$(awk -v t=$T848 '$1 == "kt-848" && $2 == t { print $3, $4, $5, $6 }' <<<"$OUT" | sort -n)" \
    "$(awk '{ print $1, $2, $2, 0 }' <<<"$ENDS848")"
same groups-848-owners "$(awk -v t=$T848 '$1 == "kt-848" && $2 == t { print $3, $7, $9 }' <<<"$OUT" | sort -n)" "$owners848"
kafka_consumer_groups --describe --group kt-848 --verbose
same groups-848-offsets-verbose "$(awk -v t=$T848 '$1 == "GROUP" { print $4 } $1 == "kt-848" && $2 == t { print $3, $4, $5, $6, $7 }' <<<"$OUT" | sort -n)" \
    "$( (echo LEADER-EPOCH; awk '{ print $1, 0, $2, $2, 0 }' <<<"$ENDS848") | sort -n)"
for p in "${kt848_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
for p in "${kt848_pids[@]}"; do wait "$p" 2>/dev/null || true; done
ok groups-848-left "kt-848 not Empty within 15 s of its consumers' close" wait_state kt-848 "Empty 0" 15
same groups-848-left-committed "$(committed kt-848 $T848)" "$(awk '{ print $1, $2 }' <<<"$ENDS848")"
kafka_consumer_groups --delete --group kt-848
same groups-848-delete "$OUT" "Deletion of requested consumer groups ('kt-848') was successful."
kafka_topics --delete --topic $T848

kafka_consumer_groups --delete-offsets --group kt-console --topic $T:0
ok groups-delete-offsets-partition "not [$T 0 Successful]: $(flat "$OUT")" has "^$T +0 +Successful"
same groups-delete-offsets-partition-gone "$(committed kt-console $T)" "$(awk '$1 != 0' <<<"$by_time")"
kafka_consumer_groups --delete-offsets --group kt-console --topic $T
same groups-delete-offsets-topic "$(committed kt-console $T)" ""
kafka_consumer_groups --delete --group kt-console
same groups-delete "$OUT" "Deletion of requested consumer groups ('kt-console') was successful."
kafka_consumer_groups --list
ok groups-deleted-not-listed "kt-console still listed" eval '! grep -qx kt-console <<<"$OUT"'
kafka_consumer_groups --delete --group kt-console
ok groups-delete-missing "deleting a missing group did not say GroupIdNotFoundException" has GroupIdNotFoundException

# ---------------------------------------------------------------- kafka-acls
acls() { # "TYPE NAME PATTERN PRINCIPAL HOST OPERATION PERMISSION" lines of --list output, sorted
    awk '/^Current ACLs for resource/ {
            match($0, /resourceType=[A-Z_]+, name=[^,]*, patternType=[A-Z]+/)
            split(substr($0, RSTART, RLENGTH), r, /, /); for (i in r) sub(/^[a-zA-Z]+=/, "", r[i]); res = r[1] " " r[2] " " r[3]; next }
         /^\t\(principal=/ { line = $0; gsub(/[\t()]/, "", line); n = split(line, f, /, /)
            out = res; for (i = 1; i <= n; i++) { sub(/^[a-zA-Z]+=/, "", f[i]); out = out " " f[i] }; print out }' <<<"$OUT" | sort
}
kafka_acls --add --allow-principal User:bob --operation Read --operation Describe --topic $T --group kt-bob
kafka_acls --add --allow-principal User:bob --producer --topic kt-bob- --resource-pattern-type prefixed
kafka_acls --add --deny-principal User:bob --operation Write --topic $T
ok acls-add "the last --add failed (exit $RC)" [ $RC = 0 ]
BOB_ACLS="GROUP kt-bob LITERAL User:bob * DESCRIBE ALLOW
GROUP kt-bob LITERAL User:bob * READ ALLOW
TOPIC kt-bob- PREFIXED User:bob * CREATE ALLOW
TOPIC kt-bob- PREFIXED User:bob * DESCRIBE ALLOW
TOPIC kt-bob- PREFIXED User:bob * WRITE ALLOW
TOPIC $T LITERAL User:bob * DESCRIBE ALLOW
TOPIC $T LITERAL User:bob * READ ALLOW
TOPIC $T LITERAL User:bob * WRITE DENY"
kafka_acls --list
same acls-list "$(acls)" "$BOB_ACLS"
kafka_acls --list --topic $T
same acls-list-topic "$(acls)" "$(grep "^TOPIC $T " <<<"$BOB_ACLS")"
kafka_acls --list --principal User:bob
same acls-list-principal "$(acls)" "$BOB_ACLS"
# what they decide, for bob on the SASL listener
bob() { tool "$1" --bootstrap-server "$SASL" "${@:2}"; }
bob org.apache.kafka.tools.TopicCommand --command-config "$FW_WORK/bob.properties" --list
same acls-describe-granted "$OUT" "$T"
echo "denied" >"$FW_WORK/one.txt"
before=$(offsets $T)
TOOL_IN=$FW_WORK/one.txt bob org.apache.kafka.tools.ConsoleProducer --command-config "$FW_WORK/bob.properties" --topic $T
ok acls-write-denied "bob's write to $T was not refused with TopicAuthorizationException" said TopicAuthorizationException
same acls-write-denied-nothing-stored "$(offsets $T)" "$before"
TOOL_IN=$FW_WORK/one.txt bob org.apache.kafka.tools.ConsoleProducer --command-config "$FW_WORK/bob.properties" --topic kt-bob-new
same acls-prefixed-create-write "$(offsets kt-bob-new)" "0 1"
left=$(awk 'NR == FNR { s[$1] = $2; next } { n += $2 - s[$1] } END { print n }' <(echo "$EARLIEST") <(echo "$ENDS"))
bob org.apache.kafka.tools.consumer.ConsoleConsumer --command-config "$FW_WORK/bob.properties" --topic $T \
    --group kt-bob --from-beginning --max-messages "$left" --timeout-ms 30000
same acls-read-granted "$(grep -c '^v' <<<"$OUT")" "$left"
bob org.apache.kafka.tools.consumer.ConsoleConsumer --command-config "$FW_WORK/bob.properties" --topic $T \
    --group kt-other --from-beginning --max-messages 1 --timeout-ms 15000
ok acls-group-denied "bob read in a group he has no ACL for" said GroupAuthorizationException
kafka_acls --remove --deny-principal User:bob --operation Write --topic $T --force
kafka_acls --list --topic $T
same acls-remove-one "$(acls)" "$(grep "^TOPIC $T " <<<"$BOB_ACLS" | grep -v DENY)"
kafka_acls --remove --topic $T --force
kafka_acls --remove --group kt-bob --force
kafka_acls --remove --topic kt-bob- --resource-pattern-type prefixed --force
kafka_acls --list
same acls-remove-all "$(acls)" ""
bob org.apache.kafka.tools.TopicCommand --command-config "$FW_WORK/bob.properties" --list
same acls-removed-nothing-visible "$OUT" ""

# ---------------------------------------------------------------- kafka-reassign-partitions
# Not in the issue's list; its APIs (45, 46) came with issue 17. Nothing is ever being
# moved, and the replicas a partition has (its one, on node 0) are always "completed".
kafka_reassign_partitions --list
same reassign-list "$OUT" "No partition reassignments found."
echo "{\"version\":1,\"partitions\":[{\"topic\":\"$T\",\"partition\":0,\"replicas\":[0]}]}" >"$FW_WORK/reassign.json"
kafka_reassign_partitions --verify --reassignment-json-file "$FW_WORK/reassign.json"
ok reassign-verify "not 'Reassignment of partition $T-0 is completed.' (exit $RC)" \
    eval '[ $RC = 0 ] && has "^Reassignment of partition $T-0 is completed\.$"'
# --generate (and --execute) first ask where each replica's log directory is
echo "{\"version\":1,\"topics\":[{\"topic\":\"$T\"}]}" >"$FW_WORK/move.json"
kafka_reassign_partitions --generate --topics-to-move-json-file "$FW_WORK/move.json" --broker-list 0
if served 35; then
    # the proposal: every partition of the topic on node 0, its only broker
    got=$(grep -A1 '^Proposed partition reassignment configuration' <<<"$OUT" | tail -n 1 | python3 -c '
import json, sys
for p in json.load(sys.stdin)["partitions"]:
    print(p["topic"], p["partition"], p["replicas"])' | sort -k2,2n) || true
    same reassign-generate "$got" "$(awk -v t=$T '{ print t, $1, "[0]" }' <<<"$ENDS")"
else
    ok reassign-generate-unsupported "not the UnsupportedVersionException for DESCRIBE_LOG_DIRS (exit $RC)" \
        eval '[ $RC != 0 ] && said "does not support DESCRIBE_LOG_DIRS"'
    gap "kafka-reassign-partitions --generate/--execute" "DescribeLogDirs (35)"
fi

# ---------------------------------------------------------------- kafka-configs: groups, client metrics
# Kafka 4 keeps configurations for groups (KIP-848's consumer.session.timeout.ms, ...):
# a group with none set describes empty. The gateway answers DescribeConfigs for TOPIC
# and BROKER resources only, which is seen by running it (ApiVersions cannot tell).
kafka_configs --describe --entity-type groups --entity-name kt-verify-none
if [ $RC = 0 ]; then
    same configs-group-describe "$OUT" "Dynamic configs for group kt-verify-none are:"
else
    ok configs-group-unsupported "not refused as an unsupported resource type (exit $RC)" \
        said "InvalidRequestException: unsupported resource type 32"
    gap "kafka-configs --entity-type groups" "DescribeConfigs/IncrementalAlterConfigs for GROUP resources (type 32)"
fi
if served 74; then
    kafka_configs --describe --entity-type client-metrics
    same configs-client-metrics-describe "$(grep -v '^$' <<<"$OUT")" "" # none were made
else
    gap "kafka-configs --entity-type client-metrics --describe" "ListConfigResources (74)"
fi

# ---------------------------------------------------------------- kafka-leader-election
# Every partition has its leader: no election is needed (ElectLeaders answers
# ELECTION_NOT_NEEDED, and for "all partitions" lists none), as on a one-broker Kafka.
kafka_leader_election --election-type preferred --all-topic-partitions
ok leader-election-all "exit $RC, output [$(flat "$OUT")]" eval '[ $RC = 0 ] && [ -z "$OUT" ]'
kafka_leader_election --election-type preferred --topic $T --partition 1
same leader-election-one "$OUT" "Valid replica already elected for partitions $T-1"
kafka_leader_election --election-type unclean --topic kt-missing --partition 0
ok leader-election-missing "a missing topic did not fail with UnknownTopicOrPartitionException" \
    eval '[ $RC = 1 ] && has "UnknownTopicOrPartitionException: No such topic as kt-missing"'

# ---------------------------------------------------------------- kafka-log-dirs
if served 35; then
    kafka_log_dirs --describe --topic-list $T
    # one broker, 0; its directories without error; each partition of the topic once,
    # and a size above 0 for those holding records
    got=$(grep '^{' <<<"$OUT" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for b in d["brokers"]:
    for ld in b["logDirs"]:
        for p in ld["partitions"]:
            print(b["broker"], json.dumps(ld["error"]), p["partition"], "some" if p["size"] > 0 else "empty")' | sort -k3,3V) || true
    same log-dirs-describe "$got" "$(awk -v t=$T '{ print 0, "null", t "-" $1, ($2 > 0 ? "some" : "empty") }' <<<"$ENDS")"
else
    kafka_log_dirs --describe --topic-list $T
    ok log-dirs-unsupported "not the UnsupportedVersionException for DESCRIBE_LOG_DIRS (exit $RC)" \
        eval '[ $RC != 0 ] && said "does not support DESCRIBE_LOG_DIRS"'
    gap "kafka-log-dirs --describe" "DescribeLogDirs (35)"
fi

# ---------------------------------------------------------------- kafka-transactions
# Not in the issue's list, but the script ships with the rest: list needs
# ListTransactions (66), describe DescribeTransactions (65), describe-producers and
# find-hanging DescribeProducers (61), abort WriteTxnMarkers (27).
txn_rows() { awk 'NR > 1 { $1 = $1; print }' <<<"$OUT"; } # the table without its header
if served 66 && served 65 && served 61 && served 27; then
    kafka_transactions list
    same transactions-list-empty "$(txn_rows)" "" # no transactional producer ran yet
    # A transactional producer that commits every 200 ms, then the tools' views of it.
    kafka_topics --create --topic kt-txn --partitions 2
    tool org.apache.kafka.tools.ProducerPerformance --topic kt-txn --num-records 2000 \
        --record-size 100 --throughput -1 --transactional-id kt-txn-id \
        --transaction-duration-ms 200 --command-property bootstrap.servers="$B"
    ok transactions-producer "transactional perf test failed (exit $RC)" \
        eval '[ $RC = 0 ] && has "^2000 records sent"'
    kafka_transactions list # TransactionalId Coordinator ProducerId TransactionState
    same transactions-list "$(txn_rows | awk '{ print $1, $4 }')" "kt-txn-id CompleteCommit"
    pid=$(txn_rows | awk '{ print $3 }')
    kafka_transactions list --producer-id-filter "$pid" --state-filter Ongoing
    same transactions-list-filtered "$(txn_rows)" ""
    kafka_transactions describe --transactional-id kt-txn-id
    same transactions-describe "$(txn_rows | awk '{ print $2, $3, $5, $6 }')" \
        "kt-txn-id $pid CompleteCommit 60000"
    # ProducerId ProducerEpoch LatestCoordinatorEpoch LastSequence LastTimestamp Start,
    # for each partition: the producer on those it wrote (the sticky partitioner may
    # have left one of the two without a record, as on Kafka), nobody on the others.
    described=() expected=()
    while read -r partition end; do
        kafka_transactions describe-producers --topic kt-txn --partition "$partition"
        described+=("$partition: $(txn_rows | awk '{ print $1, $6 }')")
        expected+=("$partition: $([ "$end" -gt 0 ] && echo "$pid None")")
    done < <(offsets kt-txn)
    same transactions-describe-producers "${described[*]}" "${expected[*]}"
    # A producer SIGKILLed inside a transaction: it holds partition 0 open, then
    # `abort` ends it with a marker, as for a hanging transaction.
    kafka_topics --create --topic kt-hang --partitions 1
    bg_tool org.apache.kafka.tools.ProducerPerformance --topic kt-hang --num-records 100000 \
        --record-size 10 --throughput 50 --transactional-id kt-hang-id \
        --transaction-duration-ms 600000 --command-property bootstrap.servers="$B"
    hang_pid=$BG_PID
    open_start() {
        kafka_transactions describe-producers --topic kt-hang --partition 0
        txn_rows | awk '{ print $6 }'
    }
    for _ in $(seq 60); do [ "$(open_start)" = 0 ] && break; sleep 0.5; done
    kill -9 $hang_pid 2>/dev/null || true
    same transactions-open-start "$(open_start)" 0
    # Open for less than the tool's 15 minutes and still Ongoing at its coordinator.
    kafka_transactions find-hanging --topic kt-hang
    same transactions-find-hanging "$(txn_rows)" ""
    kafka_transactions abort --topic kt-hang --partition 0 --start-offset 0
    ok transactions-abort "abort failed (exit $RC)" eval '[ $RC = 0 ]'
    same transactions-aborted "$(open_start)" None
    kafka_console_consumer --bootstrap-server "$B" --topic kt-hang --from-beginning \
        --isolation-level read_committed --timeout-ms 5000
    same transactions-aborted-unread "$OUT" ""
else
    kafka_transactions list
    ok transactions-list-unsupported "not the UnsupportedVersionException for LIST_TRANSACTIONS" \
        said "does not support LIST_TRANSACTIONS"
    gap "kafka-transactions" "ListTransactions (66), DescribeTransactions (65), DescribeProducers (61), WriteTxnMarkers (27)"
fi

# ---------------------------------------------------------------- kafka-features
features() { # "feature min max finalized epoch" of kafka-features describe, a feature a line
    kafka_features describe
    awk '$1 == "Feature:" { print $2, $4, $6, $8, $10 }' <<<"$OUT"
}
gateway_version() { features | awk '$1 == "gateway.version"'; }
txn=$(features | awk '$1 == "transaction.version" { print $1, $2, $3, $4 }')
# Transactions v2 (KIP-890), finalized on both stores (docs/COMPATIBILITY.md).
same features-transaction-version "$txn" "transaction.version 0 2 2"
f=$(gateway_version)
epoch=$(awk '{ print $5 }' <<<"$f")
same features-describe "$(awk '{ print $1, $2, $3, $4 }' <<<"$f")" "gateway.version 1 2 1"
# Level 2 refuses what Iggy cannot keep exactly: a segment.bytes that Kafka accepts but
# that is no multiple of 512 blocks the upgrade, naming the topic (docs/CONFIGS.md).
kafka_topics --create --topic kt-segment --partitions 1 --config segment.bytes=1048577
kafka_features upgrade --feature gateway.version=2 --dry-run
ok features-upgrade-dry-run-refused "not refused naming kt-segment: $(flat "$OUT")" \
    eval '[ $RC = 1 ] && has "topic .kt-segment.: segment.bytes=1048577"'
kafka_features upgrade --feature gateway.version=2
ok features-upgrade-refused "not refused naming kt-segment: $(flat "$OUT")" \
    eval '[ $RC = 1 ] && has "Could not upgrade gateway.version to 2.*topic .kt-segment.: segment.bytes=1048577"'
same features-refused-changes-nothing "$(gateway_version)" "$f"
kafka_configs --alter --entity-type topics --entity-name kt-segment --add-config segment.bytes=1048576
kafka_features upgrade --feature gateway.version=2
same features-upgrade "$OUT" "gateway.version was upgraded to 2."
same features-upgraded "$(gateway_version)" "gateway.version 1 2 2 $((epoch + 1))"
kafka_configs --alter --entity-type topics --entity-name kt-segment --add-config segment.bytes=1048577
ok features-level-2-enforced "segment.bytes=1048577 accepted at level 2" \
    eval '[ $RC != 0 ] && said "InvalidConfigurationException.*gateway.version 2"'
kafka_features upgrade --feature gateway.version=3
ok features-unsupported-level "level 3 was not refused (exit $RC)" eval '[ $RC = 1 ] && has "Could not upgrade gateway.version to 3"'
kafka_features downgrade --feature gateway.version=1
same features-downgrade "$OUT" "gateway.version was downgraded to 1."
same features-downgraded "$(gateway_version)" "gateway.version 1 2 1 $((epoch + 2))"
kafka_topics --delete --topic kt-segment

# ---------------------------------------------------------------- verifiable producer and consumer
# The consumer starts first and waits; the producer sends 3000 keyed records (acks=all,
# idempotent) while it reads. Their own JSON events account for every record.
kafka_topics --create --topic kt-verify --partitions 3
bg_tool org.apache.kafka.tools.VerifiableConsumer --bootstrap-server "$B" --topic kt-verify \
    --group-id kt-verify --max-messages 3000 --reset-policy earliest --verbose
VC=$BG_RUN
vc_pid=$BG_PID
tool org.apache.kafka.tools.VerifiableProducer --bootstrap-server "$B" --topic kt-verify --max-messages 3000 \
    --acks -1 --repeating-keys 17
VP=$LAST
deadline=$((SECONDS + 60))
while kill -0 $vc_pid 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.5; done
kill -9 $vc_pid 2>/dev/null || true
wait $vc_pid 2>/dev/null || true
if got=$(python3 "$HERE/verifiable.py" "$VP.out" "$VC.out" 2>&1); then
    same verifiable-no-loss-no-duplicate "$got" "acked 3000 consumed 3000 partitions 3"
else
    fail verifiable-no-loss-no-duplicate "$(flat "$(head -n 5 <<<"$got")")"
fi
same verifiable-group-at-end "$(group_offsets kt-verify kt-verify | awk '{ print $1, $4 }')" "0 0
1 0
2 0"

# ---------------------------------------------------------------- producer and consumer perf tests
kafka_topics --create --topic kt-perf --partitions 2
tool org.apache.kafka.tools.ProducerPerformance --topic kt-perf --num-records 50000 --record-size 100 \
    --throughput -1 --bootstrap-server "$B" --command-property acks=all
ok producer-perf-test "no '50000 records sent' summary (exit $RC)" eval '[ $RC = 0 ] && has "^50000 records sent, "'
same producer-perf-test-stored "$(offsets kt-perf | awk '{ n += $2 } END { print n }')" 50000
tool org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "$B" --topic kt-perf --num-records 50000 \
    --group kt-perf --timeout 60000
# start.time, end.time, MB, MB.sec, nMsg, ...: the one data line after the header
same consumer-perf-test "$(awk -F', ' 'NR == 2 { print $5 }' <<<"$OUT")" 50000
ok consumer-perf-test-complete "it stopped early (exit $RC)" eval '[ $RC = 0 ] && ! has "Exiting before consuming"'

echo "kafka-tools: $(cat "$FW_WORK/runs/count") tool runs in $((SECONDS - t0)) s on $FW_BACKEND; ${#gaps[@]} known gaps" >&2
[ "$failed" = 0 ] || gw_log kt
echo "kafka-tools: $passed passed, $failed failed"
[ "$failed" = 0 ]
