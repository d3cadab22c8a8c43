package gateway.streams;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The driver and checker of check.sh, one mode per call:
 *   create BOOT TOPIC PARTITIONS [TOPIC PARTITIONS ...]   creates the topics
 *   produce BOOT TOPIC FROM TO                           sends lines [FROM, TO) of Words
 *   quiesce BOOT GROUP TIMEOUT_S TOPIC...                 waits until GROUP's committed
 *        offsets equal the end offsets of every partition of the TOPICs
 *   check BOOT OUTPUT LINES [exact|at-least|records]      OUTPUT as a read_committed
 *        consumer sees it, against the true counts over lines [0, LINES):
 *        exact     the last count per word equals the true count, every word
 *        at-least  the last count per word is not below it
 *        records   every output record is checked: a word w with true count N has the
 *                  records (w,1), (w,2), ..., (w,N), each exactly once and in that order,
 *                  and no other record (the app without a record cache under
 *                  exactly_once_v2: one update per occurrence, aborted ones unseen)
 *   selftest BOOT OUTPUT LINES MODE                      the checker of that mode must
 *        fail on what OUTPUT holds when it is wrong: against LINES - 1 lines, and in
 *        records mode also with one record read twice and with one record dropped
 *   kill-in-txn BOOT PID TIMEOUT_S [--with-topic T] TXN_ID...  SIGKILLs the process PID
 *        once one of its transactional ids is Ongoing with partitions (one of topic T,
 *        if given), and proves the kill landed inside that open transaction
 *   config BOOT TOPIC KEY...                              prints its partition count and
 *        the values of the configurations KEY
 *   compacted BOOT TOPIC TIMEOUT_S                        waits until a read of TOPIC from
 *        its beginning to its end offsets finds fewer records than offsets (compaction
 *        removed some) and no key more than twice in a partition
 * Prints "OK ..." and exits 0, or prints why not and exits 1.
 */
public final class Driver {
    public static void main(String[] a) throws Exception {
        String boot = a[1];
        switch (a[0]) {
            case "create" -> create(boot, a);
            case "produce" -> produce(boot, a[2], Long.parseLong(a[3]), Long.parseLong(a[4]));
            case "quiesce" -> quiesce(boot, a[2], Integer.parseInt(a[3]), List.of(a).subList(4, a.length));
            case "check" -> check(boot, a[2], Long.parseLong(a[3]), a.length > 4 ? a[4] : "exact");
            case "selftest" -> selftest(boot, a[2], Long.parseLong(a[3]), a[4]);
            case "kill-in-txn" -> {
                boolean with = a.length > 5 && a[4].equals("--with-topic");
                killInTxn(boot, Long.parseLong(a[2]), Integer.parseInt(a[3]), with ? a[5] : null,
                    List.of(a).subList(with ? 6 : 4, a.length));
            }
            case "config" -> config(boot, a[2], List.of(a).subList(3, a.length));
            case "compacted" -> compacted(boot, a[2], Integer.parseInt(a[3]));
            default -> throw new IllegalArgumentException("unknown mode " + a[0]);
        }
    }

