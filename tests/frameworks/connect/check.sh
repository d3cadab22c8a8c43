#!/usr/bin/env bash
# Kafka Connect (distributed) and MirrorMaker 2, the real ones (4.3.1, pom.xml), against
# gateways started by ../lib.sh (embedded store, or FW_BACKEND=iggy):
#   internal-topics  a worker creates config/offset/status topics (rf 3, compact)
#   pipeline         FileStreamSource file -> topic -> FileStreamSink file
#   worker-restart   SIGTERM the worker, wait until the gateway compacted one of the
#                    internal topics (fewer records than offsets), append, start it:
#                    every line once
#   gateway-restart  SIGKILL the gateway (gw_restart), append: every line once
#   offsets-api      the sink's and source's offsets through Connect's REST API; the
#                    sink rewound (alter offsets) and reset (delete offsets)
#   two-workers      a 2-task sink spread over two workers; one SIGKILLed, the other
#                    takes every task and data still flows. On Iggy the second worker
#                    and the records after the kill go through a second gateway of the
#                    cluster, on the same iggy-server
#   mirror-maker     MirrorMaker 2 from gateway src to dst: records, topic configs and
#                    a group's committed offsets arrive as src.<topic>
# Needs `bash tests/frameworks/deps.sh` first. Last line: "connect: N passed, M failed".
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$HERE/../lib.sh"
CP=$(fw_classpath connect)
N=100 # lines per append

declare -A W_PID W_PORT W_GW

tool() { java -cp "$CP" ConnectTool "$@" 2>>"$FW_WORK/tool.log"; }


# ---------------------------------------------------------------- Connect workers
# worker_start N [GATEWAY]: worker N of the group connect-fw bootstrapped from GATEWAY
# (default main; kept across restarts), REST on a port of
# its own (kept across restarts). Short session timeouts and rebalance delay: a killed
# worker's tasks move within seconds, and its sink consumers leave their groups after
# 6 s, not the consumer default 45 s (until then the new task's join waits for them).
# offset.flush.interval.ms 1 s: sources store their offsets and sinks commit (and
# flush their file) every second.
worker_start() {
    local n=$1
    [ -n "${W_PORT[$n]:-}" ] || W_PORT[$n]=$(fw_free_port)
    W_GW[$n]=${2:-${W_GW[$n]:-main}}
    cat >"$FW_WORK/worker$n.properties" <<EOF
bootstrap.servers=${FW_ADDR[${W_GW[$n]}]}
group.id=connect-fw
key.converter=org.apache.kafka.connect.storage.StringConverter
value.converter=org.apache.kafka.connect.storage.StringConverter
config.storage.topic=connect-configs
offset.storage.topic=connect-offsets
status.storage.topic=connect-status
config.storage.replication.factor=3
offset.storage.replication.factor=3
status.storage.replication.factor=3
offset.flush.interval.ms=1000
session.timeout.ms=6000
heartbeat.interval.ms=1000
scheduled.rebalance.max.delay.ms=3000
consumer.session.timeout.ms=6000
consumer.heartbeat.interval.ms=1000
listeners=http://127.0.0.1:${W_PORT[$n]}
rest.advertised.host.name=127.0.0.1
rest.advertised.port=${W_PORT[$n]}
plugin.discovery=service_load
EOF
    java -Xmx384m -cp "$CP" org.apache.kafka.connect.cli.ConnectDistributed \
        "$FW_WORK/worker$n.properties" >>"$FW_WORK/worker$n.log" 2>&1 &
    W_PID[$n]=$!
    FW_EXTRA_PIDS="${FW_EXTRA_PIDS:-} $!"
    # /health answers 200 once the worker has joined its group and read the config topic
    fw_wait_for 90 "healthy worker $n" rest_ok "$n" GET /health
}

