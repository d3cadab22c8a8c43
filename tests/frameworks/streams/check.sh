#!/usr/bin/env bash
# A Kafka Streams 4.4 word count (src/main/java/gateway/streams) against a gateway from
# ../lib.sh: two instances share the work, one is SIGKILLed and the other takes over,
# then a fresh instance on an empty state directory restores the RocksDB store from its
# changelog, once the gateway compacted it (fewer records than offsets, each key once),
# and counts on, also across a gateway restart. Every count is checked
# exactly against the input; last, a kill while records flow may only over-count under
# at_least_once, and must count exactly under exactly_once_v2 (transactions: the dead
# instance's open transaction is aborted, the survivor redoes it once).
#
# Under exactly_once_v2 the oracle is every record, not the last count per word: the
# app has no record cache then, so a word seen N times has the committed output (w,1),
# (w,2), ..., (w,N), each once and in order (Driver check ... records). A duplicate, a
# gap, or aborted output leaking to a read_committed reader fails it, where last counts
# could still come out right. And the mid-stream kill is proven to land inside one of the
# instance's open transactions (Driver kill-in-txn), not left to a sleep's timing.
# Needs tests/frameworks/deps.sh run first. FW_BACKEND=iggy runs it on an iggy-server;
# STREAMS_GUARANTEE picks processing.guarantee (../streams-eos runs exactly_once_v2).
#
# Why exact counts are a fair test under at_least_once: a plain count() over-counts the
# records an instance processed but had not committed when it died (Kafka promises no
# better). Here the instance is killed only once the group's committed offsets equal the
# end offsets of the input and of the repartition topic (Driver quiesce): Streams flushes
# its producer (output, changelog, repartition records) before it commits, so at that
# point nothing is processed and uncommitted, and the second half is produced only after
# the kill. Any count off by one is then the gateway's doing (a lost or stale commit, a
# changelog that restores wrong), not at_least_once's.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
source "$HERE/../lib.sh"

GUARANTEE=${STREAMS_GUARANTEE:-at_least_once}
APP=wordcount
IN=streams-lines
OUT=streams-counts
REPART=$APP-words-repartition
CHANGELOG=$APP-word-counts-changelog
PARTS=4
TASKS="0_0,0_1,0_2,0_3,1_0,1_1,1_2,1_3" # sub-topology 0 reads IN, 1 the repartition topic
HALF=3000                                # lines per half; a third batch of 1000 after the restore
passed=0
declare -A APP_PID
started=$(date +%s)

summary() { echo "${STREAMS_NAME:-streams}: $passed passed, $1 failed"; }
pass() {
    echo "PASS $1 ($(($(date +%s) - started)) s)"
    passed=$((passed + 1))
}
fail() { # NAME WHY: the logs, then stop (each step builds on the ones before)
    echo "FAIL $1: $2"
    local n
    for n in "${!APP_PID[@]}"; do
        echo "--- app $n log (last 30 lines but the per-second purge ones)" >&2
        grep -v 'delete-records' "$FW_WORK/$n.app.log" | tail -n 30 >&2 || true
    done
    gw_log gw
    summary 1
    exit 1
}

driver() { fw_java streams -Dorg.slf4j.simpleLogger.defaultLogLevel=warn gateway.streams.Driver "$@"; }

# The output check at quiescence: under exactly_once_v2 every record (see the top),
# under at_least_once the last count per word.
CHECK_MODE=exact
[ "$GUARANTEE" = exactly_once_v2 ] && CHECK_MODE=records

# app_start NAME: an instance with its own (new, empty) state directory. Its log is
# $FW_WORK/NAME.app.log, its "STATE tasks" in NAME.status, its JVM's id in NAME.status.pid.
app_start() {
    local n=$1 i
    rm -rf "$FW_WORK/$n-state" "$FW_WORK/$n.status" "$FW_WORK/$n.status.pid" "$FW_WORK/$n.status.txn"
    mkdir -p "$FW_WORK/$n-state"
    fw_java streams gateway.streams.WordCountApp "$BOOT" "$APP" "$FW_WORK/$n-state" "$IN" "$OUT" \
        "$GUARANTEE" "$FW_WORK/$n.status" >"$FW_WORK/$n.app.log" 2>&1 &
    FW_EXTRA_PIDS="${FW_EXTRA_PIDS:-} $!"
    for i in $(seq 300); do
        [ -s "$FW_WORK/$n.status.pid" ] && break
        sleep 0.1
    done
    [ -s "$FW_WORK/$n.status.pid" ] || fail "start-$n" "the JVM of instance $n wrote no pid within 30 s"
    APP_PID[$n]=$(cat "$FW_WORK/$n.status.pid")
    FW_EXTRA_PIDS="$FW_EXTRA_PIDS ${APP_PID[$n]}" # lib.sh's cleanup kills these
}

