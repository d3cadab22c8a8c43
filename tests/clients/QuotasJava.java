// Java kafka-clients AdminClient managing client quotas (KIP-546) the way
// `kafka-configs --entity-type clients|users` does (issue 7):
//   alter      alterClientQuotas: producer_byte_rate and consumer_byte_rate for a client id
//              (`--entity-name X --add-config ...`), request_percentage for the default
//              user (`--entity-default`).
//   describe   describeClientQuotas: containsOnly the client id gives exactly its values;
//              the default user is described with a null name.
//   refuse     an unknown key fails with InvalidRequestException naming it.
//   remove     `--delete-config`: removing both keys leaves nothing described.
//
//   usage: java_check.sh QuotasJava HOST:PORT
// Prints `PASS java-quotas` or exits non-zero naming the first failure.

import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.quota.*;

public class QuotasJava {
    static void check(boolean ok, String what) {
        if (!ok) throw new IllegalStateException(what);
    }

    static Map<ClientQuotaEntity, Map<String, Double>> describe(Admin admin, ClientQuotaFilter filter)
            throws Exception {
        return admin.describeClientQuotas(filter).entities().get(15, TimeUnit.SECONDS);
    }

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("request.timeout.ms", "10000");
        p.put("default.api.timeout.ms", "15000");
        String client = "quotas-java-" + System.currentTimeMillis();
        ClientQuotaEntity clientEntity = new ClientQuotaEntity(
                Collections.singletonMap(ClientQuotaEntity.CLIENT_ID, client));
        ClientQuotaEntity defaultUser = new ClientQuotaEntity(
                Collections.singletonMap(ClientQuotaEntity.USER, null));
        ClientQuotaFilter onlyClient = ClientQuotaFilter.containsOnly(Collections.singletonList(
                ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.CLIENT_ID, client)));
        try (Admin admin = Admin.create(p)) {
            admin.alterClientQuotas(Arrays.asList(
                    new ClientQuotaAlteration(clientEntity, Arrays.asList(
                            new ClientQuotaAlteration.Op("producer_byte_rate", 1048576.0),
                            new ClientQuotaAlteration.Op("consumer_byte_rate", 2097152.0))),
                    new ClientQuotaAlteration(defaultUser, Collections.singletonList(
                            new ClientQuotaAlteration.Op("request_percentage", 50.0)))))
                    .all().get(15, TimeUnit.SECONDS);

            Map<String, Double> want = new HashMap<>();
            want.put("producer_byte_rate", 1048576.0);
            want.put("consumer_byte_rate", 2097152.0);
            Map<ClientQuotaEntity, Map<String, Double>> described = describe(admin, onlyClient);
            check(described.equals(Collections.singletonMap(clientEntity, want)), "describe: " + described);
            Map<ClientQuotaEntity, Map<String, Double>> defaults = describe(admin,
                    ClientQuotaFilter.containsOnly(Collections.singletonList(
                            ClientQuotaFilterComponent.ofDefaultEntity(ClientQuotaEntity.USER))));
            check(defaults.equals(Collections.singletonMap(defaultUser,
                    Collections.singletonMap("request_percentage", 50.0))), "describe default user: " + defaults);

            try {
                admin.alterClientQuotas(Collections.singletonList(new ClientQuotaAlteration(clientEntity,
                        Collections.singletonList(new ClientQuotaAlteration.Op("bogus_byte_rate", 1.0)))))
                        .all().get(15, TimeUnit.SECONDS);
                check(false, "refuse: an unknown key was accepted");
            } catch (ExecutionException e) {
                check(e.getCause() instanceof InvalidRequestException
                        && e.getCause().getMessage().contains("bogus_byte_rate"), "refuse: " + e.getCause());
            }

            admin.alterClientQuotas(Arrays.asList(
                    new ClientQuotaAlteration(clientEntity, Arrays.asList(
                            new ClientQuotaAlteration.Op("producer_byte_rate", null),
                            new ClientQuotaAlteration.Op("consumer_byte_rate", null))),
                    new ClientQuotaAlteration(defaultUser, Collections.singletonList(
                            new ClientQuotaAlteration.Op("request_percentage", null)))))
                    .all().get(15, TimeUnit.SECONDS);
            described = describe(admin, onlyClient);
            check(described.isEmpty(), "remove: still described " + described);
        } catch (Exception e) {
            System.err.println("FAIL java-quotas: " + e);
            System.exit(1);
        }
        System.out.println("PASS java-quotas");
    }
}
