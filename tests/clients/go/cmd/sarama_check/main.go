// Sarama (github.com/IBM/sarama) against a broker: admin, an idempotent producer with
// acks=all, and a consumer group of two members.
//
// On a fresh topic of check.Partitions partitions:
//
//	produce: check.Records keyed records (hash partitioner), idempotent, acks=all; every
//	         partition gets some, at offsets 0..n-1.
//	run 1:   two members of a fresh group (range assignor, oldest offset) wait until one
//	         generation gives each of them some of the partitions and together all,
//	         then consume; offsets are marked and committed. Every record must arrive
//	         exactly once with its key and value, each partition to one member.
//	offsets: OffsetFetch (ClusterAdmin.ListConsumerGroupOffsets) reads each partition's
//	         end offset.
//	run 2:   two new members of the same group get nothing in 3 s once they share the
//	         partitions.
//	cleanup: the group and the topic are deleted.
//
//	usage: sarama_check HOST:PORT    (SARAMA_DEBUG=1: Sarama's own log on stderr)
//
// Prints `PASS go-sarama: ...` or exits non-zero with `FAIL go-sarama: ...`.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/iggy-kafka-gateway/tests/clients/go/internal/check"
)

const name = "go-sarama"

func main() {
	if os.Getenv("SARAMA_DEBUG") != "" {
		sarama.Logger = log.New(os.Stderr, "[sarama] ", log.LstdFlags|log.Lmicroseconds)
		sarama.DebugLogger = sarama.Logger
	}
	check.Main(name, 120*time.Second, run)
}

func config(clientID string) *sarama.Config {
	c := sarama.NewConfig()
	c.ClientID = clientID
	c.Version = sarama.V4_0_0_0
	c.Metadata.Retry.Max = 5
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Idempotent = true
	c.Producer.Retry.Max = 5
	c.Producer.Return.Successes = true
	c.Producer.Partitioner = sarama.NewHashPartitioner
	c.Net.MaxOpenRequests = 1 // the idempotent producer requires it
	c.Consumer.Return.Errors = true
	c.Consumer.MaxWaitTime = 500 * time.Millisecond
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Offsets.AutoCommit.Enable = false // committed by the handler
	c.Consumer.Group.Session.Timeout = 10 * time.Second
	c.Consumer.Group.Heartbeat.Interval = time.Second
	c.Consumer.Group.Rebalance.Timeout = 20 * time.Second
	c.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	return c
}

func run(ctx context.Context, bootstrap string) (string, error) {
	tag := check.Tag()
	topic, group := "go-sarama-"+tag, "go-sarama-"+tag
	addrs := []string{bootstrap}

	client, err := sarama.NewClient(addrs, config("go-sarama-check"))
	if err != nil {
		return "", fmt.Errorf("connect: %w", err)
	}
	defer client.Close()
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return "", fmt.Errorf("admin: %w", err)
	}
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: check.Partitions, ReplicationFactor: 1}, false); err != nil {
		return "", fmt.Errorf("CreateTopic %s: %w", topic, err)
	}

	produced, err := produce(client, topic, tag)
	if err != nil {
		return "", err
	}

	// Run 1: every record once.
	first := check.NewTally(tag, produced)
	gen1, err := groupRun(ctx, addrs, group, topic, first, func(ctx context.Context) {
		select {
		case <-first.Complete():
			time.Sleep(2 * time.Second) // a duplicate arriving late is caught too
		case <-ctx.Done():
		}
	})
	if err != nil {
		return "", fmt.Errorf("run 1: %w", err)
	}
	if err := first.Err(check.Records); err != nil {
		return "", fmt.Errorf("run 1: %w", err)
	}
	if err := first.Shared(); err != nil {
		return "", fmt.Errorf("run 1: %w", err)
	}

	// The committed offsets, through OffsetFetch.
	ends := produced.Ends()
	parts := []int32{}
	for p := range ends {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	offsets, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: parts})
	if err != nil {
		return "", fmt.Errorf("ListConsumerGroupOffsets: %w", err)
	}
	if offsets.Err != sarama.ErrNoError {
		return "", fmt.Errorf("OffsetFetch: %w", offsets.Err)
	}
	for _, p := range parts {
		b := offsets.GetBlock(topic, p)
		switch {
		case b == nil:
			return "", fmt.Errorf("OffsetFetch: no partition %d", p)
		case b.Err != sarama.ErrNoError:
			return "", fmt.Errorf("OffsetFetch partition %d: %w", p, b.Err)
		case b.Offset != ends[p]:
			return "", fmt.Errorf("OffsetFetch partition %d: committed %d, expected %d", p, b.Offset, ends[p])
		}
	}

	// Run 2: nothing new from the committed offsets.
	second := check.NewTally(tag, produced)
	gen2, err := groupRun(ctx, addrs, group, topic, second, func(ctx context.Context) {
		select {
		case <-time.After(3 * time.Second):
		case <-ctx.Done():
		}
	})
	if err != nil {
		return "", fmt.Errorf("run 2: %w", err)
	}
	if err := second.Err(0); err != nil {
		return "", fmt.Errorf("run 2 (from the committed offsets): %w", err)
	}

	if err := admin.DeleteConsumerGroup(group); err != nil {
		return "", fmt.Errorf("DeleteConsumerGroup: %w", err)
	}
	if err := admin.DeleteTopic(topic); err != nil {
		return "", fmt.Errorf("DeleteTopic: %w", err)
	}
	return fmt.Sprintf("sarama %s (protocol %s), %d records over %d partitions (idempotent, acks=all), "+
		"group of 2 in generation %d (%s) got each once and committed, run 2 in generation %d got 0",
		check.ModuleVersion("github.com/IBM/sarama"), sarama.V4_0_0_0, check.Records, check.Partitions,
		gen1, first.Members(), gen2), nil
}

