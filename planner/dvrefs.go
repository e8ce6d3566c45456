package planner

import (
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// dvRefs follows, per data file (by location hash), the live deletion
// vectors naming it, so the counters can say exactly how many vectors break
// the v3 rules: a second vector for one data file (DuplicateDeletionVectors)
// and vectors whose data file is gone (DanglingDeletionVectors). Only
// deletion vectors are held, so it costs nothing on v1/v2 tables and one
// entry per data file with deletes on v3.
type dvRefs map[uint64]*dvRef

type dvRef struct {
	n        int32
	dangling bool
	ps       *partitionState // the vectors' partition (the data file's)
}

// referencedHash is the location hash of the data file a deletion vector
// names; ok is false for any other file.
func referencedHash(df iceberg.DataFile) (uint64, bool) {
	if !table.IsDeletionVector(df) {
		return 0, false
	}
	ref := df.ReferencedDataFile()
	if ref == nil {
		return 0, false
	}
	return locationHash(*ref), true
}

// added counts a vector that became live in ps.
func (d dvRefs) added(ps *partitionState, df iceberg.DataFile) {
	h, ok := referencedHash(df)
	if !ok {
		return
	}
	r := d[h]
	if r == nil {
		r = &dvRef{ps: ps}
		d[h] = r
	}
	r.n++
	if r.n > 1 {
		ps.DuplicateDeletionVectors++
	}
	if r.dangling {
		ps.DanglingDeletionVectors++
	}
}

// removed counts a vector that is no longer live.
func (d dvRefs) removed(df iceberg.DataFile) {
	h, ok := referencedHash(df)
	if !ok {
		return
	}
	r := d[h]
	if r == nil {
		return // not seen live (a state built after it went)
	}
	if r.n > 1 {
		r.ps.DuplicateDeletionVectors--
	}
	if r.dangling {
		r.ps.DanglingDeletionVectors--
	}
	if r.n--; r.n <= 0 {
		delete(d, h)
	}
}

// dataGone marks the vectors of data files removed by a snapshot dangling,
// once the whole snapshot is applied (a rewrite removes the vectors of its
// data files in the same snapshot, often in a later manifest).
func (d dvRefs) dataGone(hashes []uint64) {
	for _, h := range hashes {
		if r := d[h]; r != nil && !r.dangling {
			r.dangling = true
			r.ps.DanglingDeletionVectors += int(r.n)
		}
	}
}

// danglingUnless marks every vector whose data file is not in live
// dangling (a state built from one snapshot).
func (d dvRefs) danglingUnless(live map[uint64]struct{}) {
	for h, r := range d {
		if _, ok := live[h]; !ok && !r.dangling {
			r.dangling = true
			r.ps.DanglingDeletionVectors += int(r.n)
		}
	}
}
