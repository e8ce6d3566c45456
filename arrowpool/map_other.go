//go:build !linux

package arrowpool

// Elsewhere large buffers are plain Go allocations.
func mapBytes(int) []byte { return nil }

func remapBytes([]byte, int) []byte { return nil }

func unmapBytes([]byte) {}
