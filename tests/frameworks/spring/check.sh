#!/usr/bin/env bash
# A Spring Boot 4 / spring-kafka 4.0 application against a gateway (issue 15): its
# KafkaAdmin creates three topics from NewTopic beans, its KafkaTemplate sends keyed
# records, a @KafkaListener with concurrency 2 (two members of one group) receives them,
# a second listener sends a poison record to the dead letter topic through
# DefaultErrorHandler + DeadLetterPublishingRecoverer. The application runs three times
# with the same groups: again (resumes from its commits; KafkaAdmin alters a changed
# retention.ms), and once more with the gateway killed and restarted under it. Each run
# journals what it sent and received (spring/src/main/java/gateway/spring); this script
# compares. The last line is "spring: N passed, M failed".
# Needs tests/frameworks/deps.sh run first. FW_BACKEND=iggy runs it on an iggy-server.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$HERE/../lib.sh"

passed=0
failed=0
app_log=
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() {
    echo "FAIL $1: $2"
    failed=$((failed + 1))
    if [ -n "$app_log" ]; then
        echo "--- application log $app_log (last 30 lines)" >&2
        tail -n 30 "$app_log" >&2
    fi
    gw_log gw
}
check() { # NAME WHY-IF-NOT COMMAND...: PASS when the command succeeds
    local name=$1 why=$2
    shift 2
    if "$@"; then pass "$name"; else fail "$name" "$why"; fi
}

ORDERS=spring-orders EVENTS=spring-events DLT=spring-events-dlt GROUP=spring-check
# No 3 s wait for more members before the first assignment of a new group (Kafka's
# default, kept by the gateway): both order members join within half a second.
gw_start gw IGGY_KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=500

# app_start RUN ARGS...: one run of the application, its journals in $FW_WORK/runRUN.
# The application bounds its own waits (check.deadline-s, 60 s; a watchdog halts it at
# 150 s); app_wait waits 170 s at most for it to exit.
app_start() {
    app_run=$1
    shift
    app_log=$FW_WORK/app$app_run.log
    fw_java spring gateway.spring.SpringCheckApp --spring.kafka.bootstrap-servers="${FW_ADDR[gw]}" \
        --check.run="$app_run" --check.out="$FW_WORK/run$app_run" "$@" >"$app_log" 2>&1 &
    app_pid=$!
    FW_EXTRA_PIDS="${FW_EXTRA_PIDS:-} $app_pid"
}

app_wait() {
    local deadline=$((SECONDS + 170)) rc=0
    while kill -0 "$app_pid" 2>/dev/null; do
        if [ $SECONDS -ge $deadline ]; then
            echo "run $app_run: the application did not exit within 170 s" >>"$app_log"
            kill -9 $(pgrep -P "$app_pid") "$app_pid" 2>/dev/null || true
            break
        fi
        sleep 0.2
    done
    wait "$app_pid" || rc=$?
    check "run$app_run-app" "the application exited with $rc ($(grep -m1 -o 'FAIL.*' "$app_log" || echo 'no FAIL line'))" \
        [ "$rc" = 0 ]
    touch "$FW_WORK/run$app_run/sent.tsv" "$FW_WORK/run$app_run/received.tsv"
}

app() { app_start "$@"; app_wait; }

wait_file() { # FILE SECONDS WHAT
    local deadline=$((SECONDS + $2))
    until [ -e "$1" ]; do
        if [ $SECONDS -ge $deadline ] || ! kill -0 "$app_pid" 2>/dev/null; then
            fail "wait" "no $1 within $2 s: $3"
            return 1
        fi
        sleep 0.1
    done
}

inspect() { # RUN: what an Admin client sees now, in $FW_WORK/inspectRUN
    fw_java spring gateway.spring.Inspect "${FW_ADDR[gw]}" "$ORDERS,$EVENTS,$DLT" \
        "$GROUP,$GROUP-events,$GROUP-dlt" >"$FW_WORK/inspect$1.log" 2>&1 || true
    grep -E '^(topic|end|committed|group) ' "$FW_WORK/inspect$1.log" >"$FW_WORK/inspect$1" || true
}

