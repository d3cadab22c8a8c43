// What Kafka 4.2-4.4 changed in the protocol, through the Java client (4.4 jars): run
// with a gateway serving Kafka 4.4's ranges, the client negotiates the newest versions
// (the test behind it notes which, through a proxy). Prints "PASS protocol44 ..." or
// FAIL and exits non-zero.
//   ApiVersions v5 (KIP-1242): every connection, naming the cluster and node it meant
//   TxnOffsetCommit v6 (KIP-1319): sendOffsetsToTransaction, topics by id
//   OffsetCommit / OffsetFetch v10: a KIP-848 group's commitSync and committed, topics
//   by id (the Java client sends v10 only for KIP-848 groups)
//   ListOffsets v11 (KIP-1023): earliestPendingUpload, no offset (-1): nothing tiered
//   DescribeLogDirs v5 (KIP-1066): isCordoned, following cordoned.log.dirs
//   DeleteGroups v3: an unknown group's GroupIdNotFoundException
//   WriteTxnMarkers v2 (KIP-1228): abortTransaction of a hanging transaction
//   usage: Protocol44Java HOST:PORT
import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.serialization.*;

public class Protocol44Java {
    static final String TOPIC = "protocol44";
    static final TopicPartition TP = new TopicPartition(TOPIC, 0);

    static void check(boolean ok, String what) {
        if (!ok) {
            System.out.println("FAIL protocol44: " + what);
            System.exit(1);
        }
    }

    static Properties common(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("request.timeout.ms", "20000");
        return p;
    }

    static KafkaProducer<String, String> producer(String bootstrap, String txnId) {
        Properties p = common(bootstrap);
        p.put("transactional.id", txnId);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    static boolean cordoned(Admin admin, int node) throws Exception {
        Map<String, LogDirDescription> dirs =
            admin.describeLogDirs(List.of(node)).allDescriptions().get().get(node);
        check(dirs.size() == 1, "one log directory, got " + dirs.keySet());
        return dirs.values().iterator().next().isCordoned();
    }

    static void setCordoned(Admin admin, int node, AlterConfigOp.OpType op) throws Exception {
        ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, String.valueOf(node));
        AlterConfigOp change = new AlterConfigOp(new ConfigEntry("cordoned.log.dirs", "*"), op);
        admin.incrementalAlterConfigs(Map.of(broker, List.of(change))).all().get();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        try (Admin admin = Admin.create(common(bootstrap))) {
            admin.createTopics(List.of(new NewTopic(TOPIC, 1, (short) 1))).all().get();
            int node = admin.describeCluster().controller().get().id();

            // TxnOffsetCommit: three records committed with the offset 3 of a group.
            try (KafkaProducer<String, String> p = producer(bootstrap, "protocol44-txn")) {
                p.initTransactions();
                p.beginTransaction();
                for (int i = 0; i < 3; i++) p.send(new ProducerRecord<>(TOPIC, 0, "k", "v" + i));
                p.sendOffsetsToTransaction(Map.of(TP, new OffsetAndMetadata(3, "txn")),
                    new ConsumerGroupMetadata("protocol44-txn-group"));
                p.commitTransaction();
            }
            long txnCommitted = admin.listConsumerGroupOffsets("protocol44-txn-group")
                .partitionsToOffsetAndMetadata().get().get(TP).offset();
            check(txnCommitted == 3, "transactional offset 3, got " + txnCommitted);

            // OffsetCommit / OffsetFetch v10: a KIP-848 group reads the three and commits.
            Properties c = common(bootstrap);
            c.put("group.id", "protocol44-group");
            c.put("group.protocol", "consumer");
            c.put("auto.offset.reset", "earliest");
            c.put("enable.auto.commit", "false");
            c.put("isolation.level", "read_committed");
            c.put("key.deserializer", StringDeserializer.class.getName());
            c.put("value.deserializer", StringDeserializer.class.getName());
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
                consumer.subscribe(List.of(TOPIC));
                int read = 0;
                long deadline = System.currentTimeMillis() + 30_000;
                while (read < 3 && System.currentTimeMillis() < deadline) {
                    read += consumer.poll(Duration.ofMillis(500)).count();
                }
                check(read == 3, "three records read, got " + read);
                consumer.commitSync(Map.of(TP, new OffsetAndMetadata(2, "mine")));
                OffsetAndMetadata mine = consumer.committed(Set.of(TP)).get(TP);
                check(mine != null && mine.offset() == 2 && "mine".equals(mine.metadata()),
                    "committed offset 2 \"mine\", got " + mine);
            }

            // ListOffsets: no tiered storage, so no offset is pending upload.
            long pending = admin.listOffsets(Map.of(TP, OffsetSpec.earliestPendingUpload()))
                .partitionResult(TP).get().offset();
            check(pending == -1, "earliest pending upload -1, got " + pending);

            // DescribeLogDirs: cordoned while cordoned.log.dirs names every directory.
            check(!cordoned(admin, node), "not cordoned at first");
            setCordoned(admin, node, AlterConfigOp.OpType.SET);
            check(cordoned(admin, node), "cordoned by cordoned.log.dirs=*");
            setCordoned(admin, node, AlterConfigOp.OpType.DELETE);
            check(!cordoned(admin, node), "no longer cordoned");

            // DeleteGroups: the group goes; an unknown one is refused with a message.
            admin.deleteConsumerGroups(List.of("protocol44-group")).all().get();
            try {
                admin.deleteConsumerGroups(List.of("protocol44-missing")).all().get();
                check(false, "an unknown group deleted");
            } catch (ExecutionException e) {
                check(e.getCause() instanceof GroupIdNotFoundException,
                    "GroupIdNotFoundException, got " + e.getCause());
            }

            // WriteTxnMarkers: a transaction left hanging, aborted by the admin.
            KafkaProducer<String, String> hanging = producer(bootstrap, "protocol44-hanging");
            hanging.initTransactions();
            hanging.beginTransaction();
            hanging.send(new ProducerRecord<>(TOPIC, 0, "k", "hanging")).get();
            ProducerState state = admin.describeProducers(List.of(TP)).partitionResult(TP).get()
                .activeProducers().stream()
                .filter(s -> s.currentTransactionStartOffset().isPresent())
                .findFirst().orElseThrow();
            admin.abortTransaction(new AbortTransactionSpec(TP, state.producerId(),
                (short) state.producerEpoch(), state.coordinatorEpoch().orElse(0))).all().get();
            boolean open = admin.describeProducers(List.of(TP)).partitionResult(TP).get()
                .activeProducers().stream()
                .anyMatch(s -> s.currentTransactionStartOffset().isPresent());
            check(!open, "the hanging transaction aborted");
            hanging.close(Duration.ZERO);
        }
        System.out.println("PASS protocol44");
    }
}
