package planner

import (
	"fmt"
	"sort"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// PartitionKey renders a file's partition tuple as a stable, readable key.
// Values are rendered with the transform's human form, so the key reads like
// the Hive-style path segment ("category=books/day=2026-11-29"). The planner
// and the executor both key partitions with it.
func PartitionKey(meta table.Metadata, specID int32, values map[int]any) string {
	spec := meta.PartitionSpecByID(int(specID))
	if spec == nil {
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
	sc := meta.CurrentSchema()
	var b strings.Builder
	if specID != int32(meta.DefaultPartitionSpec()) {
		fmt.Fprintf(&b, "spec=%d", specID)
	}
	for _, f := range spec.Fields() {
		if b.Len() > 0 {
			b.WriteByte('/')
		}
		b.WriteString(f.Name)
		b.WriteByte('=')
		b.WriteString(humanValue(sc, f, values[f.FieldID]))
	}
	if b.Len() == 0 {
		return "(unpartitioned)"
	}
	return b.String()
}

func humanValue(sc *iceberg.Schema, f iceberg.PartitionField, v any) string {
	if v == nil {
		return "null"
	}
	if len(f.SourceIDs) == 1 {
		if src, ok := sc.FindFieldByID(f.SourceIDs[0]); ok {
			return f.Transform.ToHumanStrType(f.Transform.ResultType(src.Type), v)
		}
	}
	return fmt.Sprint(v)
}
