package streamwriter

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"
)

// Tally is a row count and an order-independent checksum (the wrapping sum
// of a 64-bit FNV-1a hash of each row): two tables hold the same multiset of
// rows exactly when their tallies are equal (up to hash collisions).
type Tally struct {
	Rows int64
	Sum  uint64
}

// Add folds one row into the tally.
func (t *Tally) Add(id int64, category, payload string) {
	t.Rows++
	t.Sum += rowHash(id, category, payload)
}

// Remove takes one row out of the tally.
func (t *Tally) Remove(id int64, category, payload string) {
	t.Rows--
	t.Sum -= rowHash(id, category, payload)
}

// Merge folds another tally into this one.
func (t *Tally) Merge(o Tally) {
	t.Rows += o.Rows
	t.Sum += o.Sum
}

func (t Tally) String() string { return fmt.Sprintf("%d rows, checksum %016x", t.Rows, t.Sum) }

func rowHash(id int64, category, payload string) uint64 {
	h := fnv.New64a()
	var buf [20]byte
	h.Write(strconv.AppendInt(buf[:0], id, 10))
	h.Write([]byte{0})
	h.Write([]byte(category))
	h.Write([]byte{0})
	h.Write([]byte(payload))
	return h.Sum64()
}

// Contents reads the whole table (deletes applied) and returns its tally, the
// tally per partition, and how often each id occurs.
type Contents struct {
	Total       Tally
	ByPartition map[string]Tally
	IDs         map[int64]int
}

// Read scans tbl's current snapshot.
func Read(ctx context.Context, tbl *table.Table) (Contents, error) {
	c := Contents{ByPartition: map[string]Tally{}, IDs: map[int64]int{}}
	if tbl.CurrentSnapshot() == nil {
		return c, nil
	}
	_, records, err := tbl.Scan().ToArrowRecords(ctx)
	if err != nil {
		return c, fmt.Errorf("streamwriter: scan %v: %w", tbl.Identifier(), err)
	}
	for rec, err := range records {
		if err != nil {
			return c, fmt.Errorf("streamwriter: read %v: %w", tbl.Identifier(), err)
		}
		if err := c.add(rec); err != nil {
			rec.Release()
			return c, err
		}
		rec.Release()
	}
	return c, nil
}

func (c *Contents) add(rec arrow.RecordBatch) error {
	sc := rec.Schema()
	col := func(name string) (arrow.Array, error) {
		idx := sc.FieldIndices(name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("streamwriter: column %q not found in %s", name, sc)
		}
		return rec.Column(idx[0]), nil
	}
	idCol, err := col("id")
	if err != nil {
		return err
	}
	catCol, err := col("category")
	if err != nil {
		return err
	}
	payCol, err := col("payload")
	if err != nil {
		return err
	}
	ids, ok := idCol.(*array.Int64)
	if !ok {
		return fmt.Errorf("streamwriter: id column is %s, want int64", idCol.DataType())
	}
	str := func(a arrow.Array, i int) string {
		switch s := a.(type) {
		case *array.String:
			return s.Value(i)
		case *array.LargeString:
			return s.Value(i)
		case *array.StringView:
			return s.Value(i)
		}
		return a.ValueStr(i)
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		id := ids.Value(i)
		category := str(catCol, i)
		payload := ""
		if payCol.IsValid(i) {
			payload = str(payCol, i)
		}
		c.IDs[id]++
		c.Total.Add(id, category, payload)
		p := c.ByPartition[category]
		p.Add(id, category, payload)
		c.ByPartition[category] = p
	}
	return nil
}
