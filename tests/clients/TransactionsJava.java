// Java kafka-clients transactions: initTransactions, commit, abort,
// sendOffsetsToTransaction, read_committed against read_uncommitted, an open
// transaction holding the last stable offset, and fencing by a second producer.
//
// On a fresh 3-partition topic T and group G:
//   producer P (transactional.id X): commits 30 records (c-*), aborts 20 (a-*), then
//     commits 10 more (k-*) together with G's offsets through sendOffsetsToTransaction.
//   read_committed consumer: exactly the 40 committed records, in order on each
//     partition, none aborted; read_uncommitted sees all 60 (as Kafka serves them).
//   G's committed offsets are those the transaction sent, and only after its commit.
//   Where the gateway finalizes transaction.version 2 and the client speaks it
//     (kafka-clients 4.x, KIP-890), each of those three ends bumped P's epoch
//     (DescribeTransactions); otherwise (3.9, or level 0) the epoch stayed.
//   P opens a transaction and flushes 5 records without committing: a read_committed
//     consumer's end offsets stay below the read_uncommitted ones and it sees none of
//     them; a second producer with X then fences P (P's commit fails with
//     ProducerFencedException) and the open records stay invisible (aborted).
//
//   usage: java_check.sh TransactionsJava HOST:PORT
// Prints `PASS java-transactions` or exits non-zero with the first mismatch.

import java.time.Duration;
import java.util.*;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class TransactionsJava {
    static final int PARTITIONS = 3;
    static String bootstrap, topic, group, txnId;

    static void check(boolean ok, String what) {
        if (!ok) throw new IllegalStateException(what);
    }

    static KafkaProducer<String, String> producer() {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("transactional.id", txnId);
        props.put("transaction.timeout.ms", "60000");
        props.put("linger.ms", "5");
        return new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
    }

    static void send(KafkaProducer<String, String> p, String prefix, int n) throws Exception {
        List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
        for (int i = 0; i < n; i++)
            sent.add(p.send(new ProducerRecord<>(topic, i % PARTITIONS, null, prefix + i)));
        p.flush();
        for (var f : sent) f.get(20, TimeUnit.SECONDS);
    }

    static KafkaConsumer<String, String> consumer(String isolation) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("isolation.level", isolation);
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        return new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer());
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

    static short epoch(Admin admin) throws Exception {
        return (short) admin.describeTransactions(List.of(txnId)).description(txnId).get().producerEpoch();
    }

    static List<TopicPartition> partitions() {
        List<TopicPartition> all = new ArrayList<>();
        for (int p = 0; p < PARTITIONS; p++) all.add(new TopicPartition(topic, p));
        return all;
    }

    /** Every record value from the start, per partition in offset order, polling until
     *  `want` arrived and then 1.5 s more for any extra. */
    static Map<Integer, List<String>> readAll(String isolation, int want) {
        Map<Integer, List<String>> got = new TreeMap<>();
        try (KafkaConsumer<String, String> c = consumer(isolation)) {
            c.assign(partitions());
            c.seekToBeginning(partitions());
            int n = 0;
            long until = System.currentTimeMillis() + 20_000, quiet = Long.MAX_VALUE;
            while (System.currentTimeMillis() < Math.min(until, quiet)) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    got.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(r.value());
                    n++;
                }
                if (n >= want && quiet == Long.MAX_VALUE) quiet = System.currentTimeMillis() + 1_500;
            }
        }
        return got;
    }

    static List<String> values(String prefix, int n, int partition) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) if (i % PARTITIONS == partition) out.add(prefix + i);
        return out;
    }

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        String suffix = UUID.randomUUID().toString().substring(0, 8);
        topic = "java-txn-" + suffix;
        group = "java-txn-group-" + suffix;
        txnId = "java-txn-id-" + suffix;
        Properties adminProps = new Properties();
        adminProps.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(adminProps)) {
            admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all().get();

            KafkaProducer<String, String> p = producer();
            p.initTransactions();
            short startEpoch = epoch(admin);
            p.beginTransaction();
            send(p, "c-", 30);
            p.commitTransaction();
            p.beginTransaction();
            send(p, "a-", 20);
            p.abortTransaction();
            p.beginTransaction();
            send(p, "k-", 10);
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            for (TopicPartition tp : partitions()) offsets.put(tp, new OffsetAndMetadata(7 + tp.partition(), "txn"));
            p.sendOffsetsToTransaction(offsets, new ConsumerGroupMetadata(group));
            var before = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            check(before.isEmpty(), "offsets visible before the commit: " + before);
            p.commitTransaction();
            var after = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            check(after.equals(offsets), "committed offsets " + after + ", expected " + offsets);
            var level = admin.describeFeatures().featureMetadata().get().finalizedFeatures()
                .get("transaction.version");
            boolean v2 = level != null && level.maxVersionLevel() >= 2
                && clientMajor() >= 4;
            int bumps = epoch(admin) - startEpoch;
            check(bumps == (v2 ? 3 : 0), "epoch moved by " + bumps + " over three transactions, "
                  + (v2 ? "transactions v2 bump it at every end" : "transactions v1 keep it"));
            System.out.println("java-transactions: transactions " + (v2 ? "v2" : "v1"));

            Map<Integer, List<String>> committed = readAll("read_committed", 40);
            for (int part = 0; part < PARTITIONS; part++) {
                List<String> want = values("c-", 30, part);
                want.addAll(values("k-", 10, part));
                check(want.equals(committed.get(part)),
                      "read_committed partition " + part + ": " + committed.get(part) + ", expected " + want);
            }
            Map<Integer, List<String>> everything = readAll("read_uncommitted", 60);
            int all = everything.values().stream().mapToInt(List::size).sum();
            check(all == 60, "read_uncommitted saw " + all + " records, expected 60: " + everything);

            // An open transaction holds the last stable offset where it began.
            p.beginTransaction();
            send(p, "o-", 5);
            Map<TopicPartition, Long> stable, high;
            try (KafkaConsumer<String, String> c = consumer("read_committed")) {
                stable = c.endOffsets(partitions());
            }
            try (KafkaConsumer<String, String> c = consumer("read_uncommitted")) {
                high = c.endOffsets(partitions());
            }
            for (TopicPartition tp : partitions())
                check(stable.get(tp) < high.get(tp),
                      "open transaction: stable " + stable + " not below high " + high);

            // A second incarnation fences the first and aborts what it left open.
            KafkaProducer<String, String> q = producer();
            q.initTransactions();
            boolean fenced = false;
            try {
                p.commitTransaction();
            } catch (ProducerFencedException e) {
                fenced = true;
            } catch (KafkaException e) {
                fenced = e.getCause() instanceof ProducerFencedException
                    || e.getClass().getSimpleName().equals("InvalidProducerEpochException");
                if (!fenced) throw e;
            }
            check(fenced, "the first producer was not fenced");
            p.close(Duration.ofSeconds(5));
            q.beginTransaction();
            send(q, "z-", 3);
            q.commitTransaction();
            q.close();

            Map<Integer, List<String>> last = readAll("read_committed", 43);
            for (int part = 0; part < PARTITIONS; part++) {
                List<String> want = values("c-", 30, part);
                want.addAll(values("k-", 10, part));
                want.addAll(values("z-", 3, part));
                check(want.equals(last.get(part)),
                      "after fencing, partition " + part + ": " + last.get(part) + ", expected " + want);
            }
            admin.deleteTopics(List.of(topic)).all().get();
        }
        System.out.println("PASS java-transactions");
    }
}
