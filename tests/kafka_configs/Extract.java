// Prints every broker configuration Kafka defines, one JSON object a line, from the Kafka
// jars on the classpath (see generate.sh): each key of KafkaConfig's ConfigDef (name,
// type, default as Kafka prints it, validator, importance, documentation, internal) with
// its dynamic update mode from DynamicBrokerConfig (read-only, per-broker, cluster-wide;
// per-listener for the security configurations Kafka only takes with a listener prefix),
// then the dynamic broker configurations that are not KafkaConfig keys
// (DynamicConfig.Broker's, such as the replication throttle rates).
import java.lang.reflect.Field;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.server.config.DynamicBrokerConfig;
import org.apache.kafka.server.config.DynamicConfig;

public class Extract {
    static String json(Object o) {
        if (o == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : o.toString().toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static void print(ConfigDef.ConfigKey k, String mode) {
        String dflt = k.hasDefault() && k.defaultValue != null
                ? ConfigDef.convertToString(k.defaultValue, k.type) : null;
        System.out.println("{\"name\":" + json(k.name) + ",\"type\":" + json(k.type)
                + ",\"default\":" + json(dflt) + ",\"validator\":" + json(k.validator)
                + ",\"importance\":" + json(k.importance) + ",\"internal\":" + k.internalConfig
                + ",\"mode\":" + json(mode) + ",\"doc\":" + json(k.documentation) + "}");
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> modes = DynamicBrokerConfig.dynamicConfigUpdateModes();
        Set<String> perListener = DynamicBrokerConfig.DYNAMIC_SECURITY_CONFIGS;
        Map<String, ConfigDef.ConfigKey> keys =
                new TreeMap<>(kafka.server.KafkaConfig$.MODULE$.configDef().configKeys());
        for (ConfigDef.ConfigKey k : keys.values()) {
            String mode = perListener.contains(k.name) ? "per-listener"
                    : modes.getOrDefault(k.name, "read-only");
            print(k, mode);
        }
        for (ConfigDef.ConfigKey k : new TreeMap<>(DynamicConfig.Broker.configKeys()).values()) {
            if (!keys.containsKey(k.name)) print(k, modes.getOrDefault(k.name, "read-only"));
        }
    }
}
