package arrowpool

import (
	"golang.org/x/sys/unix"
)

// mapBytes maps a zeroed buffer of at least size bytes (whole pages), or
// returns nil.
func mapBytes(size int) []byte {
	m, err := unix.Mmap(-1, 0, pages(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil
	}
	return m
}

// remapBytes grows mapping m to at least size bytes, moving it if need be
// (the kernel moves the pages, not their bytes), or returns nil.
func remapBytes(m []byte, size int) []byte {
	grown, err := unix.Mremap(m, pages(size), unix.MREMAP_MAYMOVE)
	if err != nil {
		return nil
	}
	return grown
}

func unmapBytes(m []byte) { _ = unix.Munmap(m) }

func pages(size int) int {
	ps := unix.Getpagesize()
	return (size + ps - 1) / ps * ps
}