status() { cat "$FW_WORK/$1.status" 2>/dev/null || echo "none -"; }
alive() { kill -0 "${APP_PID[$1]}" 2>/dev/null; }

# wait_running STEP SECONDS NAME=TASKS... : until each instance is RUNNING with exactly
# those active tasks ("any" for a non-empty set), or fail STEP naming what was awaited.
wait_running() {
    local step=$1 secs=$2 deadline=$(($(date +%s) + $2)) spec n want got ok
    shift 2
    while :; do
        ok=1
        for spec in "$@"; do
            n=${spec%%=*} want=${spec#*=}
            alive "$n" || fail "$step" "instance $n exited (status: $(status "$n"))"
            got=$(status "$n")
            case "$want" in
                any) [[ $got =~ ^RUNNING\ [0-9] ]] || ok= ;;
                *) [ "$got" = "RUNNING $want" ] || ok= ;;
            esac
        done
        [ -n "$ok" ] && return 0
        if [ "$(date +%s)" -ge "$deadline" ]; then
            local s=""
            for spec in "$@"; do s+=" ${spec%%=*}: $(status "${spec%%=*}");"; done
            fail "$step" "not RUNNING with the tasks awaited ($*) after $secs s:$s"
        fi
        sleep 0.2
    done
}

# counted_exactly STEP LINES: the group commits every record of IN and of the
# repartition topic (so nothing is in flight), then OUT must hold the true counts over
# lines [0, LINES), every word: as last counts, or under exactly_once_v2 as records.
counted_exactly() {
    local out
    out=$(driver quiesce "$BOOT" "$APP" 90 "$IN" "$REPART" 2>&1) || fail "$1" "$out"
    echo "  $out"
    out=$(driver check "$BOOT" "$OUT" "$2" $CHECK_MODE 2>&1) || fail "$1" "$out"
    echo "  $out"
    pass "$1"
}

# restored STEP NAME FROM_LINE PARTITION...: instance NAME's log, from line FROM_LINE
# on, shows those partitions of word-counts restored from the changelog, each with
# records (within 30 s: restoring runs beside the stream thread); prints them.
restored() {
    local step=$1 n=$2 from=$3 deadline=$(($(date +%s) + 30)) lines missing p
    shift 3
    while :; do
        lines=$(tail -n +"$from" "$FW_WORK/$n.app.log" | grep '^RESTORED store=word-counts ' || true)
        missing=
        for p in "$@"; do
            echo "$lines" | grep -Eq " partition=$CHANGELOG-$p records=[1-9]" || missing+=" $p"
        done
        [ -z "$missing" ] && break
        [ "$(date +%s)" -ge "$deadline" ] &&
            fail "$step" "instance $n restored no records of word-counts partitions$missing from $CHANGELOG within 30 s: ${lines:-no RESTORED line}"
        sleep 0.2
    done
    echo "$lines" | sed 's/^/  /'
}

gw_start gw IGGY_KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0 IGGY_KAFKA_COMPACTION_INTERVAL_MS=200
BOOT=${FW_ADDR[gw]}
echo "gateway on $BOOT ($FW_BACKEND), processing.guarantee=$GUARANTEE, work in $FW_WORK"