    static Admin admin(String boot) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        return Admin.create(p);
    }

    static void create(String boot, String[] a) throws Exception {
        List<NewTopic> topics = new ArrayList<>();
        for (int i = 2; i + 1 < a.length; i += 2) {
            topics.add(new NewTopic(a[i], Integer.parseInt(a[i + 1]), (short) 1));
        }
        try (Admin admin = admin(boot)) {
            admin.createTopics(topics).all().get();
        }
        System.out.println("OK created " + topics.stream().map(NewTopic::name).toList());
    }

    static void produce(String boot, String topic, long from, long to) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        try (KafkaProducer<String, String> producer =
                 new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (long i = from; i < to; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, "line-" + i, Words.line(i))));
            }
            for (Future<RecordMetadata> f : sent) f.get(); // any failed send fails the step
        }
        System.out.println("OK produced lines " + from + ".." + to + " to " + topic);
    }

    static Map<TopicPartition, Long> ends(Admin admin, List<String> topics) throws Exception {
        Map<String, TopicDescription> d = admin.describeTopics(topics).allTopicNames().get();
        Map<TopicPartition, OffsetSpec> req = new HashMap<>();
        d.values().forEach(t -> t.partitions().forEach(
            pi -> req.put(new TopicPartition(t.name(), pi.partition()), OffsetSpec.latest())));
        return admin.listOffsets(req).all().get().entrySet().stream()
            .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().offset()));
    }

    /**
     * Waits until the group has committed the end of every partition of the topics,
     * checked twice 1 s apart (the ends unchanged), so nothing is read and not committed.
     */
    static void quiesce(String boot, String group, int timeoutS, List<String> topics) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutS * 1000L;
        String why = "";
        Map<TopicPartition, Long> previous = null;
        try (Admin admin = admin(boot)) {
            while (System.currentTimeMillis() < deadline) {
                Map<TopicPartition, Long> end = ends(admin, topics);
                Map<TopicPartition, OffsetAndMetadata> committed =
                    admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
                List<String> behind = new ArrayList<>();
                List<Map.Entry<TopicPartition, Long>> sorted = new ArrayList<>(end.entrySet());
                sorted.sort(Map.Entry.comparingByKey(java.util.Comparator.comparing(TopicPartition::toString)));
                for (Map.Entry<TopicPartition, Long> e : sorted) {
                    OffsetAndMetadata c = committed.get(e.getKey());
                    long at = c == null ? -1 : c.offset();
                    // An empty partition needs no commit.
                    if (e.getValue() > 0 && at != e.getValue()) {
                        behind.add(e.getKey() + " committed " + at + " end " + e.getValue());
                    }
                }
                if (behind.isEmpty() && end.equals(previous)) {
                    System.out.println("OK group " + group + " committed the ends of " + topics
                        + " (" + end.values().stream().mapToLong(Long::longValue).sum() + " records)");
                    return;
                }
                previous = behind.isEmpty() ? end : null;
                why = behind.isEmpty() ? "ends still moving" : String.join("; ", behind);
                Thread.sleep(1000);
            }
        }
        System.out.println("group " + group + " did not commit the ends of " + topics + " within "
            + timeoutS + " s: " + why);
        System.exit(1);
    }

    /** One output record: the word, its count, and where it was read. */
    record Rec(String word, Long count, int partition, long offset) {}

    /** OUTPUT's records from its beginning to its end offsets, in offset order per
     *  partition (so per word: a word always goes to the same partition). */
    static List<Rec> read(String boot, String output, String isolation) throws Exception {
        List<Rec> recs = new ArrayList<>();
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        try (Admin admin = admin(boot);
             KafkaConsumer<String, Long> c = new KafkaConsumer<>(p, new StringDeserializer(), new LongDeserializer())) {
            Map<TopicPartition, Long> end = ends(admin, List.of(output));
            c.assign(end.keySet());
            c.seekToBeginning(end.keySet());
            long deadline = System.currentTimeMillis() + 60_000;
            // read_committed stops at the last stable offset: an open transaction left on
            // OUTPUT keeps the position below the end, and the read fails here.
            while (end.entrySet().stream().anyMatch(e -> c.position(e.getKey()) < e.getValue())) {
                if (System.currentTimeMillis() > deadline) {
                    Map<TopicPartition, Long> at = new TreeMap<>(java.util.Comparator.comparing(TopicPartition::toString));
                    end.keySet().forEach(tp -> at.put(tp, c.position(tp)));
                    System.out.println("output " + output + " not read (" + isolation + ") to its end " + end
                        + " within 60 s: at " + at);
                    System.exit(1);
                }
                for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(500))) {
                    recs.add(new Rec(r.key(), r.value(), r.partition(), r.offset()));
                }
            }
        }
        return recs;
    }

    /** Reads OUTPUT's committed records and checks them (see the class comment). */
    static void check(String boot, String output, long lines, String mode) throws Exception {
        List<Rec> recs = read(boot, output, "read_committed");
        String wrong = verdict(recs, lines, mode);
        if (wrong != null) {
            System.out.println(wrong);
            System.exit(1);
        }
        Map<String, Long> want = Words.expected(lines);
        long total = want.values().stream().mapToLong(Long::longValue).sum();
        String how = switch (mode) {
            case "at-least" -> "none below, " + (last(recs).values().stream().mapToLong(Long::longValue).sum() - total)
                + " counted twice";
            case "records" -> {
                // What a read_uncommitted reader sees beyond that: records of aborted
                // transactions (and of any still open), which read_committed must skip.
                long all = read(boot, output, "read_uncommitted").size();
                yield "every record exactly once, " + (all - recs.size())
                    + " aborted records skipped (read_uncommitted sees " + all + ")";
            }
            default -> "exact";
        };
        System.out.println("OK " + want.size() + " words, " + total + " in all over " + lines + " lines, "
            + how + " (" + recs.size() + " output records read)");
    }

    static Map<String, Long> last(List<Rec> recs) {
        Map<String, Long> last = new TreeMap<>();
        for (Rec r : recs) last.put(r.word(), r.count());
        return last;
    }

    /** Null when the records pass the mode's check for LINES lines, else why not, with
     *  "counted wrong" in it. */
    static String verdict(List<Rec> recs, long lines, String mode) {
        Map<String, Long> want = Words.expected(lines);
        if (mode.equals("records")) return recordsVerdict(recs, lines, want);
        Map<String, Long> last = last(recs);
        boolean atLeast = mode.equals("at-least");
        List<String> wrong = new ArrayList<>();
        TreeSet<String> words = new TreeSet<>(want.keySet());
        words.addAll(last.keySet());
        for (String w : words) {
            Long got = last.get(w), exp = want.get(w);
            boolean ok = atLeast ? got != null && exp != null && got >= exp : Objects.equals(got, exp);
            if (!ok) wrong.add(w + "=" + got + " (true " + exp + ")");
        }
        if (wrong.isEmpty()) return null;
        return wrong.size() + " of " + want.size() + " words counted wrong over " + lines + " lines ("
            + recs.size() + " output records): " + String.join(", ", wrong);
    }

    /** The records check: per word, the counts read must be 1, 2, ..., N in that order. */
    static String recordsVerdict(List<Rec> recs, long lines, Map<String, Long> want) {
        Map<String, List<Long>> seq = new TreeMap<>();
        for (Rec r : recs) seq.computeIfAbsent(r.word(), k -> new ArrayList<>()).add(r.count());
        TreeSet<String> words = new TreeSet<>(want.keySet());
        words.addAll(seq.keySet());
        long expected = want.values().stream().mapToLong(Long::longValue).sum();
        long dups = 0, missing = 0, extra = 0, unordered = 0;
        List<String> examples = new ArrayList<>();
        int wrongWords = 0;
        for (String w : words) {
            long n = want.getOrDefault(w, 0L);
            List<Long> got = seq.getOrDefault(w, List.of());
            Map<Long, Integer> times = new TreeMap<>();
            List<String> outside = new ArrayList<>();
            for (Long v : got) {
                if (v == null || v < 1 || v > n) outside.add(String.valueOf(v));
                else times.merge(v, 1, Integer::sum);
            }
            List<String> d = new ArrayList<>(), m = new ArrayList<>();
            for (long v = 1; v <= n; v++) {
                int t = times.getOrDefault(v, 0);
                if (t == 0) m.add(String.valueOf(v));
                if (t > 1) d.add(v + "(x" + t + ")");
            }
            boolean inOrder = true;
            for (int i = 0; i < got.size() && inOrder; i++) inOrder = Objects.equals(got.get(i), (long) i + 1);
            if (d.isEmpty() && m.isEmpty() && outside.isEmpty() && inOrder) continue;
            wrongWords++;
            dups += d.size();
            missing += m.size();
            extra += outside.size();
            if (d.isEmpty() && m.isEmpty() && outside.isEmpty()) unordered++;
            if (examples.size() < 5) {
                StringBuilder sb = new StringBuilder(w + " (true " + n + ", " + got.size() + " records):");
                if (!d.isEmpty()) sb.append(" duplicated ").append(few(d));
                if (!m.isEmpty()) sb.append(" missing ").append(few(m));
                if (!outside.isEmpty()) sb.append(" beyond 1..").append(n).append(' ').append(few(outside));
                if (d.isEmpty() && m.isEmpty() && outside.isEmpty()) {
                    sb.append(" out of order ").append(few(got.stream().map(String::valueOf).toList()));
                }
                examples.add(sb.toString());
            }
        }
        if (wrongWords == 0) return null;
        return wrongWords + " of " + want.size() + " words counted wrong over " + lines + " lines ("
            + recs.size() + " output records read, " + expected + " expected): " + dups + " values duplicated, "
            + missing + " missing, " + extra + " records beyond the true count, " + unordered
            + " words out of order only; e.g. " + String.join("; ", examples);
    }

    /** The first few of a list, and how many more. */
    static String few(List<String> xs) {
        return xs.size() <= 6 ? String.join(",", xs)
            : String.join(",", xs.subList(0, 6)) + ",... (" + xs.size() + ")";
    }

    /**
     * The checker of MODE fails on wrong output: OUTPUT as it is (right for LINES lines,
     * as check.sh has just checked) but judged against LINES - 1 lines; in records mode
     * also one record read twice (a duplicate leaking to the reader), and one record
     * dropped (a gap). Each must be refused with "counted wrong", naming the fault.
     */
    static void selftest(String boot, String output, long lines, String mode) throws Exception {
        List<Rec> recs = read(boot, output, "read_committed");
        Map<String, List<Rec>> variants = new LinkedHashMap<>();
        variants.put("against " + (lines - 1) + " lines", recs);
        if (mode.equals("records")) {
            Rec mid = recs.get(recs.size() / 2);
            List<Rec> dup = new ArrayList<>(recs);
            dup.add(recs.size() / 2 + 1, mid);
            variants.put("with " + mid.word() + "=" + mid.count() + " read twice", dup);
            List<Rec> gap = new ArrayList<>(recs);
            gap.remove(recs.size() / 2);
            variants.put("without " + mid.word() + "=" + mid.count(), gap);
        }
        boolean bad = false;
        StringBuilder out = new StringBuilder();
        for (Map.Entry<String, List<Rec>> v : variants.entrySet()) {
            boolean fewer = v.getKey().startsWith("against");
            String why = verdict(v.getValue(), fewer ? lines - 1 : lines, mode);
            // The fault each variant must be refused for (records mode names them with counts).
            String expect = !mode.equals("records") ? "counted wrong"
                : fewer ? "[1-9][0-9]* records beyond the true count"
                : v.getKey().contains("twice") ? "[1-9][0-9]* values duplicated" : "[1-9][0-9]* missing";
            boolean ok = why != null && why.contains("counted wrong")
                && java.util.regex.Pattern.compile(expect).matcher(why).find();
            bad |= !ok;
            out.append(ok ? "OK refused " : "NOT refused for '" + expect + "' ").append(v.getKey())
                .append(": ").append(why == null ? "accepted" : why.length() > 400 ? why.substring(0, 400) + "..." : why)
                .append('\n');
        }
        System.out.print(out);
        if (bad) System.exit(1);
    }

    /**
     * Waits (at most TIMEOUT_S) until one of TXN_IDS is Ongoing with partitions, then
     * SIGKILLs PID inside it. To make "inside" a fact and not a race against the app's
     * next commit (every 200 ms), PID is first frozen (SIGSTOP) and the transaction
     * described again once what it had sent before has landed (300 ms): if still Ongoing
     * it is the state at the kill, for a frozen process changes nothing; if not, PID
     * goes on (SIGCONT) and the wait too. 1 s after the kill the same transaction
     * (producer id, epoch, start time) must still be Ongoing: nothing but the
     * coordinator's timeout can end it now.
     */
    static void killInTxn(String boot, long pid, int timeoutS, String topic, List<String> ids) throws Exception {
        ProcessHandle victim = ProcessHandle.of(pid).filter(ProcessHandle::isAlive).orElse(null);
        if (victim == null) {
            System.out.println("process " + pid + " is not running");
            System.exit(1);
        }
        long deadline = System.currentTimeMillis() + timeoutS * 1000L;
        String seen = "nothing described";
        int polls = 0, retries = 0;
        try (Admin admin = admin(boot)) {
            while (System.currentTimeMillis() < deadline) {
                polls++;
                Map<String, String> states = new TreeMap<>();
                String open = null;
                for (String id : ids) {
                    TransactionDescription t = describe(admin, id, states);
                    if (open == null && t != null && ongoing(t, topic)) open = id;
                }
                seen = states.toString();
                if (open != null) {
                    signal(pid, "STOP");
                    Thread.sleep(300);
                    TransactionDescription at = describe(admin, open, states);
                    if (at != null && ongoing(at, topic)) {
                        long killedAt = System.currentTimeMillis();
                        signal(pid, "KILL");
                        try {
                            victim.onExit().get(10, TimeUnit.SECONDS);
                        } catch (java.util.concurrent.TimeoutException e) {
                            System.out.println("process " + pid + " still alive 10 s after SIGKILL");
                            System.exit(1);
                        }
                        Thread.sleep(1000);
                        TransactionDescription after = describe(admin, open, states);
                        String line = "transaction " + open + " " + show(at, killedAt) + " at the kill of pid " + pid
                            + " (" + polls + " polls, " + retries + " ended while frozen)";
                        if (after == null || !ongoing(after, null) || after.producerId() != at.producerId()
                            || after.producerEpoch() != at.producerEpoch()
                            || !after.transactionStartTimeMs().equals(at.transactionStartTimeMs())) {
                            System.out.println(line + ", but 1 s later it is "
                                + (after == null ? states.get(open) : show(after, killedAt))
                                + ": the kill did not leave it open");
                            System.exit(1);
                        }
                        System.out.println("OK SIGKILLed inside " + line + "; 1 s later still " + after.state());
                        return;
                    }
                    retries++;
                    signal(pid, "CONT");
                }
                Thread.sleep(50);
            }
            String all;
            try {
                all = admin.listTransactions().all().get(10, TimeUnit.SECONDS).stream()
                    .map(l -> l.transactionalId() + "=" + l.state()).sorted().toList().toString();
            } catch (Exception e) {
                all = "(ListTransactions failed: " + e + ")";
            }
            System.out.println("no transaction of " + ids + " seen Ongoing with partitions"
                + (topic == null ? "" : " of " + topic) + " within " + timeoutS
                + " s (" + polls + " polls, " + retries + " ended while frozen; last: " + seen
                + "; ListTransactions: " + all + ")");
            System.exit(1);
        }
    }

    /** Ongoing with partitions (one of TOPIC's, unless null). */
    static boolean ongoing(TransactionDescription t, String topic) {
        return t.state() == TransactionState.ONGOING && !t.topicPartitions().isEmpty()
            && (topic == null || t.topicPartitions().stream().anyMatch(tp -> tp.topic().equals(topic)));
    }

    /** The description of one transactional id, or null (its failure noted in STATES). */
    static TransactionDescription describe(Admin admin, String id, Map<String, String> states) {
        try {
            TransactionDescription t = admin.describeTransactions(List.of(id)).description(id).get(10, TimeUnit.SECONDS);
            states.put(id, t.state() + " " + t.topicPartitions().size() + " partitions");
            return t;
        } catch (Exception e) {
            states.put(id, "not described: " + (e.getCause() != null ? e.getCause() : e));
            return null;
        }
    }

    static String show(TransactionDescription t, long now) {
        List<String> parts = t.topicPartitions().stream().map(TopicPartition::toString).sorted().toList();
        return t.state() + " (producer id " + t.producerId() + " epoch " + t.producerEpoch() + ", started "
            + (t.transactionStartTimeMs().isPresent() ? (now - t.transactionStartTimeMs().getAsLong()) + " ms before"
                : "at an unknown time") + ", partitions " + parts + ")";
    }

    static void signal(long pid, String sig) throws Exception {
        Process p = new ProcessBuilder("kill", "-" + sig, Long.toString(pid)).inheritIO().start();
        if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException("kill -" + sig + " " + pid + " failed");
        }
    }

    /** One line: the topic's partition count, then KEY=value for each KEY asked. */
    /** Waits for TOPIC's compacted view: fewer records than offsets below its ends, and
     *  no key more than twice in a partition: its latest version, and the one before
     *  where the latest lies in the partition's last batch (the active tail, which
     *  compaction leaves alone, as Kafka's cleaner leaves the active segment). */
    static void compacted(String boot, String topic, int timeoutS) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutS * 1000L;
        String why = "";
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        var bytes = new org.apache.kafka.common.serialization.ByteArrayDeserializer();
        try (Admin admin = admin(boot);
             KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, bytes, bytes)) {
            while (System.currentTimeMillis() < deadline) {
                Map<TopicPartition, Long> end = ends(admin, List.of(topic));
                long offsets = end.values().stream().mapToLong(Long::longValue).sum();
                long records = 0, more = 0;
                StringBuilder partitions = new StringBuilder(); // where the versions are, for a failure
                for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
                    c.assign(List.of(e.getKey()));
                    c.seekToBeginning(List.of(e.getKey()));
                    Map<String, Integer> seen = new HashMap<>();
                    List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
                    while (c.position(e.getKey()) < e.getValue()) {
                        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                            if (r.offset() < e.getValue()) got.add(r);
                        }
                    }
                    records += got.size();
                    long firstMore = -1;
                    for (ConsumerRecord<byte[], byte[]> r : got) {
                        if (seen.merge(java.util.Arrays.toString(r.key()), 1, Integer::sum) > 2) {
                            more++;
                            if (firstMore < 0) firstMore = r.offset();
                        }
                    }
                    partitions.append("; ").append(e.getKey()).append(": ").append(got.size())
                        .append(" records below ").append(e.getValue())
                        .append(firstMore < 0 ? "" : ", a third version first at " + firstMore);
                }
                if (records < offsets && more == 0) {
                    System.out.println("OK " + topic + ": " + records + " records below " + offsets
                        + " offsets, no key more than twice");
                    return;
                }
                why = records + " records below " + offsets + " offsets, " + more + " versions past a key's second"
                    + partitions;
                Thread.sleep(1000);
            }
        }
        System.out.println(topic + " not compacted within " + timeoutS + " s: " + why);
        System.exit(1);
    }

    static void config(String boot, String topic, List<String> keys) throws Exception {
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        try (Admin admin = admin(boot)) {
            int parts = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
            Config c = admin.describeConfigs(List.of(r)).all().get().get(r);
            StringBuilder sb = new StringBuilder("partitions=" + parts);
            for (String k : keys) {
                var e = c.get(k);
                sb.append(' ').append(k).append('=').append(e == null ? "(none)" : e.value());
            }
            System.out.println(sb);
        }
    }
}