# Journal columns: KIND PARTITION OFFSET KEY VALUE [...]
journal() { # RUN FILE KIND: the records of that kind as "partition offset key value", sorted
    awk -F'\t' -v k="$3" '$1 == k { print $2, $3, $4, $5 }' "$FW_WORK/run$1/$2.tsv" | sort
}

same_records() { # RUN KIND-SENT KIND-RECEIVED: received exactly the records sent, each once
    diff <(journal "$1" sent "$2") <(journal "$1" received "$3") >"$FW_WORK/diff" || {
        echo "sent (<) and received (>) differ:" >&2
        head -n 20 "$FW_WORK/diff" >&2
        return 1
    }
    [ "$(journal "$1" sent "$2" | wc -l)" -gt 0 ] || { echo "run $1 sent no $2" >&2; return 1; }
}

in_order() { # RUN: each orders partition delivered in offset order, each by one member
    awk -F'\t' '$1 == "orders" {
        if (($2 in last) && $3 <= last[$2]) { print "partition " $2 ": offset " $3 " after " last[$2]; bad = 1 }
        last[$2] = $3
        if (($2 in by) && by[$2] != $6) { print "partition " $2 " read by " by[$2] " and " $6; bad = 1 }
        by[$2] = $6
    } END { exit bad }' "$FW_WORK/run$1/received.tsv" >&2
}

# After a gateway restart under the group the members rejoin (its membership is in
# memory) and commits of what they read before that fail: those records come again,
# as the classic protocol's at-least-once delivery has it. Kafka keeps the membership
# (__consumer_offsets) and so delivers each once; the gateway may deliver twice what was
# sent after the restart, never what was committed before it.
at_least_once() { # RUN KIND FROM: each record sent received, twice at most, twice only from index FROM on
    diff <(journal "$1" sent "$2") <(journal "$1" received "$2" | uniq) >&2 || return 1
    journal "$1" received "$2" | uniq -d | awk -v from="$3" '{
        n = split($4, v, "-"); if (v[n] + 0 < from) { print "delivered twice though committed before the restart: " $0; bad = 1 }
    } END { exit bad }' >&2 || return 1
    [ -z "$(journal "$1" received "$2" | uniq -c | awk '$1 > 2')" ] || { echo "a record delivered 3 times or more" >&2; return 1; }
    [ "$(journal "$1" sent "$2" | wc -l)" -gt 0 ] || { echo "run $1 sent no $2" >&2; return 1; }
}

first_in_order() { # RUN: each orders partition's first deliveries in offset order
    awk -F'\t' '$1 == "orders" && !seen[$2 " " $3]++ {
        if (($2 in last) && $3 <= last[$2]) { print "partition " $2 ": offset " $3 " after " last[$2]; bad = 1 }
        last[$2] = $3
    } END { exit bad }' "$FW_WORK/run$1/received.tsv" >&2
}

members() { # RUN: distinct threads (group members) that received orders
    awk -F'\t' '$1 == "orders" { print $6 }' "$FW_WORK/run$1/received.tsv" | sort -u | wc -l
}

committed_at_end() { # RUN: every group committed each partition's end; all groups empty
    local f=$FW_WORK/inspect$1 partitions=$((ORDERS_PARTS + 4)) # orders, events (2), the DLT (2)
    # end TOPIC P OFFSET / committed GROUP TOPIC P OFFSET: a partition with records must
    # have a commit at its end (none past it); an empty one none, or 0.
    awk -v want="$partitions" '$1 == "end" { end[$2 " " $3] = $4 }
         $1 == "committed" { c[$3 " " $4] = $5; if (!(($3 " " $4) in end)) { print "commit on unknown " $3 " " $4; bad = 1 } }
         $1 == "group" && ($4 != "Empty" || $6 != 0) { print "group " $2 " is " $4 " with " $6 " members"; bad = 1 }
         END {
             n = 0
             for (tp in end) {
                 n++
                 have = (tp in c) ? c[tp] : "none"
                 if (end[tp] > 0 && have != end[tp] || end[tp] == 0 && have != "none" && have != 0) {
                     print tp ": end " end[tp] ", committed " have; bad = 1
                 }
             }
             if (n != want) { print n " partitions listed, " want " expected"; bad = 1 }
             exit bad
         }' "$f" >&2
}

