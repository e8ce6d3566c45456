package sortorder

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// keySet holds the keys of a run of rows in one arena: at a fixed stride
// (off nil) or delimited by offsets. One allocation for all keys rather
// than one per row keeps the garbage collector out of a million-row sort.
type keySet struct {
	arena  []byte
	off    []int
	stride int
}

func (k *keySet) at(i int) []byte {
	if k.off == nil {
		return k.arena[i*k.stride : (i+1)*k.stride : (i+1)*k.stride]
	}
	return k.arena[k.off[i]:k.off[i+1]:k.off[i+1]]
}

// keys builds the keys of rows lo..hi-1 on their own: linear keys, or
// z-order keys of the raw normalised values (no quantiles, which need the
// whole batch; Sort builds its z-order keys with zKeys directly).
func (b Bound) keys(rds []reader, lo, hi int) keySet {
	n := hi - lo
	if b.spread != nil {
		return b.zKeys(rds, lo, hi, false)
	}
	if b.stride > 0 {
		ks := keySet{arena: make([]byte, n*b.stride), stride: b.stride}
		cur := cursor{stride: b.stride}
		for i := range rds {
			rds[i].encodeLinear(ks.arena, &cur, lo, hi)
			cur.base += 1 + rds[i].col.width
		}
		return ks
	}
	// Variable-length keys: size every row first so the arena is
	// allocated once, then write the columns one after the other.
	off := make([]int, n+1)
	for i := range rds {
		for r := lo; r < hi; r++ {
			off[r-lo+1] += rds[i].encodedLen(r)
		}
	}
	for r := 1; r <= n; r++ {
		off[r] += off[r-1]
	}
	ks := keySet{arena: make([]byte, off[n]), off: off}
	cur := cursor{pos: slices.Clone(off[:n])}
	for i := range rds {
		rds[i].encodeLinear(ks.arena, &cur, lo, hi)
	}
	return ks
}

// zKeys builds z-order keys: each row's normalised column values with
// their bits interleaved, 8 bytes per column. With quantiles (Sort), each
// column's normalised values are first replaced by their quantiles among
// rows lo..hi-1 (toQuantiles); without (AppendKey, Compare), keys use the
// normalised values themselves and so compare across batches.
func (b Bound) zKeys(rds []reader, lo, hi int, quantiles bool) keySet {
	n := hi - lo
	width := 8 * len(rds)
	ks := keySet{arena: make([]byte, n*width), stride: width}
	// Each column's values go to its 8-byte slot of every row, and are
	// interleaved in place once all columns are there: no per-column
	// buffers beyond one column's values.
	vals := make([]uint64, n)
	var pairs []valueRow
	if quantiles {
		pairs = make([]valueRow, n)
	}
	for c := range rds {
		for r := range vals {
			vals[r] = rds[c].zValue(lo + r)
		}
		if quantiles {
			toQuantiles(vals, pairs)
		}
		for r, v := range vals {
			binary.BigEndian.PutUint64(ks.arena[r*width+8*c:], v)
		}
	}
	var row [maxZOrderColumns]uint64
	for r := range n {
		key := ks.arena[r*width : (r+1)*width]
		for c := range rds {
			row[c] = binary.BigEndian.Uint64(key[8*c:])
		}
		interleave(key, row[:len(rds)], b.spread)
	}
	return ks
}

type valueRow struct {
	v   uint64
	row int32
}

// toQuantiles replaces each of the n values by floor(2^64 * k / n), k the
// number of values smaller than it (pairs is scratch space of n entries).
// The map is monotone (equal values stay equal) and spreads every column
// over all 64 bits by row count, so each interleaved bit halves the rows
// of its column whatever the values' magnitudes — without it the column
// varying in the highest bits decides the z-order alone (package doc).
func toQuantiles(vals []uint64, pairs []valueRow) {
	n := len(vals)
	for r, v := range vals {
		pairs[r] = valueRow{v, int32(r)}
	}
	slices.SortFunc(pairs, func(a, b valueRow) int { return cmp.Compare(a.v, b.v) })
	for i := 0; i < n; {
		j := i + 1
		for j < n && pairs[j].v == pairs[i].v {
			j++
		}
		q, _ := bits.Div64(uint64(i), 0, uint64(n)) // i < n: no overflow
		for _, p := range pairs[i:j] {
			vals[p.row] = q
		}
		i = j
	}
}

