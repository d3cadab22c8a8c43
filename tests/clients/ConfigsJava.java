// Java kafka-clients AdminClient replaying what Kafka frameworks do with topic and broker
// configurations (issue 4; ../shared/docs/BRIEF.md §4), each checked as the framework
// checks it:
//   connect    Connect's three internal topics, compact, replication factor 3, created
//              twice (the second run finds them) and their cleanup.policy read back as
//              exactly "compact"; an operator's topic reads "delete".
//   streams    a repartition topic (delete, segment.bytes, retention.ms=-1) and compact
//              and compact,delete changelogs, all with message.timestamp.type, replication
//              factor -1 (the broker default), read back.
//   schemas    Schema Registry's _schemas topic, compact, checked compact.
//   apicurio   retention.bytes=-1 read back as set.
//   debezium   the broker's default.replication.factor read from a BROKER describe, then
//              the schema history topic with retention.ms=Long.MAX and retention.bytes=-1.
//   mm2        MirrorMaker 2: a target topic with replication factor 2 and the source
//              topic's non-default configurations, then synced incrementally.
//   dlq        a Connect dead letter queue with replication factor 3.
//   broker     a BROKER describe (Strimzi) with min.insync.replicas and the values tools
//              read; a topic describe carries min.insync.replicas (kafka-topics
//              --under-min-isr-partitions).
//   incremental  SET, DELETE, APPEND, SUBTRACT on a topic; validateOnly; a bad entry fails
//              its resource only; a broker-wide change and a read-only broker key.
//   legacy     alterConfigs replaces the whole set (kafka-clients 3.x only: 4.0 removed it).
//   refusals   createTopics with a bad value (InvalidConfigurationException naming the key),
//              validateOnly creates nothing, a missing topic's describe.
//   features   describeFeatures shows gateway.version; updateFeatures to level 2 refused
//              while a topic's segment.bytes breaks it (naming the topic), accepted once
//              fixed; level 2 then refuses that value on createTopics; a downgrade needs
//              a downgrade type; safe and unsafe downgrades leave the broker at level 1.
//   partitions createPartitions (Spring's KafkaAdmin, kafka-topics --alter --partitions):
//              validateOnly grows nothing, a topic grows 1 -> 3, the same count again is
//              InvalidPartitionsException with Kafka's message, a short replica
//              assignment InvalidReplicaAssignmentException, a full one is accepted.
//
//   usage: java_check.sh ConfigsJava HOST:PORT   (compiles this file against the kafka-clients jar)
// Prints `PASS java-configs` or exits non-zero naming the first failure.

import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidReplicaAssignmentException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.InvalidUpdateVersionException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

public class ConfigsJava {
    static Admin admin;
    static String tag;

    static void check(boolean ok, String what) {
        if (!ok) throw new IllegalStateException(what);
    }

    static <T> T get(KafkaFuture<T> f) throws Exception {
        return f.get(20, TimeUnit.SECONDS);
    }

