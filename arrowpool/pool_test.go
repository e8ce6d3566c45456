package arrowpool

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var sizes = []int{0, 1, 100, 4095, 4096, 5000, 1 << 19, 1<<20 - 1, 1 << 20, 3 << 20, 9 << 20}

func aligned(b []byte) bool { return cap(b) == 0 || addr(b)%alignment == 0 }

func zero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// Every buffer, new or reused, is as long as asked, aligned and zeroed.
func TestAllocateZeroedAligned(t *testing.T) {
	a := New(Options{})
	for round := range 3 {
		var held [][]byte
		for _, n := range sizes {
			b := a.Allocate(n)
			if len(b) != n || !aligned(b) || !zero(b) {
				t.Fatalf("round %d, size %d: len %d aligned %v zero %v", round, n, len(b), aligned(b), zero(b))
			}
			for i := range b {
				b[i] = 0x5A
			}
			held = append(held, b)
		}
		for _, b := range held {
			a.Free(b)
		}
	}
}

// A freed buffer of a pooled class comes back for the next allocation of
// that class instead of a new one.
func TestFreedBuffersAreReused(t *testing.T) {
	for _, n := range []int{4096, 100_000, 1 << 20, 5 << 20} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			a := New(Options{})
			b := a.Allocate(n)
			first := addr(b)
			a.Free(b)
			taken := a.Taken()
			c := a.Allocate(n)
			if addr(c) != first || a.Taken() != taken {
				t.Fatalf("size %d: not reused (taken %d -> %d)", n, taken, a.Taken())
			}
		})
	}
}

func TestReallocateKeepsContents(t *testing.T) {
	for _, tc := range []struct{ from, to int }{{100, 5000}, {5000, 70_000}, {70_000, 2 << 20}, {2 << 20, 20 << 20}, {20 << 20, 50 << 20}, {5000, 100}} {
		t.Run(fmt.Sprintf("%d-%d", tc.from, tc.to), func(t *testing.T) {
			a := New(Options{})
			b := a.Allocate(tc.from)
			for i := range b {
				b[i] = byte(i)
			}
			want := bytes.Clone(b[:min(tc.from, tc.to)])
			g := a.Reallocate(tc.to, b)
			if len(g) != tc.to || !aligned(g) || !bytes.Equal(g[:len(want)], want) || !zero(g[len(want):]) {
				t.Fatalf("len %d aligned %v prefix kept %v tail zero %v", len(g), aligned(g), bytes.Equal(g[:len(want)], want), zero(g[len(want):]))
			}
			a.Free(g)
		})
	}
}

// What a buffer once held past a shrink never reappears when it grows
// again.
func TestShrinkThenGrowIsZero(t *testing.T) {
	a := New(Options{})
	for _, n := range []int{8000, 3 << 20} {
		b := a.Allocate(n)
		for i := range b {
			b[i] = 0xFF
		}
		b = a.Reallocate(n/2, b)
		b = a.Reallocate(n, b)
		if !zero(b[n/2:]) {
			t.Fatalf("size %d: the regrown tail holds old bytes", n)
		}
		a.Free(b)
	}
}

// A buffer freed twice is handed out once, and a foreign buffer is never
// handed out.
func TestDoubleAndForeignFreesIgnored(t *testing.T) {
	a := New(Options{})
	b := a.Allocate(10_000)
	a.Free(b)
	a.Free(b)
	a.Free(make([]byte, 10_000))
	x, y := a.Allocate(10_000), a.Allocate(10_000)
	if addr(x) == addr(y) {
		t.Fatal("one buffer handed out twice")
	}
	m := a.Allocate(30 << 20)
	a.Free(m)
	a.Free(m) // unmapped already: must not unmap again
}

func TestLimitBoundsWhatIsKept(t *testing.T) {
	a := New(Options{Limit: 64 << 10})
	var bs [][]byte
	for range 10 {
		bs = append(bs, a.Allocate(16<<10))
	}
	for _, b := range bs {
		a.Free(b)
	}
	if a.kept > 64<<10 {
		t.Fatalf("kept %d bytes, limit %d", a.kept, 64<<10)
	}
}

func TestPoisonNeverReuses(t *testing.T) {
	a := New(Options{Poison: true})
	for _, n := range []int{10_000, 2 << 20} {
		b := a.Allocate(n)
		a.Free(b)
		if b[0] != 0xAA || b[n-1] != 0xAA {
			t.Fatalf("size %d: freed buffer not poisoned", n)
		}
		if c := a.Allocate(n); addr(c) == addr(b) {
			t.Fatalf("size %d: poisoned buffer reused", n)
		}
	}
}

// Arrow builds and releases arrays on it (run with -race).
func TestArrowArraysConcurrently(t *testing.T) {
	a := New(Options{})
	checked := memory.NewCheckedAllocator(a)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 20 {
				b := array.NewStringBuilder(checked)
				n := 1000 * (round + 1)
				for i := range n {
					b.Append(fmt.Sprintf("g%d-r%d-%d", g, round, i))
				}
				arr := b.NewStringArray()
				b.Release()
				for i := range n {
					if arr.Value(i) != fmt.Sprintf("g%d-r%d-%d", g, round, i) {
						t.Errorf("goroutine %d round %d row %d: %q", g, round, i, arr.Value(i))
						break
					}
				}
				arr.Release()
			}
		}()
	}
	wg.Wait()
	checked.AssertSize(t, 0)
}
