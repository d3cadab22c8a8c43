// Prints what a running Kafka describes for one broker (DescribeConfigs with synonyms and
// documentation), one line a configuration: name, type, read-only, sensitive, source,
// tab-separated, sorted by name. Run against Kafka 4.4 to produce
// kafka-4.4-broker-describe.tsv (generate.sh says how).
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.common.config.ConfigResource;

public class DescribeBroker {
    public static void main(String[] args) throws Exception {
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", args[0]))) {
            ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, args[1]);
            DescribeConfigsOptions all = new DescribeConfigsOptions().includeSynonyms(true).includeDocumentation(true);
            List<ConfigEntry> entries = new ArrayList<>(admin.describeConfigs(List.of(broker), all).all().get().get(broker).entries());
            entries.sort(Comparator.comparing(ConfigEntry::name));
            for (ConfigEntry e : entries) {
                System.out.println(String.join("\t", e.name(), e.type().toString(), String.valueOf(e.isReadOnly()),
                        String.valueOf(e.isSensitive()), e.source().toString()));
            }
        }
    }
}
