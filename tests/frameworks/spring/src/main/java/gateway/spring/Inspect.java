package gateway.spring;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;

/**
 * What a plain Admin client sees after a run, one fact a line, for check.sh:
 *   topic NAME partitions N retention.ms V max.message.bytes V
 *   end TOPIC PARTITION OFFSET
 *   committed GROUP TOPIC PARTITION OFFSET
 *   group GROUP state STATE members N
 * Usage: Inspect BOOTSTRAP TOPIC,TOPIC... GROUP,GROUP...
 * Inspect --apis HOST:PORT prints "api KEY MIN MAX" for each API the broker advertises
 * (an ApiVersions v0 request: the Admin client does not expose them), so check.sh can
 * tell whether KIP-848's ConsumerGroupHeartbeat (68) is served.
 */
public final class Inspect {
    private static void apis(String address) throws Exception {
        int colon = address.lastIndexOf(':');
        try (Socket socket = new Socket(address.substring(0, colon), Integer.parseInt(address.substring(colon + 1)))) {
            socket.setSoTimeout(10_000);
            byte[] client = "spring-check".getBytes(StandardCharsets.UTF_8);
            DataOutputStream out = new DataOutputStream(socket.getOutputStream());
            // Request header v1: api key, version, correlation id, client id.
            out.writeInt(2 + 2 + 4 + 2 + client.length);
            out.writeShort(18);
            out.writeShort(0);
            out.writeInt(1);
            out.writeShort(client.length);
            out.write(client);
            out.flush();
            DataInputStream in = new DataInputStream(socket.getInputStream());
            in.readInt(); // size
            in.readInt(); // correlation id
            short error = in.readShort();
            if (error != 0) {
                throw new IllegalStateException("ApiVersions v0 answered error " + error);
            }
            int n = in.readInt();
            for (int i = 0; i < n; i++) {
                System.out.printf("api %d %d %d%n", in.readShort(), in.readShort(), in.readShort());
            }
        }
    }

    private static <V> Map<TopicPartition, V> sorted(Map<TopicPartition, V> m) {
        Map<TopicPartition, V> s = new TreeMap<>(Comparator.comparing(TopicPartition::topic)
                .thenComparingInt(TopicPartition::partition));
        s.putAll(m);
        return s;
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("--apis")) {
            apis(args[1]);
            return;
        }
        List<String> topics = List.of(args[1].split(","));
        List<String> groups = List.of(args[2].split(","));
        Map<String, Object> conf = Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0],
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 15_000,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000);
        try (Admin admin = Admin.create(conf)) {
            Map<String, TopicDescription> described = admin.describeTopics(topics).allTopicNames()
                    .get(30, TimeUnit.SECONDS);
            Map<ConfigResource, Config> configs = admin.describeConfigs(topics.stream()
                    .map(t -> new ConfigResource(ConfigResource.Type.TOPIC, t)).toList()).all()
                    .get(30, TimeUnit.SECONDS);
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (String t : topics) {
                Config c = configs.get(new ConfigResource(ConfigResource.Type.TOPIC, t));
                System.out.printf("topic %s partitions %d retention.ms %s max.message.bytes %s%n", t,
                        described.get(t).partitions().size(), c.get("retention.ms").value(),
                        c.get("max.message.bytes").value());
                described.get(t).partitions().forEach(p -> latest.put(new TopicPartition(t, p.partition()),
                        OffsetSpec.latest()));
            }
            sorted(admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS)).forEach((tp, o) ->
                    System.out.printf("end %s %d %d%n", tp.topic(), tp.partition(), o.offset()));
            for (String g : groups) {
                Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(g)
                        .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
                sorted(committed).forEach((tp, o) -> System.out.printf("committed %s %s %d %d%n", g,
                        tp.topic(), tp.partition(), o == null ? -1 : o.offset()));
            }
            Map<String, ConsumerGroupDescription> desc = admin.describeConsumerGroups(groups).all()
                    .get(30, TimeUnit.SECONDS);
            for (String g : groups) {
                System.out.printf("group %s state %s members %d%n", g, desc.get(g).groupState(),
                        desc.get(g).members().size());
            }
        }
    }
}
