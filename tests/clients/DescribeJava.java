// Java kafka-clients AdminClient reading what `kafka-topics --describe` and
// `kafka-log-dirs` read (issue 17):
//   apis       a raw ApiVersions v0 request: DescribeTopicPartitions (75) v0 and
//              DescribeLogDirs (35) v1-5 advertised, so the client uses them.
//   topics     describeTopics with partitionSizeLimitPerResponse 2 of a 5- and a
//              3-partition topic: every partition once, in order, the ids listTopics
//              gives, leaders among describeCluster's nodes; the requests sent show the
//              cursor was followed (DescribeTopicPartitions: describeCluster, then a page
//              of two partitions a request; Metadata would take one request for all).
//   health     kafka-topics' --under-replicated-partitions, --under-min-isr-partitions,
//              --unavailable-partitions and --at-min-isr-partitions, computed as
//              TopicCommand computes them over every topic (internal ones too), from
//              describeTopics, describeConfigs' min.insync.replicas and the live nodes:
//              the first three empty; at-min-isr every partition, as a Kafka cluster
//              answers for partitions of one replica with min.insync.replicas 1.
//   logdirs    describeLogDirs of the broker: one directory, volume bytes unknown, each
//              partition's size (more for the partition with more records, 0 for an
//              empty one), no lag, no future replica; describeReplicaLogDirs of one
//              partition names the same directory.
//   missing    describeTopics of a missing topic: UnknownTopicOrPartitionException.
//   denied     with SASL_BOOTSTRAP, SASL_USER/SASL_PASSWORD (a super user) and
//              AUTHORIZER=standard: a user denied DESCRIBE on the cluster and on a topic
//              gets ClusterAuthorizationException from describeLogDirs and
//              TopicAuthorizationException from describeTopics. Skipped (said) without
//              them, failed with CLIENTS_NO_SKIP=1.
//
//   usage: java_check.sh DescribeJava HOST:PORT   (a PLAINTEXT listener)
// Prints `PASS java-describe` or exits non-zero naming the first failure.

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.net.Socket;
import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.acl.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.StringSerializer;

public class DescribeJava {
    static String bootstrap;
    static String tag;
    static Admin admin;

    static void check(boolean ok, String what) {
        if (!ok) throw new IllegalStateException(what);
    }

    static <T> T get(KafkaFuture<T> f) throws Exception {
        return f.get(20, TimeUnit.SECONDS);
    }

