// Java kafka-clients AdminClient managing Kafka ACLs (issue 7), over SASL_PLAINTEXT with
// SCRAM-SHA-256 against a gateway with `authorizer = standard`, the bootstrap user a
// super user and `allow_everyone_if_no_acl_found` on (as .ci/run starts it):
//   setup      admin creates a topic and a user bob, who can write it (no ACL on it yet).
//   create     createAcls: bob ALLOW READ and DENY WRITE on the topic.
//   describe   describeAcls by the topic lists exactly those two bindings.
//   enforce    bob's producer fails with TopicAuthorizationException.
//   delete     deleteAcls by the topic removes both; bob writes again.
//
//   usage: SASL_USER=... SASL_PASSWORD=... java_check.sh AclsJava HOST:PORT (a SASL_PLAINTEXT listener)
// Prints `PASS java-acls` or exits non-zero naming the first failure.

import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.acl.*;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.StringSerializer;

public class AclsJava {
    static String bootstrap;

    static void check(boolean ok, String what) {
        if (!ok) throw new IllegalStateException(what);
    }

    static Properties props(String user, String password) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("security.protocol", "SASL_PLAINTEXT");
        p.put("sasl.mechanism", "SCRAM-SHA-256");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required"
                + " username=\"" + user + "\" password=\"" + password + "\";");
        p.put("request.timeout.ms", "10000");
        p.put("default.api.timeout.ms", "15000");
        return p;
    }

    /** Whether bob's write to the topic is acknowledged; false on TopicAuthorizationException. */
    static boolean bobWrites(String topic, String password) throws Exception {
        Properties p = props("bob-" + topic, password);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("max.block.ms", "15000");
        p.put("delivery.timeout.ms", "15000");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.send(new ProducerRecord<>(topic, "k", "from bob")).get(20, TimeUnit.SECONDS);
            return true;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof TopicAuthorizationException) return false;
            throw e;
        } catch (TopicAuthorizationException e) {
            return false;
        }
    }

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        String adminUser = System.getenv().getOrDefault("SASL_USER", "admin");
        String adminPassword = System.getenv().getOrDefault("SASL_PASSWORD", "admin-secret");
        String topic = "acls-java-" + System.currentTimeMillis();
        String bob = "bob-" + topic, password = "bob-secret";
        try (Admin admin = Admin.create(props(adminUser, adminPassword))) {
            admin.createTopics(Collections.singletonList(new NewTopic(topic, 1, (short) 1)))
                    .all().get(15, TimeUnit.SECONDS);
            admin.alterUserScramCredentials(Collections.singletonList(new UserScramCredentialUpsertion(
                    bob, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), password)))
                    .all().get(15, TimeUnit.SECONDS);
            check(bobWrites(topic, password), "setup: bob could not write a topic without ACLs");

            ResourcePattern resource = new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL);
            List<AclBinding> bindings = Arrays.asList(
                    new AclBinding(resource, new AccessControlEntry("User:" + bob, "*", AclOperation.READ, AclPermissionType.ALLOW)),
                    new AclBinding(resource, new AccessControlEntry("User:" + bob, "*", AclOperation.WRITE, AclPermissionType.DENY)));
            admin.createAcls(bindings).all().get(15, TimeUnit.SECONDS);

            AclBindingFilter byTopic = new AclBindingFilter(
                    new ResourcePatternFilter(ResourceType.TOPIC, topic, PatternType.LITERAL),
                    AccessControlEntryFilter.ANY);
            Collection<AclBinding> described = admin.describeAcls(byTopic).values().get(15, TimeUnit.SECONDS);
            check(new HashSet<>(described).equals(new HashSet<>(bindings)), "describe: " + described);

            check(!bobWrites(topic, password), "enforce: bob wrote despite DENY WRITE");

            Collection<AclBinding> deleted = admin.deleteAcls(Collections.singletonList(byTopic))
                    .all().get(15, TimeUnit.SECONDS);
            check(deleted.size() == 2, "delete: removed " + deleted);
            check(admin.describeAcls(byTopic).values().get(15, TimeUnit.SECONDS).isEmpty(),
                    "delete: bindings still described");
            check(bobWrites(topic, password), "delete: bob still refused once the ACLs are gone");
        } catch (Exception e) {
            System.err.println("FAIL java-acls: " + e);
            System.exit(1);
        }
        System.out.println("PASS java-acls");
    }
}
