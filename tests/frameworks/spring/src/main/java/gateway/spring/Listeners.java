package gateway.spring;

import java.nio.charset.StandardCharsets;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;

/**
 * The listeners. Each journals every delivery with its partition, offset, key, value
 * and thread (a concurrent container's members run on threads orders-0-C-1, orders-1-C-1).
 */
@Component
public class Listeners {
    private final Journal journal;

    public Listeners(Journal journal) {
        this.journal = journal;
    }

    /** Two members of one group (concurrency 2) share the three partitions. */
    @KafkaListener(id = "orders", topics = "${check.orders}", groupId = "${check.group}", concurrency = "2")
    void order(ConsumerRecord<String, String> r) {
        journal.received("orders", String.valueOf(r.partition()), String.valueOf(r.offset()), r.key(), r.value(),
                Thread.currentThread().getName());
    }

    /**
     * A poison record fails here: the DefaultErrorHandler retries it once, then its
     * DeadLetterPublishingRecoverer publishes it to spring-events-dlt and commits past it.
     */
    @KafkaListener(id = "events", topics = "${check.events}", groupId = "${check.group}-events")
    void event(ConsumerRecord<String, String> r) {
        String kind = r.value().startsWith("poison") ? "events-failed" : "events";
        journal.received(kind, String.valueOf(r.partition()), String.valueOf(r.offset()), r.key(), r.value(),
                Thread.currentThread().getName());
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
