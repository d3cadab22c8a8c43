// Package check holds what both Go client checks share: the expected records, the
// tally of what a consumer group delivered (duplicates, wrong values, unexpected
// records and errors), the bound on the whole run, and the summary line.
package check

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"
)

// Records and Partitions: every check produces Records keyed records, spread by key
// hash over a fresh topic of Partitions partitions.
const (
	Records    = 200
	Partitions = 4
)

// Main runs check under a context bounded by timeout and exits: 0 after printing
// `PASS name: summary`, 1 after `FAIL name: error`. A client call that does not
// heed the context is caught too: 10 s after the deadline the process exits with 3.
func Main(name string, timeout time.Duration, check func(ctx context.Context, bootstrap string) (string, error)) {
	if len(os.Args) != 2 || strings.HasPrefix(os.Args[1], "-") {
		fmt.Fprintf(os.Stderr, "usage: %s HOST:PORT\n", name)
		os.Exit(64)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	go func() {
		<-ctx.Done()
		time.Sleep(10 * time.Second)
		fmt.Fprintf(os.Stderr, "FAIL %s: timed out after %s (a client call did not return)\n", name, timeout)
		os.Exit(3)
	}()
	summary, err := check(ctx, os.Args[1])
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("timed out after %s", timeout)
	}
	if err != nil {
		if ctx.Err() != nil && !strings.Contains(err.Error(), "timed out") {
			err = fmt.Errorf("timed out after %s: %w", timeout, err)
		}
		fmt.Fprintf(os.Stderr, "FAIL %s: %v\n", name, err)
		os.Exit(1)
	}
	fmt.Printf("PASS %s: %s\n", name, summary)
}

// Tag is a fresh random suffix for the topic and group names.
func Tag() string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// ModuleVersion is the version of a module this binary was built with.
func ModuleVersion(path string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == path {
				return dep.Version
			}
		}
	}
	return "(version unknown)"
}

// Key and Value of record i.
func Key(i int) string               { return fmt.Sprintf("key-%03d", i) }
func Value(tag string, i int) string { return fmt.Sprintf("value-%03d-%s", i, tag) }

// Produced is where the producer was told each record landed.
type Produced struct {
	mu sync.Mutex
	// at["partition:offset"] = record index
	at map[string]int
	// count of records a partition
	perPartition map[int32]int64
}

func NewProduced() *Produced {
	return &Produced{at: map[string]int{}, perPartition: map[int32]int64{}}
}

func (p *Produced) Add(i int, partition int32, offset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	at := fmt.Sprintf("%d:%d", partition, offset)
	if j, dup := p.at[at]; dup {
		return fmt.Errorf("records %d and %d both acknowledged at partition %d offset %d", j, i, partition, offset)
	}
	p.at[at] = i
	p.perPartition[partition]++
	return nil
}

// Verify checks that every record was acknowledged once, that every partition got
// some and that each partition's offsets are 0..n-1 (a fresh topic, no transactions).
func (p *Produced) Verify() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.at) != Records {
		return fmt.Errorf("%d of %d records acknowledged", len(p.at), Records)
	}
	if len(p.perPartition) != Partitions {
		return fmt.Errorf("records landed on %d of %d partitions: %v", len(p.perPartition), Partitions, p.perPartition)
	}
	for part, n := range p.perPartition {
		for off := int64(0); off < n; off++ {
			if _, ok := p.at[fmt.Sprintf("%d:%d", part, off)]; !ok {
				return fmt.Errorf("partition %d: %d records but no record at offset %d", part, n, off)
			}
		}
	}
	return nil
}

// Ends is each partition's end offset (its record count).
func (p *Produced) Ends() map[int32]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[int32]int64{}
	for k, v := range p.perPartition {
		out[k] = v
	}
	return out
}

func (p *Produced) index(partition int32, offset int64) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i, ok := p.at[fmt.Sprintf("%d:%d", partition, offset)]
	return i, ok
}

// Tally is what the members of one group run delivered.
type Tally struct {
	tag      string
	produced *Produced
	mu       sync.Mutex
	got      map[int]string            // record index -> member that got it
	members  map[string]map[int32]bool // member -> partitions it got records from
	problems []string
	complete chan struct{}
	closed   bool
}

func NewTally(tag string, produced *Produced) *Tally {
	return &Tally{tag: tag, produced: produced, got: map[int]string{},
		members: map[string]map[int32]bool{}, complete: make(chan struct{})}
}

// Problem records a failure seen by a member or the client (an error it reported).
func (t *Tally) Problem(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.problems) < 20 {
		t.problems = append(t.problems, fmt.Sprintf(format, args...))
	}
}

// Deliver records one consumed record.
func (t *Tally) Deliver(member string, partition int32, offset int64, key, value []byte) {
	i, ok := t.produced.index(partition, offset)
	t.mu.Lock()
	defer t.mu.Unlock()
	at := fmt.Sprintf("partition %d offset %d", partition, offset)
	switch {
	case !ok:
		t.problems = append(t.problems, fmt.Sprintf("%s: a record that was not produced (key %q)", at, key))
	case string(key) != Key(i) || string(value) != Value(t.tag, i):
		t.problems = append(t.problems, fmt.Sprintf("%s: key %q value %q, produced key %q value %q", at, key, value, Key(i), Value(t.tag, i)))
	default:
		if first, dup := t.got[i]; dup {
			t.problems = append(t.problems, fmt.Sprintf("%s (%s) delivered twice: to %s and to %s", at, key, first, member))
		}
		t.got[i] = member
	}
	if t.members[member] == nil {
		t.members[member] = map[int32]bool{}
	}
	t.members[member][partition] = true
	if len(t.got) == Records && !t.closed {
		t.closed = true
		close(t.complete)
	}
}

// Complete is closed once every record arrived.
func (t *Tally) Complete() <-chan struct{} { return t.complete }

// Count is the number of distinct records delivered.
func (t *Tally) Count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.got)
}

// Err is nil when nothing went wrong and exactly want records arrived, each once.
func (t *Tally) Err(want int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.problems) > 0 {
		return fmt.Errorf("%d problem(s): %s", len(t.problems), strings.Join(t.problems, "; "))
	}
	if len(t.got) != want {
		missing := []string{}
		for i := 0; i < Records && len(missing) < 10; i++ {
			if _, ok := t.got[i]; !ok {
				missing = append(missing, Key(i))
			}
		}
		return fmt.Errorf("%d records delivered, expected %d (missing e.g. %v)", len(t.got), want, missing)
	}
	return nil
}

// Shared checks that two members got records, from disjoint partitions covering all.
func (t *Tally) Shared() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.members) != 2 {
		return fmt.Errorf("records came to %d members, expected 2: %s", len(t.members), describe(t.members))
	}
	owner := map[int32]string{}
	for m, parts := range t.members {
		for p := range parts {
			if o, ok := owner[p]; ok {
				return fmt.Errorf("partition %d delivered to both %s and %s: %s", p, o, m, describe(t.members))
			}
			owner[p] = m
		}
	}
	return nil
}

// Members describes which member got which partitions.
func (t *Tally) Members() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return describe(t.members)
}

func describe(members map[string]map[int32]bool) string {
	parts := []string{}
	for m, ps := range members {
		list := []int{}
		for p := range ps {
			list = append(list, int(p))
		}
		sort.Ints(list)
		parts = append(parts, fmt.Sprintf("%s %v", m, list))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