# worker_stop N SIGNAL: the signal, then up to 20 s for the JVM to end (fw_stop). A worker
# sometimes never ends on SIGTERM: Jetty's own shutdown hook races Connect's, which then
# waits forever in RestServer.stop (Server.join) before it stops the herder; its tasks
# run on, committing as usual. Such a worker is SIGKILLed, and the log says so.
worker_stop() { fw_stop "${W_PID[$1]}" "$2" "worker $1"; }

rest() { # N METHOD PATH [JSON]: the answer's body; fails on a non-2xx status
    curl -sf -m 10 -X "$2" -H 'Content-Type: application/json' ${4:+--data "$4"} \
        "http://127.0.0.1:${W_PORT[$1]}$3"
}
rest_ok() { rest "$@" >/dev/null 2>&1; }
rest_body() { # the same request again, for the error a failed one got
    curl -s -m 10 -X "$2" -H 'Content-Type: application/json' ${4:+--data "$4"} "http://127.0.0.1:${W_PORT[$1]}$3"
}

connector_put() { # NAME JSON: creates or updates connector NAME (through worker 1 or 2)
    local n
    for n in "${!W_PID[@]}"; do
        kill -0 "${W_PID[$n]}" 2>/dev/null && rest_ok "$n" PUT "/connectors/$1/config" "$2" && return 0
    done
    return 1
}

# status_is N CONNECTOR TASKS WORKERS: GET status on worker N shows the connector and
# exactly TASKS tasks RUNNING, on exactly the (sorted, space-separated) worker ids WORKERS.
status_is() {
    local s
    s=$(rest "$1" GET "/connectors/$2/status") || { SHOW="no status"; return 1; }
    SHOW=$(echo "$s" | jq -c '[.connector.state, [.tasks[] | [.id, .state, .worker_id]]]')
    [ "$(echo "$s" | jq -r .connector.state)" = RUNNING ] || return 1
    [ "$(echo "$s" | jq '[.tasks[] | select(.state == "RUNNING")] | length')" = "$3" ] || return 1
    [ "$(echo "$s" | jq '.tasks | length')" = "$3" ] || return 1
    [ "$(echo "$s" | jq -r '[.tasks[].worker_id] | unique | join(" ")')" = "$4" ]
}
group_is() { # GROUP WANT: DescribeGroups on gateway main says WANT ("Stable members=1")
    SHOW=$(tool group-state "${FW_ADDR[main]}" "$1") || true
    [ "$SHOW" = "$2" ]
}
wid() { echo "127.0.0.1:${W_PORT[$1]}"; }

# file_has FILE FROM TO [sorted]: FILE holds exactly line-FROM .. line-TO, in that order
# (or in any order with "sorted": two tasks write one file). SHOW says what differs.
file_has() {
    local want got
    want=$(seq -f 'line-%g' "$2" "$3")
    got=$(cat "$1" 2>/dev/null || true)
    if [ "${4:-}" = sorted ]; then
        want=$(echo "$want" | sort)
        got=$(echo "$got" | sort)
    fi
    [ "$got" = "$want" ] && return 0
    SHOW="$(echo -n "$got" | grep -c '' || true) lines, $(echo "$got" | sort | uniq -d | wc -l) duplicated, last: $(echo "$got" | tail -n 1)"
    return 1
}

end_is() { # GATEWAY TOPIC WANT: the topic's end offsets (topic-p offset lines) are WANT
    local got
    got=$(tool end-offsets "${FW_ADDR[$1]}" "$2") || { SHOW="ListOffsets failed"; return 1; }
    SHOW=$(echo "$got" | tr '\n' ' ')
    [ "$got" = "$3" ]
}

# sink_exact FILE FROM TO GROUP TOPIC [sorted]: FILE gets exactly those lines; then the
# sink commits the topic's end and FILE still holds them (nothing replayed).
sink_exact() {
    fw_wait_for "${SINK_WAIT:-60}" "line-$2..$3 in $(basename "$1")" file_has "$1" "$2" "$3" "${6:-}" || return 1
    fw_wait_for 20 "$4's commit at the end of $5" settled "$4" "$5" || return 1
    file_has "$1" "$2" "$3" "${6:-}" || { WHY="after $4's commit, $(basename "$1"): $SHOW"; return 1; }
}

