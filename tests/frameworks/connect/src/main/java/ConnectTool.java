import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * What check.sh needs besides Connect itself: looks at topics, configs and group offsets
 * through the Admin client, produces numbered lines, and runs a real group consumer that
 * commits. Prints plain lines for the shell to compare; exits 1 on any error.
 *
 *   topics BOOTSTRAP TOPIC...              TOPIC partitions=P cleanup.policy=X, or TOPIC missing
 *   configs BOOTSTRAP TOPIC [KEY...]       KEY=VALUE (source), one a line; no KEY: every
 *                                          entry not at its default, sorted
 *   create BOOTSTRAP TOPIC PARTITIONS [K=V...]
 *   alter BOOTSTRAP TOPIC K=V...           IncrementalAlterConfigs SET
 *   produce BOOTSTRAP TOPIC FROM TO PREFIX  values PREFIX-FROM .. PREFIX-(TO-1), keyed by number
 *   values BOOTSTRAP TOPIC                 every value in the topic (all partitions), one a line
 *   group-consume BOOTSTRAP GROUP TOPIC N  subscribe, take N records, commit them; prints topic-p offset
 *   group-offsets BOOTSTRAP GROUP          committed offsets: topic-p offset, sorted
 *   end-offsets BOOTSTRAP TOPIC            latest offsets: topic-p offset, sorted
 *   group-state BOOTSTRAP GROUP            STATE members=N (DescribeGroups)
 */
public final class ConnectTool {
    public static void main(String[] a) throws Exception {
        String bootstrap = a[1];
        switch (a[0]) {
            case "topics" -> topics(bootstrap, List.of(a).subList(2, a.length));
            case "configs" -> configs(bootstrap, a[2], List.of(a).subList(3, a.length));
            case "create" -> create(bootstrap, a[2], Integer.parseInt(a[3]), List.of(a).subList(4, a.length));
            case "alter" -> alter(bootstrap, a[2], List.of(a).subList(3, a.length));
            case "produce" -> produce(bootstrap, a[2], Integer.parseInt(a[3]), Integer.parseInt(a[4]), a[5]);
            case "values" -> values(bootstrap, a[2]);
            case "group-consume" -> groupConsume(bootstrap, a[2], a[3], Integer.parseInt(a[4]));
            case "group-offsets" -> groupOffsets(bootstrap, a[2]);
            case "end-offsets" -> endOffsets(bootstrap, a[2]);
            case "group-state" -> groupState(bootstrap, a[2]);
            default -> throw new IllegalArgumentException("unknown command " + a[0]);
        }
    }

    static Admin admin(String bootstrap) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20000);
        return Admin.create(p);
    }

    static void topics(String bootstrap, List<String> names) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            var existing = admin.listTopics().names().get(20, TimeUnit.SECONDS);
            for (String t : names) {
                if (!existing.contains(t)) {
                    System.out.println(t + " missing");
                    continue;
                }
                TopicDescription d = admin.describeTopics(List.of(t)).allTopicNames().get().get(t);
                ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, t);
                Config c = admin.describeConfigs(List.of(r)).all().get().get(r);
                ConfigEntry e = c.get("cleanup.policy");
                System.out.println(t + " partitions=" + d.partitions().size()
                    + " cleanup.policy=" + (e == null ? "absent" : e.value()));
            }
        }
    }

    static void configs(String bootstrap, String topic, List<String> keys) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Config c = admin.describeConfigs(List.of(r)).all().get(20, TimeUnit.SECONDS).get(r);
            if (keys.isEmpty()) {
                c.entries().stream().filter(e -> e.source() != ConfigEntry.ConfigSource.DEFAULT_CONFIG)
                    .map(e -> e.name() + "=" + e.value() + " (" + e.source() + ")").sorted()
                    .forEach(System.out::println);
            }
            for (String k : keys) {
                ConfigEntry e = c.get(k);
                System.out.println(k + "=" + (e == null ? "absent" : e.value() + " (" + e.source() + ")"));
            }
        }
    }

    static void create(String bootstrap, String topic, int partitions, List<String> kvs) throws Exception {
        Map<String, String> configs = new HashMap<>();
        for (String kv : kvs) {
            int i = kv.indexOf('=');
            configs.put(kv.substring(0, i), kv.substring(i + 1));
        }
        try (Admin admin = admin(bootstrap)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1).configs(configs)))
                .all().get(20, TimeUnit.SECONDS);
        }
    }

    static void alter(String bootstrap, String topic, List<String> kvs) throws Exception {
        List<AlterConfigOp> ops = new ArrayList<>();
        for (String kv : kvs) {
            int i = kv.indexOf('=');
            ops.add(new AlterConfigOp(new ConfigEntry(kv.substring(0, i), kv.substring(i + 1)), AlterConfigOp.OpType.SET));
        }
        try (Admin admin = admin(bootstrap)) {
            ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            admin.incrementalAlterConfigs(Map.of(r, ops)).all().get(20, TimeUnit.SECONDS);
        }
    }

    static void produce(String bootstrap, String topic, int from, int to, String prefix) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = from; i < to; i++) {
                producer.send(new ProducerRecord<>(topic, Integer.toString(i), prefix + "-" + i));
            }
            producer.flush();
        }
    }

    static Properties consumerProps(String bootstrap, String group) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        return p;
    }

    static void values(String bootstrap, String topic) {
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps(bootstrap, null))) {
            List<TopicPartition> tps = new ArrayList<>();
            c.partitionsFor(topic, Duration.ofSeconds(20)).forEach(i -> tps.add(new TopicPartition(topic, i.partition())));
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            long deadline = System.currentTimeMillis() + 20000;
            while (tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("values: not at the end offsets " + end + " after 20 s");
                }
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    System.out.println(r.value());
                }
            }
        }
    }

    /** A group member as an application runs it: subscribe, poll, commit what it took. */
    static void groupConsume(String bootstrap, String group, String topic, int n) {
        Properties p = consumerProps(bootstrap, group);
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 1);
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            c.subscribe(List.of(topic));
            Map<TopicPartition, OffsetAndMetadata> taken = new HashMap<>();
            long deadline = System.currentTimeMillis() + 30000;
            int count = 0;
            while (count < n) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("group-consume: " + count + " of " + n + " records after 30 s");
                }
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    taken.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    count++;
                }
            }
            c.commitSync(taken);
            print(taken.entrySet().stream().collect(
                TreeMap::new, (m, e) -> m.put(e.getKey().toString(), e.getValue().offset()), Map::putAll));
        }
    }

    static void groupOffsets(String bootstrap, String group) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            Map<String, Long> out = new TreeMap<>();
            admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(20, TimeUnit.SECONDS)
                .forEach((tp, om) -> out.put(tp.toString(), om == null ? -1 : om.offset()));
            print(out);
        }
    }

    static void groupState(String bootstrap, String group) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all()
                .get(20, TimeUnit.SECONDS).get(group);
            System.out.println(d.groupState() + " members=" + d.members().size());
        }
    }

    static void endOffsets(String bootstrap, String topic) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            Map<TopicPartition, OffsetSpec> ask = new HashMap<>();
            d.partitions().forEach(i -> ask.put(new TopicPartition(topic, i.partition()), OffsetSpec.latest()));
            Map<String, Long> out = new TreeMap<>();
            admin.listOffsets(ask).all().get(20, TimeUnit.SECONDS)
                .forEach((tp, info) -> out.put(tp.toString(), info.offset()));
            print(out);
        }
    }

    static void print(Map<String, Long> m) {
        m.forEach((k, v) -> System.out.println(k + " " + v));
    }
}