# a. Topics, then two instances sharing the tasks.
out=$(driver create "$BOOT" "$IN" $PARTS "$OUT" $PARTS 2>&1) || fail topics "$out"
pass topics
app_start a
wait_running a-running 60 a="$TASKS"
app_start b
# Both RUNNING with the eight tasks split between them (the HA assignor balances them:
# no changelog has data yet, so either instance is caught up on every store).
wait_running two-running 60 a=any b=any
deadline=$(($(date +%s) + 30))
while :; do
    tasks_a=$(status a | cut -d' ' -f2) tasks_b=$(status b | cut -d' ' -f2)
    [ "$(echo "$tasks_a,$tasks_b" | tr , '\n' | sort | paste -sd,)" = "$TASKS" ] && break
    [ "$(date +%s)" -ge "$deadline" ] &&
        fail two-running "the tasks are not split between the instances after 30 s: a $(status a), b $(status b)"
    sleep 0.2
done
wait_running two-running 10 a="$tasks_a" b="$tasks_b"
echo "  a: $tasks_a  b: $tasks_b"
pass two-running

# b. First half counted by both; kill the one holding a store (so the other restores it).
driver produce "$BOOT" "$IN" 0 $HALF >/dev/null 2>&1 || fail first-half "cannot produce lines 0..$HALF"
counted_exactly first-half-exact $HALF
# The checker itself must be able to fail, on the output just accepted: against one
# line fewer (some count too high), and in records mode with one record read twice and
# with one dropped (Driver selftest checks each is refused for that fault).
out=$(driver selftest "$BOOT" "$OUT" $HALF $CHECK_MODE 2>&1) || fail checker-fails "$out"
echo "$out" | cut -c1-220 | sed 's/^/  /'
pass checker-fails
if [[ $tasks_b == *1_* ]]; then victim=b survivor=a vtasks=$tasks_b; else victim=a survivor=b vtasks=$tasks_a; fi
stores=$(echo "$vtasks" | tr , '\n' | sed -n 's/^1_//p' | paste -sd' ') # its store partitions
from=$(($(wc -l <"$FW_WORK/$survivor.app.log") + 1))
kill -9 "${APP_PID[$victim]}"
echo "  SIGKILLed instance $victim ($(status $victim | cut -d' ' -f2))"
# The second half goes in at once, while the group still waits for the dead member's
# session (6 s) to expire: the survivor keeps its own partitions moving meanwhile.
driver produce "$BOOT" "$IN" $HALF $((2 * HALF)) >/dev/null 2>&1 ||
    fail takeover "cannot produce lines $HALF..$((2 * HALF))"
wait_running takeover 60 $survivor="$TASKS"
# shellcheck disable=SC2086 # one word per partition
restored takeover $survivor "$from" $stores
pass takeover
counted_exactly after-kill-exact $((2 * HALF))

# The internal topics Streams created through the gateway, with the partitions and the
# configurations it asked for (a changelog must be compact, or a restore may miss keys
# on a broker that deletes old segments).
want="partitions=$PARTS cleanup.policy=compact message.timestamp.type=CreateTime"
got=$(driver config "$BOOT" "$CHANGELOG" cleanup.policy message.timestamp.type 2>&1) || fail internal-topics "$got"
[ "$got" = "$want" ] || fail internal-topics "$CHANGELOG has $got, not $want"
want="partitions=$PARTS cleanup.policy=delete retention.ms=-1 segment.bytes=52428800 message.timestamp.type=CreateTime"
got=$(driver config "$BOOT" "$REPART" cleanup.policy retention.ms segment.bytes message.timestamp.type 2>&1) ||
    fail internal-topics "$got"
[ "$got" = "$want" ] || fail internal-topics "$REPART has $got, not $want"
pass internal-topics

# d. Stop everything; a new instance on an empty state directory restores the store
# from the changelog, then counts on from the restored values.
kill -TERM "${APP_PID[$survivor]}"
for i in $(seq 300); do alive $survivor || break; sleep 0.1; done
alive $survivor && fail stop "instance $survivor did not close within 30 s of SIGTERM"
grep -q '^CLOSED' "$FW_WORK/$survivor.app.log" || fail stop "instance $survivor exited without closing"
pass stop
# The changelog the new instance restores from is compacted first: the restore reads
# the latest count of each word, and the exact counts after it prove none was lost.
out=$(driver compacted "$BOOT" "$CHANGELOG" 60 2>&1) || fail changelog-compacted "$out"
echo "  $out"
pass changelog-compacted
app_start c
wait_running restore 60 c="$TASKS"
restored restore c 1 0 1 2 3
pass restore
driver produce "$BOOT" "$IN" $((2 * HALF)) $((2 * HALF + 1000)) >/dev/null 2>&1 ||
    fail restored-exact "cannot produce lines $((2 * HALF))..$((2 * HALF + 1000))"