append() { seq -f 'line-%g' "$2" "$3" >>"$1"; }

# settled GROUP TOPIC: the sink's group has committed the topic's end offsets, so a
# kill now cannot replay records it wrote (Connect sinks are at-least-once).
settled() {
    local ends got
    ends=$(tool end-offsets "${FW_ADDR[main]}" "$2") || return 1
    got=$(tool group-offsets "${FW_ADDR[main]}" "$1" | grep "^$2-") || true
    SHOW="end offsets [$ends], committed [$got]"
    [ "$got" = "$ends" ]
}

# ---------------------------------------------------------------- the sub-checks
check_internal_topics() {
    worker_start 1 || return 1
    local want got
    want="connect-configs partitions=1 cleanup.policy=compact
connect-offsets partitions=25 cleanup.policy=compact
connect-status partitions=5 cleanup.policy=compact"
    got=$(tool topics "${FW_ADDR[main]}" connect-configs connect-offsets connect-status) ||
        { WHY="describing the topics failed (tool.log)"; return 1; }
    [ "$got" = "$want" ] || { WHY="got [$got], want [$want]"; return 1; }
    # The worker created them itself, with replication factor 3 (its log says so). The
    # gateway reports the one replica it has (COMPATIBILITY.md), so that is all to see.
    local t
    for t in "configs partitions=1" "offsets partitions=25" "status partitions=5"; do
        grep -q "Created topic (name=connect-${t% *}, numPartitions=${t#*=}, replicationFactor=3," \
            "$FW_WORK/worker1.log" || { WHY="worker1.log says no creation of connect-$t with rf 3"; return 1; }
    done
}

check_pipeline() {
    : >"$FW_WORK/source.txt"
    # topic.creation.*: the source connector creates its topic itself (KIP-158)
    connector_put file-source "{\"connector.class\":\"org.apache.kafka.connect.file.FileStreamSourceConnector\",
        \"tasks.max\":\"1\",\"file\":\"$FW_WORK/source.txt\",\"topic\":\"lines\",
        \"topic.creation.default.partitions\":\"1\",\"topic.creation.default.replication.factor\":\"3\"}" ||
        { WHY="PUT file-source failed"; return 1; }
    fw_wait_for 30 "file-source running" status_is 1 file-source 1 "$(wid 1)" || return 1
    append "$FW_WORK/source.txt" 1 $N
    fw_wait_for 30 "$N records in topic lines" end_is main lines "lines-0 $N" || return 1
    connector_put file-sink "{\"connector.class\":\"org.apache.kafka.connect.file.FileStreamSinkConnector\",
        \"tasks.max\":\"1\",\"file\":\"$FW_WORK/sink.txt\",\"topics\":\"lines\"}" ||
        { WHY="PUT file-sink failed"; return 1; }
    fw_wait_for 30 "file-sink running" status_is 1 file-sink 1 "$(wid 1)" || return 1
    sink_exact "$FW_WORK/sink.txt" 1 $N connect-file-sink lines
}

# compacted_internal: one of the worker's internal topics (compact, written to again
# and again: statuses, configs, source offsets) reads fewer records than its offsets.
compacted_internal() {
    local t records ends
    for t in connect-configs connect-offsets connect-status; do
        records=$(tool values "${FW_ADDR[main]}" "$t" | wc -l)
        ends=$(tool end-offsets "${FW_ADDR[main]}" "$t" | awk '{ s += $2 } END { print s + 0 }')
        SHOW="$t: $records records of $ends offsets"
        [ "$records" -lt "$ends" ] && { echo "  $SHOW"; return 0; }
    done
    return 1
}

