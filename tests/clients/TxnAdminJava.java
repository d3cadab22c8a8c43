// Java AdminClient transaction admin APIs (KIP-664): listTransactions (all, and filtered
// by state), describeTransactions, describeProducers, and abortTransaction of a hanging
// transaction, as kafka-transactions.sh finds and aborts one.
//
// On a fresh 1-partition topic T:
//   a plain producer writes 2 records (offsets 0 and 1);
//   producer H (transactional.id X-hang) begins a transaction, sends 3 records (from
//     offset 2) and is closed at once (close(Duration.ZERO) sends no abort): hanging;
//   producer C (X-done) commits 2 records after them.
//   listTransactions: X-hang Ongoing and X-done CompleteCommit, with the producer ids
//     describeTransactions gives; filtered on ONGOING: X-hang and not X-done.
//   describeTransactions(X-hang): Ongoing, timeout 60000, a start time, T-0 in it; an
//     unknown id fails with TransactionalIdNotFoundException.
//   describeProducers(T-0): H with last sequence 2, a last timestamp and its open
//     transaction from offset 2; C with none open.
//   read_committed stops at offset 2 while H's transaction hangs; abortTransaction with
//     H's producer id and epoch from describeProducers; then a read_committed consumer
//     reads past it: the 2 plain records and C's 2, none of H's, and describeProducers
//     shows H with no transaction open.
//
//   usage: java_check.sh TxnAdminJava HOST:PORT
// Prints `PASS java-txn-admin` or exits non-zero with the first mismatch.

import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TransactionalIdNotFoundException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnAdminJava {
    static String bootstrap, topic;

    static void check(boolean ok, String what) {
        if (!ok) throw new IllegalStateException(what);
    }

    static KafkaProducer<String, String> producer(String txnId) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        if (txnId != null) {
            props.put("transactional.id", txnId);
            props.put("transaction.timeout.ms", "60000");
        }
        return new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
    }

    static void send(KafkaProducer<String, String> p, String prefix, int n) throws Exception {
        List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
        for (int i = 0; i < n; i++) sent.add(p.send(new ProducerRecord<>(topic, 0, null, prefix + i)));
        p.flush();
        for (var f : sent) f.get(20, TimeUnit.SECONDS);
    }

    /** Every value read_committed from the start, polling until `want` came, then 1.5 s more. */
    static List<String> readCommitted(int want) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("isolation.level", "read_committed");
        props.put("enable.auto.commit", "false");
        List<String> got = new ArrayList<>();
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
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

    static Map<String, TransactionListing> byId(Collection<TransactionListing> listed) {
        Map<String, TransactionListing> out = new HashMap<>();
        for (TransactionListing l : listed) out.put(l.transactionalId(), l);
        return out;
    }

    static org.apache.kafka.clients.admin.ProducerState producerOf(Admin admin, TopicPartition tp, long pid) throws Exception {
        var states = admin.describeProducers(List.of(tp)).partitionResult(tp).get().activeProducers();
        for (var s : states) if (s.producerId() == pid) return s;
        throw new IllegalStateException("producer " + pid + " not among " + states);
    }

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        String suffix = UUID.randomUUID().toString().substring(0, 8);
        topic = "java-txn-admin-" + suffix;
        String hang = "java-txn-hang-" + suffix, done = "java-txn-done-" + suffix;
        TopicPartition tp = new TopicPartition(topic, 0);
        Properties adminProps = new Properties();
        adminProps.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(adminProps)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
            try (KafkaProducer<String, String> plain = producer(null)) {
                send(plain, "plain-", 2);
            }
            KafkaProducer<String, String> h = producer(hang);
            h.initTransactions();
            h.beginTransaction();
            send(h, "hang-", 3);
            h.close(Duration.ZERO);
            try (KafkaProducer<String, String> c = producer(done)) {
                c.initTransactions();
                c.beginTransaction();
                send(c, "done-", 2);
                c.commitTransaction();
            }

            TransactionDescription d = admin.describeTransactions(List.of(hang)).description(hang).get();
            check(d.state() == TransactionState.ONGOING, "describeTransactions state " + d.state());
            check(d.transactionTimeoutMs() == 60_000, "timeout " + d.transactionTimeoutMs());
            check(d.transactionStartTimeMs().isPresent()
                  && d.transactionStartTimeMs().getAsLong() <= System.currentTimeMillis(),
                  "start time " + d.transactionStartTimeMs());
            check(d.topicPartitions().equals(Set.of(tp)), "partitions " + d.topicPartitions());
            long hangPid = d.producerId();
            try {
                admin.describeTransactions(List.of("never-" + suffix)).description("never-" + suffix).get();
                check(false, "an unknown transactional id was described");
            } catch (ExecutionException e) {
                check(e.getCause() instanceof TransactionalIdNotFoundException, "unknown id: " + e.getCause());
            }

            Map<String, TransactionListing> all = byId(admin.listTransactions().all().get());
            check(all.containsKey(hang) && all.get(hang).state() == TransactionState.ONGOING
                  && all.get(hang).producerId() == hangPid, "listTransactions " + all.get(hang));
            check(all.containsKey(done) && all.get(done).state() == TransactionState.COMPLETE_COMMIT,
                  "listTransactions " + all.get(done));
            var ongoing = new ListTransactionsOptions().filterStates(List.of(TransactionState.ONGOING));
            Map<String, TransactionListing> open = byId(admin.listTransactions(ongoing).all().get());
            check(open.containsKey(hang) && !open.containsKey(done), "filtered on ONGOING: " + open.keySet());

            var hanging = producerOf(admin, tp, hangPid);
            check(hanging.currentTransactionStartOffset().equals(OptionalLong.of(2)),
                  "hanging transaction start " + hanging);
            check(hanging.lastSequence() == 2 && hanging.lastTimestamp() > 0, "hanging producer " + hanging);
            long donePid = admin.describeTransactions(List.of(done)).description(done).get().producerId();
            var committed = producerOf(admin, tp, donePid);
            check(committed.currentTransactionStartOffset().isEmpty(), "committed producer " + committed);

            List<String> before = readCommitted(2);
            check(before.equals(List.of("plain-0", "plain-1")), "read_committed while hanging: " + before);
            admin.abortTransaction(new AbortTransactionSpec(tp, hangPid, (short) hanging.producerEpoch(),
                                                            hanging.coordinatorEpoch().orElse(0))).all().get();
            List<String> after = readCommitted(4);
            check(after.equals(List.of("plain-0", "plain-1", "done-0", "done-1")), "read_committed after the abort: " + after);
            check(producerOf(admin, tp, hangPid).currentTransactionStartOffset().isEmpty(),
                  "still open after the abort: " + producerOf(admin, tp, hangPid));
            admin.deleteTopics(List.of(topic)).all().get();
        }
        System.out.println("PASS java-txn-admin");
    }
}
