// Java kafka-clients over SASL_PLAINTEXT with SCRAM-SHA-256 (issue 7):
//   admin      the bootstrap user (SASL_USER / SASL_PASSWORD, default admin/admin-secret)
//              logs in; alterUserScramCredentials adds a user with SCRAM-SHA-256 and
//              SCRAM-SHA-512 as `kafka-configs --add-config` does; describeUserScramCredentials
//              lists its mechanisms and iterations, and a missing user as not found.
//   login      the new user creates a topic, produces and consumes three records.
//   refusals   a wrong password fails with SaslAuthenticationException; too few iterations
//              with UnacceptableCredentialException.
//   delete     the SCRAM-SHA-256 credential deleted: that login fails, describe shows 512 only.
//
//   usage: SASL_USER=... SASL_PASSWORD=... java_check.sh ScramJava HOST:PORT (a SASL_PLAINTEXT listener)
// Prints `PASS java-scram` or exits non-zero naming the first failure.

import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ResourceNotFoundException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.UnacceptableCredentialException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ScramJava {
    static String bootstrap;

    static void check(boolean ok, String what) {
        if (!ok) throw new IllegalStateException(what);
    }

    static Properties props(String mechanism, String user, String password) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("security.protocol", "SASL_PLAINTEXT");
        p.put("sasl.mechanism", mechanism);
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required"
                + " username=\"" + user + "\" password=\"" + password + "\";");
        p.put("request.timeout.ms", "10000");
        p.put("default.api.timeout.ms", "15000");
        return p;
    }

    static Throwable cause(Exception e) {
        return e instanceof ExecutionException ? e.getCause() : e;
    }

    static Map<String, List<ScramCredentialInfo>> described(Admin admin, String... users) throws Exception {
        Map<String, List<ScramCredentialInfo>> out = new TreeMap<>();
        DescribeUserScramCredentialsResult r = admin.describeUserScramCredentials(Arrays.asList(users));
        for (String u : users) {
            try {
                out.put(u, r.description(u).get(15, TimeUnit.SECONDS).credentialInfos());
            } catch (ExecutionException e) {
                check(e.getCause() instanceof ResourceNotFoundException, u + ": " + e.getCause());
            }
        }
        return out;
    }

    static String mechanisms(List<ScramCredentialInfo> infos) {
        List<String> out = new ArrayList<>();
        for (ScramCredentialInfo i : infos) out.add(i.mechanism() + ":" + i.iterations());
        Collections.sort(out);
        return String.join(",", out);
    }

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        String adminUser = System.getenv().getOrDefault("SASL_USER", "admin");
        String adminPassword = System.getenv().getOrDefault("SASL_PASSWORD", "admin-secret");
        String tag = Long.toString(System.nanoTime(), 36);
        String user = "java-" + tag;
        String password = "java-pass-" + tag;
        try (Admin admin = Admin.create(props("SCRAM-SHA-256", adminUser, adminPassword))) {
            admin.alterUserScramCredentials(Arrays.asList(
                    new UserScramCredentialUpsertion(user, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), password),
                    new UserScramCredentialUpsertion(user, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), password)))
                .all().get(15, TimeUnit.SECONDS);
            check(false, "two alterations of one user in one request were accepted");
        } catch (ExecutionException e) {
            // Kafka refuses a user altered twice in one request (DUPLICATE_RESOURCE).
            check(e.getCause().getClass().getSimpleName().equals("DuplicateResourceException"), "twice: " + e.getCause());
        }
        try (Admin admin = Admin.create(props("SCRAM-SHA-256", adminUser, adminPassword))) {
            admin.alterUserScramCredentials(Collections.singletonList(
                    new UserScramCredentialUpsertion(user, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), password)))
                .all().get(15, TimeUnit.SECONDS);
            admin.alterUserScramCredentials(Collections.singletonList(
                    new UserScramCredentialUpsertion(user, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), password)))
                .all().get(15, TimeUnit.SECONDS);
            Map<String, List<ScramCredentialInfo>> d = described(admin, user, "nobody-" + tag);
            check(d.size() == 1 && mechanisms(d.get(user)).equals("SCRAM_SHA_256:8192,SCRAM_SHA_512:4096"),
                    "describe: " + d);
            try {
                admin.alterUserScramCredentials(Collections.singletonList(
                        new UserScramCredentialUpsertion("few-" + tag, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 1024), "x")))
                    .all().get(15, TimeUnit.SECONDS);
                check(false, "1024 iterations accepted");
            } catch (ExecutionException e) {
                check(e.getCause() instanceof UnacceptableCredentialException, "iterations: " + e.getCause());
            }
        }

        String topic = "java-scram-" + tag;
        try (Admin admin = Admin.create(props("SCRAM-SHA-256", user, password))) {
            admin.createTopics(Collections.singletonList(new NewTopic(topic, 1, (short) 1))).all().get(15, TimeUnit.SECONDS);
        }
        Properties pp = props("SCRAM-SHA-256", user, password);
        pp.put("key.serializer", StringSerializer.class.getName());
        pp.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            for (int i = 0; i < 3; i++) producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i)).get(15, TimeUnit.SECONDS);
        }
        Properties cp = props("SCRAM-SHA-256", user, password);
        cp.put("key.deserializer", StringDeserializer.class.getName());
        cp.put("value.deserializer", StringDeserializer.class.getName());
        cp.put("enable.auto.commit", "false");
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(Collections.singletonList(tp));
            consumer.seekToBeginning(Collections.singletonList(tp));
            long deadline = System.currentTimeMillis() + 20_000;
            while (got.size() < 3 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) got.add(r.value());
            }
        }
        check(got.equals(Arrays.asList("v0", "v1", "v2")), "consumed " + got);

        try (Admin wrong = Admin.create(props("SCRAM-SHA-256", user, "not-" + password))) {
            wrong.listTopics().names().get(15, TimeUnit.SECONDS);
            check(false, "a wrong password listed topics");
        } catch (ExecutionException e) {
            check(e.getCause() instanceof SaslAuthenticationException, "wrong password: " + e.getCause());
        }

        try (Admin admin = Admin.create(props("SCRAM-SHA-256", adminUser, adminPassword))) {
            admin.alterUserScramCredentials(Collections.singletonList(
                    new UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256)))
                .all().get(15, TimeUnit.SECONDS);
            check(mechanisms(described(admin, user).get(user)).equals("SCRAM_SHA_512:4096"), "after deletion");
        }
        try (Admin gone = Admin.create(props("SCRAM-SHA-256", user, password))) {
            gone.listTopics().names().get(15, TimeUnit.SECONDS);
            check(false, "a deleted credential still logs in");
        } catch (ExecutionException e) {
            check(e.getCause() instanceof SaslAuthenticationException, "deleted: " + e.getCause());
        }
        try (Admin other = Admin.create(props("SCRAM-SHA-512", user, password))) {
            other.listTopics().names().get(15, TimeUnit.SECONDS);
        }
        System.out.println("PASS java-scram");
    }
}
