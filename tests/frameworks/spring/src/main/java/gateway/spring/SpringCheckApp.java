package gateway.spring;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.config.TopicConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.ApplicationRunner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.config.TopicBuilder;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.ConcurrentMessageListenerContainer;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.util.backoff.FixedBackOff;

/**
 * One run of the check: KafkaAdmin creates (or, on a later run, reconciles) the
 * declared topics at startup; the runner waits until every listener has its partitions,
 * sends check.records keyed orders and check.events-count events (one poison record too
 * with check.poison) through the KafkaTemplate, waiting for each send, then waits until
 * everything it sent has been received, and a grace period for anything more (a
 * duplicate, an old record re-delivered). Exits 0 then, 2 on a deadline, 3 if startup
 * failed; check.sh compares the journals. With check.pause it stops halfway through the
 * orders (file check.out/paused) until check.sh, having restarted the gateway, creates
 * check.out/resume.
 *
 * With check.tx-records above 0 the run has a transactional part (Transactions): a
 * transaction rolled back, then check.tx-records inputs for the transactional listener,
 * half before the orders and half after them (with check.pause: the first half's
 * outputs committed and the "-hold" input's transaction open before the pause); it waits
 * until a read_committed reader has seen an output of every input, and after the grace
 * period reads the output topic to its end.
 */
@SpringBootApplication
public class SpringCheckApp {
    private static final Logger log = LoggerFactory.getLogger(SpringCheckApp.class);
    static volatile int exitCode = 2;

