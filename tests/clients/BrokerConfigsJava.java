// Java kafka-clients AdminClient on broker configurations, as Kafka 4.4 answers them
// (issue 34; the same check passes against Apache Kafka 4.4 in KRaft combined mode):
//   per-broker   sasl.kerberos.min.time.before.relogin (librdkafka's do_test_AlterConfigs
//                key) set on this broker and described back as DYNAMIC_BROKER_CONFIG over
//                its default; refused for every broker ("") with INVALID_REQUEST.
//   cluster      min.insync.replicas (KIP-966, ELR on): described for "" and this broker
//                as DYNAMIC_DEFAULT_BROKER_CONFIG before anyone sets it, set on "" with
//                IncrementalAlterConfigs and seen on the broker and a topic, its removal
//                and a per-broker value refused with INVALID_CONFIG and Kafka's messages.
//   refusals     a read-only configuration (INVALID_REQUEST "Cannot update these configs
//                dynamically: [...]"), validateOnly too, among them the five static ones
//                the gateway's settings set (auto.create.topics.enable, num.partitions,
//                ...), their values unchanged; a security configuration without a
//                listener prefix.
//   unknown      a name Kafka does not define is stored and described back (null value,
//                sensitive, read-only), then deleted.
//
//   usage: java_check.sh BrokerConfigsJava HOST:PORT
// Prints `PASS java-broker-configs` or exits non-zero naming the first failure.

import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidRequestException;

public class BrokerConfigsJava {
    static Admin admin;

    static void check(boolean ok, String what) {
        if (!ok) throw new IllegalStateException(what);
    }

    static <T> T get(KafkaFuture<T> f) throws Exception {
        return f.get(20, TimeUnit.SECONDS);
    }

    static ConfigEntry entry(ConfigResource r, String name) throws Exception {
        DescribeConfigsOptions o = new DescribeConfigsOptions().includeSynonyms(true).includeDocumentation(true);
        return get(admin.describeConfigs(List.of(r), o).all()).get(r).get(name);
    }

    static String synonyms(ConfigEntry e) {
        StringBuilder b = new StringBuilder();
        for (ConfigEntry.ConfigSynonym s : e.synonyms()) b.append(s.name()).append('=').append(s.value()).append(' ').append(s.source()).append(';');
        return b.toString();
    }

    /** value, source and the synonym chain, as one line. */
    static String shown(ConfigResource r, String name) throws Exception {
        ConfigEntry e = entry(r, name);
        return e == null ? "absent" : e.value() + " " + e.source() + " [" + synonyms(e) + "]";
    }

    static void alter(ConfigResource r, String name, String value, AlterConfigOp.OpType op, boolean validateOnly) throws Exception {
        AlterConfigOp change = new AlterConfigOp(new ConfigEntry(name, value), op);
        get(admin.incrementalAlterConfigs(Map.of(r, List.of(change)), new AlterConfigsOptions().validateOnly(validateOnly)).all());
    }

    static void refused(ConfigResource r, String name, String value, AlterConfigOp.OpType op, Class<?> kind, String message) throws Exception {
        for (boolean validateOnly : new boolean[] {true, false}) {
            try {
                alter(r, name, value, op, validateOnly);
                check(false, r + " " + op + " " + name + " accepted (validateOnly " + validateOnly + ")");
            } catch (ExecutionException e) {
                Throwable t = e.getCause();
                check(kind.isInstance(t) && message.equals(t.getMessage()),
                        r + " " + op + " " + name + ": " + t + ", expected " + kind.getSimpleName() + ": " + message);
            }
        }
    }

    /** Kafka applies a change through its metadata log: what is described follows
     *  within moments, so a description is awaited (up to 10 s). */
    static void expect(ConfigResource r, String name, String want) throws Exception {
        String got = shown(r, name);
        for (int i = 0; i < 100 && !got.equals(want); i++) {
            Thread.sleep(100);
            got = shown(r, name);
        }
        check(got.equals(want), r + " " + name + ": " + got + ", expected " + want);
    }

