// Package arrowpool owns reactor's Arrow allocator for the data path of a
// rewrite. Arrow-go's own allocator leaves every buffer to Go's garbage
// collector: a compaction allocated about 20 times its input bytes (pages
// decoded, columns built, pages encoded, row groups buffered, each used
// once), spent a large part of its CPU allocating, zeroing and collecting
// them, and held about twice what it used, the collector's headroom. Here
// a freed buffer of a few kilobytes to a few megabytes is kept by size class
// and handed out again for the next page or batch, still in the CPU's
// caches; a larger one (a buffered row group's column chunk, a decoded
// column) is mapped from the operating system and unmapped when Arrow frees
// it, so it costs what it holds while it holds it and grows in place.
//
//   - pool.go: Allocator (New, Allocate, Reallocate, Free, Close) and its
//     size classes.
//   - map_linux.go: the mapped buffers (mmap, mremap, munmap);
//     map_other.go: elsewhere large buffers are plain Go allocations.
//
// It must hold nothing but byte buffers, and it trusts Arrow's reference
// counting: a buffer is reused or unmapped only after Arrow frees it. A
// buffer freed twice, or one it did not hand out, is ignored rather than
// reused twice. Code that keeps pointers into a buffer after releasing it
// (iceberg-go's partitioned writer keeps partition values that way) must
// not allocate from it.
package arrowpool

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

const (
	// alignment is Arrow's buffer alignment (memory.GoAllocator's).
	alignment = 64
	// Buffers below 1<<minShift bytes are plain Go allocations: small,
	// numerous and cheap for the garbage collector.
	minShift = 12
	// Buffers of 1<<mapShift bytes or more are mapped from the operating
	// system where it allows (Linux), else plain Go allocations.
	mapShift = 20
	classes  = mapShift - minShift
	// Freed mappings of up to 1<<keepMappedShift bytes (a page being
	// decoded or encoded) are kept for reuse like pooled buffers; larger
	// ones (a column chunk of a buffered row group) are unmapped.
	keepMappedShift = 23
	mappedClasses   = keepMappedShift - mapShift + 1
)

// Allocator is a memory.Allocator; see the package doc. Every buffer it
// returns is zeroed up to its length, as Go's and the C allocators' are.
// It is safe for concurrent use.
type Allocator struct {
	mu sync.Mutex
	// free holds the freed buffers of each class, full capacity;
	// freeMapped the kept mappings of each mapped class.
	free       [classes][][]byte
	freeMapped [mappedClasses][][]byte
	// out maps the first byte of every pooled buffer handed out and not
	// yet freed to its class; mapped, of every mapped one, to its whole
	// mapping.
	out    map[uintptr]int
	mapped map[uintptr][]byte
	// kept, limit: bytes held in free, and the most it may hold.
	kept, limit int64
	// taken counts the bytes taken from Go's heap for pooled buffers and
	// mapped from the system.
	taken  int64
	poison bool
	// closed: Close has run; a mapping freed after it is unmapped, not
	// kept.
	closed bool
}

var _ memory.Allocator = (*Allocator)(nil)

// Options tune an Allocator.
type Options struct {
	// Limit is the most bytes of freed buffers kept for reuse (0: no
	// limit beyond what was once in use at the same time).
	Limit int64
	// Poison overwrites every freed buffer and never reuses or unmaps
	// it: for tests, to make a buffer read after its release read
	// garbage.
	Poison bool
}

// New returns an allocator.
func New(o Options) *Allocator {
	return &Allocator{out: map[uintptr]int{}, mapped: map[uintptr][]byte{}, limit: o.Limit, poison: o.Poison}
}

// classOf is the pool class of a buffer of size bytes: -1 below the
// smallest class, classes for a mapped one.
func classOf(size int) int {
	if size < 1<<minShift {
		return -1
	}
	shift := bits.Len(uint(size - 1))
	if shift >= mapShift {
		return classes
	}
	return max(shift, minShift) - minShift
}

func classSize(c int) int { return 1 << (c + minShift) }