check_worker_restart() {
    worker_stop 1 TERM
    # The worker starts again from compacted internal topics.
    fw_wait_for 60 "compacted internal topic" compacted_internal || return 1
    append "$FW_WORK/source.txt" $((N + 1)) $((2 * N)) # while no worker runs
    worker_start 1 || return 1
    append "$FW_WORK/source.txt" $((2 * N + 1)) $((3 * N))
    # the source resumes at its stored file position, the sink at its committed offset
    sink_exact "$FW_WORK/sink.txt" 1 $((3 * N)) connect-file-sink lines
}

check_gateway_restart() {
    # The sink has committed everything it wrote (the step before ends so), so nothing
    # can be replayed. The gateway keeps the groups (table groups, as Kafka keeps them in
    # __consumer_offsets): after the restart the sink's consumer and the workers' group
    # carry on in their generation. Every line must arrive exactly once.
    gw_restart main
    fw_wait_for 30 "the sink's consumer back in its group" group_is connect-file-sink "Stable members=1" || return 1
    append "$FW_WORK/source.txt" $((3 * N + 1)) $((4 * N))
    SINK_WAIT=90 sink_exact "$FW_WORK/sink.txt" 1 $((4 * N)) connect-file-sink lines || return 1
    fw_wait_for 30 "file-source running" status_is 1 file-source 1 "$(wid 1)" || return 1
    fw_wait_for 30 "file-sink running" status_is 1 file-sink 1 "$(wid 1)"
}

offsets_are() { # CONNECTOR JQ WANT: GET /connectors/X/offsets (KIP-875), filtered by JQ, is WANT
    SHOW=$(rest 1 GET "/connectors/$1/offsets" | jq -c "$2") || { SHOW="GET offsets failed"; return 1; }
    [ "$SHOW" = "$3" ]
}
connector_is() { # CONNECTOR STATE
    SHOW=$(rest 1 GET "/connectors/$1/status" | jq -r .connector.state) || true
    [ "$SHOW" = "$2" ]
}
sink_offsets() { # the sink's offsets as Connect reports them: [[topic, partition, offset]]
    offsets_are file-sink '[.offsets[] | [.partition.kafka_topic, .partition.kafka_partition, .offset.kafka_offset]]' "$1"
}

check_offsets_api() {
    # a sink's offsets are its group's (OffsetFetch); a source's live in the offsets topic
    fw_wait_for 20 "file-sink's offsets" sink_offsets "[[\"lines\",0,$((4 * N))]]" || return 1
    fw_wait_for 20 "file-source's offsets" offsets_are file-source '[.offsets[].offset.position]' \
        "[$(stat -c %s "$FW_WORK/source.txt")]" || return 1
    # Rewind: stop the sink, set its group 50 records back (Admin alterConsumerGroupOffsets
    # on the empty group), drop those lines from the file: resumed, it writes them again.
    rest_ok 1 PUT /connectors/file-sink/stop || { WHY="stop: $(rest_body 1 PUT /connectors/file-sink/stop)"; return 1; }
    fw_wait_for 30 "file-sink stopped" connector_is file-sink STOPPED || return 1
    local patch="{\"offsets\":[{\"partition\":{\"kafka_topic\":\"lines\",\"kafka_partition\":0},
        \"offset\":{\"kafka_offset\":$((4 * N - 50))}}]}"
    rest_ok 1 PATCH /connectors/file-sink/offsets "$patch" ||
        { WHY="PATCH offsets: $(rest_body 1 PATCH /connectors/file-sink/offsets "$patch")"; return 1; }
    sink_offsets "[[\"lines\",0,$((4 * N - 50))]]" || { WHY="after PATCH: $SHOW"; return 1; }
    head -n $((4 * N - 50)) "$FW_WORK/sink.txt" >"$FW_WORK/sink.tmp" && mv "$FW_WORK/sink.tmp" "$FW_WORK/sink.txt"
    rest_ok 1 PUT /connectors/file-sink/resume || { WHY="resume failed"; return 1; }
    sink_exact "$FW_WORK/sink.txt" 1 $((4 * N)) connect-file-sink lines || return 1
    # Reset: stopped again, DELETE offsets removes the group (DeleteGroups); resumed on
    # an empty file, the sink starts from the earliest offset and writes every line again.
    rest_ok 1 PUT /connectors/file-sink/stop || { WHY="stop failed"; return 1; }
    fw_wait_for 30 "file-sink stopped" connector_is file-sink STOPPED || return 1
    rest_ok 1 DELETE /connectors/file-sink/offsets ||
        { WHY="DELETE offsets: $(rest_body 1 DELETE /connectors/file-sink/offsets)"; return 1; }
    sink_offsets "[]" || { WHY="after DELETE: $SHOW"; return 1; }
    : >"$FW_WORK/sink.txt"
    rest_ok 1 PUT /connectors/file-sink/resume || { WHY="resume failed"; return 1; }
    sink_exact "$FW_WORK/sink.txt" 1 $((4 * N)) connect-file-sink lines || return 1
    fw_wait_for 30 "file-sink running" status_is 1 file-sink 1 "$(wid 1)"
}

