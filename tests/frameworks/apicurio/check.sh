#!/usr/bin/env bash
# Apicurio Registry 3.3.3, the real one (pom.xml: its Quarkus distribution from Maven
# Central, run on the Temurin 25 JDK), with its KafkaSQL storage: it keeps every write
# in a journal topic and each replica rebuilds its in-memory H2 database by reading
# that topic from the start. Against gateways started by ../lib.sh (embedded store, or
# FW_BACKEND=iggy):
#   start             a registry creates its journal, snapshots and events topics
#                     (cleanup.policy=delete, retention.ms=-1, retention.bytes=-1) and
#                     passes its own startup verification of their configs
#                     (DescribeConfigs with synonyms) and of the journal's contents
#   register          Avro schemas through the v3 REST API (3 versions under a BACKWARD
#                     rule, an incompatible one refused, the artifact's metadata updated
#                     3 times), a JSON schema, a Confluent-compatible subject with 2
#                     versions; all served back, and all in the journal topic
#   registry-restart  SIGTERM the registry, start a fresh one: it serves the same
#                     schemas, ids, metadata and rule (the rule still refuses), and its
#                     next version gets the next global id (no id reused)
#   gateway-restart   SIGKILL the gateway under the running registry (gw_restart): it
#                     writes again (a KafkaSQL write returns once the registry's own
#                     consumer has read it back), and serves everything
#   second-registry   a fresh registry started after the gateway restart (on Iggy
#                     through a second gateway of the cluster, on the same iggy-server)
#                     serves the same state; a write on either replica is served by
#                     the other
#   refuses-compact   a registry told to create its journal compacted refuses to start
#                     (never ready), naming the effective cleanup.policy=compact and its
#                     source (a topic config): the gateway reports configs truthfully. Run
#                     first, on a cluster of one gateway. (It found that on Iggy with a
#                     second gateway up, DescribeConfigs answered UNKNOWN_TOPIC_OR_PARTITION
#                     for a topic made through the other gateway 0.1 to 1+ s before,
#                     longer than the registry retries; fixed, and tested in
#                     tests/iggy_backend/topics.rs)
# No compaction wait: Apicurio 3 keys every journal record with a fresh UUID (nothing is
# superseded, so compaction would remove nothing) and refuses to start on a compacted
# journal, snapshots or events topic (KafkaAdminUtil.verifyTopicConfiguration); the
# gateways run the compactor (IGGY_KAFKA_COMPACTION_INTERVAL_MS=200) all the same.
# Not checked: restoring from a KafkaSQL snapshot (POST /admin/snapshots). Apicurio 3.3.3
# drops the snapshots topic's records that arrive in the poll that completes its
# consumer's group assignment (consumeSnapshotsTopic), which any broker may deliver
# there, so a fresh registry reads the whole journal instead.
# Creation times are not compared across restarts: a replica stamps them when it
# applies a journal record (AbstractSqlRegistryStorage: new Date()).
# Needs `bash tests/frameworks/deps.sh` first. Last line: "apicurio: N passed, M failed".
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$HERE/../lib.sh"
CP=$(fw_classpath apicurio)
APP=$HERE/target/apicurio/quarkus-run.jar
[ -s "$APP" ] || { echo "FAIL: no $APP (tests/frameworks/deps.sh)" >&2; exit 1; }
# The registry is compiled for Java 21; the machines' default JDK is 17.
REGISTRY_JAVA=${APICURIO_JAVA:-/usr/lib/jvm/temurin-25-jdk-amd64/bin/java}
[ -x "$REGISTRY_JAVA" ] || { echo "FAIL: no Java 21+ at $REGISTRY_JAVA (APICURIO_JAVA)" >&2; exit 1; }

declare -A R_PID R_PORT R_MPORT

tool() { java -cp "$CP" JournalTool "$@" 2>>"$FW_WORK/tool.log"; }


