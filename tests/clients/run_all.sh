#!/usr/bin/env bash
# Runs every real-client check against one broker; stops at the first failure.
#   usage: run_all.sh HOST:PORT [extra roundtrip.py args, e.g. --skip-end-offsets]
# The consumer-group checks (*-groups) wait out the broker's initial rebalance delay
# (3 s on Kafka and the gateway by default) once or twice each. With SASL_BOOTSTRAP (a
# SASL_PLAINTEXT listener) and SASL_USER/SASL_PASSWORD (a SCRAM user allowed to manage
# users), the SASL checks run too: confluent-kafka with SCRAM-SHA-512 and the Java
# AdminClient, producer and consumer with SCRAM-SHA-256.
# Each check is bounded by CHECK_TIMEOUT seconds (default 300): a hung client fails
# its check, named, instead of hanging the run. This is the one bound every check has;
# some also bound their own steps, to name the step. With CLIENTS_NO_SKIP=1 (CI, which
# configures every listener) a check that would be skipped fails the run instead.
# Every Java check runs twice: java-* with kafka-clients 3.9 (KAFKA_JAVA_LIBS, default
# .venv/kafka-java) and java4-* with the newest 4.x (KAFKA_JAVA4_LIBS, default
# .venv/kafka-java-4), both from .ci/client-deps.sh; one source compiles against both.
# The Go checks (go-sarama, go-kafkago: tests/clients/go/, a producer and a two-member
# group each) run the binaries .ci/client-deps.sh builds into GO_CHECKS (default
# .venv/go-checks).
set -euo pipefail

BOOTSTRAP=${1:?usage: run_all.sh HOST:PORT [roundtrip.py args]}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-$(cd "$HERE/../.." && pwd)/.venv/bin/python}
JAVA3_LIBS=${KAFKA_JAVA_LIBS:-$HERE/../../.venv/kafka-java}
JAVA4_LIBS=${KAFKA_JAVA4_LIBS:-$HERE/../../.venv/kafka-java-4}
GO_CHECKS=${GO_CHECKS:-$HERE/../../.venv/go-checks}
[ -x "$PY" ] || { echo "FAIL: no python venv at $PY (run .ci/client-deps.sh)" >&2; exit 1; }
for bin in sarama_check kafkago_check; do
    [ -x "$GO_CHECKS/$bin" ] || { echo "FAIL: no $bin in $GO_CHECKS (run .ci/client-deps.sh)" >&2; exit 1; }
done
CHECK_TIMEOUT=${CHECK_TIMEOUT:-300}
skip() {
    if [ "${CLIENTS_NO_SKIP:-}" = 1 ]; then
        echo "FAIL: $* with CLIENTS_NO_SKIP=1"
        echo "clients: 0 passed, 1 failed"
        exit 1
    fi
    echo "SKIPPED: $*"
}

checks=(confluent kafka-python aiokafka kcat kafkajs-topics java-configs java4-configs
        confluent-configs confluent-groups kafka-python-groups kafkajs-groups java-groups
        java4-groups kcat-groups go-sarama go-kafkago java-quotas java4-quotas java-describe
        java4-describe java-transactions java4-transactions confluent-transactions
        java-txn-admin java4-txn-admin java-fencing java4-fencing)
if [ -n "${SASL_BOOTSTRAP:-}" ]; then
    checks+=(confluent-sasl java-scram java4-scram)
    # With AUTHORIZER=standard too (the gateway runs `authorizer = standard`, the SASL
    # user a super user, `allow_everyone_if_no_acl_found` on): the Java ACL check.
    if [ "${AUTHORIZER:-}" = standard ]; then
        checks+=(java-acls java4-acls)
    else
        skip "ACL check (AUTHORIZER is not standard)"
    fi
else
    skip "SASL checks (no SASL_BOOTSTRAP)"
fi
# With SSL_BOOTSTRAP (an SSL listener) and SSL_CA (the CA of its certificate), the TLS
# checks run: kcat and confluent-kafka over SSL.
if [ -n "${SSL_BOOTSTRAP:-}" ]; then
    checks+=(kcat-ssl confluent-ssl)
else
    skip "SSL checks (no SSL_BOOTSTRAP)"
fi
# With SASL_SSL_BOOTSTRAP (a SASL_SSL listener, its certificate's CA in SSL_CA) and the
# SASL user: kcat and confluent-kafka over SASL_SSL with SCRAM-SHA-512.
if [ -n "${SASL_SSL_BOOTSTRAP:-}" ]; then
    checks+=(kcat-sasl-ssl confluent-sasl-ssl)
else
    skip "SASL_SSL checks (no SASL_SSL_BOOTSTRAP)"
