package gateway.streams;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Word count: lines of INPUT, split into words, regrouped by word (the repartition topic
 * APP-words-repartition), counted into the persistent (RocksDB) store "word-counts" (its
 * changelog APP-word-counts-changelog), every new count sent to OUTPUT.
 *
 * Usage: WordCountApp BOOTSTRAP APP_ID STATE_DIR INPUT OUTPUT GUARANTEE STATUS_FILE
 * GUARANTEE is at_least_once or exactly_once_v2. Prints "STATUS state tasks" lines (the
 * latest also in STATUS_FILE, the process id in STATUS_FILE.pid) and "RESTORED store=...
 * partition=... records=N" lines, which check.sh waits for; under exactly_once_v2 also
 * "TXN-IDS id,..." (also in STATUS_FILE.txn), its producers' transactional ids. SIGTERM
 * closes it, leaving the group.
 */
public final class WordCountApp {
    static final String STORE = "word-counts";

    public static void main(String[] args) throws Exception {
        if (args.length != 7) {
            System.err.println("usage: WordCountApp BOOTSTRAP APP_ID STATE_DIR INPUT OUTPUT GUARANTEE STATUS_FILE");
            System.exit(2);
        }
        String bootstrap = args[0], appId = args[1], stateDir = args[2], input = args[3],
            output = args[4], guarantee = args[5];
        Path status = Path.of(args[6]);

        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        p.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, 0);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        // Purge consumed repartition records every second (default 30 s), so the run
        // exercises the DeleteRecords requests Streams sends for them.
        p.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 1000);
        // The changelog's compaction as eager as it goes (the check waits for its
        // compacted view before restoring from it).
        p.put(StreamsConfig.topicPrefix(TopicConfig.MIN_CLEANABLE_DIRTY_RATIO_CONFIG), "0.01");
        // Short sessions, so a SIGKILLed instance's partitions move within seconds (6 s is
        // the smallest session Kafka's, and the gateway's, default bounds allow).
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1000);
        boolean eos = guarantee.equals(StreamsConfig.EXACTLY_ONCE_V2);
        if (eos) {
            // No record cache: count() then sends one update per input word, so under
            // exactly_once_v2 the committed output is exactly (w,1), (w,2), ..., (w,N) for
            // a word w seen N times, which Driver's records check holds every record to.
            // (A cache would fold updates by commit timing, leaving only last counts
            // well defined.) at_least_once keeps the default cache: its checks are on
            // last counts only, as re-processing makes its records ill defined.
            p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0L);
            // Every instance counts as caught up on every store, so a new instance gets
            // its share of the counting tasks (1_*) at once, not only the stateless ones
            // until a probing rebalance minutes later: check.sh's mid-stream kill then
            // lands in a transaction holding output records, which must be aborted.
            p.put(StreamsConfig.ACCEPTABLE_RECOVERY_LAG_CONFIG, Long.MAX_VALUE);
        }

        // check.sh kills this JVM by this id (lib.sh's fw_java does not exec java).
        Files.writeString(Path.of(status + ".pid"), ProcessHandle.current().pid() + "\n");

        StreamsBuilder b = new StreamsBuilder();
        b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.stream(line.toLowerCase(Locale.ROOT).split("\\W+"))
                .filter(w -> !w.isEmpty()).toList())
            .groupBy((k, w) -> w, Grouped.with("words", Serdes.String(), Serdes.String()))
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as(STORE)
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream()
            .to(output, Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(b.build(), p);
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition tp, String store, long start, long end) {
                out("RESTORE-START store=" + store + " partition=" + tp + " from=" + start + " to=" + end);
            }

            @Override
            public void onBatchRestored(TopicPartition tp, String store, long end, long n) {}

            @Override
            public void onRestoreEnd(TopicPartition tp, String store, long total) {
                out("RESTORED store=" + store + " partition=" + tp + " records=" + total);
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            out("ERROR uncaught: " + e);
            e.printStackTrace(System.out);
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            // Streams' consumers do not leave the group on close by default; leaving lets
            // the next instance take over at once instead of after the session timeout.
            streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                .withTimeout(Duration.ofSeconds(20)));
            out("CLOSED");
            closed.countDown();
        }));
        streams.start();

        // The state and the active tasks, printed and written whenever they change: a
        // state listener alone does not say which tasks an instance has after a rebalance.
        String last = "";
        boolean txnIdsWritten = !eos;
        while (closed.getCount() > 0) {
            KafkaStreams.State state = streams.state();
            TreeSet<String> tasks = new TreeSet<>();
            try {
                TreeSet<String> txnIds = new TreeSet<>();
                for (ThreadMetadata t : streams.metadataForLocalThreads()) {
                    for (TaskMetadata task : t.activeTasks()) tasks.add(task.taskId().toString());
                    // Streams names a thread CLIENT_ID-StreamThread-N, CLIENT_ID being
                    // APP_ID-PROCESS_ID when client.id is unset (as here), and gives its
                    // exactly_once_v2 producer the transactional.id APP_ID-PROCESS_ID-N
                    // (ActiveTaskCreator): check.sh waits for one of them to be Ongoing
                    // before it kills this instance.
                    txnIds.add(t.threadName().replace("-StreamThread-", "-"));
                }
                if (!txnIdsWritten && !txnIds.isEmpty()) {
                    out("TXN-IDS " + String.join(",", txnIds));
                    Path tmp = status.resolveSibling(status.getFileName() + ".txn.tmp");
                    Files.writeString(tmp, String.join(" ", txnIds) + "\n");
                    Files.move(tmp, Path.of(status + ".txn"), StandardCopyOption.REPLACE_EXISTING,
                        StandardCopyOption.ATOMIC_MOVE);
                    txnIdsWritten = true;
                }
            } catch (IllegalStateException notRunning) {
                // no metadata outside RUNNING and REBALANCING
            }
            String now = state + " " + (tasks.isEmpty() ? "-" : String.join(",", tasks));
            if (!now.equals(last)) {
                out("STATUS " + now);
                Path tmp = status.resolveSibling(status.getFileName() + ".tmp");
                Files.writeString(tmp, now + "\n");
                Files.move(tmp, status, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
                last = now;
            }
            if (state == KafkaStreams.State.ERROR || state == KafkaStreams.State.NOT_RUNNING) {
                System.exit(1); // the hook closes it
            }
            Thread.sleep(100);
        }
        closed.await();
    }

    static synchronized void out(String s) {
        System.out.println(s);
        System.out.flush();
    }
}
