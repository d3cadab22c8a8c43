// Java kafka-clients transactional zombies: a producer whose transactional.id a second
// producer took over (initTransactions) is told it is fenced, as Kafka tells it, at
// each thing it can do next. Kafka Streams, Flink's exactly-once sink and Spring's
// transaction managers close a zombie on ProducerFencedException; an abortable error
// would have it abort and carry on.
//
// Three zombies, each with a transactional id of its own, each fenced by a successor
// while its transaction (records sent and acknowledged) is open:
//   commit:  commitTransaction throws ProducerFencedException (EndTxn: PRODUCER_FENCED).
//   send:    a record sent after the fencing fails with InvalidProducerEpochException
//            (Produce: INVALID_PRODUCER_EPOCH, abortable, KIP-588), commitTransaction
//            then throws it too, and the abort it calls for throws
//            ProducerFencedException.
//   offsets: sendOffsetsToTransaction throws ProducerFencedException (AddOffsetsToTxn
//            PRODUCER_FENCED under transactions v1, TxnOffsetCommit
//            INVALID_PRODUCER_EPOCH under v2, which the client takes as fenced).
// Then each successor commits a transaction of its own: a read_committed consumer
// reads exactly the successors' records, and the group holds only the last
// successor's offsets, none of its zombie's.
// kafka-clients 4.x speaks transactions v2 when the cluster finalizes
// transaction.version 2 (KIP-890), 3.9 speaks v1; the check says which it used.
//
//   usage: java_check.sh FencingJava HOST:PORT
// Prints `PASS java-fencing` or exits non-zero with the first mismatch.

import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class FencingJava {
    static String bootstrap, topic, group, suffix;

    static void check(boolean ok, String what) {
        if (!ok) throw new IllegalStateException(what);
    }

    static KafkaProducer<String, String> producer(String txnId) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("transactional.id", txnId);
        props.put("transaction.timeout.ms", "60000");
        props.put("linger.ms", "5");
        props.put("delivery.timeout.ms", "20000");
        props.put("request.timeout.ms", "10000");
        return new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
    }

    static void send(KafkaProducer<String, String> p, String value) throws Exception {
        p.send(new ProducerRecord<>(topic, 0, null, value)).get(20, TimeUnit.SECONDS);
    }

    /** The exception `action` throws, unwrapping an ExecutionException; fails when none. */
    static Throwable thrown(String what, Callable action) {
        try {
            action.call();
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (Exception e) {
            return e;
        }
        throw new IllegalStateException(what + " succeeded: a fenced producer was not told");
    }

    interface Callable {
        void call() throws Exception;
    }

    static void expect(Class<?> want, Throwable got, String what) {
        check(want.isInstance(got), what + " threw " + got + ", expected " + want.getSimpleName());
    }

    /** A producer of `txnId` with a transaction open and one record in it, and the
     *  successor that fenced it (initTransactions done). */
    static KafkaProducer<String, String>[] fenced(String txnId, String value) throws Exception {
        KafkaProducer<String, String> zombie = producer(txnId);
        zombie.initTransactions();
        zombie.beginTransaction();
        send(zombie, value);
        KafkaProducer<String, String> successor = producer(txnId);
        successor.initTransactions();
        @SuppressWarnings("unchecked")
        KafkaProducer<String, String>[] both = new KafkaProducer[] {zombie, successor};
        return both;
    }

    static Map<TopicPartition, OffsetAndMetadata> offsets(long offset) {
        return Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(offset));
    }

    /** The successor's own transaction: one record, and with `offset` the group's offsets. */
    static void carryOn(KafkaProducer<String, String> successor, String value, Long offset)
            throws Exception {
        successor.beginTransaction();
        send(successor, value);
        if (offset != null)
            successor.sendOffsetsToTransaction(offsets(offset), new ConsumerGroupMetadata(group));
        successor.commitTransaction();
        successor.close(Duration.ofSeconds(5));
    }

    /** The kafka-clients major version (AppInfoParser moved to an internals package in 4.x). */
    static int clientMajor() throws Exception {
        Class<?> info;
        try {
            info = Class.forName("org.apache.kafka.common.utils.internals.AppInfoParser");
        } catch (ClassNotFoundException e) {
            info = Class.forName("org.apache.kafka.common.utils.AppInfoParser");
        }
        String version = (String) info.getMethod("getVersion").invoke(null);
        return Integer.parseInt(version.split("\\.")[0]);
    }

    static List<String> readCommitted(int want) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("isolation.level", "read_committed");
        props.put("enable.auto.commit", "false");
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> c =
                 new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long until = System.currentTimeMillis() + 20_000, quiet = Long.MAX_VALUE;
            while (System.currentTimeMillis() < Math.min(until, quiet)) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) got.add(r.value());
                if (got.size() >= want && quiet == Long.MAX_VALUE) quiet = System.currentTimeMillis() + 1_500;
            }
        }
        return got;
    }

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        suffix = UUID.randomUUID().toString().substring(0, 8);
        topic = "java-fencing-" + suffix;
        group = "java-fencing-group-" + suffix;
        Properties adminProps = new Properties();
        adminProps.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(adminProps)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
            var level = admin.describeFeatures().featureMetadata().get().finalizedFeatures()
                .get("transaction.version");
            boolean v2 = level != null && level.maxVersionLevel() >= 2 && clientMajor() >= 4;

            var commit = fenced("java-fencing-commit-" + suffix, "zombie-commit");
            expect(ProducerFencedException.class,
                   thrown("the zombie's commitTransaction", commit[0]::commitTransaction),
                   "the zombie's commitTransaction");
            commit[0].close(Duration.ofSeconds(5));
            carryOn(commit[1], "successor-commit", null);

            var sent = fenced("java-fencing-send-" + suffix, "zombie-send");
            expect(InvalidProducerEpochException.class,
                   thrown("the zombie's send", () -> send(sent[0], "zombie-late")),
                   "the zombie's send");
            expect(InvalidProducerEpochException.class,
                   thrown("the zombie's commitTransaction", sent[0]::commitTransaction),
                   "the zombie's commitTransaction after its send failed");
            expect(ProducerFencedException.class,
                   thrown("the zombie's abortTransaction", sent[0]::abortTransaction),
                   "the zombie's abortTransaction");
            sent[0].close(Duration.ofSeconds(5));
            carryOn(sent[1], "successor-send", null);

            var offsets = fenced("java-fencing-offsets-" + suffix, "zombie-offsets");
            expect(ProducerFencedException.class,
                   thrown("the zombie's sendOffsetsToTransaction",
                          () -> offsets[0].sendOffsetsToTransaction(offsets(99), new ConsumerGroupMetadata(group))),
                   "the zombie's sendOffsetsToTransaction");
            offsets[0].close(Duration.ofSeconds(5));
            carryOn(offsets[1], "successor-offsets", 3L);

            List<String> got = readCommitted(3);
            List<String> want = List.of("successor-commit", "successor-send", "successor-offsets");
            check(got.equals(want), "read_committed " + got + ", expected " + want);
            var held = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            check(held.equals(offsets(3)), "the group's offsets " + held + ", expected " + offsets(3));
            admin.deleteTopics(List.of(topic)).all().get();
            System.out.println("java-fencing: transactions " + (v2 ? "v2" : "v1"));
        }
        System.out.println("PASS java-fencing");
    }
}