    /** The exception a future failed with. */
    static Throwable failure(KafkaFuture<?> f) throws Exception {
        try {
            f.get(20, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            return e.getCause();
        }
        throw new IllegalStateException("expected a failure, got success");
    }

    static ConfigResource topic(String name) {
        return new ConfigResource(ConfigResource.Type.TOPIC, name);
    }

    static Config describe(ConfigResource r) throws Exception {
        DescribeConfigsOptions o = new DescribeConfigsOptions().includeSynonyms(true).includeDocumentation(true);
        return get(admin.describeConfigs(List.of(r), o).all()).get(r);
    }

    static ConfigEntry entry(ConfigResource r, String name) throws Exception {
        ConfigEntry e = describe(r).get(name);
        check(e != null, r + ": no " + name);
        return e;
    }

    static void create(String name, int partitions, short rf, Map<String, String> configs) throws Exception {
        get(admin.createTopics(List.of(new NewTopic(name, Optional.of(partitions), Optional.of(rf)).configs(configs))).all());
    }

    static void expect(ConfigResource r, String name, String value, ConfigEntry.ConfigSource source) throws Exception {
        ConfigEntry e = entry(r, name);
        check(value.equals(e.value()) && e.source() == source,
                r + " " + name + ": " + e.value() + " (" + e.source() + "), expected " + value + " (" + source + ")");
    }

    static void connect() throws Exception {
        Map<String, Integer> internal = Map.of("configs", 1, "offsets", 25, "status", 5);
        for (int run = 0; run < 2; run++) {
            for (var t : internal.entrySet()) {
                String name = "connect-" + t.getKey() + "-" + tag;
                try {
                    create(name, t.getValue(), (short) 3, Map.of("cleanup.policy", "compact"));
                    check(run == 0, name + " created twice");
                } catch (ExecutionException e) {
                    // TopicAdmin.createOrFindTopics: an existing topic is found, not an error.
                    check(run == 1 && e.getCause() instanceof TopicExistsException, name + ": " + e.getCause());
                }
                // Connect's verifyTopicCleanupPolicyOnlyCompact: the policy must be exactly compact.
                Set<String> policy = Set.of(entry(topic(name), "cleanup.policy").value().split(","));
                check(policy.equals(Set.of("compact")), name + " cleanup.policy " + policy);
                TopicDescription d = get(admin.describeTopics(List.of(name)).allTopicNames()).get(name);
                check(d.partitions().size() == t.getValue(), name + " partitions " + d.partitions().size());
            }
        }
        String operators = "connect-operator-made-" + tag;
        create(operators, 1, (short) 1, Map.of());
        ConfigEntry p = entry(topic(operators), "cleanup.policy");
        check("delete".equals(p.value()) && p.isDefault(), "operator's topic policy " + p);
    }

    static void streams() throws Exception {
        String app = "streams-" + tag;
        String repartition = app + "-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition";
        String changelog = app + "-counts-changelog";
        String windowed = app + "-windows-changelog";
        Map<String, Map<String, String>> topics = Map.of(
                repartition, Map.of("cleanup.policy", "delete", "segment.bytes", "52428800",
                        "retention.ms", "-1", "message.timestamp.type", "CreateTime"),
                changelog, Map.of("cleanup.policy", "compact", "message.timestamp.type", "CreateTime"),
                windowed, Map.of("cleanup.policy", "compact,delete", "retention.ms", "172800000",
                        "message.timestamp.type", "CreateTime"));
        List<NewTopic> all = new ArrayList<>();
        // Streams' replication.factor defaults to -1: the broker's default.
        topics.forEach((n, c) -> all.add(new NewTopic(n, Optional.of(4), Optional.of((short) -1)).configs(c)));
        get(admin.createTopics(all).all());
        for (var t : topics.entrySet()) {
            for (var c : t.getValue().entrySet()) {
                expect(topic(t.getKey()), c.getKey(), c.getValue(), ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG);
            }
        }
    }

    static void schemas() throws Exception {
        String name = "_schemas-" + tag;
        create(name, 1, (short) 3, Map.of("cleanup.policy", "compact"));
        // KafkaStore.verifySchemaTopic: refuses anything but compact.
        check("compact".equals(entry(topic(name), "cleanup.policy").value()), name + " not compact");
    }

    static void apicurio() throws Exception {
        String name = "kafkasql-journal-" + tag;
        create(name, 1, (short) 1, Map.of("cleanup.policy", "delete", "retention.bytes", "-1", "retention.ms", "-1"));
        expect(topic(name), "retention.bytes", "-1", ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG);
        check(!entry(topic(name), "retention.bytes").isDefault(), "retention.bytes reads as a default");
    }

    static String brokerId() throws Exception {
        Collection<org.apache.kafka.common.Node> nodes = get(admin.describeCluster().nodes());
        check(nodes.size() == 1, "nodes " + nodes);
        return nodes.iterator().next().idString();
    }

    static void debezium() throws Exception {
        ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, brokerId());
        short rf = Short.parseShort(entry(broker, "default.replication.factor").value());
        String name = "schema-history-" + tag;
        Map<String, String> configs = Map.of("cleanup.policy", "delete",
                "retention.ms", String.valueOf(Long.MAX_VALUE), "retention.bytes", "-1");
        create(name, 1, rf, configs);
        for (var c : configs.entrySet()) expect(topic(name), c.getKey(), c.getValue(), ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG);
    }

