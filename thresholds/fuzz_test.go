package thresholds

import (
	"errors"
	"reflect"
	"testing"

	"github.com/goccy/go-yaml"
)

// FuzzParse checks Parse on arbitrary documents: it returns (a panic inside
// is an *InternalError, which fails here), it is deterministic, its error
// text is bounded, and a document it accepts is valid, resolves to usable
// settings for any table, and survives a round trip through YAML. The seed
// corpus is testdata/fuzz/FuzzParse; every crasher found is kept there.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data)
		cfg2, err2 := Parse(data)
		if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) || !reflect.DeepEqual(cfg, cfg2) {
			t.Fatalf("Parse is not deterministic: %v / %v", err, err2)
		}
		if err != nil {
			var ie *InternalError
			if errors.As(err, &ie) {
				t.Fatalf("Parse panicked: %v\n%s", ie, ie.Stack)
			}
			if n := len(err.Error()); n > maxParseError {
				t.Fatalf("error is %d bytes for %d bytes of input", n, len(data))
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("Parse accepted a document Validate refuses: %v", err)
		}
		for _, table := range []string{"db.events", "a.b.c"} {
			e := cfg.For(table, nil)
			switch {
			case e.TargetFileSize <= 0, e.SmallFileSize >= e.TargetFileSize, e.MaxFileSize < e.TargetFileSize:
				t.Fatalf("%s: file sizes %d/%d/%d", table, e.SmallFileSize, e.TargetFileSize, e.MaxFileSize)
			case e.MinInputFiles < 1, e.SmallFileCount < e.MinInputFiles:
				t.Fatalf("%s: min_input_files %d, small_file_count %d", table, e.MinInputFiles, e.SmallFileCount)
			case e.RetainLast < 1, e.OrphanMargin <= 0, e.CommitRetryTime <= 0, e.MaxGroupSize <= 0:
				t.Fatalf("%s: unusable settings %+v", table, e)
			}
		}
		out, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatalf("marshal an accepted config: %v", err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("the accepted config, marshalled, is refused: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(again, cfg) {
			t.Fatalf("round trip changed the config:\n%s", out)
		}
	})
}