check_two_workers() {
    # On Iggy, a second gateway of the cluster on the same iggy-server, as a Deployment
    # scales out: worker 2 and the records after the kill go through it, so the group's
    # members, their commits and the topics' data cross gateways.
    local second=main
    if [ "$FW_BACKEND" = iggy ]; then
        gw_start main2
        second=main2
    fi
    worker_start 2 "$second" || return 1
    tool create "${FW_ADDR[main]}" lines2 2 || { WHY="creating lines2 failed (tool.log)"; return 1; }
    connector_put sink2 "{\"connector.class\":\"org.apache.kafka.connect.file.FileStreamSinkConnector\",
        \"tasks.max\":\"2\",\"file\":\"$FW_WORK/sink2.txt\",\"topics\":\"lines2\"}" ||
        { WHY="PUT sink2 failed"; return 1; }
    local both
    both=$(printf '%s\n' "$(wid 1)" "$(wid 2)" | sort | tr '\n' ' ')
    fw_wait_for 60 "sink2's two tasks on both workers" status_is 2 sink2 2 "${both% }" || return 1
    # keyed records: both partitions, so both tasks, get some
    tool produce "${FW_ADDR[main]}" lines2 1 $((N + 1)) line || { WHY="produce failed"; return 1; }
    sink_exact "$FW_WORK/sink2.txt" 1 $N connect-sink2 lines2 sorted || return 1
    # everything is committed before the kill: a SIGKILLed sink replays what it wrote
    # after its last commit (at-least-once), so with nothing pending, nothing doubles
    worker_stop 1 KILL
    # after the session timeout (6 s) and the rebalance delay (3 s) worker 2 runs them all
    fw_wait_for 60 "sink2 on worker 2 alone" status_is 2 sink2 2 "$(wid 2)" || return 1
    fw_wait_for 30 "file-sink on worker 2" status_is 2 file-sink 1 "$(wid 2)" || return 1
    fw_wait_for 30 "file-source on worker 2" status_is 2 file-source 1 "$(wid 2)" || return 1
    tool produce "${FW_ADDR[$second]}" lines2 $((N + 1)) $((2 * N + 1)) line || { WHY="produce failed"; return 1; }
    append "$FW_WORK/source.txt" $((4 * N + 1)) $((5 * N))
    sink_exact "$FW_WORK/sink2.txt" 1 $((2 * N)) connect-sink2 lines2 sorted || return 1
    sink_exact "$FW_WORK/sink.txt" 1 $((5 * N)) connect-file-sink lines
}