counted_exactly restored-exact $((2 * HALF + 1000))

# A gateway restart under the running app, at quiescence again (the app's commits and
# produces in flight at a restart would be re-processed, as at_least_once allows): its
# members carry on in their generation (the gateway kept the group), its producers go on
# with their sequences (the gateway rebuilds producer state from the stored batches),
# and it counts on exactly.
gw_restart gw
driver produce "$BOOT" "$IN" $((2 * HALF + 1000)) $((2 * HALF + 2000)) >/dev/null 2>&1 ||
    fail gateway-restart "cannot produce lines $((2 * HALF + 1000))..$((2 * HALF + 2000))"
wait_running gateway-restart 60 c="$TASKS"
counted_exactly gateway-restart $((2 * HALF + 2000))

# Last, as it spoils exact counts under at_least_once: two instances again, one
# SIGKILLed while the input flows. at_least_once lets the survivor re-process what the
# dead one had not committed, so counts may only be too high; one too low is a lost
# record. exactly_once_v2 must still count every record exactly.
app_start d
wait_running kill-mid-stream 60 c=any d=any
echo "  c: $(status c | cut -d' ' -f2)  d: $(status d | cut -d' ' -f2)"
driver produce "$BOOT" "$IN" $((2 * HALF + 2000)) $((4 * HALF + 2000)) >"$FW_WORK/produce.out" 2>&1 &
producer=$!
if [ "$GUARANTEE" = exactly_once_v2 ]; then
    # The kill must land inside one of d's open transactions, or nothing is left to
    # abort and the step proves no more than a clean stop: d's transactional ids (the
    # app writes them once RUNNING), then Driver kill-in-txn polls DescribeTransactions
    # until one is Ongoing with partitions and SIGKILLs d inside it (30 s at most). When
    # d counts (a 1_ task), only a transaction holding output is taken: its aborted
    # records then lie in OUT itself, for the read_committed check below to skip.
    [ -s "$FW_WORK/d.status.txn" ] || fail kill-mid-stream "instance d wrote no transactional ids (d.status.txn)"
    with=()
    [[ $(status d) == *1_* ]] && with=(--with-topic "$OUT")
    # shellcheck disable=SC2046 # one word per id
    out=$(driver kill-in-txn "$BOOT" "${APP_PID[d]}" 30 "${with[@]}" $(cat "$FW_WORK/d.status.txn") 2>&1) ||
        fail kill-mid-stream "$out"
    echo "  $out"
else
    # No transactions to aim at: the kill comes while the input flows in.
    sleep 2
    kill -9 "${APP_PID[d]}"
fi
for i in $(seq 100); do alive d || break; sleep 0.1; done
alive d && fail kill-mid-stream "instance d still alive 10 s after SIGKILL"
wait $producer || fail kill-mid-stream "cannot produce lines $((2 * HALF + 2000))..$((4 * HALF + 2000)): $(cat "$FW_WORK/produce.out")"
wait_running kill-mid-stream 60 c="$TASKS"
out=$(driver quiesce "$BOOT" "$APP" 90 "$IN" "$REPART" 2>&1) || fail kill-mid-stream "$out"
mode=at-least
[ "$GUARANTEE" = exactly_once_v2 ] && mode=records
out=$(driver check "$BOOT" "$OUT" $((4 * HALF + 2000)) $mode 2>&1) || fail kill-mid-stream "$out"
echo "  $out"
pass kill-mid-stream

# Streams purges consumed repartition records with DeleteRecords, which the gateway does
# not serve (issue 17): worth a line, not a failure, while the app runs on regardless.
n=$(cat "$FW_WORK"/*.app.log | grep -c 'Previous delete-records request has failed' || true)
why=$(cat "$FW_WORK"/*.app.log | grep -o 'exception=[A-Za-z.]*Exception: [^,]*' | sort -u | head -n 1 || true)
[ "$n" -gt 0 ] && echo "  note: $n purges of $REPART failed (DeleteRecords, issue 17): ${why#exception=}"

summary 0
