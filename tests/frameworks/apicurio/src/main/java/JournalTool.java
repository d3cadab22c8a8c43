import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * What check.sh asks a gateway about Apicurio's topics, with the plain Java client:
 *   configs BOOTSTRAP TOPIC   the topic's configs that are not defaults: name=value (SOURCE)
 *   end     BOOTSTRAP TOPIC   the sum of its partitions' end offsets
 *   records BOOTSTRAP TOPIC   every record from the beginning to the end offsets, one line
 *                             each: offset, the key, and the value (null for a tombstone),
 *                             tab-separated, newlines in them escaped
 */
public class JournalTool {
    public static void main(String[] a) throws Exception {
        switch (a[0]) {
            case "configs" -> configs(a[1], a[2]);
            case "end" -> end(a[1], a[2]);
            case "records" -> records(a[1], a[2]);
            default -> throw new IllegalArgumentException("unknown command " + a[0]);
        }
    }

    static void configs(String bootstrap, String topic) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20000);
        try (Admin admin = Admin.create(p)) {
            ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Config c = admin.describeConfigs(List.of(r)).all().get(20, TimeUnit.SECONDS).get(r);
            c.entries().stream().filter(e -> e.source() != ConfigEntry.ConfigSource.DEFAULT_CONFIG)
                .map(e -> e.name() + "=" + e.value() + " (" + e.source() + ")").sorted()
                .forEach(System.out::println);
        }
    }

    static KafkaConsumer<String, String> consumer(String bootstrap) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        return new KafkaConsumer<>(p);
    }

    static List<TopicPartition> partitions(KafkaConsumer<String, String> c, String topic) {
        List<TopicPartition> tps = new ArrayList<>();
        c.partitionsFor(topic, Duration.ofSeconds(20)).forEach(i -> tps.add(new TopicPartition(topic, i.partition())));
        return tps;
    }

    static void end(String bootstrap, String topic) {
        try (KafkaConsumer<String, String> c = consumer(bootstrap)) {
            Map<TopicPartition, Long> end = c.endOffsets(partitions(c, topic), Duration.ofSeconds(20));
            System.out.println(end.values().stream().mapToLong(Long::longValue).sum());
        }
    }

    static String escaped(String s) {
        return s == null ? "null" : s.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t");
    }

    static void records(String bootstrap, String topic) {
        try (KafkaConsumer<String, String> c = consumer(bootstrap)) {
            List<TopicPartition> tps = partitions(c, topic);
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps, Duration.ofSeconds(20));
            long deadline = System.currentTimeMillis() + 20000;
            while (tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("records: not at the end offsets " + end + " after 20 s");
                }
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    System.out.println(r.offset() + "\t" + escaped(r.key()) + "\t" + escaped(r.value()));
                }
            }
        }
    }
}
