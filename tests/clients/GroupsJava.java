// Java kafka-clients group consumer: subscribe, consume, commit, resume; admin group offsets.
//
// On a fresh 3-partition topic with 10 records a partition, written by the default
// (idempotent, acks=all) producer:
//   run 1: a KafkaConsumer in group G consumes all 30 with auto commit off, commitSync(), close.
//   15 more records are produced.
//   run 2: a new consumer in G (auto.offset.reset=earliest, so a lost commit would show
//          as old records) gets exactly the 15 new ones from offset 10 on each partition;
//          auto commit on, so close() commits them.
//   admin: listConsumerGroupOffsets(G) reads 15 on each partition; describeConsumerGroups
//          shows G Empty; deleteConsumerGroups removes it.
//
//   usage: java_check.sh GroupsJava HOST:PORT   (compiles this file against the kafka-clients jar)
// Prints `PASS java-groups` or exits non-zero with the first mismatch.

import java.time.Duration;
import java.util.*;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.ConsumerGroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class GroupsJava {
    static final int PARTITIONS = 3;
    static String bootstrap, topic, group;

    static void check(boolean ok, String what) {
        if (!ok) throw new IllegalStateException(what);
    }

    static void produce(int first, int perPartition) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("linger.ms", "5");
        // enable.idempotence and acks=all are the defaults since 3.0: InitProducerId + sequences.
        try (KafkaProducer<String, String> p =
                new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
            for (int part = 0; part < PARTITIONS; part++)
                for (int i = first; i < first + perPartition; i++)
                    sent.add(p.send(new ProducerRecord<>(topic, part, null, part + "-" + i)));
            for (var f : sent) f.get(20, TimeUnit.SECONDS);
        }
    }

    /** Joins G, consumes until `want` records arrived (then 1 s more for extra ones). */
    static Set<String> consume(int want, boolean autoCommit) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", String.valueOf(autoCommit));
        props.put("session.timeout.ms", "10000");
        props.put("heartbeat.interval.ms", "1000");
        Set<String> got = new TreeSet<>();
        try (KafkaConsumer<String, String> c =
                new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            c.subscribe(List.of(topic));
            long end = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (System.nanoTime() < end) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    String key = r.partition() + ":" + r.offset();
                    check(got.add(key), key + " delivered twice");
                    check(r.value().equals(r.partition() + "-" + r.offset()), key + ": value " + r.value());
                }
                if (got.size() >= want) end = Math.min(end, System.nanoTime() + Duration.ofSeconds(1).toNanos());
            }
            check(got.size() == want, "consumed " + got.size() + " records, expected " + want + ": " + got);
            if (!autoCommit) c.commitSync(Duration.ofSeconds(15));
        } // close(): with auto commit on, commits the positions first, then LeaveGroup
        return got;
    }

    static Set<String> expected(int from, int to) {
        Set<String> s = new TreeSet<>();
        for (int p = 0; p < PARTITIONS; p++) for (int o = from; o < to; o++) s.add(p + ":" + o);
        return s;
    }

    // state() and ConsumerGroupState are in 3.9 and 4.x (there deprecated for groupState(),
    // which 3.9 lacks), so one source runs with both.
    @SuppressWarnings({"deprecation", "removal"})
    static boolean isEmpty(ConsumerGroupDescription d) {
        return d.state() == ConsumerGroupState.EMPTY && d.members().isEmpty();
    }

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        String tag = UUID.randomUUID().toString().substring(0, 8);
        topic = "groups-java-" + tag;
        group = "groups-java-" + tag;
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all().get(20, TimeUnit.SECONDS);
            produce(0, 10);
            Set<String> first = consume(30, false);
            check(first.equals(expected(0, 10)), "run 1 consumed " + first);

            produce(10, 5);
            Set<String> second = consume(15, true);
            check(second.equals(expected(10, 15)), "run 2 did not resume after run 1's commit: got " + second);

            Map<TopicPartition, OffsetAndMetadata> offsets =
                    admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(20, TimeUnit.SECONDS);
            Map<Integer, Long> byPartition = new TreeMap<>();
            offsets.forEach((tp, om) -> { if (tp.topic().equals(topic)) byPartition.put(tp.partition(), om.offset()); });
            check(byPartition.equals(Map.of(0, 15L, 1, 15L, 2, 15L)),
                    "listConsumerGroupOffsets after run 2's close: " + byPartition + ", expected 15 each");

            ConsumerGroupDescription d =
                    admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get(20, TimeUnit.SECONDS);
            check(isEmpty(d), "describeConsumerGroups: " + d);
            admin.deleteConsumerGroups(List.of(group)).all().get(20, TimeUnit.SECONDS);
            check(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(20, TimeUnit.SECONDS)
                    .isEmpty(), "offsets still listed after deleteConsumerGroups");
            admin.deleteTopics(List.of(topic)).all().get(20, TimeUnit.SECONDS);
        } catch (Exception e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            System.err.println("FAIL java-groups (topic " + topic + "): " + e + (cause != e ? " (cause: " + cause + ")" : ""));
            System.exit(1);
        }
        System.out.println("PASS java-groups");
        System.exit(0);
    }
}