    static void mm2() throws Exception {
        String source = "mm-source-" + tag, target = "primary." + source;
        create(source, 3, (short) 1, Map.of("retention.ms", "3600000", "cleanup.policy", "compact,delete", "max.message.bytes", "2000000"));
        // MirrorSourceConnector: the source's non-default, writable, non-sensitive configs,
        // less those its DefaultConfigPropertyFilter excludes (min.insync.replicas, which a
        // Kafka 4.1+ cluster sets for every broker, KIP-966, among them).
        Set<String> excluded = Set.of("follower.replication.throttled.replicas", "leader.replication.throttled.replicas",
                "message.timestamp.difference.max.ms", "message.timestamp.type", "unclean.leader.election.enable",
                "min.insync.replicas");
        Map<String, String> copied = new TreeMap<>();
        for (ConfigEntry e : describe(topic(source)).entries()) {
            if (!e.isDefault() && !e.isReadOnly() && !e.isSensitive() && !excluded.contains(e.name())) copied.put(e.name(), e.value());
        }
        check(copied.equals(Map.of("retention.ms", "3600000", "cleanup.policy", "compact,delete", "max.message.bytes", "2000000")),
                "copied " + copied);
        create(target, 3, (short) 2, copied);
        // sync.topic.configs: incremental SETs of the same values.
        List<AlterConfigOp> ops = new ArrayList<>();
        copied.forEach((k, v) -> ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
        get(admin.incrementalAlterConfigs(Map.of(topic(target), ops)).all());
        for (var c : copied.entrySet()) expect(topic(target), c.getKey(), c.getValue(), ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG);
    }

    static void dlq() throws Exception {
        String name = "dlq-" + tag;
        create(name, 1, (short) 3, Map.of());
        TopicDescription d = get(admin.describeTopics(List.of(name)).allTopicNames()).get(name);
        check(d.partitions().size() == 1 && d.partitions().get(0).replicas().size() == 1,
                "dlq " + d + " (one replica really kept)");
    }

    static void broker() throws Exception {
        ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, brokerId());
        Config c = describe(broker);
        for (String name : List.of("auto.create.topics.enable", "default.replication.factor", "num.partitions",
                "delete.topic.enable", "log.retention.ms", "log.retention.bytes", "log.segment.bytes",
                "min.insync.replicas", "message.max.bytes", "log.cleanup.policy", "compression.type")) {
            ConfigEntry e = c.get(name);
            check(e != null && e.value() != null && e.documentation() != null, "broker " + name + ": " + e);
        }
        check(c.get("inter.broker.protocol.version") == null, "inter.broker.protocol.version described");
        check(c.get("delete.topic.enable").isReadOnly() && c.get("num.partitions").isReadOnly()
                && !c.get("log.retention.ms").isReadOnly(), "read-only flags");
        check("1".equals(c.get("min.insync.replicas").value()), "min.insync.replicas " + c.get("min.insync.replicas"));
        String name = "min-isr-" + tag;
        create(name, 1, (short) 1, Map.of());
        ConfigEntry isr = entry(topic(name), "min.insync.replicas");
        // Kafka 4.1+'s controller sets it for every broker (KIP-966): not a default.
        check("1".equals(isr.value()) && isr.source() == ConfigEntry.ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
                && isr.type() == ConfigEntry.ConfigType.INT, "topic min.insync.replicas " + isr);
    }

    static AlterConfigOp op(String name, String value, AlterConfigOp.OpType type) {
        return new AlterConfigOp(new ConfigEntry(name, value), type);
    }