topics_are() { # RUN ORDERS-RETENTION: the three topics with their partitions and configs
    local want
    want=$(printf '%s\n' \
        "topic $ORDERS partitions $ORDERS_PARTS retention.ms $2 max.message.bytes 1048588" \
        "topic $EVENTS partitions 2 retention.ms 604800000 max.message.bytes 65536" \
        "topic $DLT partitions 2 retention.ms 604800000 max.message.bytes 1048588")
    diff <(echo "$want") <(grep '^topic ' "$FW_WORK/inspect$1") >&2
}

dead_letter() { # RUN: the poison record once in the DLT, with the recoverer's headers
    local sent got
    sent=$(awk -F'\t' '$1 == "poison" { print $2, $3, $4, $5 }' "$FW_WORK/run$1/sent.tsv")
    [ "$(awk -F'\t' '$1 == "events-failed"' "$FW_WORK/run$1/received.tsv" | wc -l)" = 2 ] || {
        echo "the poison record was not delivered exactly twice (once, plus one retry)" >&2
        return 1
    }
    # dlt P O KEY VALUE ORIGINAL-TOPIC ORIGINAL-PARTITION ORIGINAL-OFFSET EXCEPTION
    got=$(awk -F'\t' '$1 == "dlt" { print $7, $8, $4, $5, $6, ($9 ~ /poison rejected: poison-run/ ? "ok" : $9) }' \
        "$FW_WORK/run$1/received.tsv")
    set -- $sent
    [ "$got" = "$1 $2 $3 $4 $EVENTS ok" ] || {
        echo "dead letters: '$got', expected '$1 $2 $3 $4 $EVENTS ok'" >&2
        return 1
    }
}

nothing_of() { # RUN KIND: no delivery of that kind in the run
    ! awk -F'\t' -v k="$2" '$1 == k { found = 1 } END { exit !found }' "$FW_WORK/run$1/received.tsv"
}

counts() { # RUN: orders, events and poison records sent
    for k in orders events poison; do
        awk -F'\t' -v k=$k '$1 == k && $3 >= 0' "$FW_WORK/run$1/sent.tsv" | wc -l
    done | paste -sd' '
}

t0=$SECONDS
ORDERS_PARTS=3
# Run 1: topics created, 60 orders, 5 events and a poison record.
app 1 --check.records=60 --check.events-count=5 --check.poison=true
inspect 1
check topics-created "KafkaAdmin's topics differ (above)" topics_are 1 3600000
check run1-sent "sent (orders events poison) $(counts 1), expected 60 5 1" [ "$(counts 1)" = "60 5 1" ]
check run1-orders-exactly-once "orders not received exactly as sent (above)" same_records 1 orders orders
check run1-partition-order "orders out of order (above)" in_order 1
check run1-two-members "orders read by $(members 1) members, 2 expected" [ "$(members 1)" = 2 ]
check run1-events-exactly-once "events not received exactly as sent (above)" same_records 1 events events
check run1-dead-letter "the poison record did not reach $DLT as expected (above)" dead_letter 1
check run1-committed "committed offsets are not at the ends (above)" committed_at_end 1

