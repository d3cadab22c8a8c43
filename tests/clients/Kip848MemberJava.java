// One member of a KIP-848 consumer group (group.protocol=consumer, kafka-clients 4.x),
// run as a process of its own so a test can stop it cleanly or SIGKILL it.
//
// It subscribes to TOPICS (comma-separated names) or, with "regex:", to a regex
// (SubscriptionPattern), reads, and commits synchronously after every poll that
// brought records. It logs to DIR/NAME.log, flushed before each commit (so every
// committed record is logged): `assigned T P MS`, `revoked T P MS`, `lost T P MS` from
// its rebalance listener, `rec T P OFFSET VALUE` per record, `commitfail ERROR`. When DIR/NAME.stop
// appears it closes (leaving the group) and prints `PASS kip848-member NAME`.
//
//   usage: java_check.sh Kip848MemberJava HOST:PORT TOPICS|regex:RE GROUP DIR NAME [ASSIGNOR]

import java.io.*;
import java.nio.file.*;
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class Kip848MemberJava {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topics = args[1], group = args[2];
        Path dir = Paths.get(args[3]);
        String name = args[4];
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("group.protocol", "consumer");
        props.put("client.id", name);
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        props.put("reconnect.backoff.max.ms", "500");
        props.put("metadata.max.age.ms", "1000");
        if (args.length > 5) props.put("group.remote.assignor", args[5]);
        PrintWriter log = new PrintWriter(new FileWriter(dir.resolve(name + ".log").toFile(), true));
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
                void note(String what, Collection<TopicPartition> parts) {
                    synchronized (log) {
                        for (TopicPartition tp : parts)
                            log.println(what + " " + tp.topic() + " " + tp.partition() + " " + System.currentTimeMillis());
                        log.flush();
                    }
                }
                public void onPartitionsAssigned(Collection<TopicPartition> parts) { note("assigned", parts); }
                // What was read is committed before the partitions go to another member.
                public void onPartitionsRevoked(Collection<TopicPartition> parts) {
                    commit(c, log);
                    note("revoked", parts);
                }
                public void onPartitionsLost(Collection<TopicPartition> parts) { note("lost", parts); }
            };
            if (topics.startsWith("regex:")) {
                c.subscribe(new SubscriptionPattern(topics.substring(6)), listener);
            } else {
                c.subscribe(Arrays.asList(topics.split(",")), listener);
            }
            Path stop = dir.resolve(name + ".stop");
            while (!Files.exists(stop)) {
                ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(200));
                if (records.isEmpty()) continue;
                synchronized (log) {
                    for (ConsumerRecord<String, String> r : records)
                        log.println("rec " + r.topic() + " " + r.partition() + " " + r.offset() + " " + r.value());
                    log.flush();
                }
                commit(c, log);
            }
        }
        System.out.println("PASS kip848-member " + name);
    }

    // A commit that fails (a stale member epoch when it crosses a heartbeat that moved
    // the member to a new epoch, as on Kafka) is logged; the next one covers it.
    static void commit(KafkaConsumer<String, String> c, PrintWriter log) {
        try {
            c.commitSync();
        } catch (Exception e) {
            synchronized (log) {
                log.println("commitfail " + e);
                log.flush();
            }
        }
    }
}