fi
passed=0
for check in "${checks[@]}"; do
    # java4-NAME is java-NAME with the 4.x jars.
    java_libs=$JAVA3_LIBS
    case $check in java4-*) java_libs=$JAVA4_LIBS ;; esac
    case ${check/#java4-/java-} in
        kcat) cmd=(bash "$HERE/kcat_roundtrip.sh" "$BOOTSTRAP") ;;
        kafkajs-topics) cmd=(node "$HERE/topics_kafkajs.js" "$BOOTSTRAP") ;;
        java-configs) cmd=(bash "$HERE/java_check.sh" ConfigsJava "$BOOTSTRAP") ;;
        confluent-configs) cmd=("$PY" "$HERE/configs_confluent.py" --bootstrap "$BOOTSTRAP") ;;
        confluent-groups) cmd=("$PY" "$HERE/groups_confluent.py" --bootstrap "$BOOTSTRAP") ;;
        confluent-transactions) cmd=("$PY" "$HERE/txn_confluent.py" --bootstrap "$BOOTSTRAP") ;;
        kafka-python-groups) cmd=("$PY" "$HERE/groups_kafka_python.py" --bootstrap "$BOOTSTRAP") ;;
        kafkajs-groups) cmd=(node "$HERE/groups_kafkajs.js" "$BOOTSTRAP") ;;
        java-groups) cmd=(bash "$HERE/java_check.sh" GroupsJava "$BOOTSTRAP") ;;
        java-quotas) cmd=(bash "$HERE/java_check.sh" QuotasJava "$BOOTSTRAP") ;;
        java-transactions) cmd=(bash "$HERE/java_check.sh" TransactionsJava "$BOOTSTRAP") ;;
        # Its ACL step logs in on SASL_BOOTSTRAP when AUTHORIZER=standard.
        java-describe) cmd=(bash "$HERE/java_check.sh" DescribeJava "$BOOTSTRAP") ;;
        java-txn-admin) cmd=(bash "$HERE/java_check.sh" TxnAdminJava "$BOOTSTRAP") ;;
        java-fencing) cmd=(bash "$HERE/java_check.sh" FencingJava "$BOOTSTRAP") ;;
        kcat-groups) cmd=(bash "$HERE/kcat_groups.sh" "$BOOTSTRAP") ;;
        go-sarama) cmd=("$GO_CHECKS/sarama_check" "$BOOTSTRAP") ;;
        go-kafkago) cmd=("$GO_CHECKS/kafkago_check" "$BOOTSTRAP") ;;
        confluent-sasl) cmd=("$PY" "$HERE/sasl_confluent.py" --bootstrap "$SASL_BOOTSTRAP"
                             --user "${SASL_USER:-admin}" --password "${SASL_PASSWORD:-admin-secret}") ;;
        java-scram) cmd=(bash "$HERE/java_check.sh" ScramJava "$SASL_BOOTSTRAP") ;;
        java-acls) cmd=(bash "$HERE/java_check.sh" AclsJava "$SASL_BOOTSTRAP") ;;
        kcat-ssl) cmd=(bash "$HERE/kcat_ssl.sh" "$SSL_BOOTSTRAP" "$SSL_CA") ;;
        confluent-ssl) cmd=("$PY" "$HERE/ssl_confluent.py" --bootstrap "$SSL_BOOTSTRAP" --ca "$SSL_CA") ;;
        kcat-sasl-ssl) cmd=(bash "$HERE/kcat_ssl.sh" "$SASL_SSL_BOOTSTRAP" "$SSL_CA"
                            "${SASL_USER:-admin}" "${SASL_PASSWORD:-admin-secret}") ;;
        confluent-sasl-ssl) cmd=("$PY" "$HERE/sasl_confluent.py" --bootstrap "$SASL_SSL_BOOTSTRAP"
                                 --user "${SASL_USER:-admin}" --password "${SASL_PASSWORD:-admin-secret}"
                                 --ca "$SSL_CA") ;;
        *) cmd=("$PY" "$HERE/roundtrip.py" --bootstrap "$BOOTSTRAP" --client "$check" "$@") ;;
    esac
    # timeout signals the check's whole process group (worker processes, the JVM, kcat),
    # and SIGKILLs it 10 s later if it is still there.
    status=0
    KAFKA_JAVA_LIBS=$java_libs PYTHON=$PY timeout --kill-after=10 "$CHECK_TIMEOUT" "${cmd[@]}" || status=$?
    if [ $status -ne 0 ]; then
        case $status in
            124) echo "failed check: $check (timed out after $CHECK_TIMEOUT s)" ;;
            137) echo "failed check: $check (SIGKILLed: still there 10 s after its $CHECK_TIMEOUT s timeout, or killed from outside)" ;;
            *) echo "failed check: $check (exit status $status)" ;;
        esac
        # Summary line in the plain 'N passed, N failed' form CI reads.
        echo "clients: $passed passed, 1 failed"
        exit 1
    fi
    passed=$((passed + 1))
done
echo "clients: $passed passed, 0 failed"