# Run 2, same groups: only the new records arrive; KafkaAdmin alters retention.ms and
# grows the orders topic to 4 partitions (CreatePartitions), which the group then reads.
ORDERS_PARTS=4
app 2 --check.records=30 --check.events-count=3 --check.retention-ms=7200000 --check.orders-partitions=4
inspect 2
check topics-reconciled "KafkaAdmin did not alter retention.ms or grow $ORDERS (above)" topics_are 2 7200000
check run2-new-partition "no order reached the new partition 3" \
    awk -F'\t' '$1 == "orders" && $2 == 3 { found = 1 } END { exit !found }' "$FW_WORK/run2/received.tsv"
check run2-sent "sent (orders events poison) $(counts 2), expected 30 3 0" [ "$(counts 2)" = "30 3 0" ]
check run2-resumed-orders "run 2 did not get exactly its own orders (above)" same_records 2 orders orders
check run2-resumed-events "run 2 did not get exactly its own events (above)" same_records 2 events events
check run2-no-redelivery "run 2 got the poison record or a dead letter again" \
    eval 'nothing_of 2 events-failed && nothing_of 2 dlt'
check run2-partition-order "orders out of order (above)" in_order 2
check run2-committed "committed offsets are not at the ends (above)" committed_at_end 2

# Run 3: the gateway is killed and restarted under it halfway through its orders (20 of
# 40, committed): the members rejoin (UNKNOWN_MEMBER_ID) and resume from their stored
# commits, the idempotent producer goes on where it was.
app_start 3 --check.records=40 --check.events-count=2 --check.retention-ms=7200000 \
    --check.orders-partitions=4 --check.pause=true
if wait_file "$FW_WORK/run3/paused" 90 "run 3 pausing after half its orders"; then
    gw_restart gw
    touch "$FW_WORK/run3/resume"
fi
app_wait
inspect 3
check run3-gateway-restart-orders "run 3 lost orders or got some twice it should not have (above)" \
    at_least_once 3 orders 20
check run3-gateway-restart-events "run 3 lost events or got some twice it should not have (above)" \
    eval 'at_least_once 3 events 0 && nothing_of 3 dlt'
check run3-partition-order "orders out of order (above)" first_in_order 3
twice=$(awk -F'\t' '$1 == "orders" || $1 == "events" { n[$2 " " $3 " " $1]++ } END { for (r in n) d += n[r] - 1; print d + 0 }' \
    "$FW_WORK/run3/received.tsv")
[ "$twice" = 0 ] || echo "KNOWN run3: $twice records delivered twice after the gateway restart: its group membership is not persisted (docs/CONSUMER_GROUPS.md, \"After a restart\"), so commits of records fetched before the rejoin fail with UNKNOWN_MEMBER_ID"
check run3-committed "committed offsets are not at the ends (above)" committed_at_end 3

# KIP-848: run the listeners again with group.protocol=consumer once the gateway serves it.
apis=$(fw_java spring gateway.spring.Inspect --apis "${FW_ADDR[gw]}" 2>"$FW_WORK/apis.log" || true)
check api-versions "no ApiVersions answer: $(tail -n 1 "$FW_WORK/apis.log")" grep -q '^api 18 ' <<<"$apis"
if grep -q '^api 68 ' <<<"$apis"; then
    # Topics and groups of its own: a new group on the old topics would read them all.
    app 4 --spring.profiles.active=consumer --check.group=spring-848 --check.orders=spring-848-orders \
        --check.events=spring-848-events --check.records=30 --check.events-count=3
    check run4-consumer-protocol "group.protocol=consumer did not get exactly its records (above)" \
        eval 'same_records 4 orders orders && in_order 4 && [ "$(members 4)" = 2 ]'
else
    echo "SKIPPED group.protocol=consumer: waits on KIP-848 (ConsumerGroupHeartbeat, API 68, not served: docs/COMPATIBILITY.md; no issue filed)"
fi
echo "SKIPPED spring-transactions: not written yet (the gateway serves transactions; Kafka Streams, franz-go, Java and librdkafka checks run them)"
echo "spring: $((SECONDS - t0)) s on $FW_BACKEND" >&2
echo "spring: $passed passed, $failed failed"
[ "$failed" = 0 ]
