package planner

import (
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/jobs"
)

// Counters describe the live files of one partition: its data files and
// the merge-on-read delete files written against them.
type Counters struct {
	DataFiles  int
	Bytes      int64
	Rows       int64
	SmallFiles int
	// SmallBytes are the bytes of the small files (what a quiet merge
	// rewrites).
	SmallBytes int64
	TinyFiles  int
	// Tiers counts the small files per size tier (see jobs.Tiers).
	Tiers jobs.TierCounts `json:"-"`
	// Delete files by kind, and the delete rows they hold (their record
	// counts: positions for position deletes and deletion vectors, keys for
	// equality deletes; not the data rows they end up deleting).
	PositionDeleteFiles int
	EqualityDeleteFiles int
	DeletionVectors     int
	PositionDeleteRows  int64
	EqualityDeleteRows  int64
	DeletionVectorRows  int64
	DeleteBytes         int64
	// DuplicateDeletionVectors are the live deletion vectors beyond the
	// first for one data file, DanglingDeletionVectors those whose data
	// file is no longer live (format v3 rules; see dvRefs).
	DuplicateDeletionVectors int
	DanglingDeletionVectors  int
	// SortedFiles are the data files a sort or z-order rewrite wrote (the
	// rest are "unsorted": what the next sort rewrite is for).
	SortedFiles int
	// LastWrite is the commit time of the newest snapshot, not written by
	// reactor, that added a file (data or deletes) to the partition.
	LastWrite time.Time

	// v3 is set (from the table's format version) only on the copy the
	// evaluation reads: on format v3 deletion vectors are the only
	// position deletes a table should hold (see dvRulesCheck).
	v3 bool
}

// DeleteFiles is the number of delete files of every kind.
func (c Counters) DeleteFiles() int {
	return c.PositionDeleteFiles + c.EqualityDeleteFiles + c.DeletionVectors
}

// DeleteRows is the number of delete rows of every kind.
func (c Counters) DeleteRows() int64 {
	return c.PositionDeleteRows + c.EqualityDeleteRows + c.DeletionVectorRows
}

// fileSizes are the limits files are counted against.
type fileSizes struct {
	small int64 // below: a compaction candidate
	tiny  int64 // below: a health problem (the seeds' "tiny files")
	fanIn int   // size ratio between two tiers of small files
}

func (c *Counters) add(df iceberg.DataFile, sz fileSizes) { c.count(df, sz, 1) }

func (c *Counters) remove(df iceberg.DataFile, sz fileSizes) { c.count(df, sz, -1) }

// count adds (sign 1) or removes (sign -1) one file.
func (c *Counters) count(df iceberg.DataFile, sz fileSizes, sign int) {
	rows := int64(sign) * df.Count()
	switch df.ContentType() {
	case iceberg.EntryContentPosDeletes:
		if table.IsDeletionVector(df) {
			c.DeletionVectors += sign
			c.DeletionVectorRows += rows
		} else {
			c.PositionDeleteFiles += sign
			c.PositionDeleteRows += rows
			// A deletion vector's size is its blob in a shared Puffin
			// file; only Parquet delete files are merged by size.
			c.DeleteBytes += int64(sign) * df.FileSizeBytes()
		}
		return
	case iceberg.EntryContentEqDeletes:
		c.EqualityDeleteFiles += sign
		c.EqualityDeleteRows += rows
		c.DeleteBytes += int64(sign) * df.FileSizeBytes()
		return
	}
	c.DataFiles += sign
	c.Bytes += int64(sign) * df.FileSizeBytes()
	c.Rows += rows
	if df.FileSizeBytes() < sz.small {
		c.SmallFiles += sign
		c.SmallBytes += int64(sign) * df.FileSizeBytes()
		c.Tiers[jobs.Tiers{SmallFileSize: sz.small, FanIn: sz.fanIn}.Of(df.FileSizeBytes())] += int32(sign)
	}
	if df.FileSizeBytes() < sz.tiny {
		c.TinyFiles += sign
	}
}

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