# ---------------------------------------------------------------- MirrorMaker 2
mm_offsets_are() { # the group's offsets on dst, for src.orders, are those committed on src
    local got
    got=$(tool group-offsets "${FW_ADDR[dst]}" mm2-app) || { SHOW="OffsetFetch failed"; return 1; }
    SHOW="dst has [$(echo "$got" | tr '\n' ' ')], src committed [$(echo "$COMMITTED" | tr '\n' ' ')]"
    [ "$got" = "$(echo "$COMMITTED" | sed 's/^/src./')" ]
}

mm_configs_are() { # src.orders on dst has what was set on orders, and nothing else set
    local a b
    a=$(tool configs "${FW_ADDR[src]}" orders) || return 1
    b=$(tool configs "${FW_ADDR[dst]}" src.orders) || return 1
    SHOW="src [$(echo "$a" | tr '\n' ' ')], dst [$(echo "$b" | tr '\n' ' ')]"
    [ "$a" = "$b" ] && [ "$a" = "$ORDERS_CONFIGS" ]
}

mm_records_are() { # src.orders on dst holds order-0 .. order-$1, each once
    local got
    got=$(tool values "${FW_ADDR[dst]}" src.orders | sort) || { SHOW="reading src.orders failed"; return 1; }
    SHOW="$(echo -n "$got" | grep -c '' || true) records, $(echo "$got" | uniq -d | wc -l) duplicated"
    [ "$got" = "$(seq -f 'order-%g' 0 "$1" | sort)" ]
}

# mm_round FROM TO: order-FROM .. order-(TO-1) produced on src, all taken and committed by
# the group mm2-app; COMMITTED is what it committed (orders-p offset lines).
mm_round() {
    tool produce "${FW_ADDR[src]}" orders "$1" "$2" order || { WHY="produce on src failed"; return 1; }
    tool group-consume "${FW_ADDR[src]}" mm2-app orders $(($2 - $1)) >/dev/null ||
        { WHY="group-consume on src failed (tool.log)"; return 1; }
    COMMITTED=$(tool group-offsets "${FW_ADDR[src]}" mm2-app) || { WHY="OffsetFetch on src failed"; return 1; }
}