    /** The exception a future failed with. */
    static Throwable failure(KafkaFuture<?> f) throws Exception {
        try {
            f.get(20, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            return e.getCause();
        }
        throw new IllegalStateException("expected a failure, got success");
    }

    /** ApiVersions v0 by hand: each key's (min, max). */
    static Map<Integer, int[]> apiVersions() throws Exception {
        String[] hostPort = bootstrap.split(":");
        try (Socket s = new Socket(hostPort[0], Integer.parseInt(hostPort[1]))) {
            s.setSoTimeout(10_000);
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            byte[] client = "describe-java".getBytes("UTF-8");
            out.writeInt(2 + 2 + 4 + 2 + client.length);
            out.writeShort(18); // ApiVersions
            out.writeShort(0);
            out.writeInt(7); // correlation id
            out.writeShort(client.length);
            out.write(client);
            out.flush();
            DataInputStream in = new DataInputStream(s.getInputStream());
            in.readInt(); // size
            check(in.readInt() == 7, "apis: correlation id");
            check(in.readShort() == 0, "apis: ApiVersions error");
            Map<Integer, int[]> apis = new HashMap<>();
            for (int n = in.readInt(); n > 0; n--) {
                apis.put((int) in.readShort(), new int[] {in.readShort(), in.readShort()});
            }
            return apis;
        }
    }

    static void apis() throws Exception {
        Map<Integer, int[]> apis = apiVersions();
        check(Arrays.equals(apis.get(75), new int[] {0, 0}), "DescribeTopicPartitions " + Arrays.toString(apis.get(75)));
        check(Arrays.equals(apis.get(35), new int[] {1, 5}), "DescribeLogDirs " + Arrays.toString(apis.get(35)));
    }

    static double requestsSent() {
        for (Map.Entry<org.apache.kafka.common.MetricName, ? extends Metric> m : admin.metrics().entrySet()) {
            if (m.getKey().name().equals("request-total") && m.getKey().group().equals("admin-client-metrics")) {
                return (Double) m.getValue().metricValue();
            }
        }
        throw new IllegalStateException("no admin-client-metrics request-total");
    }

    static Set<Integer> liveNodes() throws Exception {
        Set<Integer> ids = new HashSet<>();
        for (Node n : get(admin.describeCluster().nodes())) ids.add(n.id());
        return ids;
    }

    static void produce(String topic, int partition, int records) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("max.block.ms", "15000");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < records; i++) {
                producer.send(new ProducerRecord<>(topic, partition, "k" + i, "value " + i)).get(20, TimeUnit.SECONDS);
            }
        }
    }

    static void topics(String five, String three) throws Exception {
        Map<String, TopicListing> listed = get(admin.listTopics().namesToListings());
        Set<Integer> live = liveNodes();
        double before = requestsSent();
        Map<String, TopicDescription> d = get(admin.describeTopics(List.of(five, three),
                new DescribeTopicsOptions().partitionSizeLimitPerResponse(2)).allTopicNames());
        double sent = requestsSent() - before;
        // describeCluster, then pages of two: (five 0-1), (five 2-3), (five 4, three 0), (three 1-2).
        check(sent >= 5, "topics: " + sent + " requests sent: the cursor was not followed (Metadata used?)");
        for (var t : Map.of(five, 5, three, 3).entrySet()) {
            TopicDescription td = d.get(t.getKey());
            check(td != null && !td.isInternal(), "topics: " + td);
            check(td.topicId().equals(listed.get(t.getKey()).topicId()), "topics: id of " + td);
            List<Integer> partitions = new ArrayList<>();
            for (TopicPartitionInfo p : td.partitions()) {
                partitions.add(p.partition());
                check(p.leader() != null && live.contains(p.leader().id()), "topics: leader of " + p);
                check(p.replicas().equals(List.of(p.leader())) && p.isr().equals(p.replicas()), "topics: replicas of " + p);
            }
            List<Integer> expected = new ArrayList<>();
            for (int i = 0; i < t.getValue(); i++) expected.add(i);
            check(partitions.equals(expected), "topics: partitions of " + t.getKey() + ": " + partitions);
        }
    }

    static void health() throws Exception {
        Set<String> all = get(admin.listTopics(new ListTopicsOptions().listInternal(true)).names());
        check(all.contains("__consumer_offsets"), "health: internal topic not listed");
        Map<String, TopicDescription> d = get(admin.describeTopics(all,
                new DescribeTopicsOptions().partitionSizeLimitPerResponse(2000)).allTopicNames());
        List<ConfigResource> resources = new ArrayList<>();
        for (String t : all) resources.add(new ConfigResource(ConfigResource.Type.TOPIC, t));
        Map<ConfigResource, Config> configs = get(admin.describeConfigs(resources).all());
        Set<Integer> live = liveNodes();
        List<String> underReplicated = new ArrayList<>(), underMinIsr = new ArrayList<>(),
                unavailable = new ArrayList<>(), atMinIsr = new ArrayList<>();
        int partitions = 0;
        for (TopicDescription td : d.values()) {
            ConfigEntry minIsrEntry = configs.get(new ConfigResource(ConfigResource.Type.TOPIC, td.name())).get("min.insync.replicas");
            check(minIsrEntry != null, "health: no min.insync.replicas for " + td.name());
            int minIsr = Integer.parseInt(minIsrEntry.value());
            for (TopicPartitionInfo p : td.partitions()) {
                String at = td.name() + "-" + p.partition();
                partitions++;
                // TopicCommand.PartitionDescription's predicates.
                if (p.replicas().size() - p.isr().size() > 0) underReplicated.add(at);
                if (p.leader() == null || p.isr().size() < minIsr) underMinIsr.add(at);
                if (p.leader() == null || !live.contains(p.leader().id())) unavailable.add(at);
                if (minIsr == p.isr().size()) atMinIsr.add(at);
            }
        }
        check(partitions >= 50 + 8, "health: " + partitions + " partitions described");
        check(underReplicated.isEmpty(), "health: under-replicated " + underReplicated);
        check(underMinIsr.isEmpty(), "health: under min ISR " + underMinIsr);
        check(unavailable.isEmpty(), "health: unavailable " + unavailable);
        check(atMinIsr.size() == partitions, "health: at min ISR " + atMinIsr.size() + " of " + partitions);
    }

    static void logDirs(String five, String three) throws Exception {
        int broker = liveNodes().iterator().next();
        Map<String, LogDirDescription> dirs = get(admin.describeLogDirs(List.of(broker)).allDescriptions()).get(broker);
        check(dirs != null && dirs.size() == 1, "logdirs: " + dirs);
        String dir = dirs.keySet().iterator().next();
        LogDirDescription desc = dirs.get(dir);
        check(desc.error() == null, "logdirs: error " + desc.error());
        check(!desc.totalBytes().isPresent() && !desc.usableBytes().isPresent(), "logdirs: volume " + desc);
        Map<TopicPartition, ReplicaInfo> replicas = desc.replicaInfos();
        for (var r : replicas.entrySet()) {
            check(r.getValue().offsetLag() == 0 && !r.getValue().isFuture(), "logdirs: " + r);
        }
        long big = replicas.get(new TopicPartition(five, 0)).size();
        long small = replicas.get(new TopicPartition(five, 1)).size();
        long empty = replicas.get(new TopicPartition(three, 2)).size();
        check(big > small && small > 0 && empty == 0, "logdirs: sizes " + big + ", " + small + ", " + empty);
        for (int p = 0; p < 50; p++) {
            ReplicaInfo offsets = replicas.get(new TopicPartition("__consumer_offsets", p));
            check(offsets != null && offsets.size() == 0, "logdirs: __consumer_offsets-" + p + " " + offsets);
        }
        TopicPartitionReplica replica = new TopicPartitionReplica(five, 0, broker);
        DescribeReplicaLogDirsResult.ReplicaLogDirInfo info = get(admin.describeReplicaLogDirs(List.of(replica)).all()).get(replica);
        check(dir.equals(info.getCurrentReplicaLogDir()) && info.getCurrentReplicaOffsetLag() == 0, "replica log dir " + info);
    }

    static void missing() throws Exception {
        Throwable e = failure(admin.describeTopics(List.of("missing-" + tag)).allTopicNames());
        check(e instanceof UnknownTopicOrPartitionException, "missing: " + e);
    }

    static Properties sasl(String user, String password) {
        Properties p = new Properties();
        p.put("bootstrap.servers", System.getenv("SASL_BOOTSTRAP"));
        p.put("security.protocol", "SASL_PLAINTEXT");
        p.put("sasl.mechanism", "SCRAM-SHA-256");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required"
                + " username=\"" + user + "\" password=\"" + password + "\";");
        p.put("request.timeout.ms", "10000");
        p.put("default.api.timeout.ms", "15000");
        return p;
    }

    static void denied(String topic) throws Exception {
        String saslUser = System.getenv().getOrDefault("SASL_USER", "admin");
        String saslPassword = System.getenv().getOrDefault("SASL_PASSWORD", "admin-secret");
        String carol = "carol-" + tag, password = "carol-secret";
        List<AclBinding> denials = List.of(
                new AclBinding(new ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL),
                        new AccessControlEntry("User:" + carol, "*", AclOperation.DESCRIBE, AclPermissionType.DENY)),
                new AclBinding(new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
                        new AccessControlEntry("User:" + carol, "*", AclOperation.DESCRIBE, AclPermissionType.DENY)));
        try (Admin root = Admin.create(sasl(saslUser, saslPassword))) {
            get(root.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(
                    carol, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), password))).all());
            get(root.createAcls(denials).all());
            try (Admin as = Admin.create(sasl(carol, password))) {
                int broker = liveNodes().iterator().next();
                Throwable logDirs = failure(as.describeLogDirs(List.of(broker)).allDescriptions());
                check(logDirs instanceof ClusterAuthorizationException, "denied: describeLogDirs " + logDirs);
                Throwable topics = failure(as.describeTopics(List.of(topic)).allTopicNames());
                check(topics instanceof TopicAuthorizationException, "denied: describeTopics " + topics);
            } finally {
                get(root.deleteAcls(List.of(denials.get(0).toFilter(), denials.get(1).toFilter())).all());
                get(root.alterUserScramCredentials(List.of(new UserScramCredentialDeletion(carol, ScramMechanism.SCRAM_SHA_256))).all());
            }
        }
    }

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        tag = UUID.randomUUID().toString().substring(0, 8);
        String five = "described-five-" + tag, three = "described-three-" + tag;
        String step = "";
        try (Admin a = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            admin = a;
            step = "apis"; apis();
            get(admin.createTopics(List.of(new NewTopic(five, 5, (short) 1), new NewTopic(three, 3, (short) 1))).all());
            produce(five, 0, 20);
            produce(five, 1, 2);
            step = "topics"; topics(five, three);
            step = "health"; health();
            step = "logdirs"; logDirs(five, three);
            step = "missing"; missing();
            step = "denied";
            boolean secured = "standard".equals(System.getenv("AUTHORIZER")) && System.getenv("SASL_BOOTSTRAP") != null;
            if (secured) {
                denied(three);
            } else if ("1".equals(System.getenv("CLIENTS_NO_SKIP"))) {
                throw new IllegalStateException("needs SASL_BOOTSTRAP and AUTHORIZER=standard (CLIENTS_NO_SKIP=1)");
            } else {
                System.out.println("java-describe: denied skipped (no SASL_BOOTSTRAP with AUTHORIZER=standard)");
            }
            get(admin.deleteTopics(List.of(five, three)).all());
        } catch (Exception e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            System.err.println("FAIL java-describe (" + step + "): " + e + (cause != e ? " (cause: " + cause + ")" : ""));
            System.exit(1);
        }
        System.out.println("PASS java-describe");
        System.exit(0);
    }
}
