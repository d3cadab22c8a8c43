// segmentio/kafka-go against a broker: its Client (admin), a Writer with acks=all and
// two group Readers.
//
// On a fresh topic of check.Partitions partitions:
//
//	produce: check.Records keyed records (kafka.Hash balancer), RequireAll; every
//	         partition gets some, at offsets 0..n-1 (from the Writer's Completion).
//	run 1:   two Readers of a fresh group (range balancer, FirstOffset) wait until
//	         DescribeGroups shows the group Stable with each of them assigned some of
//	         the partitions and together all, then FetchMessage and CommitMessages
//	         (synchronous commits). Every record must arrive exactly once with its key
//	         and value, each partition to one Reader.
//	offsets: OffsetFetch reads each partition's end offset.
//	run 2:   two new Readers of the same group get nothing in 3 s once they share the
//	         partitions.
//	cleanup: the group and the topic are deleted.
//
//	usage: kafkago_check HOST:PORT    (KAFKAGO_DEBUG=1: the Readers' own log on stderr)
//
// Prints `PASS go-kafkago: ...` or exits non-zero with `FAIL go-kafkago: ...`.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/iggy-kafka-gateway/tests/clients/go/internal/check"
)

const name = "go-kafkago"

func main() { check.Main(name, 120*time.Second, run) }

func run(ctx context.Context, bootstrap string) (string, error) {
	tag := check.Tag()
	topic, group := "go-kafkago-"+tag, "go-kafkago-"+tag
	client := &kafka.Client{Addr: kafka.TCP(bootstrap), Timeout: 15 * time.Second}

	created, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: topic, NumPartitions: check.Partitions, ReplicationFactor: 1}}})
	if err != nil {
		return "", fmt.Errorf("CreateTopics: %w", err)
	}
	if err := created.Errors[topic]; err != nil {
		return "", fmt.Errorf("CreateTopics %s: %w", topic, err)
	}

	produced, err := produce(ctx, bootstrap, topic, tag)
	if err != nil {
		return "", err
	}

	first := check.NewTally(tag, produced)
	if err := groupRun(ctx, client, bootstrap, group, topic, first, func(ctx context.Context) {
		select {
		case <-first.Complete():
			time.Sleep(2 * time.Second) // a duplicate arriving late is caught too
		case <-ctx.Done():
		}
	}); err != nil {
		return "", fmt.Errorf("run 1: %w", err)
	}
	if err := first.Err(check.Records); err != nil {
		return "", fmt.Errorf("run 1: %w", err)
	}
	if err := first.Shared(); err != nil {
		return "", fmt.Errorf("run 1: %w", err)
	}

	ends := produced.Ends()
	parts := []int{}
	for p := range ends {
		parts = append(parts, int(p))
	}
	sort.Ints(parts)
	offsets, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err != nil {
		return "", fmt.Errorf("OffsetFetch: %w", err)
	}
	if offsets.Error != nil {
		return "", fmt.Errorf("OffsetFetch: %w", offsets.Error)
	}
	got := map[int]int64{}
	for _, p := range offsets.Topics[topic] {
		if p.Error != nil {
			return "", fmt.Errorf("OffsetFetch partition %d: %w", p.Partition, p.Error)
		}
		got[p.Partition] = p.CommittedOffset
	}
	for _, p := range parts {
		if off, ok := got[p]; !ok || off != ends[int32(p)] {
			return "", fmt.Errorf("OffsetFetch partition %d: committed %d (answered: %v), expected %d", p, off, ok, ends[int32(p)])
		}
	}

	second := check.NewTally(tag, produced)
	if err := groupRun(ctx, client, bootstrap, group, topic, second, func(ctx context.Context) {
		select {
		case <-time.After(3 * time.Second):
		case <-ctx.Done():
		}
	}); err != nil {
		return "", fmt.Errorf("run 2: %w", err)
	}
	if err := second.Err(0); err != nil {
		return "", fmt.Errorf("run 2 (from the committed offsets): %w", err)
	}

	deleted, err := client.DeleteGroups(ctx, &kafka.DeleteGroupsRequest{GroupIDs: []string{group}})
	if err != nil {
		return "", fmt.Errorf("DeleteGroups: %w", err)
	}
	if err := deleted.Errors[group]; err != nil {
		return "", fmt.Errorf("DeleteGroups %s: %w", group, err)
	}
	gone, err := client.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	if err != nil {
		return "", fmt.Errorf("DeleteTopics: %w", err)
	}
	if err := gone.Errors[topic]; err != nil {
		return "", fmt.Errorf("DeleteTopics %s: %w", topic, err)
	}
	return fmt.Sprintf("kafka-go %s, %d records over %d partitions (acks=all), group of 2 (%s) got each once "+
		"and committed, run 2 got 0", check.ModuleVersion("github.com/segmentio/kafka-go"),
		check.Records, check.Partitions, first.Members()), nil
}