// goAlloc is memory.GoAllocator's allocation: zeroed, 64-byte aligned,
// capacity capacity.
func goAlloc(size, capacity int) []byte {
	buf := make([]byte, capacity+alignment)
	shift := int(-uintptr(unsafe.Pointer(unsafe.SliceData(buf))) & (alignment - 1))
	return buf[shift : shift+size : shift+capacity]
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// Allocate returns a zeroed buffer of size bytes.
func (a *Allocator) Allocate(size int) []byte {
	c := classOf(size)
	switch {
	case c < 0:
		return goAlloc(size, size)
	case c == classes:
		return a.allocateMapped(size)
	}
	a.mu.Lock()
	var buf []byte
	if n := len(a.free[c]); n > 0 {
		buf = a.free[c][n-1]
		a.free[c][n-1] = nil
		a.free[c] = a.free[c][:n-1]
		a.kept -= int64(classSize(c))
	} else {
		a.taken += int64(classSize(c))
	}
	a.mu.Unlock()
	if buf == nil {
		buf = goAlloc(0, classSize(c))
	} else {
		clear(buf[:size])
	}
	buf = buf[:size]
	a.mu.Lock()
	a.out[addr(buf)] = c
	a.mu.Unlock()
	return buf
}

// allocateMapped maps a buffer of size bytes, or reuses a kept mapping of
// its class.
func (a *Allocator) allocateMapped(size int) []byte {
	shift := bits.Len(uint(size - 1))
	var m []byte
	if shift <= keepMappedShift {
		a.mu.Lock()
		free := &a.freeMapped[shift-mapShift]
		if n := len(*free); n > 0 {
			m = (*free)[n-1]
			(*free)[n-1] = nil
			*free = (*free)[:n-1]
			a.kept -= int64(len(m))
		}
		a.mu.Unlock()
		if m != nil {
			clear(m[:size])
		} else if m = mapBytes(1 << shift); m == nil {
			return goAlloc(size, size)
		} else {
			a.countTaken(len(m))
		}
	} else {
		if m = mapBytes(size); m == nil {
			return goAlloc(size, size)
		}
		a.countTaken(len(m))
	}
	a.mu.Lock()
	a.mapped[addr(m)] = m
	a.mu.Unlock()
	return m[:size]
}

func (a *Allocator) countTaken(n int) {
	a.mu.Lock()
	a.taken += int64(n)
	a.mu.Unlock()
}

// Reallocate resizes b to size bytes, keeping its contents; bytes past
// b's length are zero.
func (a *Allocator) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		if size > len(b) {
			clear(b[len(b):size])
		}
		return b[:size]
	}
	if classOf(size) == classes && !a.poison {
		a.mu.Lock()
		m, ok := a.mapped[addr(b)]
		a.mu.Unlock()
		if ok {
			// The tail of the old mapping past b may hold what a
			// longer b once held: clear it before it becomes visible.
			clear(m[len(b):])
			if grown := remapBytes(m, size); grown != nil {
				a.mu.Lock()
				delete(a.mapped, addr(m))
				a.mapped[addr(grown)] = grown
				a.taken += int64(len(grown) - len(m))
				a.mu.Unlock()
				return grown[:size]
			}
		}
	}
	grown := a.Allocate(size)
	copy(grown, b)
	a.Free(b)
	return grown
}

// Free takes b back. A buffer it did not hand out, or one already freed,
// is left to the garbage collector.
func (a *Allocator) Free(b []byte) {
	if cap(b) == 0 {
		return
	}
	p := addr(b)
	a.mu.Lock()
	if m, ok := a.mapped[p]; ok {
		delete(a.mapped, p)
		if a.poison {
			a.mu.Unlock()
			fill(m)
			return
		}
		if shift := bits.Len(uint(len(m) - 1)); !a.closed && len(m) == 1<<shift && shift <= keepMappedShift &&
			(a.limit <= 0 || a.kept+int64(len(m)) <= a.limit) {
			a.freeMapped[shift-mapShift] = append(a.freeMapped[shift-mapShift], m)
			a.kept += int64(len(m))
			a.mu.Unlock()
			return
		}
		a.mu.Unlock()
		unmapBytes(m)
		return
	}
	defer a.mu.Unlock()
	c, ok := a.out[p]
	if !ok {
		return
	}
	delete(a.out, p)
	if a.poison {
		fill(b[:cap(b)])
		return
	}
	size := int64(classSize(c))
	if a.limit > 0 && a.kept+size > a.limit {
		return
	}
	a.free[c] = append(a.free[c], b[:cap(b)])
	a.kept += size
}

func fill(b []byte) {
	for i := range b {
		b[i] = 0xAA
	}
}

// Close unmaps the mappings kept for reuse and keeps none from here on.
// They are not Go memory: an allocator dropped without Close leaves them
// mapped for the life of the process (a job's pool kept up to its limit
// of them, so every job left that much behind). Buffers still handed out
// stay valid; each is unmapped when Arrow frees it. Close may be called
// more than once; the allocator stays usable.
func (a *Allocator) Close() {
	a.mu.Lock()
	a.closed = true
	var kept [][]byte
	for c := range a.freeMapped {
		kept = append(kept, a.freeMapped[c]...)
		for _, m := range a.freeMapped[c] {
			a.kept -= int64(len(m))
		}
		a.freeMapped[c] = nil
	}
	a.mu.Unlock()
	for _, m := range kept {
		unmapBytes(m)
	}
}

// Taken is how many bytes the allocator took from Go's heap for pooled
// buffers and mapped from the system: without reuse and mapping, what
// Arrow asks for would all be Go heap allocations.
func (a *Allocator) Taken() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.taken
}

// Mapped is how many bytes are mapped now.
func (a *Allocator) Mapped() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	var n int64
	for _, m := range a.mapped {
		n += int64(len(m))
	}
	return n
}