func produce(client sarama.Client, topic, tag string) (*check.Produced, error) {
	producer, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		return nil, fmt.Errorf("producer: %w", err)
	}
	msgs := make([]*sarama.ProducerMessage, check.Records)
	for i := range msgs {
		msgs[i] = &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(check.Key(i)),
			Value: sarama.StringEncoder(check.Value(tag, i)), Metadata: i}
	}
	if err := producer.SendMessages(msgs); err != nil {
		var perrs sarama.ProducerErrors
		if errors.As(err, &perrs) && len(perrs) > 0 {
			return nil, fmt.Errorf("produce: %d of %d failed, first: %w", len(perrs), len(msgs), perrs[0].Err)
		}
		return nil, fmt.Errorf("produce: %w", err)
	}
	if err := producer.Close(); err != nil {
		return nil, fmt.Errorf("producer close: %w", err)
	}
	produced := check.NewProduced()
	for _, m := range msgs {
		if err := produced.Add(m.Metadata.(int), m.Partition, m.Offset); err != nil {
			return nil, fmt.Errorf("produce: %w", err)
		}
	}
	if err := produced.Verify(); err != nil {
		return nil, fmt.Errorf("produce: %w", err)
	}
	return produced, nil
}

// groupRun runs two members of group until wait returns, and returns the generation in
// which they shared the partitions. Messages are handed to tally only once one
// generation gives both members some partitions and together all of them: a member
// that joined alone first does not consume what the other would get.
func groupRun(ctx context.Context, addrs []string, group, topic string, tally *check.Tally,
	wait func(context.Context)) (int32, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h := &handler{topic: topic, tally: tally, claims: map[int32]map[string][]int32{}, ready: map[int32]chan struct{}{}}
	var wg sync.WaitGroup
	groups := []sarama.ConsumerGroup{}
	for m := 1; m <= 2; m++ {
		cg, err := sarama.NewConsumerGroup(addrs, group, config(fmt.Sprintf("go-sarama-member-%d", m)))
		if err != nil {
			return 0, fmt.Errorf("member %d: %w", m, err)
		}
		groups = append(groups, cg)
		label := fmt.Sprintf("member-%d", m)
		wg.Add(2)
		go func() {
			defer wg.Done()
			for err := range cg.Errors() {
				tally.Problem("%s: error from the consumer group: %v", label, err)
			}
		}()
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := cg.Consume(ctx, []string{topic}, &member{handler: h, label: label}); err != nil &&
					!errors.Is(err, sarama.ErrClosedConsumerGroup) && ctx.Err() == nil {
					tally.Problem("%s: Consume: %v", label, err)
					time.Sleep(500 * time.Millisecond)
				}
			}
		}()
	}
	select {
	case <-h.sharedOnce():
	case <-ctx.Done():
		return 0, fmt.Errorf("the two members never shared the partitions in one generation (claims seen: %s)", h.describe())
	}
	wait(ctx)
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("%w (%d of the records delivered)", err, tally.Count())
	}
	cancel()
	for i, cg := range groups {
		if err := cg.Close(); err != nil {
			tally.Problem("member %d: Close: %v", i+1, err)
		}
	}
	wg.Wait()
	return h.sharedGen(), nil
}

// handler is what the two members of one run share: the claims each generation gave.
type handler struct {
	topic  string
	tally  *check.Tally
	mu     sync.Mutex
	claims map[int32]map[string][]int32 // generation -> member -> partitions
	ready  map[int32]chan struct{}      // closed once the generation is shared
	shared int32
	first  chan struct{}
}

func (h *handler) readyCh(gen int32) chan struct{} {
	if h.ready[gen] == nil {
		h.ready[gen] = make(chan struct{})
	}
	return h.ready[gen]
}

func (h *handler) sharedOnce() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.first == nil {
		h.first = make(chan struct{})
	}
	return h.first
}

func (h *handler) sharedGen() int32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.shared
}

func (h *handler) describe() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return fmt.Sprint(h.claims)
}

func (h *handler) setup(label string, s sarama.ConsumerGroupSession) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	gen := s.GenerationID()
	if h.claims[gen] == nil {
		h.claims[gen] = map[string][]int32{}
	}
	h.claims[gen][label] = s.Claims()[h.topic]
	if len(h.claims[gen]) == 2 {
		seen := map[int32]bool{}
		for _, parts := range h.claims[gen] {
			if len(parts) == 0 {
				return nil
			}
			for _, p := range parts {
				if seen[p] {
					h.tally.Problem("generation %d: partition %d claimed by both members: %v", gen, p, h.claims[gen])
					return nil
				}
				seen[p] = true
			}
		}
		if len(seen) == check.Partitions {
			close(h.readyCh(gen))
			if h.first == nil {
				h.first = make(chan struct{})
			}
			if h.shared == 0 {
				h.shared = gen
				close(h.first)
			}
		}
	}
	return nil
}

// member is one member's ConsumerGroupHandler.
type member struct {
	*handler
	label string
}

func (m *member) Setup(s sarama.ConsumerGroupSession) error { return m.setup(m.label, s) }

func (m *member) Cleanup(s sarama.ConsumerGroupSession) error {
	s.Commit()
	return nil
}

func (m *member) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	m.mu.Lock()
	ready := m.readyCh(s.GenerationID())
	m.mu.Unlock()
	select {
	case <-ready:
	case <-s.Context().Done():
		return nil
	}
	for {
		select {
		case msg, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			m.tally.Deliver(m.label, msg.Partition, msg.Offset, msg.Key, msg.Value)
			s.MarkMessage(msg, "")
			if len(claim.Messages()) == 0 {
				s.Commit()
			}
		case <-s.Context().Done():
			return nil
		}
	}
}