    public static void main(String[] args) throws Exception {
        try (Admin a = Admin.create(Map.of("bootstrap.servers", args[0]))) {
            admin = a;
            String id = String.valueOf(get(admin.describeCluster().nodes()).iterator().next().id());
            ConfigResource self = new ConfigResource(ConfigResource.Type.BROKER, id);
            ConfigResource every = new ConfigResource(ConfigResource.Type.BROKER, "");
            String tag = Long.toHexString(System.nanoTime());
            AlterConfigOp.OpType set = AlterConfigOp.OpType.SET, delete = AlterConfigOp.OpType.DELETE;

            // per-broker
            String relogin = "sasl.kerberos.min.time.before.relogin";
            expect(self, relogin, "60000 DEFAULT_CONFIG [" + relogin + "=60000 DEFAULT_CONFIG;]");
            alter(self, relogin, "58000", set, true);
            expect(self, relogin, "60000 DEFAULT_CONFIG [" + relogin + "=60000 DEFAULT_CONFIG;]");
            alter(self, relogin, "58000", set, false);
            expect(self, relogin,
                    "58000 DYNAMIC_BROKER_CONFIG [" + relogin + "=58000 DYNAMIC_BROKER_CONFIG;" + relogin + "=60000 DEFAULT_CONFIG;]");
            check(entry(self, relogin).type() == ConfigEntry.ConfigType.LONG && !entry(self, relogin).isReadOnly(), relogin + " type");
            refused(every, relogin, "58000", set, InvalidRequestException.class,
                    "Cannot update these configs at default cluster level, broker id must be specified: [" + relogin + "]");
            alter(self, relogin, null, delete, false);
            expect(self, relogin, "60000 DEFAULT_CONFIG [" + relogin + "=60000 DEFAULT_CONFIG;]");

            // cluster
            String isr = "min.insync.replicas";
            expect(every, isr, "1 DYNAMIC_DEFAULT_BROKER_CONFIG [" + isr + "=1 DYNAMIC_DEFAULT_BROKER_CONFIG;]");
            expect(self, isr,
                    "1 DYNAMIC_DEFAULT_BROKER_CONFIG [" + isr + "=1 DYNAMIC_DEFAULT_BROKER_CONFIG;" + isr + "=1 DEFAULT_CONFIG;]");
            alter(every, isr, "2", set, false);
            expect(self, isr,
                    "2 DYNAMIC_DEFAULT_BROKER_CONFIG [" + isr + "=2 DYNAMIC_DEFAULT_BROKER_CONFIG;" + isr + "=1 DEFAULT_CONFIG;]");
            String topic = "broker-configs-" + tag;
            get(admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all());
            ConfigResource t = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            expect(t, isr,
                    "2 DYNAMIC_DEFAULT_BROKER_CONFIG [" + isr + "=2 DYNAMIC_DEFAULT_BROKER_CONFIG;" + isr + "=1 DEFAULT_CONFIG;]");
            refused(every, isr, null, delete, InvalidConfigurationException.class,
                    "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.");
            refused(self, isr, "2", set, InvalidConfigurationException.class,
                    "Broker-level min.insync.replicas cannot be altered while ELR is enabled.");
            alter(every, isr, "1", set, false);
            expect(self, isr,
                    "1 DYNAMIC_DEFAULT_BROKER_CONFIG [" + isr + "=1 DYNAMIC_DEFAULT_BROKER_CONFIG;" + isr + "=1 DEFAULT_CONFIG;]");
            get(admin.deleteTopics(List.of(topic)).all());

            // refusals
            Map<String, String> statics = Map.of("delete.topic.enable", "false", "auto.create.topics.enable", "false",
                    "num.partitions", "7", "default.replication.factor", "3", "transaction.max.timeout.ms", "60000",
                    "transactional.id.expiration.ms", "1000");
            for (var s : statics.entrySet()) {
                String before = shown(self, s.getKey());
                for (ConfigResource r : List.of(self, every)) {
                    refused(r, s.getKey(), s.getValue(), set, InvalidRequestException.class,
                            "Cannot update these configs dynamically: [" + s.getKey() + "]");
                }
                check(entry(self, s.getKey()).isReadOnly() && shown(self, s.getKey()).equals(before),
                        s.getKey() + " changed: " + shown(self, s.getKey()) + ", was " + before);
            }
            refused(self, "ssl.keystore.location", "/x", set, InvalidRequestException.class,
                    "These security configs can be dynamically updated only per-listener using the listener prefix: [ssl.keystore.location]");

            // unknown
            String unknown = "no.such.config." + tag;
            alter(self, unknown, "1", set, false);
            expect(self, unknown, "null DYNAMIC_BROKER_CONFIG [" + unknown + "=null DYNAMIC_BROKER_CONFIG;]");
            ConfigEntry e = entry(self, unknown);
            check(e != null && e.value() == null && e.isSensitive() && e.isReadOnly()
                    && e.source() == ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG
                    && e.type() == ConfigEntry.ConfigType.UNKNOWN, "unknown: " + e);
            alter(self, unknown, null, delete, false);
            expect(self, unknown, "absent");
        }
        System.out.println("PASS java-broker-configs");
    }
}
