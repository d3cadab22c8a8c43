package gateway.spring;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.core.ProducerFactory;
import org.springframework.kafka.listener.DefaultAfterRollbackProcessor;
import org.springframework.kafka.transaction.KafkaTransactionManager;
import org.springframework.stereotype.Component;
import org.springframework.util.backoff.FixedBackOff;

/**
 * The transactional part of the check. A producer factory with a transaction-id-prefix
 * backs a KafkaTransactionManager and a transactional KafkaTemplate; the listener
 * container factory "txListenerFactory" (read_committed consumers) runs the "tx"
 * listener (Listeners.transform) inside that manager's transactions: each input record of
 * check.tx-in gives one output record on check.tx-out, sent in the listener's transaction,
 * and the container sends the consumed offset to the same transaction
 * (KafkaAwareTransactionManager: sendOffsetsToTransaction with the consumer's group
 * metadata), so output and offset commit together or not at all.
 *
 * Rolled back on purpose each run: an executeInTransaction writing one input and one
 * output record, both acknowledged, then throwing; and the listener's first delivery of
 * the input marked "-rollback" (its output acknowledged, then the listener throws, the
 * container aborts and redelivers). With check.pause one input marked "-hold" keeps its
 * listener inside an open transaction (output written) until check.sh has killed and
 * restarted the gateway.
 *
 * Journal lines: sent "tx-in" (inputs), "tx-aborted-in"/"tx-aborted-out" (records of
 * transactions rolled back); received "tx-in" (listener deliveries, with the delivery
 * count and the member's MEMBER-ID:GENERATION), "tx-held" (the "-hold" input's listener
 * going on, with the membership its offsets are sent with), "tx-out" (what a read_committed reader of the output topic sees, read from its
 * beginning each run), "tx-all-in"/"tx-all-out" (what a read_uncommitted reader sees of
 * both topics at the end: the aborted records must be there).
 *
 * None of these objects is a bean: a ProducerFactory, KafkaTemplate or transaction manager
 * bean would replace or change what Spring Boot configures for the other listeners.
 */
@Component
public class Transactions implements DisposableBean {
    private static final Logger log = LoggerFactory.getLogger(Transactions.class);

    final String in;
    final String out;
    final int partitions;
    final DefaultKafkaProducerFactory<String, String> producers;
    /** Transactional: joins the listener container's transaction. */
    final KafkaTemplate<String, String> template;
    final KafkaTransactionManager<String, String> manager;
    private final DefaultKafkaConsumerFactory<String, String> consumers;
    private final KafkaTemplate<String, String> plain;
    private final Journal journal;
    private final Map<String, Object> readerConfig;
    /** Inputs whose output the read_committed reader has seen. */
    private final Set<String> outputsOf = ConcurrentHashMap.newKeySet();
    private final List<String> inputs = new ArrayList<>();
    private KafkaConsumer<String, String> reader;

    public Transactions(Journal journal, KafkaTemplate<String, String> plain, ProducerFactory<?, ?> bootProducers,
            ConsumerFactory<?, ?> bootConsumers, @Value("${check.tx-in}") String in,
            @Value("${check.tx-out}") String out, @Value("${check.tx-partitions}") int partitions,
            @Value("${check.tx-id-prefix}") String prefix) {
        this.journal = journal;
        this.plain = plain;
        this.in = in;
        this.out = out;
        this.partitions = partitions;
        producers = new DefaultKafkaProducerFactory<>(new HashMap<>(bootProducers.getConfigurationProperties()));
        producers.setTransactionIdPrefix(prefix);
        template = new KafkaTemplate<>(producers);
        manager = new KafkaTransactionManager<>(producers);
        Map<String, Object> c = new HashMap<>(bootConsumers.getConfigurationProperties());
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        consumers = new DefaultKafkaConsumerFactory<>(c);
        readerConfig = Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                c.get(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG),
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class,
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class,
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    }

    /** Two read_committed members; a rolled-back record is retried twice at most, at once. */
    ConcurrentKafkaListenerContainerFactory<String, String> listenerFactory() {
        ConcurrentKafkaListenerContainerFactory<String, String> f = new ConcurrentKafkaListenerContainerFactory<>();
        f.setConsumerFactory(consumers);
        f.getContainerProperties().setKafkaAwareTransactionManager(manager);
        f.setAfterRollbackProcessor(new DefaultAfterRollbackProcessor<>(new FixedBackOff(0L, 2L)));
        return f;
    }

    /** The output the listener sends for an input's Nth delivery. */
    static String output(String input, int delivery) {
        return "out:" + input + "#" + delivery;
    }

    private static String inputOf(String output) {
        return output.replaceFirst("^out:", "").replaceFirst("#[0-9]+$", "");
    }