# ---------------------------------------------------------------- registries
# reg_run N GATEWAY [-Dname=value ...]: registry N in the background, on the KafkaSQL
# storage through gateway GATEWAY, REST API and management interface (health) on free
# loopback ports; its log is $FW_WORK/registryN.log. A poll timeout of 1 s, not 5 s:
# the startup reads each topic until one poll comes back empty.
reg_run() {
    local n=$1 gw=$2
    shift 2
    R_PORT[$n]=$(fw_free_port)
    R_MPORT[$n]=$(fw_free_port)
    "$REGISTRY_JAVA" -Xmx256m -XX:TieredStopAtLevel=1 \
        -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="${R_PORT[$n]}" \
        -Dquarkus.management.host=127.0.0.1 -Dquarkus.management.port="${R_MPORT[$n]}" \
        -Dapicurio.storage.kind=kafkasql -Dapicurio.kafkasql.bootstrap.servers="${FW_ADDR[$gw]}" \
        -Dapicurio.kafkasql.consumer.poll.timeout=1000 \
        -Dapicurio.storage.snapshot.location="$FW_WORK" \
        "$@" -jar "$APP" >>"$FW_WORK/registry$n.log" 2>&1 &
    R_PID[$n]=$!
    FW_EXTRA_PIDS="${FW_EXTRA_PIDS:-} $!"
}

ready() { # N: its readiness check is UP (KafkaSQL: once it has read the journal to its end)
    kill -0 "${R_PID[$1]}" 2>/dev/null || { SHOW="registry $1 exited (registry$1.log)"; return 2; }
    curl -sf -m 5 "http://127.0.0.1:${R_MPORT[$1]}/health/ready" >/dev/null
}

reg_start() { # N GATEWAY: reg_run, then up to 120 s for it to be ready
    reg_run "$1" "$2"
    local end=$((SECONDS + 120)) rc
    while :; do
        rc=0
        ready "$1" || rc=$?
        [ $rc -eq 0 ] && return 0
        [ $rc -eq 2 ] && { WHY=$SHOW; return 1; }
        [ $SECONDS -ge $end ] && { WHY="registry $1 not ready after 120 s"; return 1; }
        sleep 0.5
    done
}

reg_stop() { fw_stop "${R_PID[$1]}" TERM "registry $1"; } # N: SIGTERM, 20 s at most

# api N METHOD PATH [JSON [CONTENT-TYPE]]: the answer's body; fails on a non-2xx status.
# PATH is under /apis (registry/v3/..., ccompat/v7/...).
api() {
    curl -sf -m 15 -X "$2" -H "Content-Type: ${5:-application/json}" ${4:+--data "$4"} \
        "http://127.0.0.1:${R_PORT[$1]}/apis/$3"
}
# refused N: registry N refuses an incompatible version 4 of fw/orders (HTTP 400 or 409,
# "Incompatible artifact": the BACKWARD rule); SHOW: what it answered
refused() {
    local out
    out=$(curl -s -w '\n%{http_code}' -m 15 -X POST -H 'Content-Type: application/json' \
        --data "$(version_json 4 "$(avro_bad)")" "http://127.0.0.1:${R_PORT[$1]}/apis/registry/v3/groups/fw/artifacts/orders/versions")
    SHOW="HTTP $(tail -n 1 <<<"$out"): $(head -c 200 <<<"$out")"
    [[ $(tail -n 1 <<<"$out") == 40[09] ]] && grep -q 'Incompatible artifact' <<<"$out"
}

