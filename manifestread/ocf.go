package manifestread

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/twmb/avro/ocf"
)

// The Avro object container format, as far as a manifest needs it: the
// header (magic, metadata, sync marker) and the blocks. The limits are
// twmb/avro/ocf's defaults, so a file its reader refuses is refused here
// too.
const (
	maxBlockBytes        = 64 << 20 // compressed, as declared
	maxDecompressedBytes = 64 << 20
	maxMetadataEntries   = 1 << 10
	maxMetadataBytes     = 16 << 20 // one key or value
	zeroByteSlack        = 4 << 10  // records per block beyond its length
)

var ocfMagic = []byte{'O', 'b', 'j', 1}

// errUnsupported marks a file the fast path does not read (a codec or a
// schema shape it does not know): iceberg-go's reader reads it instead.
var errUnsupported = errors.New("manifestread: not read by the fast path")

type header struct {
	meta map[string][]byte // values alias the file's bytes
	sync []byte
	rest []byte // the blocks
}

func varint(b []byte) (int64, []byte, error) {
	v, n := binary.Varint(b)
	if n <= 0 {
		return 0, nil, io.ErrUnexpectedEOF
	}
	return v, b[n:], nil
}

func readHeader(b []byte) (header, error) {
	if !bytes.HasPrefix(b, ocfMagic) {
		return header{}, errors.New("ocf: invalid magic")
	}
	b = b[len(ocfMagic):]
	h := header{meta: map[string][]byte{}}
	for {
		count, rest, err := varint(b)
		if err != nil {
			return header{}, fmt.Errorf("ocf: metadata: %w", err)
		}
		b = rest
		if count == 0 {
			break
		}
		if count < 0 {
			count = -count
			if count < 0 {
				return header{}, errors.New("ocf: metadata: invalid block count")
			}
			if _, b, err = varint(b); err != nil {
				return header{}, fmt.Errorf("ocf: metadata: %w", err)
			}
		}
		if count > maxMetadataEntries || int64(len(h.meta))+count > maxMetadataEntries {
			return header{}, fmt.Errorf("ocf: metadata: %d entries", count)
		}
		for range count {
			var key, val []byte
			if key, b, err = lengthPrefixed(b); err != nil {
				return header{}, fmt.Errorf("ocf: metadata key: %w", err)
			}
			if val, b, err = lengthPrefixed(b); err != nil {
				return header{}, fmt.Errorf("ocf: metadata value: %w", err)
			}
			h.meta[string(key)] = val
		}
	}
	if len(b) < 16 {
		return header{}, fmt.Errorf("ocf: sync marker: %w", io.ErrUnexpectedEOF)
	}
	h.sync, h.rest = b[:16], b[16:]
	return h, nil
}

func lengthPrefixed(b []byte) ([]byte, []byte, error) {
	n, b, err := varint(b)
	if err != nil {
		return nil, nil, err
	}
	if n < 0 || n > maxMetadataBytes || n > int64(len(b)) {
		return nil, nil, fmt.Errorf("length %d out of range", n)
	}
	return b[:n], b[n:], nil
}

// decompressor turns a block's bytes into its records' bytes. The block
// it returns is valid until the next call.
type decompressor interface {
	decompress(src []byte) ([]byte, error)
	release()
}

func codecFor(name string) (decompressor, error) {
	switch name {
	case "", "null":
		return nullBlocks{}, nil
	case "deflate":
		return newDeflateBlocks(), nil
	case "snappy":
		return snappyBlocks{}, nil
	}
	return nil, fmt.Errorf("%w: codec %q", errUnsupported, name)
}

type nullBlocks struct{}

func (nullBlocks) decompress(src []byte) ([]byte, error) {
	if len(src) > maxDecompressedBytes {
		return nil, fmt.Errorf("ocf: block of %d bytes", len(src))
	}
	return src, nil
}
func (nullBlocks) release() {}

type snappyBlocks struct{}

func (snappyBlocks) decompress(src []byte) ([]byte, error) {
	return ocf.SnappyCodec().(ocf.BoundedDecompressor).DecompressBounded(src, maxDecompressedBytes)
}
func (snappyBlocks) release() {}

// deflateBlocks reuses one flate reader and one output buffer across a
// file's blocks, and both across files through a pool: the hot path's
// garbage is the decoded entries, not the inflater's state.
type deflateBlocks struct {
	r   io.ReadCloser
	src bytes.Reader
	out bytes.Buffer
}

var deflatePool = sync.Pool{New: func() any { return &deflateBlocks{} }}

func newDeflateBlocks() *deflateBlocks { return deflatePool.Get().(*deflateBlocks) }

func (d *deflateBlocks) decompress(src []byte) ([]byte, error) {
	d.src.Reset(src)
	if d.r == nil {
		d.r = flate.NewReader(&d.src)
	} else if err := d.r.(flate.Resetter).Reset(&d.src, nil); err != nil {
		return nil, fmt.Errorf("ocf: inflating block: %w", err)
	}
	d.out.Reset()
	n, err := d.out.ReadFrom(io.LimitReader(d.r, maxDecompressedBytes+1))
	if err != nil {
		return nil, fmt.Errorf("ocf: inflating block: %w", err)
	}
	if n > maxDecompressedBytes {
		return nil, fmt.Errorf("ocf: block inflates past %d bytes", maxDecompressedBytes)
	}
	return d.out.Bytes(), nil
}

func (d *deflateBlocks) release() {
	d.src.Reset(nil)
	if d.out.Cap() > 1<<20 {
		d.out = bytes.Buffer{} // a rare large block is not kept
	}
	deflatePool.Put(d)
}

// nextBlock splits the next block off b: its record count, its records'
// bytes (decompressed), and what follows. done is true at the clean end.
func nextBlock(b, sync []byte, codec decompressor) (count int64, block, rest []byte, done bool, err error) {
	for {
		if len(b) == 0 {
			return 0, nil, nil, true, nil
		}
		if count, b, err = varint(b); err != nil {
			return 0, nil, nil, false, fmt.Errorf("ocf: block count: %w", err)
		}
		var size int64
		if size, b, err = varint(b); err != nil {
			return 0, nil, nil, false, fmt.Errorf("ocf: block size: %w", err)
		}
		if count < 0 || size < 0 || size > maxBlockBytes {
			return 0, nil, nil, false, fmt.Errorf("ocf: block of %d records in %d bytes", count, size)
		}
		if size+16 > int64(len(b)) {
			return 0, nil, nil, false, fmt.Errorf("ocf: block data: %w", io.ErrUnexpectedEOF)
		}
		data := b[:size]
		if !bytes.Equal(b[size:size+16], sync) {
			return 0, nil, nil, false, errors.New("ocf: sync marker mismatch")
		}
		b = b[size+16:]
		if count == 0 {
			continue // an empty block: skipped, as ocf's reader does
		}
		block, err = codec.decompress(data)
		if err != nil {
			return 0, nil, nil, false, err
		}
		if count > int64(len(block))+zeroByteSlack {
			return 0, nil, nil, false, fmt.Errorf("ocf: block claims %d records in %d bytes", count, len(block))
		}
		return count, block, b, false, nil
	}
}