// entry is a row being sorted: the first 12 bytes of its key inline (so
// most comparisons touch neither the arena nor a second cache line), and
// the row index, which breaks ties. 16 bytes a row.
type entry struct {
	k0  uint64
	k1  uint32
	row int32
}

// prefixLen is how many key bytes an entry holds.
const prefixLen = 12

// sortedRows returns the row indices of ks in key order, ties in row
// order. An unstable sort with the row index as the last tie-break is a
// stable sort, and pdqsort is much faster than a merge sort here.
func sortedRows(ks keySet) []int32 {
	n := len(ks.off) - 1
	if ks.off == nil {
		n = len(ks.arena) / ks.stride
	}
	entries := make([]entry, n)
	for i := range entries {
		// Zero padding is safe: keys of one Bound are prefix-free, so two
		// keys differ within the shorter one unless they are equal.
		var pad [prefixLen]byte
		copy(pad[:], ks.at(i))
		entries[i] = entry{k0: binary.BigEndian.Uint64(pad[:8]), k1: binary.BigEndian.Uint32(pad[8:]), row: int32(i)}
	}
	long := ks.off != nil || ks.stride > prefixLen
	slices.SortFunc(entries, func(x, y entry) int {
		if c := cmp.Compare(x.k0, y.k0); c != 0 {
			return c
		}
		if c := cmp.Compare(x.k1, y.k1); c != 0 {
			return c
		}
		if long {
			if c := bytes.Compare(tail(ks.at(int(x.row))), tail(ks.at(int(y.row)))); c != 0 {
				return c
			}
		}
		return cmp.Compare(x.row, y.row)
	})
	perm := make([]int32, n)
	for i, e := range entries {
		perm[i] = e.row
	}
	return perm
}

// tail is a key past the bytes its entry holds.
func tail(k []byte) []byte {
	if len(k) <= prefixLen {
		return nil
	}
	return k[prefixLen:]
}

// spreadTable returns, for every byte b, the 8n-bit word with bit k of b
// at bit k*n+n-1: the position bit k of column 0 takes in an interleaved
// group of n bytes. Column c's bits go one place lower (>> c).
func spreadTable(n int) *[256]uint32 {
	var t [256]uint32
	for b := range 256 {
		for k := range 8 {
			if b&(1<<k) != 0 {
				t[b] |= 1 << (k*n + n - 1)
			}
		}
	}
	return &t
}

// interleave writes the bits of vals most significant first — bit 63 of
// vals[0], bit 63 of vals[1], ..., bit 62 of vals[0], ... — to dst
// (8*len(vals) bytes). Byte position p of every value (bits 63-8p down to
// 56-8p) makes the n output bytes at p*n, looked up a byte at a time.
func interleave(dst []byte, vals []uint64, spread *[256]uint32) {
	n := len(vals)
	for p := range 8 {
		shift := 56 - 8*p
		var group uint32
		for c, v := range vals {
			group |= spread[byte(v>>shift)] >> c
		}
		// group holds 8n bits, n <= 4: write its n bytes big-endian.
		for k := range n {
			dst[p*n+k] = byte(group >> (8 * (n - 1 - k)))
		}
	}
}

