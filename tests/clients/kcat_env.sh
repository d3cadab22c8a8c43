# Sourced by the kcat checks. Debian 12's kcat links librdkafka 2.0.2, which fails
# ApiVersions against current brokers ("ApiVersionRequest failed: Local: Read
# underflow"). The confluent-kafka wheel bundles a recent librdkafka under a hashed
# file name; a librdkafka.so.1 symlink to it on LD_LIBRARY_PATH makes kcat load it.
#   usage: use_wheel_librdkafka PYTHON DIR   (DIR: a temporary directory for the link)
use_wheel_librdkafka() {
    local wheel_lib
    wheel_lib=$("$1" - 2>/dev/null <<'PYEOF' || true
import glob, os, confluent_kafka
libs = os.path.join(os.path.dirname(os.path.dirname(confluent_kafka.__file__)), "confluent_kafka.libs")
print((glob.glob(os.path.join(libs, "librdkafka*.so.1")) + [""])[0])
PYEOF
)
    if [ -n "$wheel_lib" ]; then
        ln -s "$wheel_lib" "$2/librdkafka.so.1"
        export LD_LIBRARY_PATH=$2${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    fi
}