    static void incremental() throws Exception {
        String name = "incremental-" + tag, other = "incremental-other-" + tag;
        for (String t : List.of(name, other)) create(t, 1, (short) 1, Map.of("cleanup.policy", "delete", "retention.ms", "1000"));
        List<AlterConfigOp> ops = List.of(
                op("max.message.bytes", "2000", AlterConfigOp.OpType.SET),
                op("retention.ms", null, AlterConfigOp.OpType.DELETE),
                op("cleanup.policy", "compact", AlterConfigOp.OpType.APPEND));
        get(admin.incrementalAlterConfigs(Map.of(topic(name), ops), new AlterConfigsOptions().validateOnly(true)).all());
        expect(topic(name), "retention.ms", "1000", ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG);
        // One bad entry fails its own resource only.
        AlterConfigsResult r = admin.incrementalAlterConfigs(Map.of(topic(name), ops,
                topic(other), List.of(op("retention.ms", "5", AlterConfigOp.OpType.APPEND))));
        get(r.values().get(topic(name)));
        Throwable bad = failure(r.values().get(topic(other)));
        check(bad instanceof InvalidConfigurationException && bad.getMessage().contains("retention.ms"), "APPEND on a long: " + bad);
        expect(topic(name), "max.message.bytes", "2000", ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG);
        expect(topic(name), "retention.ms", "604800000", ConfigEntry.ConfigSource.DEFAULT_CONFIG);
        expect(topic(name), "cleanup.policy", "delete,compact", ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG);
        expect(topic(other), "retention.ms", "1000", ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG);
        get(admin.incrementalAlterConfigs(Map.of(topic(name), List.of(op("cleanup.policy", "delete", AlterConfigOp.OpType.SUBTRACT)))).all());
        expect(topic(name), "cleanup.policy", "compact", ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG);

        // Broker-wide: every gateway's default (""), seen on this broker and on topics.
        ConfigResource every = new ConfigResource(ConfigResource.Type.BROKER, "");
        ConfigResource self = new ConfigResource(ConfigResource.Type.BROKER, brokerId());
        get(admin.incrementalAlterConfigs(Map.of(every, List.of(op("log.retention.ms", "3600000", AlterConfigOp.OpType.SET)))).all());
        expect(self, "log.retention.ms", "3600000", ConfigEntry.ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG);
        expect(topic(other + ""), "segment.ms", "604800000", ConfigEntry.ConfigSource.DEFAULT_CONFIG);
        expect(topic(name), "retention.ms", "3600000", ConfigEntry.ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG);
        get(admin.incrementalAlterConfigs(Map.of(every, List.of(op("log.retention.ms", null, AlterConfigOp.OpType.DELETE)))).all());
        expect(topic(name), "retention.ms", "604800000", ConfigEntry.ConfigSource.DEFAULT_CONFIG);
        Throwable readOnly = failure(admin.incrementalAlterConfigs(
                Map.of(self, List.of(op("delete.topic.enable", "false", AlterConfigOp.OpType.SET)))).all());
        check(readOnly instanceof InvalidRequestException && readOnly.getMessage().contains("delete.topic.enable"), "read-only: " + readOnly);
    }

    // Admin.alterConfigs (AlterConfigs, the whole set replaced) was removed in kafka-clients
    // 4.0; it is called by reflection so this one source compiles against 3.9 and 4.x, and
    // the step runs where the method is there (3.x) and is skipped, said, where it is not.
    static void legacy() throws Exception {
        java.lang.reflect.Method alterConfigs;
        try {
            alterConfigs = Admin.class.getMethod("alterConfigs", Map.class);
        } catch (NoSuchMethodException e) {
            System.out.println("java-configs: legacy skipped (no Admin.alterConfigs: removed in kafka-clients 4.0)");
            return;
        }
        String name = "legacy-" + tag;
        create(name, 1, (short) 1, Map.of("cleanup.policy", "compact", "retention.ms", "1000"));
        Config replaced = new Config(List.of(new ConfigEntry("segment.ms", "5000")));
        get(((AlterConfigsResult) alterConfigs.invoke(admin, Map.of(topic(name), replaced))).all());
        expect(topic(name), "segment.ms", "5000", ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG);
        expect(topic(name), "cleanup.policy", "delete", ConfigEntry.ConfigSource.DEFAULT_CONFIG);
    }

    static void refusals() throws Exception {
        String name = "refused-" + tag;
        Throwable bad = failure(admin.createTopics(List.of(new NewTopic(name, 1, (short) 1)
                .configs(Map.of("retention.ms", "a week")))).all());
        check(bad instanceof InvalidConfigurationException && bad.getMessage().contains("retention.ms"), "bad value: " + bad);
        get(admin.createTopics(List.of(new NewTopic(name, 1, (short) 1).configs(Map.of("cleanup.policy", "compact"))),
                new CreateTopicsOptions().validateOnly(true)).all());
        check(!get(admin.listTopics().names()).contains(name), "validateOnly created " + name);
        Throwable missing = failure(admin.describeConfigs(List.of(topic(name))).all());
        check(missing instanceof UnknownTopicOrPartitionException, "missing topic: " + missing);
    }

    static FeatureMetadata features() throws Exception {
        return get(admin.describeFeatures().featureMetadata());
    }

    static short level() throws Exception {
        FinalizedVersionRange range = features().finalizedFeatures().get("gateway.version");
        check(range != null && range.minVersionLevel() == range.maxVersionLevel(), "finalized " + range);
        return range.maxVersionLevel();
    }

    static KafkaFuture<Void> update(int level, FeatureUpdate.UpgradeType type, boolean validateOnly) {
        return admin.updateFeatures(Map.of("gateway.version", new FeatureUpdate((short) level, type)),
                new UpdateFeaturesOptions().validateOnly(validateOnly)).all();
    }