# ---------------------------------------------------------------- schemas
# avro K: the Order record with K-1 optional fields after id: each one BACKWARD-compatible
# with the one before. avro_bad: id changed to a string, compatible with none.
avro() {
    local i fields='{"name":"id","type":"long"}'
    for i in $(seq 2 "$1"); do fields+=",{\"name\":\"f$i\",\"type\":[\"null\",\"string\"],\"default\":null}"; done
    echo "{\"type\":\"record\",\"name\":\"Order\",\"namespace\":\"fw\",\"fields\":[$fields]}"
}
avro_bad() { echo '{"type":"record","name":"Order","namespace":"fw","fields":[{"name":"id","type":"string"}]}'; }
version_json() { # VERSION CONTENT
    jq -nc --arg v "$1" --arg c "$2" '{version:$v,content:{content:$c,contentType:"application/json"}}'
}
add_version() { # N VERSION: version VERSION of fw/orders (avro VERSION) through registry N
    api "$1" POST registry/v3/groups/fw/artifacts/orders/versions "$(version_json "$2" "$(avro "$2")")"
}
ccompat_register() { # N SUBJECT SCHEMA: the id the Confluent-compatible API gives it
    api "$1" POST "ccompat/v7/subjects/$2/versions" "$(jq -nc --arg s "$3" '{schema:$s}')" \
        application/vnd.schemaregistry.v1+json | jq -r .id
}

# state N: what registry N serves, creation and modification times left out: fw/orders'
# metadata, its versions (global id, content id, state) with each one's content, its
# rules, fw/customer's latest content, the subject payments-value's versions and
# each one's schema by id, and the artifacts a search of group fw finds.
state() {
    local n=$1 v id
    api "$n" GET registry/v3/groups/fw/artifacts/orders | jq -c '{name, description, labels, artifactType}' || return 1
    api "$n" GET registry/v3/groups/fw/artifacts/orders/versions |
        jq -c '[.versions[] | [.version, .globalId, .contentId, .state]] | sort' || return 1
    for v in $(api "$n" GET registry/v3/groups/fw/artifacts/orders/versions | jq -r '.versions[].version' | sort -n); do
        echo "orders $v: $(api "$n" GET "registry/v3/groups/fw/artifacts/orders/versions/$v/content")" || return 1
    done
    api "$n" GET registry/v3/groups/fw/artifacts/orders/rules | jq -c . || return 1
    api "$n" GET registry/v3/groups/fw/artifacts/orders/rules/COMPATIBILITY | jq -c . || return 1
    echo "customer: $(api "$n" GET 'registry/v3/groups/fw/artifacts/customer/versions/branch=latest/content' | jq -c .)" || return 1
    api "$n" GET ccompat/v7/subjects/payments-value/versions | jq -c . || return 1
    for v in $(api "$n" GET ccompat/v7/subjects/payments-value/versions | jq -r '.[]'); do
        id=$(api "$n" GET "ccompat/v7/subjects/payments-value/versions/$v" | jq -r .id) || return 1
        echo "payments-value $v: id $id $(api "$n" GET "ccompat/v7/schemas/ids/$id" | jq -c .schema)" || return 1
    done
    api "$n" GET 'registry/v3/search/artifacts?groupId=fw&limit=50' | jq -c '[.artifacts[].artifactId] | sort'
}

# same_state N WANT_FILE: registry N serves what WANT_FILE holds; SHOW: the difference
same_state() {
    local got
    got=$(state "$1" 2>/dev/null) || { SHOW="reading registry $1 failed"; return 1; }
    SHOW=$(diff <(echo "$got") "$2" | head -n 6 | tr '\n' ' ') || true
    [ "$got" = "$(cat "$2")" ]
}

max_global_id() { # N: the highest global id of fw/orders' versions
    api "$1" GET registry/v3/groups/fw/artifacts/orders/versions | jq '[.versions[].globalId] | max'
}

