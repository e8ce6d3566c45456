package manifestread

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"

	"github.com/apache/iceberg-go"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/twmb/avro"
	"github.com/twmb/avro/atype"
)

// compiled is what one manifest header's schema text (with its
// partition-spec text: a day transform types its field as a date) compiles
// to. Immutable once built; shared by every reader of the same texts.
type compiled struct {
	schemaText, specText []byte // owned copies: the identity of the entry
	schema               *avro.Schema
	fields               fieldMaps
	// plainSnapshotID: the entry's snapshot_id is a long, not a union
	// (iceberg-go's "fallback" v1 entries).
	plainSnapshotID bool
}

// schemas is a bounded LRU of compiled schemas keyed by a hash of their
// texts; a hit is used only when both texts are byte-for-byte equal, so
// two different texts never share an entry, whatever their hashes.
type schemas struct {
	seed  maphash.Seed
	cache *lru.Cache[uint64, *compiled]
	keyOf func(schemaText, specText []byte) uint64 // the tests' colliding keys; nil: key
}

func newSchemas(size int) *schemas {
	c, err := lru.New[uint64, *compiled](max(size, 1))
	if err != nil {
		panic(fmt.Sprintf("manifestread: schema cache: %v", err)) // size >= 1 cannot fail
	}
	return &schemas{seed: maphash.MakeSeed(), cache: c}
}

func (s *schemas) key(schemaText, specText []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(s.seed)
	var n [8]byte
	for i, v := 0, uint64(len(schemaText)); i < 8; i++ {
		n[i] = byte(v >> (8 * i))
	}
	h.Write(n[:]) // the length first: no two (schema, spec) splits collide by design
	h.Write(schemaText)
	h.Write(specText)
	return h.Sum64()
}

// get returns the compiled form of the texts, compiling (and caching) it
// on a miss; compiledNow reports a miss.
func (s *schemas) get(schemaText, specText []byte) (c *compiled, compiledNow bool, err error) {
	keyOf := s.keyOf
	if keyOf == nil {
		keyOf = s.key
	}
	k := keyOf(schemaText, specText)
	if c, ok := s.cache.Get(k); ok && bytes.Equal(c.schemaText, schemaText) && bytes.Equal(c.specText, specText) {
		return c, false, nil
	}
	c, err = compile(schemaText, specText)
	if err != nil {
		return nil, true, err
	}
	s.cache.Add(k, c) // a colliding entry is replaced, never reused
	return c, true, nil
}

func compile(schemaText, specText []byte) (*compiled, error) {
	sc, err := avro.Parse(string(schemaText))
	if err != nil {
		return nil, fmt.Errorf("ocf: parsing schema: %w", err)
	}
	root := sc.Root()
	entry := field(root, "data_file")
	if entry == nil {
		return nil, fmt.Errorf("%w: no data_file field", errUnsupported)
	}
	part := field(&entry.Type, "partition")
	if part == nil {
		return nil, fmt.Errorf("%w: no partition field", errUnsupported)
	}
	decoder, err := project(sc)
	if err != nil {
		return nil, err
	}
	c := &compiled{
		schemaText: bytes.Clone(schemaText),
		specText:   bytes.Clone(specText),
		schema:     decoder,
		fields:     fieldMaps{nameToID: map[string]int{}, idToType: map[int]string{}, idToScale: map[int]int{}},
	}
	if f := field(root, "snapshot_id"); f != nil && f.Type.Type != atype.Union {
		c.plainSnapshotID = true
	}
	// iceberg-go's getFieldIDMap (manifest.go, v0.7.0).
	for _, f := range part.Type.Fields {
		id, ok := fieldID(f)
		if !ok {
			continue
		}
		c.fields.nameToID[f.Name] = id
		typ := f.Type
		if typ.Type == atype.Union {
			typ = typ.Branches[len(typ.Branches)-1]
		}
		if typ.LogicalType != "" {
			c.fields.idToType[id] = typ.LogicalType
			if typ.LogicalType == atype.Decimal {
				c.fields.idToScale[id] = typ.Scale
			}
		}
	}
	// iceberg-go's applyDayTransformDates: a day transform's values are
	// dates whatever the Avro type says; a spec that does not parse is
	// ignored.
	if len(specText) > 0 {
		var spec []iceberg.PartitionField
		if json.Unmarshal(specText, &spec) == nil {
			for _, f := range spec {
				if _, ok := f.Transform.(iceberg.DayTransform); ok {
					c.fields.idToType[f.FieldID] = atype.Date
				}
			}
		}
	}
	return c, nil
}

// The fields of a manifest entry iceberg-go's reader knows (the avro tags
// of its manifestEntry and dataFile, v0.7.0), and whether this package
// decodes them: the column statistics are skipped. A schema with a field
// outside these is read by iceberg-go, whatever it makes of it.
var (
	entryFields = map[string]bool{"status": true, "snapshot_id": true, "sequence_number": true,
		"file_sequence_number": true, "data_file": true}
	dataFileFields = map[string]bool{"content": true, "file_path": true, "file_format": true, "partition": true,
		"record_count": true, "file_size_in_bytes": true, "block_size_in_bytes": false, "column_sizes": false,
		"value_counts": false, "null_value_counts": false, "nan_value_counts": false, "distinct_counts": false,
		"lower_bounds": false, "upper_bounds": false, "key_metadata": true, "split_offsets": true,
		"equality_ids": true, "sort_order_id": true, "first_row_id": true, "referenced_data_file": true,
		"content_offset": true, "content_size_in_bytes": true}
)

// project returns the writer schema resolved against itself without the
// fields this package skips: decoding with it reads the skipped fields'
// bytes without building their values.
func project(writer *avro.Schema) (*avro.Schema, error) {
	root := writer.Root()
	if root.Type != atype.Record {
		return nil, fmt.Errorf("%w: a manifest entry of Avro type %q", errUnsupported, root.Type)
	}
	projected := *root
	projected.Fields = slices.Clone(root.Fields)
	for i, f := range projected.Fields {
		if !entryFields[f.Name] {
			return nil, fmt.Errorf("%w: manifest entry field %q", errUnsupported, f.Name)
		}
		if f.Name != "data_file" {
			continue
		}
		if f.Type.Type != atype.Record {
			return nil, fmt.Errorf("%w: data_file of Avro type %q", errUnsupported, f.Type.Type)
		}
		df := f.Type
		df.Fields = nil
		for _, g := range f.Type.Fields {
			keep, known := dataFileFields[g.Name]
			if !known {
				return nil, fmt.Errorf("%w: data_file field %q", errUnsupported, g.Name)
			}
			if keep {
				df.Fields = append(df.Fields, g)
			}
		}
		projected.Fields[i].Type = df
	}
	reader, err := projected.Schema()
	if err != nil {
		return nil, fmt.Errorf("%w: projecting the manifest schema: %w", errUnsupported, err)
	}
	resolved, err := avro.Resolve(writer, reader)
	if err != nil {
		return nil, fmt.Errorf("%w: resolving the projected manifest schema: %w", errUnsupported, err)
	}
	return resolved, nil
}

func field(node *avro.SchemaNode, name string) *avro.SchemaField {
	for i := range node.Fields {
		if node.Fields[i].Name == name {
			return &node.Fields[i]
		}
	}
	return nil
}

// fieldID is iceberg-go's schemaFieldID: numbers parsed from JSON are
// float64.
func fieldID(f avro.SchemaField) (int, bool) {
	switch v := f.Props["field-id"].(type) {
	case int:
		return v, true
	case int64:
		return int(v), true
	case float64:
		return int(v), true
	}
	return 0, false
}
