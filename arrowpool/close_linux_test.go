package arrowpool

import (
	"errors"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mappedAt reports whether b's pages are mapped: mincore fails with
// ENOMEM on a range that is not.
func mappedAt(t *testing.T, b []byte) bool {
	t.Helper()
	vec := make([]byte, (len(b)+unix.Getpagesize()-1)/unix.Getpagesize())
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, addr(b), uintptr(len(b)), uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	switch {
	case errno == 0:
		return true
	case errors.Is(errno, unix.ENOMEM):
		return false
	default:
		t.Fatalf("mincore: %v", errno)
		return false
	}
}

// A job's pool kept its freed mappings for reuse, and nothing unmapped
// them when the job dropped the pool: every job left up to the pool's
// limit mapped for the life of the process (reactor's resident memory
// grew by about 1 GiB a minute under 10,000-row commits while its Go heap
// stayed under 20 MB). Close unmaps what is kept, and from then on a
// freed mapping is unmapped at once, while the allocator stays usable.
func TestCloseUnmapsKeptMappings(t *testing.T) {
	a := New(Options{Limit: 64 << 20})
	kept := [][]byte{a.Allocate(2 << 20), a.Allocate(4 << 20)}
	late := a.Allocate(2 << 20) // still held by Arrow at Close
	for _, b := range kept {
		if !mappedAt(t, b) {
			t.Fatalf("a %d-byte buffer is not a mapping of its own", len(b))
		}
		a.Free(b)
	}
	if a.kept != 6<<20 {
		t.Fatalf("kept %d bytes after the frees, want %d", a.kept, 6<<20)
	}

	a.Close()
	if a.kept != 0 {
		t.Errorf("kept %d bytes after Close, want 0", a.kept)
	}
	for _, b := range kept {
		if mappedAt(t, b) {
			t.Errorf("a kept %d-byte mapping is still mapped after Close", len(b))
		}
	}
	if !mappedAt(t, late) {
		t.Fatal("Close unmapped a buffer still handed out")
	}
	late[len(late)-1] = 1 // still writable

	a.Free(late)
	if a.kept != 0 || mappedAt(t, late) {
		t.Errorf("a mapping freed after Close was kept (kept %d bytes, mapped %v), want unmapped", a.kept, mappedAt(t, late))
	}
	again := a.Allocate(3 << 20)
	if len(again) != 3<<20 || !zero(again) {
		t.Fatal("allocator unusable after Close")
	}
	a.Free(again)
	a.Close() // twice is fine
}
