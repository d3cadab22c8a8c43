// Java kafka-clients consumer of many partitions, which fetches through an incremental
// fetch session (KIP-227) by default:
//   A 50-partition topic gets 10 records a partition from the default (idempotent)
//   producer; a consumer assigned every partition from the start reads them all, then,
//   while it keeps polling (its session open, its fetches incremental), 10 more a
//   partition arrive and are read too. Every record must arrive exactly once, in order
//   within its partition, with its value. With fetch.max.bytes=1 each answer holds one
//   batch, so the consumer fetches about a hundred times. Whether the gateway served incremental
//   fetches is read from its /metrics by the test that runs this check
//   (tests/fetch_sessions/java.rs).
//
//   usage: java_check.sh SessionsJava HOST:PORT
// Prints `PASS java-sessions` or exits non-zero with the first mismatch.

import java.time.Duration;
import java.util.*;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class SessionsJava {
    static final int PARTITIONS = 50, PER_ROUND = 10;
    static String bootstrap, topic = "sessions-java";

    static void check(boolean ok, String what) {
        if (!ok) throw new IllegalStateException(what);
    }

    static void produce(int first) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("linger.ms", "5");
        try (KafkaProducer<String, String> p =
                new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
            for (int part = 0; part < PARTITIONS; part++)
                for (int i = first; i < first + PER_ROUND; i++)
                    sent.add(p.send(new ProducerRecord<>(topic, part, null, part + "-" + i)));
            for (var f : sent) f.get(20, TimeUnit.SECONDS);
        }
    }

    /** Polls until `want` records in all arrived; each checked against the last offset of its partition. */
    static void consumeUntil(KafkaConsumer<String, String> c, Map<Integer, Long> next, int want) {
        long end = System.nanoTime() + Duration.ofSeconds(40).toNanos();
        int got = next.values().stream().mapToInt(Long::intValue).sum();
        while (got < want && System.nanoTime() < end) {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                long expected = next.getOrDefault(r.partition(), 0L);
                String key = r.partition() + ":" + r.offset();
                check(r.offset() == expected, key + " arrived, expected offset " + expected + " (twice or a gap)");
                check(r.value().equals(r.partition() + "-" + r.offset()), key + ": value " + r.value());
                next.put(r.partition(), expected + 1);
                got++;
            }
        }
        check(got == want, "consumed " + got + " records, expected " + want);
    }

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        Properties admin = new Properties();
        admin.put("bootstrap.servers", bootstrap);
        try (Admin a = Admin.create(admin)) {
            a.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all().get(20, TimeUnit.SECONDS);
        }
        produce(0);
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("enable.auto.commit", "false");
        // One batch an answer (KIP-74: the first always fits): about a hundred fetches,
        // each session partition getting its turn through the session's rotation.
        props.put("fetch.max.bytes", "1");
        Map<Integer, Long> next = new HashMap<>();
        try (KafkaConsumer<String, String> c =
                new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            List<TopicPartition> all = new ArrayList<>();
            for (int p = 0; p < PARTITIONS; p++) all.add(new TopicPartition(topic, p));
            c.assign(all);
            c.seekToBeginning(all);
            consumeUntil(c, next, PARTITIONS * PER_ROUND);
            produce(PER_ROUND);
            consumeUntil(c, next, 2 * PARTITIONS * PER_ROUND);
            // Nothing more: a few more polls bring no record (a duplicate would show here).
            for (int i = 0; i < 5; i++)
                check(c.poll(Duration.ofMillis(200)).isEmpty(), "records after the last one");
        }
        for (int p = 0; p < PARTITIONS; p++)
            check(next.getOrDefault(p, 0L) == 2 * PER_ROUND, "partition " + p + " ended at " + next.get(p));
        System.out.println("PASS java-sessions");
    }
}
