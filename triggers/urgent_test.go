package triggers

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/tablename"
)

// orderedRefresher records the tables it refreshes, in order, and holds
// the first refresh until released.
type orderedRefresher struct {
	started chan struct{}
	release chan struct{}

	mu    sync.Mutex
	order []string
}

func (r *orderedRefresher) Refresh(ctx context.Context, t tablename.Name) (*table.Table, error) {
	ident := t.Ident()
	r.mu.Lock()
	r.order = append(r.order, strings.Join(ident, "."))
	first := len(r.order) == 1
	r.mu.Unlock()
	if first {
		close(r.started)
		select {
		case <-r.release:
		case <-ctx.Done():
		}
	}
	return nil, nil
}

func (r *orderedRefresher) refreshed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.order)
}

// An urgent item (the fast lane's) puts its table at the head of the line,
// whether the table was idle or already waiting, and the tables behind it
// keep their order; every item is completed once.
func TestUrgentTableServedFirst(t *testing.T) {
	tests := []struct {
		name   string
		queued []string // added in this order while the worker is busy
		urgent string
		want   []string // refreshes after the busy one
	}{
		{"idle table", []string{"a", "b", "c"}, "hot", []string{"hot", "a", "b", "c"}},
		{"table already waiting", []string{"a", "b", "hot", "c"}, "hot", []string{"hot", "a", "b", "c"}},
		{"already first", []string{"hot", "a"}, "hot", []string{"hot", "a"}},
		{"nothing else waiting", nil, "hot", []string{"hot"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := &orderedRefresher{started: make(chan struct{}), release: make(chan struct{})}
			c := NewCoalescer(ctx, r, 1, 0, slog.New(slog.DiscardHandler), metrics.New())
			defer c.Close()
			var (
				mu   sync.Mutex
				done = map[string]int{}
			)
			item := func(name string) *work {
				return &work{refresh: true, apply: func(*table.Table, error) {
					mu.Lock()
					done[name]++
					mu.Unlock()
				}}
			}
			c.add(tablename.Of(table.Identifier{"busy"}), item("busy"))
			select {
			case <-r.started:
			case <-time.After(time.Minute):
				t.Fatal("the first refresh did not start")
			}
			for _, name := range tt.queued {
				c.add(tablename.Of(table.Identifier{name}), item(name))
			}
			c.addUrgent(tablename.Of(table.Identifier{tt.urgent}), item(tt.urgent))
			close(r.release)
			want := append([]string{"busy"}, tt.want...)
			for deadline := time.Now().Add(time.Minute); len(r.refreshed()) < len(want); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("refreshed %v, want %v", r.refreshed(), want)
				}
			}
			if got := r.refreshed(); !slices.Equal(got, want) {
				t.Errorf("refreshed %v, want %v", got, want)
			}
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
				mu.Lock()
				n := 0
				for _, k := range done {
					n += k
				}
				mu.Unlock()
				if n == len(tt.queued)+2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d items completed, want %d", n, len(tt.queued)+2)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for name, n := range done {
				if n != 1 && !(name == tt.urgent && slices.Contains(tt.queued, tt.urgent) && n == 2) {
					t.Errorf("%s completed %d times", name, n)
				}
			}
		})
	}
}
