// A Java consumer group that must not notice its coordinator moving: three KafkaConsumers
// (cooperative-sticky; with "static", each with a group.instance.id) in one group read a
// topic that a test writes to while it restarts or kills gateways under them. Each
// commits synchronously after every poll that brought records, and counts every
// rebalance callback (assigned, revoked, lost) it gets.
//
// Once every consumer holds partitions and no callback came for 2 s, it creates DIR/settled.
// Then it reads on until DIR/stop holds N, the count of values 0..N-1 the test produced,
// and goes on until it has read them all (60 s at most). It passes when no rebalance
// callback came after it settled, every value was read exactly once, and no commit
// failed for good.
//
//   usage: java_check.sh RollingGroupJava HOST:PORT TOPIC GROUP dynamic|static DIR
// Prints `PASS java-rolling-group` or `FAIL java-rolling-group: …` and exits non-zero.

import java.nio.file.*;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class RollingGroupJava {
    static final int MEMBERS = 3;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        boolean statics = args[3].equals("static");
        Path dir = Paths.get(args[4]);
        Map<Long, AtomicInteger> read = new ConcurrentHashMap<>();
        AtomicInteger callbacks = new AtomicInteger();
        AtomicLong lastCallback = new AtomicLong(System.nanoTime());
        AtomicBoolean settled = new AtomicBoolean(false);
        List<String> problems = Collections.synchronizedList(new ArrayList<>());
        AtomicBoolean done = new AtomicBoolean(false);
        List<KafkaConsumer<String, String>> consumers = new ArrayList<>();
        for (int i = 0; i < MEMBERS; i++) {
            Properties props = new Properties();
            props.put("bootstrap.servers", bootstrap);
            props.put("group.id", group);
            props.put("auto.offset.reset", "earliest");
            props.put("enable.auto.commit", "false");
            props.put("session.timeout.ms", "10000");
            props.put("heartbeat.interval.ms", "500");
            props.put("reconnect.backoff.max.ms", "500");
            props.put("partition.assignment.strategy", CooperativeStickyAssignor.class.getName());
            if (statics) props.put("group.instance.id", "rolling-" + i);
            consumers.add(new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer()));
        }
        ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
            void seen(String what, Collection<TopicPartition> parts) {
                lastCallback.set(System.nanoTime());
                // cooperative-sticky calls onPartitionsAssigned with nothing new at every
                // rebalance's end: any callback after settling is a rebalance. Closing
                // revokes what a member holds (static members too): not a rebalance.
                if (settled.get() && !done.get()) {
                    callbacks.incrementAndGet();
                    problems.add(what + " " + parts + " after the group settled");
                }
            }
            public void onPartitionsRevoked(Collection<TopicPartition> p) { seen("revoked", p); }
            public void onPartitionsAssigned(Collection<TopicPartition> p) { seen("assigned", p); }
            public void onPartitionsLost(Collection<TopicPartition> p) { seen("lost", p); }
        };
        ExecutorService pool = Executors.newFixedThreadPool(MEMBERS);
        List<Future<?>> running = new ArrayList<>();
        for (KafkaConsumer<String, String> c : consumers) {
            running.add(pool.submit(() -> {
                c.subscribe(List.of(topic), listener);
                while (!done.get()) {
                    ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(100));
                    for (ConsumerRecord<String, String> r : records)
                        read.computeIfAbsent(Long.parseLong(r.value()), v -> new AtomicInteger()).incrementAndGet();
                    if (!records.isEmpty()) {
                        try {
                            c.commitSync(Duration.ofSeconds(30));
                        } catch (RetriableCommitFailedException e) {
                            // A coordinator moving: the next poll's commit covers these too.
                        } catch (RuntimeException e) {
                            problems.add("commit failed: " + e);
                        }
                    }
                }
                c.close(Duration.ofSeconds(10));
                return null;
            }));
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!settled.get()) {
            if (System.nanoTime() > deadline) fail("not settled within 60 s", done, pool);
            boolean quiet = System.nanoTime() - lastCallback.get() > TimeUnit.SECONDS.toNanos(2);
            // assignment() is the consumer's own thread's to call: settled is judged by
            // the callbacks going quiet once every partition was handed out.
            if (quiet && !read.isEmpty()) {
                settled.set(true);
                Files.createFile(dir.resolve("settled"));
            }
            Thread.sleep(100);
        }
        Path stop = dir.resolve("stop");
        deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(300);
        while (!Files.exists(stop)) {
            if (System.nanoTime() > deadline) fail("no stop file within 300 s", done, pool);
            Thread.sleep(100);
        }
        Thread.sleep(200); // the file is written whole
        long produced = Long.parseLong(Files.readString(stop).trim());
        deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (read.size() < produced && System.nanoTime() < deadline) Thread.sleep(100);
        done.set(true);
        pool.shutdown();
        pool.awaitTermination(30, TimeUnit.SECONDS);
        for (Future<?> f : running) {
            try {
                f.get(1, TimeUnit.SECONDS);
            } catch (Exception e) {
                problems.add("a consumer failed: " + e);
            }
        }
        List<Long> twice = new ArrayList<>();
        read.forEach((v, n) -> { if (n.get() > 1) twice.add(v); });
        List<Long> missing = new ArrayList<>();
        for (long v = 0; v < produced; v++) if (!read.containsKey(v)) missing.add(v);
        if (!twice.isEmpty()) problems.add(twice.size() + " values read more than once, e.g. " + twice.subList(0, Math.min(5, twice.size())));
        if (!missing.isEmpty()) problems.add(missing.size() + " values never read, e.g. " + missing.subList(0, Math.min(5, missing.size())));
        if (!problems.isEmpty()) {
            System.out.println("FAIL java-rolling-group: " + problems.subList(0, Math.min(10, problems.size())));
            System.exit(1);
        }
        System.out.println("PASS java-rolling-group: " + produced + " values read once by " + MEMBERS
                + (statics ? " static" : "") + " members, no rebalance after the group settled");
        System.exit(0);
    }

    static void fail(String why, AtomicBoolean done, ExecutorService pool) {
        done.set(true);
        pool.shutdownNow();
        System.out.println("FAIL java-rolling-group: " + why);
        System.exit(1);
    }
}
