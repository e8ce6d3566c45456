package jobs

import (
	"fmt"
	"sort"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Keyer renders partition tuples of one table as stable, readable keys.
// Values use the transform's human form, so a key reads like the Hive-style
// path segment ("category=books/day=2026-11-29"). The planner and the
// executor both key partitions with it.
//
// Build one per table metadata and reuse it: resolving specs and the schema
// is the expensive part (iceberg-go copies the schema on every
// CurrentSchema call), and a rebuild keys every file of the table.
type Keyer struct {
	defaultSpec int32
	specs       map[int32]specFields
}

type specFields struct {
	fields []keyField
}

type keyField struct {
	id        int
	name      string
	transform iceberg.Transform
	result    iceberg.Type // nil when the source column is unknown
}

// NewKeyer prepares a Keyer for meta's specs and current schema.
func NewKeyer(meta table.Metadata) *Keyer {
	k := &Keyer{defaultSpec: int32(meta.DefaultPartitionSpec()), specs: map[int32]specFields{}}
	sc := meta.CurrentSchema()
	for _, spec := range meta.PartitionSpecs() {
		var sf specFields
		for _, f := range spec.Fields() {
			kf := keyField{id: f.FieldID, name: f.Name, transform: f.Transform}
			if len(f.SourceIDs) == 1 {
				if src, ok := sc.FindFieldByID(f.SourceIDs[0]); ok {
					kf.result = f.Transform.ResultType(src.Type)
				}
			}
			sf.fields = append(sf.fields, kf)
		}
		k.specs[int32(spec.ID())] = sf
	}
	return k
}

// Key renders the partition values of a file written with spec specID.
func (k *Keyer) Key(specID int32, values map[int]any) string {
	spec, ok := k.specs[specID]
	if !ok {
		// A spec we cannot resolve still needs a stable key.
		ids := make([]int, 0, len(values))
		for id := range values {
			ids = append(ids, id)
		}
		sort.Ints(ids)
		parts := make([]string, 0, len(ids)+1)
		parts = append(parts, fmt.Sprintf("spec=%d", specID))
		for _, id := range ids {
			parts = append(parts, fmt.Sprintf("%d=%v", id, values[id]))
		}
		return strings.Join(parts, "/")
	}
	var b strings.Builder
	if specID != k.defaultSpec {
		fmt.Fprintf(&b, "spec=%d", specID)
	}
	for _, f := range spec.fields {
		if b.Len() > 0 {
			b.WriteByte('/')
		}
		b.WriteString(f.name)
		b.WriteByte('=')
		b.WriteString(f.human(values[f.id]))
	}
	if b.Len() == 0 {
		return "(unpartitioned)"
	}
	return b.String()
}

func (f keyField) human(v any) string {
	switch {
	case v == nil:
		return "null"
	case f.result != nil:
		return f.transform.ToHumanStrType(f.result, v)
	}
	return fmt.Sprint(v)
}