// Sort returns rec's rows in the order, as a record batch with rec's
// schema in which every value is kept exactly (each column is gathered
// with Arrow's take). The sort is stable: rows with equal keys keep their
// input order. The caller releases the result; when rec is already in
// order (or has fewer than two rows) the result is rec itself, retained,
// rather than a copy.
//
// Memory besides the output, per row: the key (1 byte per field plus the
// value's encoding for a linear order, 8 bytes per column for a z-order),
// a 16-byte sort entry and a 4-byte index; a z-order also needs 24 bytes
// a row while it computes quantiles. The caller bounds rec's size.
func (b Bound) Sort(ctx context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rds, err := b.readers(rec)
	if err != nil {
		return nil, err
	}
	n64 := rec.NumRows()
	if n64 > math.MaxInt32 {
		return nil, fmt.Errorf("sortorder: batch of %d rows is too large to sort at once (limit %d)", n64, math.MaxInt32)
	}
	n := int(n64)
	var ks keySet
	if b.spread != nil {
		ks = b.zKeys(rds, 0, n, true)
	} else {
		ks = b.keys(rds, 0, n)
	}
	perm := sortedRows(ks)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return reorder(ctx, rec, perm)
}

// reorder returns rec's rows in the order perm lists them (rec itself,
// retained, if perm is the identity).
func reorder(ctx context.Context, rec arrow.RecordBatch, perm []int32) (arrow.RecordBatch, error) {
	n := len(perm)
	identity := true
	for i, p := range perm {
		if int(p) != i {
			identity = false
			break
		}
	}
	if identity {
		rec.Retain()
		return rec, nil
	}
	// The indices array borrows perm's memory: no copy of n indices.
	idxData := array.NewData(arrow.PrimitiveTypes.Int32, n,
		[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(perm))}, nil, 0, 0)
	defer idxData.Release()
	indices := array.MakeFromData(idxData)
	defer indices.Release()
	values := compute.NewDatum(rec)
	defer values.Release()
	idx := compute.NewDatum(indices)
	defer idx.Release()
	// Every index is a valid row by construction: skip the bounds check.
	out, err := compute.Take(ctx, compute.TakeOptions{BoundsCheck: false}, values, idx)
	if err != nil {
		return nil, fmt.Errorf("sortorder: reorder rows: %w", err)
	}
	defer out.Release()
	rd, ok := out.(*compute.RecordDatum)
	if !ok {
		return nil, fmt.Errorf("sortorder: reorder rows: take returned %s, not a record batch", out.Kind())
	}
	sorted := rd.Value
	sorted.Retain()
	return sorted, nil
}

// Compare compares row i of rec a with row j of rec c in the order: -1 if
// row i sorts first, 1 if row j does, 0 if neither. It is meant for tests
// and for checking that written files are sorted, and builds both keys on
// each call. For a z-order it compares positions on the z-curve of the raw
// normalised values (AppendKey), which is not the batch-relative order
// Sort writes, so it cannot check a z-ordered file. It panics if either
// batch lacks a bound column or holds it in an Arrow type the column
// cannot be read from; Sort and AppendKey return those as errors.
func (b Bound) Compare(a arrow.RecordBatch, i int, c arrow.RecordBatch, j int) int {
	ka, err := b.AppendKey(nil, a, i)
	if err != nil {
		panic(err)
	}
	kc, err := b.AppendKey(nil, c, j)
	if err != nil {
		panic(err)
	}
	return bytes.Compare(ka, kc)
}

// AppendKey appends row i's key to dst: a byte string whose bytes.Compare
// order is the sort order, comparable across batches bound by b (the
// encodings follow the Iceberg types, not the batches' Arrow types). Use it
// to merge linearly sorted runs or to check order across file boundaries.
// A z-order key here interleaves the raw normalised values (steps 1 and 3
// of the package doc): Sort's quantile step needs the whole batch.
func (b Bound) AppendKey(dst []byte, rec arrow.RecordBatch, i int) ([]byte, error) {
	if i < 0 || int64(i) >= rec.NumRows() {
		return dst, fmt.Errorf("sortorder: row %d out of range for a batch of %d rows", i, rec.NumRows())
	}
	rds, err := b.readers(rec)
	if err != nil {
		return dst, err
	}
	ks := b.keys(rds, i, i+1)
	return append(dst, ks.at(0)...), nil
}
