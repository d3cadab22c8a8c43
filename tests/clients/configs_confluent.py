#!/usr/bin/env python3
"""Topic and broker configurations through confluent-kafka's AdminClient (librdkafka).

  1. create_topics with configurations (validate_only first: nothing is created), a bad
     value refused with INVALID_CONFIG naming the key.
  2. describe_configs of the topic: the values set (DYNAMIC_TOPIC_CONFIG), defaults for
     the rest, synonyms; of the broker (BROKER "<id>"): min.insync.replicas and the values
     tools read, delete.topic.enable read-only; of a missing topic: an error.
  3. alter_configs replaces the topic's whole set.
  4. incremental_alter_configs: SET, DELETE, APPEND and SUBTRACT on the topic; a bad
     entry fails its resource only; a SET and DELETE on this broker (BROKER "<id>";
     librdkafka refuses the empty name of every broker).

    configs_confluent.py --bootstrap 127.0.0.1:9092
Prints `PASS confluent-configs` or exits non-zero naming the first failure.
"""
import argparse
import sys
import uuid
import warnings

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                   ConfigResource, ConfigSource, NewTopic, ResourceType)

TIMEOUT = 20


class Fail(Exception):
    pass


def check(ok, what):
    if not ok:
        raise Fail(what)


def one(futures):
    """The result of a one-entry future dict."""
    (future,) = futures.values()
    return future.result(timeout=TIMEOUT)


def error_of(future):
    try:
        future.result(timeout=TIMEOUT)
    except KafkaException as e:
        return e.args[0]
    raise Fail("expected a failure, got success")


def described(admin, restype, name):
    return one(admin.describe_configs([ConfigResource(restype, name)], request_timeout=TIMEOUT))


def expect(admin, topic, name, value, source):
    e = described(admin, ResourceType.TOPIC, topic)[name]
    check((e.value, e.source) == (value, source.value),
          f"{topic} {name}: {e.value} ({e.source}), expected {value} ({source})")


def op(name, value, kind):
    return ConfigEntry(name, value, incremental_operation=kind)


def run(bootstrap):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    tag = uuid.uuid4().hex[:8]
    topic, other = f"confluent-configs-{tag}", f"confluent-configs-other-{tag}"
    given = {"cleanup.policy": "compact", "retention.ms": "86400000", "retention.bytes": "-1"}

    # 1. create
    one(admin.create_topics([NewTopic(topic, 3, 1, config=given)], validate_only=True))
    check(topic not in admin.list_topics(timeout=TIMEOUT).topics, "validate_only created the topic")
    for t in (topic, other):
        one(admin.create_topics([NewTopic(t, 3, 1, config=given)]))
    err = error_of(admin.create_topics([NewTopic(f"refused-{tag}", 1, 1, config={"retention.ms": "soon"})])[f"refused-{tag}"])
    check(err.code() == KafkaError.INVALID_CONFIG and "retention.ms" in err.str(), f"bad value: {err}")

    # 2. describe
    configs = described(admin, ResourceType.TOPIC, topic)
    for name, value in given.items():
        e = configs[name]
        check((e.value, e.source, e.is_default) == (value, ConfigSource.DYNAMIC_TOPIC_CONFIG.value, False),
              f"{name}: {e} {e.source}")
    segment = configs["segment.ms"]
    check((segment.value, segment.source, segment.is_default) == ("604800000", ConfigSource.DEFAULT_CONFIG.value, True),
          f"segment.ms: {segment}")
    check("log.cleanup.policy" in configs["cleanup.policy"].synonyms, f"synonyms: {configs['cleanup.policy'].synonyms}")
    broker_id = str(next(iter(admin.list_topics(timeout=TIMEOUT).brokers)))
    broker = described(admin, ResourceType.BROKER, broker_id)
    for name in ("min.insync.replicas", "log.retention.ms", "num.partitions", "default.replication.factor",
                 "message.max.bytes", "log.cleanup.policy", "auto.create.topics.enable"):
        check(name in broker and broker[name].value is not None, f"broker {name} missing")
    check(broker["delete.topic.enable"].is_read_only and broker["num.partitions"].is_read_only
          and not broker["log.retention.ms"].is_read_only, "read-only flags")
    missing = admin.describe_configs([ConfigResource(ResourceType.TOPIC, f"missing-{tag}")], request_timeout=TIMEOUT)
    err = error_of(next(iter(missing.values())))
    check(err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART, f"missing topic: {err}")

    # 3. alter_configs (deprecated in the client, still what older tools send) replaces the set
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        altered = admin.alter_configs([ConfigResource(ResourceType.TOPIC, other, set_config={"segment.ms": "5000"})],
                                      request_timeout=TIMEOUT)
    one(altered)
    expect(admin, other, "segment.ms", "5000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    expect(admin, other, "cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG)

    # 4. incremental_alter_configs, every operation
    ops = [op("max.message.bytes", "2000", AlterConfigOpType.SET),
           op("retention.ms", None, AlterConfigOpType.DELETE),
           op("cleanup.policy", "delete", AlterConfigOpType.APPEND)]
    futures = admin.incremental_alter_configs([
        ConfigResource(ResourceType.TOPIC, topic, incremental_configs=ops),
        ConfigResource(ResourceType.TOPIC, other,
                       incremental_configs=[op("retention.ms", "1", AlterConfigOpType.SUBTRACT)]),
    ], request_timeout=TIMEOUT)
    by_name = {r.name: f for r, f in futures.items()}
    by_name[topic].result(timeout=TIMEOUT)
    err = error_of(by_name[other])
    check(err.code() == KafkaError.INVALID_CONFIG and "retention.ms" in err.str(), f"SUBTRACT on a long: {err}")
    expect(admin, topic, "max.message.bytes", "2000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    expect(admin, topic, "retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG)
    expect(admin, topic, "cleanup.policy", "compact,delete", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    one(admin.incremental_alter_configs([ConfigResource(
        ResourceType.TOPIC, topic, incremental_configs=[op("cleanup.policy", "compact", AlterConfigOpType.SUBTRACT)])]))
    expect(admin, topic, "cleanup.policy", "delete", ConfigSource.DYNAMIC_TOPIC_CONFIG)

    this = ConfigResource(ResourceType.BROKER, broker_id,
                          incremental_configs=[op("log.retention.bytes", "1073741824", AlterConfigOpType.SET)])
    one(admin.incremental_alter_configs([this]))
    expect(admin, topic, "retention.bytes", "-1", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    expect(admin, other, "retention.bytes", "1073741824", ConfigSource.DYNAMIC_BROKER_CONFIG)
    this = ConfigResource(ResourceType.BROKER, broker_id,
                          incremental_configs=[op("log.retention.bytes", None, AlterConfigOpType.DELETE)])
    one(admin.incremental_alter_configs([this]))
    expect(admin, other, "retention.bytes", "-1", ConfigSource.DEFAULT_CONFIG)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    args = parser.parse_args()
    try:
        run(args.bootstrap)
    except (Fail, KafkaException) as e:
        print(f"FAIL confluent-configs: {e}", file=sys.stderr)
        sys.exit(1)
    print("PASS confluent-configs")


if __name__ == "__main__":
    main()
