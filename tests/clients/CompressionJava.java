// Java kafka-clients producer and consumer of every codec:
//   For each of gzip, snappy, lz4 and zstd, a topic of one partition gets 3,000 records
//   from a producer compressing with it (keys, a header, values of 10 B to 2 KiB, text
//   that compresses and bytes that barely do); a consumer from the start must read
//   every record exactly, in order. On Iggy, with `iggy_kept_compressed_bytes=0`, the
//   gateway compresses every batch it serves itself (tests/iggy_backend/records.rs).
//
//   usage: java_check.sh CompressionJava HOST:PORT
// Prints `PASS java-compression` or exits non-zero with the first mismatch.

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class CompressionJava {
    static final int RECORDS = 3_000;

    static void check(boolean ok, String what) {
        if (!ok) throw new IllegalStateException(what);
    }

    /** Record i's value: text that compresses, or letters that barely do, 10 B to 2 KiB. */
    static byte[] value(int i) {
        int size = 10 + (i * 7919) % 2038;
        byte[] v = new byte[size];
        if (i % 2 == 0) {
            byte[] text = ("{\"record\":" + i + ",\"note\":\"lorem ipsum dolor sit amet\"} ")
                    .getBytes(StandardCharsets.UTF_8);
            for (int j = 0; j < size; j++) v[j] = text[j % text.length];
        } else {
            int x = 0x9E3779B9 ^ i;
            for (int j = 0; j < size; j++) {
                x ^= x << 13;
                x ^= x >>> 17;
                x ^= x << 5;
                v[j] = (byte) ('A' + Math.floorMod(x, 26));
            }
        }
        return v;
    }

    static byte[] key(int i) {
        return ("key-" + i).getBytes(StandardCharsets.UTF_8);
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String[] codecs = {"gzip", "snappy", "lz4", "zstd"};
        Properties admin = new Properties();
        admin.put("bootstrap.servers", bootstrap);
        try (Admin a = Admin.create(admin)) {
            List<NewTopic> topics = new ArrayList<>();
            for (String codec : codecs) topics.add(new NewTopic("compression-java-" + codec, 1, (short) 1));
            a.createTopics(topics).all().get(30, TimeUnit.SECONDS);
        }
        for (String codec : codecs) {
            String topic = "compression-java-" + codec;
            Properties props = new Properties();
            props.put("bootstrap.servers", bootstrap);
            props.put("compression.type", codec);
            props.put("linger.ms", "20");
            props.put("batch.size", "262144");
            try (KafkaProducer<byte[], byte[]> p =
                    new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer())) {
                List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
                for (int i = 0; i < RECORDS; i++) {
                    ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, 0, key(i), value(i));
                    r.headers().add("codec", codec.getBytes(StandardCharsets.UTF_8));
                    sent.add(p.send(r));
                }
                for (var f : sent) f.get(30, TimeUnit.SECONDS);
            }
            Properties c = new Properties();
            c.put("bootstrap.servers", bootstrap);
            c.put("enable.auto.commit", "false");
            int got = 0;
            try (KafkaConsumer<byte[], byte[]> consumer =
                    new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
                TopicPartition tp = new TopicPartition(topic, 0);
                consumer.assign(List.of(tp));
                consumer.seekToBeginning(List.of(tp));
                long end = System.nanoTime() + Duration.ofSeconds(40).toNanos();
                while (got < RECORDS && System.nanoTime() < end) {
                    for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                        String at = codec + " offset " + r.offset();
                        check(r.offset() == got, at + " arrived, expected offset " + got);
                        check(Arrays.equals(r.key(), key(got)), at + ": another key");
                        check(Arrays.equals(r.value(), value(got)), at + ": another value");
                        var h = r.headers().lastHeader("codec");
                        check(h != null && codec.equals(new String(h.value(), StandardCharsets.UTF_8)), at + ": header");
                        got++;
                    }
                }
            }
            check(got == RECORDS, codec + ": consumed " + got + " records, expected " + RECORDS);
            System.out.println(codec + ": " + RECORDS + " records read back exactly");
        }
        System.out.println("PASS java-compression");
    }
}