# ---------------------------------------------------------------- the sub-checks
check_start() {
    reg_start 1 main || return 1
    local t want got
    want="cleanup.policy=delete (DYNAMIC_TOPIC_CONFIG)
min.insync.replicas=1 (DYNAMIC_TOPIC_CONFIG)
retention.bytes=-1 (DYNAMIC_TOPIC_CONFIG)
retention.ms=-1 (DYNAMIC_TOPIC_CONFIG)"
    for t in kafkasql-journal kafkasql-snapshots registry-events; do
        grep -q "Topic '$t' created" "$FW_WORK/registry1.log" || { WHY="registry1.log says no creation of $t"; return 1; }
        got=$(tool configs "${FW_ADDR[main]}" "$t") || { WHY="DescribeConfigs $t failed (tool.log)"; return 1; }
        [ "$got" = "$want" ] || { WHY="$t: got [$(echo "$got" | tr '\n' ' ')], want [$(echo "$want" | tr '\n' ' ')]"; return 1; }
    done
    api 1 GET registry/v3/system/info | jq -e '.name == "Apicurio Registry (KafkaSQL)"' >/dev/null ||
        { WHY="system/info: $(api 1 GET registry/v3/system/info)"; return 1; }
}

check_register() {
    local journal0 body v
    journal0=$(tool end "${FW_ADDR[main]}" kafkasql-journal) || { WHY="ListOffsets failed (tool.log)"; return 1; }
    body=$(jq -nc --arg c "$(avro 1)" '{artifactId:"orders",artifactType:"AVRO",name:"Orders",
        firstVersion:{version:"1",content:{content:$c,contentType:"application/json"}}}')
    api 1 POST registry/v3/groups/fw/artifacts "$body" >/dev/null || { WHY="creating fw/orders failed"; return 1; }
    api 1 POST registry/v3/groups/fw/artifacts/orders/rules '{"ruleType":"COMPATIBILITY","config":"BACKWARD"}' \
        >/dev/null || { WHY="adding the BACKWARD rule failed"; return 1; }
    for v in 2 3; do add_version 1 $v >/dev/null || { WHY="adding version $v failed"; return 1; }; done
    refused 1 || { WHY="an incompatible version was not refused: $SHOW"; return 1; }
    for v in 1 2 3; do
        api 1 PUT registry/v3/groups/fw/artifacts/orders \
            "{\"name\":\"Orders\",\"description\":\"revision $v\",\"labels\":{\"rev\":\"$v\",\"team\":\"fw\"}}" \
            >/dev/null || { WHY="metadata update $v failed"; return 1; }
    done
    body=$(jq -nc --arg c '{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"name":{"type":"string"}}}' \
        '{artifactId:"customer",artifactType:"JSON",firstVersion:{version:"1",content:{content:$c,contentType:"application/json"}}}')
    api 1 POST registry/v3/groups/fw/artifacts "$body" >/dev/null || { WHY="creating fw/customer failed"; return 1; }
    PAY1=$(ccompat_register 1 payments-value '{"type":"record","name":"Payment","fields":[{"name":"id","type":"long"}]}') &&
        PAY2=$(ccompat_register 1 payments-value '{"type":"record","name":"Payment","fields":[{"name":"id","type":"long"},{"name":"amount","type":"double","default":0}]}') ||
        { WHY="registering payments-value through ccompat failed"; return 1; }
    # served back
    [ "$(api 1 GET 'registry/v3/groups/fw/artifacts/orders/versions/branch=latest/content')" = "$(avro 3)" ] ||
        { WHY="fw/orders' latest content is not version 3"; return 1; }
    SHOW=$(api 1 GET registry/v3/groups/fw/artifacts/orders | jq -c '{description, labels}')
    [ "$SHOW" = '{"description":"revision 3","labels":{"rev":"3","team":"fw"}}' ] || { WHY="fw/orders' metadata: $SHOW"; return 1; }
    SHOW=$(api 1 GET registry/v3/groups/fw/artifacts/orders/versions | jq -c '[.versions[].version] | sort')
    [ "$SHOW" = '["1","2","3"]' ] || { WHY="fw/orders' versions: $SHOW"; return 1; }
    [ "$PAY1" != "$PAY2" ] && [ -n "$PAY2" ] || { WHY="payments-value ids $PAY1 $PAY2"; return 1; }
    # ... and kept in the journal: one record per write (and the schemas' text in them)
    local records journal
    records=$(tool records "${FW_ADDR[main]}" kafkasql-journal) || { WHY="reading the journal failed (tool.log)"; return 1; }
    journal=$(tool end "${FW_ADDR[main]}" kafkasql-journal)
    # 2 artifacts, 1 rule, 2 versions, 3 metadata updates, 2 ccompat registrations
    [ $((journal - journal0)) -ge 10 ] || { WHY="the journal grew by $((journal - journal0)) records, want >= 10"; return 1; }
    [ "$(grep -c '"messageType":"UpdateArtifactMetaData' <<<"$records")" = 3 ] ||
        { WHY="journal: not 3 UpdateArtifactMetaData records"; return 1; }
    grep -q 'revision 3' <<<"$records" && grep -q '"f3' <<<"$records" ||
        { WHY="journal: no record holds version 3 or the last metadata"; return 1; }
    state 1 >"$FW_WORK/state1" || { WHY="reading the state failed"; return 1; }
    echo "  $(wc -l <"$FW_WORK/state1") lines of state, journal at offset $journal"
}

check_registry_restart() {
    reg_stop 1
    reg_start 2 main || return 1
    same_state 2 "$FW_WORK/state1" || { WHY="registry 2 serves another state: $SHOW"; return 1; }
    local before after
    refused 2 || { WHY="after the restart an incompatible version was not refused: $SHOW"; return 1; }
    before=$(max_global_id 2)
    after=$(add_version 2 4 | jq .globalId) || { WHY="adding version 4 failed"; return 1; }
    [ "$after" -gt "$before" ] || { WHY="version 4 got global id $after, not above $before"; return 1; }
    state 2 >"$FW_WORK/state2"
}

check_gateway_restart() {
    gw_restart main
    # The first write after the restart may wait for the clients to reconnect.
    fw_wait_for 60 "version 5 written after the gateway restart" add_version_quiet 2 5 || return 1
    state 2 >"$FW_WORK/state2b" || { WHY="reading registry 2 failed"; return 1; }
    SHOW=$(api 2 GET registry/v3/groups/fw/artifacts/orders/versions | jq -c '[.versions[].version] | sort')
    [ "$SHOW" = '["1","2","3","4","5"]' ] || { WHY="fw/orders' versions: $SHOW"; return 1; }
    # everything from before the restart, unchanged
    diff <(grep -v -E '^\[\[|^orders 5:' "$FW_WORK/state2") <(grep -v -E '^\[\[|^orders 5:' "$FW_WORK/state2b") >/dev/null ||
        { WHY="registry 2's state changed across the gateway restart"; return 1; }
}
add_version_quiet() { add_version "$@" >/dev/null 2>&1; }

check_second_registry() {
    # On Iggy a second gateway of the cluster, on the same iggy-server.
    local second=main
    if [ "$FW_BACKEND" = iggy ]; then
        gw_start main2 IGGY_KAFKA_COMPACTION_INTERVAL_MS=200
        second=main2
    fi
    reg_start 3 "$second" || return 1
    same_state 3 "$FW_WORK/state2b" || { WHY="registry 3 serves another state than registry 2: $SHOW"; return 1; }
    # each replica serves what the other wrote (its consumer tails the journal)
    add_version 3 6 >/dev/null || { WHY="adding version 6 on registry 3 failed"; return 1; }
    fw_wait_for 30 "version 6 on registry 2" api_ok 2 GET registry/v3/groups/fw/artifacts/orders/versions/6 || return 1
    api 2 PUT registry/v3/groups/fw/artifacts/orders '{"name":"Orders","description":"revision 4","labels":{"rev":"4"}}' \
        >/dev/null || { WHY="metadata update on registry 2 failed"; return 1; }
    SHOW=
    fw_wait_for 30 "registry 2's metadata update on registry 3" description_is 3 "revision 4" || return 1
    state 2 >"$FW_WORK/state2c" && same_state 3 "$FW_WORK/state2c" ||
        { WHY="the replicas differ: $SHOW"; return 1; }
    SHOW=$(api 3 GET registry/v3/groups/fw/artifacts/orders/versions | jq -c '[.versions[].globalId] | sort | unique | length')
    [ "$SHOW" = 6 ] || { WHY="fw/orders' 6 versions have $SHOW distinct global ids"; return 1; }
}
api_ok() { api "$@" >/dev/null 2>&1; }
description_is() { SHOW=$(api "$1" GET registry/v3/groups/fw/artifacts/orders | jq -r .description); [ "$SHOW" = "$2" ]; }

check_refuses_compact() {
    local n=refuse
    reg_run "$n" main -Dapicurio.kafkasql.topic=journal-compact -Dapicurio.kafkasql.topic.cleanup.policy=compact \
        -Dapicurio.kafkasql.snapshots.topic=snapshots-compact -Dapicurio.events.kafka.topic=events-compact
    # Whether the registry then exits depends on its liveness counter's timing (on a loaded
    # machine it was still up after 90 s), so the refusal is its log line and a readiness
    # that never comes UP; the registry is stopped after.
    fw_wait_for 90 "registry $n's refusal in registry$n.log" refusal_logged "$n"
    if ready "$n"; then WHY="registry $n came up ready on a compacted journal"; reg_stop "$n"; return 1; fi
    kill -0 "${R_PID[$n]}" 2>/dev/null && reg_stop "$n"
    grep -q "Effective configuration value is 'cleanup.policy=compact' and comes from dynamic topic config that is configured for a specific topic" \
        "$FW_WORK/registry$n.log" || { WHY="registry$n.log does not name the effective value and its source"; return 1; }
    fw_wait_for 15 "cleanup.policy=compact on journal-compact through DescribeConfigs" compact_config
}
refusal_logged() { # N: registry N's log names journal-compact's compaction
    SHOW="registry$1.log: $(grep -c . "$FW_WORK/registry$1.log") lines, no refusal"
    grep -q "The following issue was found with topic 'journal-compact': Topic must not have 'cleanup.policy=compact'" \
        "$FW_WORK/registry$1.log"
}
compact_config() {
    SHOW=$(tool configs "${FW_ADDR[main]}" journal-compact | grep '^cleanup.policy=') || true
    [ "$SHOW" = "cleanup.policy=compact (DYNAMIC_TOPIC_CONFIG)" ]
}

# ---------------------------------------------------------------- run them
dump() {
    local f
    for f in registry1 registry2 registry3 registryrefuse tool; do
        [ -s "$FW_WORK/$f.log" ] || continue
        echo "--- $f log (last 30 ERROR/WARN lines)" >&2
        grep -E 'ERROR|WARN|Exception' "$FW_WORK/$f.log" | grep -v -E 'Unrecognized configuration key|is deprecated' |
            tail -n 30 | cut -c1-600 >&2
    done
    for f in main main2; do [ -n "${FW_PID[$f]:-}" ] && gw_log "$f"; done
    return 0
}


# APICURIO_CHECKS="name ...": only those sub-checks (FW_ONLY in ../lib.sh)
FW_ONLY=${APICURIO_CHECKS:-}
gw_start main IGGY_KAFKA_COMPACTION_INTERVAL_MS=200
# First, while main is the cluster's only gateway (see refuses-compact above).
fw_selected refuses-compact && { fw_run refuses-compact check_refuses_compact || true; }
# Each step builds on the ones before it.
fw_run_chain start:check_start register:check_register registry-restart:check_registry_restart \
    gateway-restart:check_gateway_restart second-registry:check_second_registry || true
for n in "${!R_PID[@]}"; do reg_stop "$n"; done
echo "apicurio: $passed passed, $failed failed"
[ "$failed" = 0 ]