    /**
     * A transaction rolled back by the application: an input and an output record, both
     * acknowledged by the broker, then the callback throws and the template aborts.
     */
    void rollBackOne(int run) throws Exception {
        String marker = "rolled back on purpose";
        try {
            template.executeInTransaction(t -> {
                try {
                    String v = "run" + run + "-tx-aborted";
                    RecordMetadata a = t.send(in, 0, "tx-aborted", v).get(30, TimeUnit.SECONDS).getRecordMetadata();
                    journal.sent("tx-aborted-in", String.valueOf(a.partition()), String.valueOf(a.offset()),
                            "tx-aborted", v);
                    RecordMetadata b = t.send(out, 0, "tx-aborted", "out:" + v).get(30, TimeUnit.SECONDS)
                            .getRecordMetadata();
                    journal.sent("tx-aborted-out", String.valueOf(b.partition()), String.valueOf(b.offset()),
                            "tx-aborted", "out:" + v);
                } catch (Exception e) {
                    throw new IllegalStateException("sending in the transaction to roll back failed", e);
                }
                throw new IllegalStateException(marker);
            });
        } catch (IllegalStateException e) {
            if (!marker.equals(e.getMessage())) {
                throw e;
            }
            log.info("rolled back a transaction of run {}", run);
            return;
        }
        throw new IllegalStateException("executeInTransaction did not throw");
    }

    /** Input I of the run (non-transactional, acknowledged), on partition I mod partitions. */
    void send(int run, int i, String mark) throws Exception {
        String key = "tx-" + i;
        String value = "run" + run + "-tx-" + i + mark;
        RecordMetadata m = plain.send(in, i % partitions, key, value).get(30, TimeUnit.SECONDS).getRecordMetadata();
        journal.sent("tx-in", String.valueOf(m.partition()), String.valueOf(m.offset()), key, value);
        synchronized (inputs) {
            inputs.add(value);
        }
    }

    List<String> inputs() {
        synchronized (inputs) {
            return new ArrayList<>(inputs);
        }
    }

    private List<TopicPartition> parts(String topic) {
        List<TopicPartition> l = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            l.add(new TopicPartition(topic, p));
        }
        return l;
    }

    private KafkaConsumer<String, String> open(String isolation, List<TopicPartition> tps) {
        Map<String, Object> c = new HashMap<>(readerConfig);
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        KafkaConsumer<String, String> k = new KafkaConsumer<>(c);
        k.assign(tps);
        k.seekToBeginning(tps);
        return k;
    }

    /** The read_committed reader of the output topic, from its beginning (every run's outputs). */
    void startReader() {
        reader = open("read_committed", parts(out));
    }

    private void pollReader() {
        for (ConsumerRecord<String, String> r : reader.poll(Duration.ofMillis(100))) {
            journal.received("tx-out", String.valueOf(r.partition()), String.valueOf(r.offset()), r.key(), r.value());
            outputsOf.add(inputOf(r.value()));
        }
    }

    /** Waits until the read_committed reader has seen an output of each of these inputs. */
    boolean awaitOutputs(Collection<String> of, long deadline, String what) {
        while (!outputsOf.containsAll(of)) {
            if (System.nanoTime() > deadline) {
                List<String> missing = new ArrayList<>(of);
                missing.removeAll(outputsOf);
                log.error("FAIL deadline waiting for the outputs of {}: {} missing, e.g. {}", what, missing.size(),
                        missing.subList(0, Math.min(5, missing.size())));
                return false;
            }
            pollReader();
        }
        return true;
    }

    /** Reads on until the position is at the end offsets (read_committed: the last stable offsets). */
    private boolean toEnd(KafkaConsumer<String, String> k, Runnable poll, long deadline, String what) {
        Map<TopicPartition, Long> end = k.endOffsets(k.assignment(), Duration.ofSeconds(30));
        while (true) {
            boolean done = true;
            for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
                done &= k.position(e.getKey(), Duration.ofSeconds(30)) >= e.getValue();
            }
            if (done) {
                return true;
            }
            if (System.nanoTime() > deadline) {
                log.error("FAIL deadline reading {} to its end {}", what, end);
                return false;
            }
            poll.run();
        }
    }

    /**
     * After the grace period: the read_committed reader reads on to the end of the output
     * topic, then a read_uncommitted reader journals both topics whole.
     */
    boolean finish(long deadline) {
        try {
            if (!toEnd(reader, this::pollReader, deadline, out + " (read_committed)")) {
                return false;
            }
        } finally {
            reader.close(Duration.ofSeconds(5));
        }
        List<TopicPartition> all = new ArrayList<>(parts(in));
        all.addAll(parts(out));
        try (KafkaConsumer<String, String> k = open("read_uncommitted", all)) {
            return toEnd(k, () -> {
                for (ConsumerRecord<String, String> r : k.poll(Duration.ofMillis(100))) {
                    journal.received(r.topic().equals(in) ? "tx-all-in" : "tx-all-out",
                            String.valueOf(r.partition()), String.valueOf(r.offset()), r.key(), r.value());
                }
            }, deadline, in + " and " + out + " (read_uncommitted)");
        }
    }

    @Override
    public void destroy() {
        producers.destroy();
    }
}
