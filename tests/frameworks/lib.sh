# Sourced by the framework checks (tests/frameworks/*/check.sh): starts, kills and
# restarts gateways, each with its own data on the embedded store or, with
# FW_BACKEND=iggy, on an iggy-server (IGGY_SERVER_BIN, default the shared one beside
# the checkout) that every gateway of one Kafka cluster shares, as a Deployment's
# replicas share one Iggy: a check names a gateway's cluster in FW_CLUSTER[NAME]
# before its first gw_start (default "main"). Everything started here is killed when
# the sourcing script exits.
#   GATEWAY_BIN  the gateway binary (default target/release/iggy-kafka-gateway)
#   FW_WORK      a scratch dir (default: a new temp dir, removed at exit)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
GATEWAY_BIN=${GATEWAY_BIN:-$ROOT/target/release/iggy-kafka-gateway}
FW_BACKEND=${FW_BACKEND:-embedded}
[ -x "$GATEWAY_BIN" ] || { echo "FAIL: no gateway binary at $GATEWAY_BIN (cargo build --release)" >&2; exit 1; }
if [ -z "${FW_WORK:-}" ]; then
    FW_WORK=$(mktemp -d)
    fw_own_work=1
fi
declare -A FW_PID FW_ADDR FW_ENV FW_CLUSTER FW_IGGY_PID FW_IGGY_ADDR

fw_cleanup() {
    local p
    for p in "${FW_PID[@]}" "${FW_IGGY_PID[@]}" ${FW_EXTRA_PIDS:-}; do
        kill -9 "$p" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    [ -n "${fw_own_work:-}" ] && rm -rf "$FW_WORK"
    return 0
}
trap fw_cleanup EXIT

