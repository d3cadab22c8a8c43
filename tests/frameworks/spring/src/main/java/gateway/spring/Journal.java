package gateway.spring;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.stereotype.Component;

/**
 * What the application sent and received, as tab-separated lines in check.out
 * (sent.tsv, received.tsv), for check.sh to compare; also the values seen so far,
 * for the runner to know when everything it sent has arrived. received.tsv also holds,
 * in the order they happened, the offset commits the brokers acknowledged
 * ({@link CommitJournal}) and the moment the run paused for the gateway restart.
 */
@Component
public class Journal {
    /** For {@link CommitJournal}, which the Kafka consumer creates by class name. */
    static volatile Journal current;
    private final Writer sent;
    private final Writer received;
    final Set<String> seen = ConcurrentHashMap.newKeySet();

    public Journal(@Value("${check.out}") String out) throws IOException {
        Path dir = Path.of(out);
        Files.createDirectories(dir);
        sent = open(dir.resolve("sent.tsv"));
        received = open(dir.resolve("received.tsv"));
        current = this;
    }

    private static Writer open(Path p) throws IOException {
        return Files.newBufferedWriter(p, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE);
    }

    void sent(String... fields) {
        write(sent, fields);
    }

    /** One line per delivery; the first field names the listener. */
    void received(String... fields) {
        write(received, fields);
        seen.add(fields[0] + "/" + fields[4]);
    }

    private static synchronized void write(Writer w, String... fields) {
        try {
            w.write(String.join("\t", fields));
            w.write('\n');
            w.flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
