package gateway.spring;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.Header;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;

/**
 * The listeners. Each journals every delivery with its partition, offset, key, value
 * and thread (a concurrent container's members run on threads orders-0-C-1, orders-1-C-1);
 * orders and events also with the member's group membership then (MEMBER-ID:GENERATION,
 * ":-1" once the consumer knows it lost it), so check.sh can tell a redelivery across a
 * rejoin from one within the same membership.
 */
@Component
public class Listeners {
    private static final Logger log = LoggerFactory.getLogger(Listeners.class);
    private final Journal journal;
    private final Transactions tx;
    private final Path out;
    /** Deliveries of each transactional input so far. */
    private final Map<String, Integer> deliveries = new ConcurrentHashMap<>();
    /** Set while the "-hold" input's listener waits, inside its transaction, for check.sh. */
    volatile boolean holding;

    public Listeners(Journal journal, Transactions tx, @Value("${check.out}") String out) {
        this.journal = journal;
        this.tx = tx;
        this.out = Path.of(out);
    }

    private static String membership(Consumer<?, ?> consumer) {
        ConsumerGroupMetadata m = consumer.groupMetadata();
        return m.memberId() + ":" + m.generationId();
    }

    /** Two members of one group (concurrency 2) share the three partitions. */
    @KafkaListener(id = "orders", topics = "${check.orders}", groupId = "${check.group}", concurrency = "2")
    void order(ConsumerRecord<String, String> r, Consumer<?, ?> consumer) {
        journal.received("orders", String.valueOf(r.partition()), String.valueOf(r.offset()), r.key(), r.value(),
                Thread.currentThread().getName(), membership(consumer));
    }

    /**
     * Consume-transform-produce in the container's transaction (two read_committed
     * members): the output goes to the partition of the input's number in check.tx-out;
     * the container then sends the input's offset to the same transaction and commits it.
     * The "-rollback" input's first delivery throws after its output was acknowledged:
     * the transaction aborts and the record comes again. The "-hold" input's first
     * delivery waits with its transaction open for check.sh's resume file (the gateway
     * was killed and restarted meanwhile), then a little for the record to come again to
     * the other member, which it would if the restart had cost this member its place.
     */
    @KafkaListener(id = "tx", topics = "${check.tx-in}", groupId = "${check.group}-tx", concurrency = "2",
            containerFactory = "txListenerFactory", autoStartup = "#{${check.tx-records} > 0}")
    void transform(ConsumerRecord<String, String> r, Consumer<?, ?> consumer) throws Exception {
        int n = deliveries.merge(r.value(), 1, Integer::sum);
        journal.received("tx-in", String.valueOf(r.partition()), String.valueOf(r.offset()), r.key(), r.value(),
                Thread.currentThread().getName(), String.valueOf(n), membership(consumer));
        String output = Transactions.output(r.value(), n);
        RecordMetadata m = tx.template.send(tx.out, r.partition(), r.key(), output).get(30, TimeUnit.SECONDS)
                .getRecordMetadata();
        if (n == 1 && r.value().endsWith("-rollback")) {
            journal.sent("tx-aborted-out", String.valueOf(m.partition()), String.valueOf(m.offset()), r.key(), output);
            throw new IllegalStateException("rolled back on purpose: " + r.value());
        }
        if (n == 1 && r.value().endsWith("-hold")) {
            holding = true;
            log.info("holding {} in its transaction until {}/resume", r.value(), out);
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
            while (!Files.exists(out.resolve("resume")) && System.nanoTime() < until) {
                Thread.sleep(50);
            }
            // The gateway keeps the group across its restart (as Kafka keeps it), so this
            // member still holds its partition and commits its transaction as itself. Had
            // the restart dropped it from the group, the other member would take the
            // partition over and process the record again within these 5 s; this one's
            // commit would then be a zombie's, its offsets refused (KIP-447: its generation
            // and member id no longer the group's), and the transaction would abort: the
            // read_committed checks see one output either way, and check.sh's
            // run3-gateway-restart checks refuse any redelivery.
            long taken = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (deliveries.get(r.value()) < 2 && System.nanoTime() < taken) {
                Thread.sleep(50);
            }
            // The membership the container sends with the offsets (sendOffsetsToTransaction).
            journal.received("tx-held", String.valueOf(r.partition()), String.valueOf(r.offset()), r.key(), r.value(),
                    Thread.currentThread().getName(), membership(consumer));
            log.info("{} goes on as {}", r.value(), membership(consumer));
        }
    }

    /**
     * A poison record fails here: the DefaultErrorHandler retries it once, then its
     * DeadLetterPublishingRecoverer publishes it to spring-events-dlt and commits past it.
     */
    @KafkaListener(id = "events", topics = "${check.events}", groupId = "${check.group}-events")
    void event(ConsumerRecord<String, String> r, Consumer<?, ?> consumer) {
        String kind = r.value().startsWith("poison") ? "events-failed" : "events";
        journal.received(kind, String.valueOf(r.partition()), String.valueOf(r.offset()), r.key(), r.value(),
                Thread.currentThread().getName(), membership(consumer));
        if (kind.equals("events-failed")) {
            throw new IllegalStateException("poison rejected: " + r.value());
        }
    }

    /** The dead letters, with the headers the recoverer adds. */
    @KafkaListener(id = "dlt", topics = "${check.events}-dlt", groupId = "${check.group}-dlt")
    void deadLetter(ConsumerRecord<String, String> r) {
        journal.received("dlt", String.valueOf(r.partition()), String.valueOf(r.offset()), r.key(), r.value(),
                header(r, "kafka_dlt-original-topic"), header(r, "kafka_dlt-original-partition"),
                header(r, "kafka_dlt-original-offset"), header(r, "kafka_dlt-exception-message"));
    }

    private static String header(ConsumerRecord<?, ?> r, String name) {
        Header h = r.headers().lastHeader(name);
        if (h == null) {
            return "-";
        }
        byte[] v = h.value();
        // Partition and offset travel as big-endian int and long.
        if (name.endsWith("partition") && v.length == 4) {
            return String.valueOf(java.nio.ByteBuffer.wrap(v).getInt());
        }
        if (name.endsWith("offset") && v.length == 8) {
            return String.valueOf(java.nio.ByteBuffer.wrap(v).getLong());
        }
        return new String(v, StandardCharsets.UTF_8).replace('\t', ' ').replace('\n', ' ');
    }
}