    static void featureLevels() throws Exception {
        FeatureMetadata m = features();
        SupportedVersionRange supported = m.supportedFeatures().get("gateway.version");
        check(supported != null && supported.minVersion() == 1 && supported.maxVersion() == 2, "supported " + supported);
        check(level() == 1 && m.finalizedFeaturesEpoch().isPresent(), "finalized " + m);
        long epoch = m.finalizedFeaturesEpoch().get();
        String name = "level-two-" + tag;
        create(name, 1, (short) 1, Map.of("segment.bytes", "2000000"));
        for (boolean validateOnly : List.of(true, false)) {
            Throwable refused = failure(update(2, FeatureUpdate.UpgradeType.UPGRADE, validateOnly));
            check(refused instanceof InvalidUpdateVersionException && refused.getMessage().contains(name)
                    && refused.getMessage().contains("segment.bytes"), "upgrade with an offender: " + refused);
        }
        get(admin.incrementalAlterConfigs(Map.of(topic(name),
                List.of(op("segment.bytes", "2097152", AlterConfigOp.OpType.SET)))).all());
        get(update(2, FeatureUpdate.UpgradeType.UPGRADE, true));
        check(level() == 1, "validateOnly upgraded");
        get(update(2, FeatureUpdate.UpgradeType.UPGRADE, false));
        check(level() == 2 && features().finalizedFeaturesEpoch().get() > epoch, "upgraded: " + features());
        Throwable bad = failure(admin.createTopics(List.of(new NewTopic("refused-at-two-" + tag, 1, (short) 1)
                .configs(Map.of("segment.bytes", "2000000")))).all());
        check(bad instanceof InvalidConfigurationException && bad.getMessage().contains("gateway.version 2"), "level 2 rule: " + bad);
        Throwable down = failure(update(1, FeatureUpdate.UpgradeType.UPGRADE, false));
        check(down instanceof InvalidUpdateVersionException, "downgrade as an upgrade: " + down);
        get(update(1, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE, false));
        check(level() == 1, "safe downgrade");
        get(update(2, FeatureUpdate.UpgradeType.UPGRADE, false));
        get(update(1, FeatureUpdate.UpgradeType.UNSAFE_DOWNGRADE, false));
        check(level() == 1, "unsafe downgrade");
    }

    static int partitionCount(String name) throws Exception {
        return get(admin.describeTopics(List.of(name)).allTopicNames()).get(name).partitions().size();
    }

    static KafkaFuture<Void> grow(String name, NewPartitions to, boolean validateOnly) {
        return admin.createPartitions(Map.of(name, to), new CreatePartitionsOptions().validateOnly(validateOnly)).all();
    }

    static void partitions() throws Exception {
        String name = "widened-" + tag;
        create(name, 1, (short) 1, Map.of());
        get(grow(name, NewPartitions.increaseTo(3), true));
        check(partitionCount(name) == 1, "validateOnly grew " + name);
        get(grow(name, NewPartitions.increaseTo(3), false));
        check(partitionCount(name) == 3, name + " partitions " + partitionCount(name));
        Throwable equal = failure(grow(name, NewPartitions.increaseTo(3), false));
        check(equal instanceof InvalidPartitionsException
                && "Topic already has 3 partition(s).".equals(equal.getMessage()), "the same count: " + equal);
        Throwable shortList = failure(grow(name, NewPartitions.increaseTo(5, List.of(List.of(0))), false));
        check(shortList instanceof InvalidReplicaAssignmentException, "one assignment for two: " + shortList);
        get(grow(name, NewPartitions.increaseTo(5, List.of(List.of(0), List.of(0))), false));
        check(partitionCount(name) == 5, name + " partitions " + partitionCount(name));
    }

    public static void main(String[] args) throws Exception {
        tag = UUID.randomUUID().toString().substring(0, 8);
        String step = "";
        try (Admin a = Admin.create(Map.of("bootstrap.servers", args[0]))) {
            admin = a;
            step = "connect"; connect();
            step = "streams"; streams();
            step = "schemas"; schemas();
            step = "apicurio"; apicurio();
            step = "debezium"; debezium();
            step = "mm2"; mm2();
            step = "dlq"; dlq();
            step = "broker"; broker();
            step = "incremental"; incremental();
            step = "legacy"; legacy();
            step = "refusals"; refusals();
            step = "features"; featureLevels();
            step = "partitions"; partitions();
        } catch (Exception e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            System.err.println("FAIL java-configs (" + step + "): " + e + (cause != e ? " (cause: " + cause + ")" : ""));
            System.exit(1);
        }
        System.out.println("PASS java-configs");
        System.exit(0);
    }
}