func produce(ctx context.Context, bootstrap, topic, tag string) (*check.Produced, error) {
	produced := check.NewProduced()
	var mu sync.Mutex
	var problems []string
	w := &kafka.Writer{
		Addr:         kafka.TCP(bootstrap),
		Topic:        topic,
		Balancer:     &kafka.Hash{},
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: 10 * time.Millisecond,
		MaxAttempts:  5,
		Completion: func(msgs []kafka.Message, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				problems = append(problems, fmt.Sprintf("%d records failed: %v", len(msgs), err))
				return
			}
			for _, m := range msgs {
				var i int
				if _, err := fmt.Sscanf(string(m.Key), "key-%d", &i); err != nil {
					problems = append(problems, fmt.Sprintf("completion for unknown key %q", m.Key))
					continue
				}
				if err := produced.Add(i, int32(m.Partition), m.Offset); err != nil {
					problems = append(problems, err.Error())
				}
			}
		},
	}
	msgs := make([]kafka.Message, check.Records)
	for i := range msgs {
		msgs[i] = kafka.Message{Key: []byte(check.Key(i)), Value: []byte(check.Value(tag, i))}
	}
	err := w.WriteMessages(ctx, msgs...)
	if err != nil {
		return nil, fmt.Errorf("produce: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("writer close: %w", err)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("produce: %s", strings.Join(problems, "; "))
	}
	if err := produced.Verify(); err != nil {
		return nil, fmt.Errorf("produce: %w", err)
	}
	return produced, nil
}

// groupRun runs two Readers of group until wait returns. They read only once
// DescribeGroups shows them sharing the partitions, so a Reader that joined alone first
// does not consume what the other would get.
func groupRun(ctx context.Context, client *kafka.Client, bootstrap, group, topic string, tally *check.Tally,
	wait func(context.Context)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	running := true
	var runningMu sync.Mutex
	readers := []*kafka.Reader{}
	for m := 1; m <= 2; m++ {
		label := fmt.Sprintf("member-%d", m)
		logf := func(format string, args ...any) {
			runningMu.Lock()
			defer runningMu.Unlock()
			if running {
				tally.Problem("%s: the Reader logged an error: %s", label, fmt.Sprintf(format, args...))
			}
		}
		cfg := kafka.ReaderConfig{
			Brokers:           []string{bootstrap},
			GroupID:           group,
			GroupTopics:       []string{topic},
			Dialer:            &kafka.Dialer{ClientID: "go-kafkago-" + label, Timeout: 10 * time.Second},
			GroupBalancers:    []kafka.GroupBalancer{kafka.RangeGroupBalancer{}},
			StartOffset:       kafka.FirstOffset,
			MinBytes:          1,
			MaxBytes:          1 << 20,
			MaxWait:           500 * time.Millisecond,
			HeartbeatInterval: time.Second,
			SessionTimeout:    10 * time.Second,
			RebalanceTimeout:  10 * time.Second,
			CommitInterval:    0, // synchronous commits
			ErrorLogger:       kafka.LoggerFunc(logf),
		}
		if os.Getenv("KAFKAGO_DEBUG") != "" {
			cfg.Logger = log.New(os.Stderr, "[kafka-go "+label+"] ", log.LstdFlags|log.Lmicroseconds)
		}
		readers = append(readers, kafka.NewReader(cfg))
	}
	closeAll := func() {
		runningMu.Lock()
		running = false
		runningMu.Unlock()
		cancel()
		for i, r := range readers {
			if err := r.Close(); err != nil {
				tally.Problem("member-%d: Close: %v", i+1, err)
			}
		}
	}

	if err := waitShared(ctx, client, group, topic); err != nil {
		closeAll()
		return err
	}
	var wg sync.WaitGroup
	for i, r := range readers {
		label := fmt.Sprintf("member-%d", i+1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				msg, err := r.FetchMessage(ctx)
				if err != nil {
					if ctx.Err() == nil {
						tally.Problem("%s: FetchMessage: %v", label, err)
					}
					return
				}
				tally.Deliver(label, int32(msg.Partition), msg.Offset, msg.Key, msg.Value)
				if err := r.CommitMessages(ctx, msg); err != nil && ctx.Err() == nil {
					tally.Problem("%s: CommitMessages partition %d offset %d: %v", label, msg.Partition, msg.Offset, err)
				}
			}
		}()
	}
	wait(ctx)
	err := ctx.Err()
	closeAll()
	wg.Wait()
	if err != nil {
		return fmt.Errorf("%w (%d of the records delivered)", err, tally.Count())
	}
	return nil
}

// waitShared polls DescribeGroups until group is Stable with two members, each
// assigned some partitions of topic, disjoint, together all of them.
func waitShared(ctx context.Context, client *kafka.Client, group, topic string) error {
	last := "no answer"
	for {
		resp, err := client.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
		switch {
		case err != nil:
			last = err.Error()
		case len(resp.Groups) != 1:
			last = fmt.Sprintf("%d groups answered", len(resp.Groups))
		case resp.Groups[0].Error != nil:
			last = resp.Groups[0].Error.Error()
		default:
			g := resp.Groups[0]
			assigned := map[int]bool{}
			ok := g.GroupState == "Stable" && len(g.Members) == 2
			desc := []string{}
			for _, m := range g.Members {
				n := 0
				for _, t := range m.MemberAssignments.Topics {
					if t.Topic != topic {
						continue
					}
					for _, p := range t.Partitions {
						if assigned[p] {
							return fmt.Errorf("DescribeGroups: partition %d assigned to two members: %+v", p, g.Members)
						}
						assigned[p] = true
						n++
					}
				}
				ok = ok && n > 0
				desc = append(desc, fmt.Sprintf("%s %v", m.ClientID, m.MemberAssignments.Topics))
			}
			if ok && len(assigned) == check.Partitions {
				return nil
			}
			last = fmt.Sprintf("state %s, members %v", g.GroupState, desc)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the two Readers never shared the partitions (DescribeGroups, last: %s)", last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
