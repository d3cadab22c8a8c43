package gateway.streams;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Future;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
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
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The driver and checker of check.sh, one mode per call:
 *   create BOOT TOPIC PARTITIONS [TOPIC PARTITIONS ...]   creates the topics
 *   produce BOOT TOPIC FROM TO                           sends lines [FROM, TO) of Words
 *   quiesce BOOT GROUP TIMEOUT_S TOPIC...                 waits until GROUP's committed
 *        offsets equal the end offsets of every partition of the TOPICs
 *   check BOOT OUTPUT LINES [at-least]                    last count per word in OUTPUT
 *        must equal (or, with at-least, not be below) the true count over lines
 *        [0, LINES), every word
 *   config BOOT TOPIC KEY...                              prints its partition count and
 *        the values of the configurations KEY
 * Prints "OK ..." and exits 0, or prints why not and exits 1.
 */
public final class Driver {
    public static void main(String[] a) throws Exception {
        String boot = a[1];
        switch (a[0]) {
            case "create" -> create(boot, a);
            case "produce" -> produce(boot, a[2], Long.parseLong(a[3]), Long.parseLong(a[4]));
            case "quiesce" -> quiesce(boot, a[2], Integer.parseInt(a[3]), List.of(a).subList(4, a.length));
            case "check" -> check(boot, a[2], Long.parseLong(a[3]), a.length > 4 && a[4].equals("at-least"));
            case "config" -> config(boot, a[2], List.of(a).subList(3, a.length));
            default -> throw new IllegalArgumentException("unknown mode " + a[0]);
        }
    }

    static Admin admin(String boot) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        return Admin.create(p);
    }

    static void create(String boot, String[] a) throws Exception {
        List<NewTopic> topics = new ArrayList<>();
        for (int i = 2; i + 1 < a.length; i += 2) {
            topics.add(new NewTopic(a[i], Integer.parseInt(a[i + 1]), (short) 1));
        }
        try (Admin admin = admin(boot)) {
            admin.createTopics(topics).all().get();
        }
        System.out.println("OK created " + topics.stream().map(NewTopic::name).toList());
    }

    static void produce(String boot, String topic, long from, long to) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        try (KafkaProducer<String, String> producer =
                 new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (long i = from; i < to; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, "line-" + i, Words.line(i))));
            }
            for (Future<RecordMetadata> f : sent) f.get(); // any failed send fails the step
        }
        System.out.println("OK produced lines " + from + ".." + to + " to " + topic);
    }

    static Map<TopicPartition, Long> ends(Admin admin, List<String> topics) throws Exception {
        Map<String, TopicDescription> d = admin.describeTopics(topics).allTopicNames().get();
        Map<TopicPartition, OffsetSpec> req = new HashMap<>();
        d.values().forEach(t -> t.partitions().forEach(
            pi -> req.put(new TopicPartition(t.name(), pi.partition()), OffsetSpec.latest())));
        return admin.listOffsets(req).all().get().entrySet().stream()
            .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().offset()));
    }

    /**
     * Waits until the group has committed the end of every partition of the topics,
     * checked twice 1 s apart (the ends unchanged), so nothing is read and not committed.
     */
    static void quiesce(String boot, String group, int timeoutS, List<String> topics) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutS * 1000L;
        String why = "";
        Map<TopicPartition, Long> previous = null;
        try (Admin admin = admin(boot)) {
            while (System.currentTimeMillis() < deadline) {
                Map<TopicPartition, Long> end = ends(admin, topics);
                Map<TopicPartition, OffsetAndMetadata> committed =
                    admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
                List<String> behind = new ArrayList<>();
                List<Map.Entry<TopicPartition, Long>> sorted = new ArrayList<>(end.entrySet());
                sorted.sort(Map.Entry.comparingByKey(java.util.Comparator.comparing(TopicPartition::toString)));
                for (Map.Entry<TopicPartition, Long> e : sorted) {
                    OffsetAndMetadata c = committed.get(e.getKey());
                    long at = c == null ? -1 : c.offset();
                    // An empty partition needs no commit.
                    if (e.getValue() > 0 && at != e.getValue()) {
                        behind.add(e.getKey() + " committed " + at + " end " + e.getValue());
                    }
                }
                if (behind.isEmpty() && end.equals(previous)) {
                    System.out.println("OK group " + group + " committed the ends of " + topics
                        + " (" + end.values().stream().mapToLong(Long::longValue).sum() + " records)");
                    return;
                }
                previous = behind.isEmpty() ? end : null;
                why = behind.isEmpty() ? "ends still moving" : String.join("; ", behind);
                Thread.sleep(1000);
            }
        }
        System.out.println("group " + group + " did not commit the ends of " + topics + " within "
            + timeoutS + " s: " + why);
        System.exit(1);
    }

    /** Reads OUTPUT's committed records from its beginning to its end offsets; the last
     *  value per key wins. */
    static void check(String boot, String output, long lines, boolean atLeast) throws Exception {
        Map<String, Long> last = new TreeMap<>();
        long records = 0;
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        // Only committed output counts: under exactly_once_v2 an aborted attempt's
        // records stay in the log (without transactions the two levels read the same).
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        try (Admin admin = admin(boot);
             KafkaConsumer<String, Long> c = new KafkaConsumer<>(p, new StringDeserializer(), new LongDeserializer())) {
            Map<TopicPartition, Long> end = ends(admin, List.of(output));
            c.assign(end.keySet());
            c.seekToBeginning(end.keySet());
            long deadline = System.currentTimeMillis() + 60_000;
            while (end.entrySet().stream().anyMatch(e -> c.position(e.getKey()) < e.getValue())) {
                if (System.currentTimeMillis() > deadline) {
                    System.out.println("output " + output + " not read to its end " + end + " within 60 s");
                    System.exit(1);
                }
                for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(500))) {
                    last.put(r.key(), r.value());
                    records++;
                }
            }
        }
        Map<String, Long> want = Words.expected(lines);
        List<String> wrong = new ArrayList<>();
        TreeSet<String> words = new TreeSet<>(want.keySet());
        words.addAll(last.keySet());
        for (String w : words) {
            Long got = last.get(w), exp = want.get(w);
            boolean ok = atLeast ? got != null && exp != null && got >= exp : java.util.Objects.equals(got, exp);
            if (!ok) wrong.add(w + "=" + got + " (true " + exp + ")");
        }
        long total = want.values().stream().mapToLong(Long::longValue).sum();
        long counted = last.values().stream().mapToLong(Long::longValue).sum();
        if (!wrong.isEmpty()) {
            System.out.println(wrong.size() + " of " + want.size() + " words counted wrong over "
                + lines + " lines (" + records + " output records): " + String.join(", ", wrong));
            System.exit(1);
        }
        System.out.println("OK " + want.size() + " words, " + total + " in all over " + lines + " lines, "
            + (atLeast ? "none below, " + (counted - total) + " counted twice" : "exact")
            + " (" + records + " output records read)");
    }

    /** One line: the topic's partition count, then KEY=value for each KEY asked. */
    static void config(String boot, String topic, List<String> keys) throws Exception {
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        try (Admin admin = admin(boot)) {
            int parts = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
            Config c = admin.describeConfigs(List.of(r)).all().get().get(r);
            StringBuilder sb = new StringBuilder("partitions=" + parts);
            for (String k : keys) {
                var e = c.get(k);
                sb.append(' ').append(k).append('=').append(e == null ? "(none)" : e.value());
            }
            System.out.println(sb);
        }
    }
}
