package sortorder

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Sorting in runs. A partition larger than memory is sorted in runs that
// are merged by their keys afterwards (the executor's external sort): each
// run is sorted with SortWithKeys, which also returns the sorted rows'
// keys, and the keys of every run compare with bytes.Compare in the order.
// Ties keep their order within a run; the merge keeps runs in input order
// on ties, so the result is the stable sort of the whole input.
//
// A linear order's keys do not depend on the batch. A z-order's do (the
// quantile step of the package doc): runs of one partition must share one
// distribution, estimated from a sample of the whole partition (Sampler)
// and passed to SortWithKeys as Quantiles. When the sample holds every row
// the keys are those Sort computes for the partition as one batch.

// Quantiles are the distributions of a z-order's columns over a partition:
// each column's sampled normalised values, sorted.
type Quantiles struct {
	cols [][]uint64
}

// Sampler collects a deterministic sample of a z-order's normalised column
// values: every row while the sample has room, then every second row of
// those taken (and every second from then on), and so on, so the sample is
// spread evenly over the input whatever its size.
type Sampler struct {
	b        Bound
	capacity int
	stride   int
	seen     int
	vals     [][]uint64
}

// NewSampler returns a sampler of at most capacity rows (at least 2).
func (b Bound) NewSampler(capacity int) *Sampler {
	return &Sampler{b: b, capacity: max(capacity, 2), stride: 1, vals: make([][]uint64, len(b.cols))}
}

// Add samples rec's rows.
func (s *Sampler) Add(rec arrow.RecordBatch) error {
	if s.b.spread == nil {
		return nil
	}
	rds, err := s.b.readers(rec)
	if err != nil {
		return err
	}
	for r := range int(rec.NumRows()) {
		if s.seen%s.stride == 0 {
			if len(s.vals[0]) == s.capacity {
				for c := range s.vals {
					kept := s.vals[c][:0]
					for i := 0; i < len(s.vals[c]); i += 2 {
						kept = append(kept, s.vals[c][i])
					}
					s.vals[c] = kept
				}
				s.stride *= 2
			}
			if s.seen%s.stride == 0 {
				for c := range rds {
					s.vals[c] = append(s.vals[c], rds[c].zValue(r))
				}
			}
		}
		s.seen++
	}
	return nil
}

// Exact reports whether the sample holds every row added.
func (s *Sampler) Exact() bool { return s.stride == 1 }

// Quantiles returns the sampled distributions.
func (s *Sampler) Quantiles() *Quantiles {
	q := &Quantiles{cols: make([][]uint64, len(s.vals))}
	for c, v := range s.vals {
		q.cols[c] = slices.Clone(v)
		slices.Sort(q.cols[c])
	}
	return q
}

// quantile maps v to floor(2^64 * k / n), k the number of sampled values
// smaller than v: toQuantiles' map over the sample.
func (q *Quantiles) quantile(c int, v uint64) uint64 {
	sample := q.cols[c]
	n := len(sample)
	if n == 0 {
		return 0
	}
	k := sort.Search(n, func(i int) bool { return sample[i] >= v })
	if k == n {
		return math.MaxUint64 // past every sampled value
	}
	hi, _ := bits.Div64(uint64(k), 0, uint64(n))
	return hi
}

// SortWithKeys sorts rec as Sort does and returns, with the sorted rows,
// each sorted row's key, allocated from mem. For a z-order q must be the
// partition's Quantiles; a linear order ignores it.
func (b Bound) SortWithKeys(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, q *Quantiles) (arrow.RecordBatch, *array.Binary, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	rds, err := b.readers(rec)
	if err != nil {
		return nil, nil, err
	}
	if rec.NumRows() > math.MaxInt32 {
		return nil, nil, fmt.Errorf("sortorder: batch of %d rows is too large to sort at once (limit %d)", rec.NumRows(), math.MaxInt32)
	}
	n := int(rec.NumRows())
	var ks keySet
	switch {
	case b.spread == nil:
		ks = b.keys(rds, 0, n)
	case q == nil || len(q.cols) != len(rds):
		return nil, nil, fmt.Errorf("sortorder: a z-order sorted in runs needs the partition's quantiles")
	default:
		ks = b.zKeysWith(rds, 0, n, q)
	}
	if len(ks.arena) > math.MaxInt32 {
		return nil, nil, fmt.Errorf("sortorder: keys of %d bytes are too large for one run (limit %d)", len(ks.arena), math.MaxInt32)
	}
	perm := sortedRows(ks)
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	sorted, err := reorder(ctx, rec, perm)
	if err != nil {
		return nil, nil, err
	}
	return sorted, ks.binary(mem, perm), nil
}

// zKeysWith builds z-order keys whose columns are mapped through q.
func (b Bound) zKeysWith(rds []reader, lo, hi int, q *Quantiles) keySet {
	n := hi - lo
	width := 8 * len(rds)
	ks := keySet{arena: make([]byte, n*width), stride: width}
	var row [maxZOrderColumns]uint64
	for r := range n {
		for c := range rds {
			row[c] = q.quantile(c, rds[c].zValue(lo+r))
		}
		interleave(ks.arena[r*width:(r+1)*width], row[:len(rds)], b.spread)
	}
	return ks
}

// binary returns the keys of ks in the order perm lists their rows, as a
// binary array allocated from mem.
func (k *keySet) binary(mem memory.Allocator, perm []int32) *array.Binary {
	n := len(perm)
	total := len(k.arena)
	offsets := memory.NewResizableBuffer(mem)
	offsets.Resize(4 * (n + 1))
	data := memory.NewResizableBuffer(mem)
	data.Resize(total)
	off := offsets.Bytes()
	dst := data.Bytes()
	pos := 0
	for i, p := range perm {
		binary.LittleEndian.PutUint32(off[4*i:], uint32(pos))
		pos += copy(dst[pos:], k.at(int(p)))
	}
	binary.LittleEndian.PutUint32(off[4*n:], uint32(pos))
	d := array.NewData(arrow.BinaryTypes.Binary, n, []*memory.Buffer{nil, offsets, data}, nil, 0, 0)
	defer d.Release()
	offsets.Release()
	data.Release()
	return array.NewBinaryData(d)
}
