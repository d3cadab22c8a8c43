package gateway.spring;

import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerInterceptor;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * A consumer interceptor (interceptor.classes) journaling each offset commit the broker
 * acknowledged, as "commit PARTITION OFFSET TOPIC GROUP THREAD" in received.tsv: the
 * consumer calls onCommit only after a commit succeeded. check.sh uses these lines to
 * tell a record that may come again after the gateway restart (no acknowledged commit
 * covered it) from one that must not.
 */
public class CommitJournal implements ConsumerInterceptor<Object, Object> {
    private String group = "-";

    @Override
    public void configure(Map<String, ?> configs) {
        Object g = configs.get("group.id");
        if (g != null) {
            group = g.toString();
        }
    }

    @Override
    public ConsumerRecords<Object, Object> onConsume(ConsumerRecords<Object, Object> records) {
        return records;
    }

    @Override
    public void onCommit(Map<TopicPartition, OffsetAndMetadata> offsets) {
        Journal j = Journal.current;
        if (j == null) {
            return;
        }
        offsets.forEach((tp, o) -> j.received("commit", String.valueOf(tp.partition()), String.valueOf(o.offset()),
                tp.topic(), group, Thread.currentThread().getName()));
    }

    @Override
    public void close() {
    }
}
