package objectio_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/objectio"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/thresholds"
)

// TestExplainReadsAheadTheSame: the planner's read of a snapshot on S3
// (its manifests the read concurrency at once) explains exactly what the
// one-at-a-time read does, with one GET per manifest either way.
func TestExplainReadsAheadTheSame(t *testing.T) {
	ctx := context.Background()
	cat, ident := smallFileTable(t, 30, 50)
	cfg, err := thresholds.Parse([]byte("defaults:\n  target_file_size: 64MiB\n  min_input_files: 2\n  small_file_count: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var plans []string
	var gets []int
	for _, readers := range []string{"1", "16"} {
		loaded, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		// The same table on an IO with this read concurrency.
		p := props(objectio.ReadConcurrencyProperty, readers)
		tbl := table.New(ident, loaded.Metadata(), loaded.MetadataLocation(), func(ctx context.Context) (iceio.IO, error) {
			return iceio.LoadFS(ctx, p, loaded.Location())
		}, nil)
		testFront.reset()
		plan, err := planner.Explain(ctx, tbl, cfg, now)
		if err != nil {
			t.Fatal(err)
		}
		reqs, _ := testFront.reset()
		b, err := json.Marshal(plan)
		if err != nil {
			t.Fatal(err)
		}
		plans = append(plans, string(b))
		gets = append(gets, reqs["GET metadata ranged"])
	}
	if plans[0] != plans[1] || gets[0] != gets[1] || gets[0] == 0 {
		t.Fatalf("one reader: %s (%d GETs)\n16 readers: %s (%d GETs)", plans[0], gets[0], plans[1], gets[1])
	}
}