fw_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits up to $2 seconds (default 60) for something to accept on HOST:PORT $1.
fw_wait_port() {
    local host=${1%:*} port=${1##*:} i
    for i in $(seq $((${2:-60} * 10))); do
        (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "FAIL: nothing listens on $1 after ${2:-60} s" >&2
    return 1
}

fw_iggy_start() { # CLUSTER: the iggy-server the gateways of CLUSTER keep their data in
    local name=$1 dir=$FW_WORK/$1-iggy
    local bin=${IGGY_SERVER_BIN:-$ROOT/../shared/iggy/iggy-server}
    [ -x "$bin" ] || { echo "FAIL: FW_BACKEND=iggy needs an iggy-server: IGGY_SERVER_BIN=$bin is none" >&2; exit 1; }
    mkdir -p "$dir"
    [ -n "${FW_IGGY_ADDR[$name]:-}" ] || FW_IGGY_ADDR[$name]=127.0.0.1:$(fw_free_port)
    (cd "$dir" && IGGY_TCP_ADDRESS=${FW_IGGY_ADDR[$name]} IGGY_SYSTEM_PATH=$dir/data \
        IGGY_HTTP_ENABLED=false IGGY_QUIC_ENABLED=false IGGY_WEBSOCKET_ENABLED=false \
        IGGY_ROOT_USERNAME=iggy IGGY_ROOT_PASSWORD=iggy \
        IGGY_SYSTEM_SHARDING_CPU_ALLOCATION=1 IGGY_SYSTEM_SHARDING_PIN_CORES=false \
        exec "$bin" >>"$dir/server.log" 2>&1) &
    FW_IGGY_PID[$name]=$!
    fw_wait_port "${FW_IGGY_ADDR[$name]}" 60
}

# gw_start NAME [IGGY_KAFKA_X=value ...]: a gateway with data of its own, on a free
# port the first time and on the same one after gw_kill (clients keep their bootstrap
# address). Sets FW_ADDR[NAME]; its log is $FW_WORK/NAME.log.
gw_start() {
    local name=$1 i
    shift
    [ $# -gt 0 ] && FW_ENV[$name]="$*"
    local listen=${FW_ADDR[$name]:-127.0.0.1:0}
    local store=(IGGY_KAFKA_DATA_DIR="$FW_WORK/$name-data") cluster=${FW_CLUSTER[$name]:-main}
    if [ "$FW_BACKEND" = iggy ]; then
        [ -n "${FW_IGGY_PID[$cluster]:-}" ] || fw_iggy_start "$cluster"
        store=(IGGY_KAFKA_BACKEND=iggy IGGY_KAFKA_IGGY_ADDRESS="${FW_IGGY_ADDR[$cluster]}")
    fi
    # Emptied here, not by the background job's redirection: that may come after the
    # first read below, which would then find no file (set -e ends the script) or,
    # after gw_kill, the last gateway's address line.
    : >"$FW_WORK/$name.stdout"
    # shellcheck disable=SC2086 # FW_ENV holds VAR=value words
    env IGGY_KAFKA_LISTENERS="PLAINTEXT://$listen" IGGY_KAFKA_ADMIN_BIND_ADDRESS=127.0.0.1:0 \
        "${store[@]}" ${FW_ENV[$name]:-} "$GATEWAY_BIN" >"$FW_WORK/$name.stdout" 2>>"$FW_WORK/$name.log" &
    FW_PID[$name]=$!
    for i in $(seq 300); do
        FW_ADDR[$name]=$(sed -n 's/.*listening on //p' "$FW_WORK/$name.stdout" 2>/dev/null || true)
        [ -n "${FW_ADDR[$name]}" ] && return 0
        kill -0 "${FW_PID[$name]}" 2>/dev/null || break
        sleep 0.1
    done
    echo "FAIL: gateway $name did not start; its log:" >&2
    tail -n 40 "$FW_WORK/$name.log" >&2
    exit 1
}

gw_kill() { # NAME: SIGKILL, waited for
    kill -9 "${FW_PID[$1]}" 2>/dev/null || true
    wait "${FW_PID[$1]}" 2>/dev/null || true
}

gw_restart() { # NAME: SIGKILL, then the same gateway again on its port and data
    gw_kill "$1"
    gw_start "$1"
}

gw_log() { # NAME: the last lines of its log, for a failure message
    echo "--- gateway $1 log (last 40 lines)" >&2
    tail -n 40 "$FW_WORK/$1.log" >&2
}

# fw_classpath DIR: the classes and resolved classpath of the Maven project DIR
# (tests/frameworks/DIR), built by tests/frameworks/deps.sh. For a JVM run in the
# background whose own pid is needed (`java -cp "$(fw_classpath DIR)" ... &`).
fw_classpath() {
    local dir=$ROOT/tests/frameworks/$1
    [ -s "$dir/target/classpath" ] || { echo "FAIL: $dir not built (tests/frameworks/deps.sh)" >&2; exit 1; }
    echo "$dir/target/classes:$(cat "$dir/target/classpath")"
}

# fw_java DIR MAIN [ARGS...]: a class of that project, on its classpath.
fw_java() {
    local cp
    cp=$(fw_classpath "$1") || exit 1
    shift
    java -cp "$cp" "$@"
}

# Sub-checks of a check: `passed`, `failed`, and WHY (why the last one failed) with SHOW
# (what it last saw), set by the checks' functions and read by fw_run.
passed=0 failed=0 WHY= SHOW=

# fw_wait_for SECONDS WHAT CMD...: CMD every half second until it succeeds; else WHY
# says what was waited for (and the last $SHOW, if the caller set one).
fw_wait_for() {
    local secs=$1 what=$2 end=$((SECONDS + $1))
    shift 2
    until "$@"; do
        if [ $SECONDS -ge $end ]; then
            WHY="no $what after ${secs}s${SHOW:+: $SHOW}"
            return 1
        fi
        sleep 0.5
    done
}

# fw_run NAME FUNCTION: runs one sub-check, counts it and prints PASS or FAIL with its
# time; after a failure, the check's own `dump` (if it has one) shows its logs.
fw_run() {
    local t0=$SECONDS
    WHY= SHOW=
    if "$2"; then
        echo "PASS $1 ($((SECONDS - t0)) s)"
        passed=$((passed + 1))
        return 0
    fi
    echo "FAIL $1: ${WHY:-failed}"
    failed=$((failed + 1))
    declare -F dump >/dev/null && dump
    return 1
}

# fw_selected NAME: whether sub-check NAME is to run: FW_ONLY="name ..." picks some
# (a step of a chain needs the ones before it); unset, all run.
fw_selected() { [ -z "${FW_ONLY:-}" ] || [[ " $FW_ONLY " == *" $1 "* ]]; }

# fw_run_chain NAME:FUNCTION...: the selected sub-checks in order, each building on the
# ones before it: after a failure the rest are counted as failed, skipped.
fw_run_chain() {
    local steps=("$@") i skipped
    for i in "${!steps[@]}"; do
        fw_selected "${steps[$i]%%:*}" || continue
        fw_run "${steps[$i]%%:*}" "${steps[$i]#*:}" && continue
        for skipped in "${steps[@]:$((i + 1))}"; do
            echo "FAIL ${skipped%%:*}: skipped after a failure before it"
            failed=$((failed + 1))
        done
        return 1
    done
}

# fw_stop PID SIGNAL WHAT: sends SIGNAL to a JVM the check started, waits up to 20 s for
# it to end, SIGKILLs it after that (saying so, naming WHAT), and reaps it.
fw_stop() {
    local pid=$1 signal=$2 what=$3 i
    kill -"$signal" "$pid" 2>/dev/null || true
    for i in $(seq 200); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "note: $what still runs 20 s after SIG$signal, SIGKILL" >&2
        kill -9 "$pid"
    fi
    wait "$pid" 2>/dev/null || true
}