    public static void main(String[] args) {
        // A hung client must not hang the check: halt well after every deadline.
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(150_000);
            } catch (InterruptedException e) {
                return;
            }
            System.err.println("FAIL watchdog: the application still runs after 150 s");
            Runtime.getRuntime().halt(4);
        });
        watchdog.setDaemon(true);
        watchdog.start();
        ConfigurableApplicationContext ctx;
        try {
            ctx = SpringApplication.run(SpringCheckApp.class, args);
        } catch (Throwable e) {
            System.err.println("FAIL startup: " + e);
            Runtime.getRuntime().halt(3);
            return;
        }
        // Closing the context stops the listener containers: they commit and leave the group.
        System.exit(SpringApplication.exit(ctx, () -> exitCode));
    }

    @Bean
    NewTopic orders(@Value("${check.orders}") String name, @Value("${check.retention-ms}") String retention,
            @Value("${check.orders-partitions:3}") int partitions) {
        return TopicBuilder.name(name).partitions(partitions).replicas(1)
                .config(TopicConfig.RETENTION_MS_CONFIG, retention).build();
    }

    @Bean
    NewTopic events(@Value("${check.events}") String name) {
        return TopicBuilder.name(name).partitions(2).replicas(1)
                .config(TopicConfig.MAX_MESSAGE_BYTES_CONFIG, "65536").build();
    }

    /**
     * DeadLetterPublishingRecoverer's default destination in spring-kafka 4.0: TOPIC-dlt,
     * the failed record's partition. Undeclared, the producer's metadata request would
     * auto-create it with the broker default of 1 partition.
     */
    @Bean
    NewTopic deadLetters(@Value("${check.events}") String name) {
        return TopicBuilder.name(name + "-dlt").partitions(2).replicas(1).build();
    }

    @Bean
    NewTopic transactionalInput(@Value("${check.tx-in}") String name, @Value("${check.tx-partitions}") int partitions) {
        return TopicBuilder.name(name).partitions(partitions).replicas(1).build();
    }

    @Bean
    NewTopic transactionalOutput(@Value("${check.tx-out}") String name, @Value("${check.tx-partitions}") int partitions) {
        return TopicBuilder.name(name).partitions(partitions).replicas(1).build();
    }

    /** The transactional listener's containers (Transactions.listenerFactory). */
    @Bean
    ConcurrentKafkaListenerContainerFactory<String, String> txListenerFactory(Transactions tx) {
        return tx.listenerFactory();
    }

    /** Boot gives this handler to its listener container factory: one retry, then the DLT. */
    @Bean
    DefaultErrorHandler errorHandler(KafkaTemplate<String, String> template) {
        return new DefaultErrorHandler(new DeadLetterPublishingRecoverer(template), new FixedBackOff(0L, 1L));
    }

    @Bean
    ApplicationRunner runner(KafkaTemplate<String, String> template, KafkaListenerEndpointRegistry registry,
            ConsumerFactory<?, ?> consumers, Journal journal, @Value("${check.orders}") String orders, @Value("${check.events}") String events,
            @Value("${check.run}") int run, @Value("${check.records}") int records,
            @Value("${check.events-count}") int eventCount, @Value("${check.poison}") boolean poison,
            @Value("${check.deadline-s}") long deadlineS, @Value("${check.pause}") boolean pause,
            @Value("${check.out}") String outDir, @Value("${check.orders-partitions:3}") int ordersPartitions,
            Transactions tx, Listeners listeners, @Value("${check.tx-records}") int txRecords) {
        return args -> {
            Map<String, Object> c = consumers.getConfigurationProperties();
            log.info("consumers: group.protocol={} session.timeout.ms={}", c.get("group.protocol"),
                    c.get("session.timeout.ms"));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(deadlineS);
            // Records sent before the members hold their partitions would all go to the
            // first member to join: wait until both order members have some.
            String waiting = "assignment: " + ordersPartitions
                    + " orders partitions over 2 members, 2 events and 2 DLT partitions"
                    + (txRecords > 0 ? ", " + tx.partitions + " transactional inputs over 2 members" : "");
            while (!(assigned(registry.getListenerContainer("orders"), 2, ordersPartitions)
                    && assigned(registry.getListenerContainer("events"), 1, 2)
                    && assigned(registry.getListenerContainer("dlt"), 1, 2)
                    && (txRecords == 0 || assigned(registry.getListenerContainer("tx"), 2, tx.partitions)))) {
                if (System.nanoTime() > deadline) {
                    log.error("FAIL deadline ({} s) waiting for {}; have {}", deadlineS, waiting, describe(registry));
                    return;
                }
                Thread.sleep(100);
            }
            log.info("assigned {}", describe(registry));

            // The transactional part's first half: a rolled-back transaction, then inputs
            // (the second marked to roll back its first delivery; with check.pause the last
            // marked to hold its transaction open across the gateway restart).
            int txHalf = txRecords / 2;
            List<String> txFirstHalf = new ArrayList<>();
            if (txRecords > 0) {
                tx.startReader();
                tx.rollBackOne(run);
                for (int i = 0; i < txHalf; i++) {
                    tx.send(run, i, i == 1 ? "-rollback" : pause && i == txHalf - 1 ? "-hold" : "");
                }
                txFirstHalf.addAll(tx.inputs());
                txFirstHalf.removeIf(v -> v.endsWith("-hold"));
            }

            List<String> expected = new ArrayList<>();
            for (int i = 0; i < records; i++) {
                if (pause && i == records / 2) {
                    // Half sent and received: check.sh restarts the gateway under the
                    // connected members and producer, then lets the run go on.
                    if (!arrived(journal, expected, deadline, "the first half of the orders")) {
                        return;
                    }
                    if (txRecords > 0 && !tx.awaitOutputs(txFirstHalf, deadline, "the first transactional inputs")) {
                        return;
                    }
                    while (txRecords > 0 && !listeners.holding) {
                        if (System.nanoTime() > deadline) {
                            log.error("FAIL deadline ({} s) waiting for the listener to hold a transaction open", deadlineS);
                            return;
                        }
                        Thread.sleep(50);
                    }
                    Thread.sleep(1000); // their commits (synchronous, after each poll's records) too
                    Path out = Path.of(outDir);
                    // Everything journaled before this line was delivered and acknowledged
                    // before check.sh killed the gateway.
                    journal.received("paused", "-", "-", "-", "-", Thread.currentThread().getName());
                    Files.createFile(out.resolve("paused"));
                    log.info("paused after {} orders", i);
                    while (!Files.exists(out.resolve("resume"))) {
                        if (System.nanoTime() > deadline) {
                            log.error("FAIL deadline ({} s) waiting for check.sh to create {}/resume", deadlineS, out);
                            return;
                        }
                        Thread.sleep(50);
                    }
                    log.info("resumed");
                }
                String value = "run" + run + "-order-" + i;
                send(template, journal, "orders", orders, "key-" + (i % 7), value);
                expected.add("orders/" + value);
            }
            for (int i = txHalf; i < txRecords; i++) {
                tx.send(run, i, "");
            }
            for (int i = 0; i < eventCount; i++) {
                if (poison && i == eventCount / 2) {
                    String value = "poison-run" + run;
                    send(template, journal, "poison", events, "bad", value);
                    expected.add("dlt/" + value);
                }
                String value = "run" + run + "-event-" + i;
                send(template, journal, "events", events, "ev-" + i, value);
                expected.add("events/" + value);
            }
            log.info("sent {} records", expected.size());
            if (!arrived(journal, expected, deadline, "every record sent")) {
                return;
            }
            if (txRecords > 0 && !tx.awaitOutputs(tx.inputs(), deadline, "every transactional input")) {
                return;
            }
            log.info("received all {} records and {} transactional outputs; grace period for duplicates",
                    expected.size(), txRecords);
            Thread.sleep(3000);
            if (txRecords > 0 && !tx.finish(deadline)) {
                return;
            }
            exitCode = 0;
        };
    }

    private boolean arrived(Journal journal, List<String> expected, long deadline, String what)
            throws InterruptedException {
        while (!journal.seen.containsAll(expected)) {
            if (System.nanoTime() > deadline) {
                List<String> missing = new ArrayList<>(expected);
                missing.removeAll(journal.seen);
                log.error("FAIL deadline waiting for {}: {} records missing, e.g. {}", what, missing.size(),
                        missing.subList(0, Math.min(5, missing.size())));
                return false;
            }
            Thread.sleep(50);
        }
        return true;
    }

    /** A keyed send, waited for (acks=all; the producer is idempotent by default). */
    private static void send(KafkaTemplate<String, String> template, Journal journal, String kind, String topic,
            String key, String value) throws Exception {
        RecordMetadata m = template.send(topic, key, value).get(30, TimeUnit.SECONDS).getRecordMetadata();
        journal.sent(kind, String.valueOf(m.partition()), String.valueOf(m.offset()), key, value);
    }

    private static boolean assigned(MessageListenerContainer c, int members, int partitions) {
        if (!(c instanceof ConcurrentMessageListenerContainer<?, ?> cc) || cc.getContainers().size() != members) {
            return false;
        }
        int total = 0;
        for (MessageListenerContainer child : cc.getContainers()) {
            var tps = child.getAssignedPartitions();
            if (tps == null || tps.isEmpty()) {
                return false;
            }
            total += tps.size();
        }
        return total == partitions;
    }

    private static String describe(KafkaListenerEndpointRegistry registry) {
        StringBuilder b = new StringBuilder();
        for (MessageListenerContainer c : registry.getListenerContainers()) {
            if (c instanceof ConcurrentMessageListenerContainer<?, ?> cc) {
                for (MessageListenerContainer child : cc.getContainers()) {
                    b.append(child.getListenerId()).append('#').append(cc.getContainers().indexOf(child))
                            .append('=').append(child.getAssignedPartitions()).append(' ');
                }
            }
        }
        return b.toString().trim();
    }
}