check_mirror_maker() {
    # Two Kafka clusters: on Iggy each has an iggy-server of its own.
    FW_CLUSTER[src]=src FW_CLUSTER[dst]=dst
    gw_start src
    gw_start dst
    tool create "${FW_ADDR[src]}" orders 2 retention.ms=3600000 cleanup.policy=delete max.message.bytes=200000 ||
        { WHY="creating orders on src failed (tool.log)"; return 1; }
    # min.insync.replicas: set for the whole cluster, as Kafka 4.1+ does (KIP-966).
    ORDERS_CONFIGS="cleanup.policy=delete (DYNAMIC_TOPIC_CONFIG)
max.message.bytes=200000 (DYNAMIC_TOPIC_CONFIG)
min.insync.replicas=1 (DYNAMIC_DEFAULT_BROKER_CONFIG)
retention.ms=3600000 (DYNAMIC_TOPIC_CONFIG)"
    # The group commits the partitions' ends: MM2 translates an offset at the end of its
    # offset syncs exactly; one in the middle only if a sync for it is at hand, which
    # for syncs written before MM2 started it is not (MM2's OffsetSyncStore keeps the
    # latest sync per partition of those), so a mid-topic offset may not arrive at all.
    mm_round 0 $N || return 1
    # offset.lag.max=0: an offset sync for every record (the default 100 lets the
    # translated offset trail the committed one)
    cat >"$FW_WORK/mm2.properties" <<EOF
clusters=src,dst
src.bootstrap.servers=${FW_ADDR[src]}
dst.bootstrap.servers=${FW_ADDR[dst]}
src->dst.enabled=true
src->dst.topics=orders
dst->src.enabled=false
sync.group.offsets.enabled=true
sync.group.offsets.interval.seconds=1
emit.checkpoints.interval.seconds=1
emit.heartbeats.interval.seconds=1
refresh.topics.interval.seconds=2
refresh.groups.interval.seconds=2
sync.topic.configs.interval.seconds=2
offset.lag.max=0
offset.flush.interval.ms=1000
EOF
    java -Xmx384m -cp "$CP" org.apache.kafka.connect.mirror.MirrorMaker "$FW_WORK/mm2.properties" \
        >>"$FW_WORK/mm2.log" 2>&1 &
    W_PID[mm2]=$!
    FW_EXTRA_PIDS="${FW_EXTRA_PIDS:-} $!"
    local ends
    ends=$(tool end-offsets "${FW_ADDR[src]}" orders | sed 's/^/src./') || { WHY="ListOffsets on src failed"; return 1; }
    fw_wait_for 90 "src.orders on dst with orders' end offsets" end_is dst src.orders "$ends" || return 1
    fw_wait_for 30 "order-0..$((N - 1)) in src.orders" mm_records_are $((N - 1)) || return 1
    fw_wait_for 30 "orders' configs on src.orders" mm_configs_are || return 1
    fw_wait_for 60 "mm2-app's offsets on dst" mm_offsets_are || return 1
    # MM2's own topics, created compact (MirrorUtils.createCompactedTopic): offset syncs
    # on src, checkpoints and heartbeats on dst
    local got
    got="$(tool topics "${FW_ADDR[src]}" mm2-offset-syncs.dst.internal)
$(tool topics "${FW_ADDR[dst]}" src.checkpoints.internal heartbeats)"
    [ "$got" = "mm2-offset-syncs.dst.internal partitions=1 cleanup.policy=compact
src.checkpoints.internal partitions=1 cleanup.policy=compact
heartbeats partitions=1 cleanup.policy=compact" ] || { WHY="MM2's topics: $got"; return 1; }
    # a second round while MM2 runs: records, offsets and a changed config follow (the
    # config by MM2's periodic sync, IncrementalAlterConfigs on dst)
    tool alter "${FW_ADDR[src]}" orders retention.ms=7200000 || { WHY="altering orders failed (tool.log)"; return 1; }
    ORDERS_CONFIGS=${ORDERS_CONFIGS/retention.ms=3600000/retention.ms=7200000}
    mm_round $N $((2 * N)) || return 1
    fw_wait_for 60 "order-0..$((2 * N - 1)) in src.orders" mm_records_are $((2 * N - 1)) || return 1
    fw_wait_for 60 "mm2-app's new offsets on dst" mm_offsets_are || return 1
    fw_wait_for 30 "orders' new retention.ms on src.orders" mm_configs_are
}

# ---------------------------------------------------------------- run them
dump() {
    local f
    for f in worker1 worker2 mm2 tool; do
        [ -s "$FW_WORK/$f.log" ] || continue
        echo "--- $f log (last 30 lines)" >&2
        tail -n 30 "$FW_WORK/$f.log" >&2
    done
    for f in main main2 src dst; do [ -n "${FW_PID[$f]:-}" ] && gw_log "$f"; done
    return 0
}


# CONNECT_CHECKS="name ...": only those sub-checks (FW_ONLY in ../lib.sh)
FW_ONLY=${CONNECT_CHECKS:-}
gw_start main IGGY_KAFKA_COMPACTION_INTERVAL_MS=200
# Each step builds on the ones before it.
fw_run_chain internal-topics:check_internal_topics pipeline:check_pipeline \
    worker-restart:check_worker_restart gateway-restart:check_gateway_restart \
    offsets-api:check_offsets_api two-workers:check_two_workers || true
for n in "${!W_PID[@]}"; do worker_stop "$n" TERM; done # frees the cores for MM2
fw_selected mirror-maker && { fw_run mirror-maker check_mirror_maker || true; }
echo "connect: $passed passed, $failed failed"
[ "$failed" = 0 ]
