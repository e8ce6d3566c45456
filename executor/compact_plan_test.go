package executor_test

import (
	"fmt"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/thresholds"
)

// liveFiles lists the table's live data files with their sizes.
func liveFiles(t *testing.T, cat catalog.Catalog, ident table.Identifier) map[string]int64 {
	t.Helper()
	tbl, err := cat.LoadTable(t.Context(), ident)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, task := range tasks {
		out[task.File.FilePath()] = task.File.FileSizeBytes()
	}
	return out
}

// A partition compacted once and then written with more small files is
// compacted again without rewriting the earlier output, until the tier
// rule says so: with tier_fan_in 4, every four small files merge into one
// file a tier up, and only the fourth such file makes that tier merge.
// The planner schedules exactly those merges (it and the executor share
// the rule), and the bytes rewritten are exactly those files' bytes.
func TestTieredCompactionLeavesEarlierOutputAlone(t *testing.T) {
	ctx := t.Context()
	cat, err := embedded.OpenCatalog(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"db", "tiers"}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, nil); err != nil {
		t.Fatal(err)
	}
	w := streamwriter.New(cat, ident, nil)
	var commitSize int64
	commit := func() map[string]int64 {
		t.Helper()
		before := liveFiles(t, cat, ident)
		if _, err := w.Commit(ctx, "a", 3000); err != nil {
			t.Fatal(err)
		}
		added := map[string]int64{}
		for p, s := range liveFiles(t, cat, ident) {
			if _, old := before[p]; !old {
				added[p] = s
			}
		}
		return added
	}
	for _, s := range commit() {
		commitSize = s
	}
	// The small size puts a commit's file in the geometric middle of tier
	// 2 (fan-in 4): four of them merge into tier 1, four of those into 0.
	small := commitSize * 32
	yaml := fmt.Sprintf(`defaults:
  target_file_size: %d
  small_file_ratio: 0.75
  tier_fan_in: 4
  min_input_files: 2
  small_file_count: 100
  quiet_period: 0s
  cooldown: 0s
  orphan_listing_interval: 100000h
`, small*4/3)
	cfg, err := thresholds.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	r := newConvergenceReactor(t, cat, cfg)
	defer r.close()

	pending := map[string]int64{}
	for p, s := range liveFiles(t, cat, ident) {
		pending[p] = s
	}
	var outputs []string // tier-1 files, in the order they were written
	var written, rewritten int64
	for round := 1; round <= 4; round++ {
		for len(pending) < 4 {
			for p, s := range commit() {
				pending[p] = s
				written += s
			}
			if len(pending) < 4 {
				if ran := r.runUntilQuiet(ctx, ident); len(ran) != 0 {
					t.Fatalf("round %d: %d small files scheduled %s before their tier was full", round, len(pending), jobLog(ran))
				}
			}
		}
		before := liveFiles(t, cat, ident)
		ran := r.runUntilQuiet(ctx, ident)
		var want int64
		for _, s := range pending {
			want += s
		}
		if round == 4 && len(ran) > 0 {
			// The fourth tier-1 file (the first job's output) fills
			// tier 1: a second job merges the four.
			for _, p := range outputs {
				want += before[p]
			}
			want += ran[0].rep.AddedBytes
		}
		if wantJobs := map[bool]int{true: 2, false: 1}[round == 4]; len(ran) != wantJobs {
			t.Errorf("round %d: %d jobs, want %d\n%s", round, len(ran), wantJobs, jobLog(ran))
		}
		var got int64
		for _, j := range ran {
			if j.job.Kind != jobkind.Compact || j.res.Outcome != jobs.Succeeded {
				t.Fatalf("round %d: unexpected job %s", round, jobLog([]ranJob{j}))
			}
			got += j.rep.RewrittenBytes
		}
		if got != want {
			t.Errorf("round %d: rewrote %d bytes, want %d (the %d new small files%s)\n%s", round, got, want, len(pending),
				map[bool]string{true: " and the earlier outputs", false: ""}[round == 4], jobLog(ran))
		}
		rewritten += got
		after := liveFiles(t, cat, ident)
		for _, p := range outputs {
			if _, live := after[p]; !live && round < 4 {
				t.Errorf("round %d: earlier output %s was rewritten", round, p)
			}
		}
		for p := range after {
			if _, old := before[p]; !old {
				outputs = append(outputs, p)
			}
		}
		pending = map[string]int64{}
	}
	if got := liveFiles(t, cat, ident); len(got) != 1 {
		t.Errorf("%d live files after the last merge, want 1: %v", len(got), got)
	}
	c, err := streamwriter.Read(ctx, mustLoad(t, cat, ident))
	if err != nil {
		t.Fatal(err)
	}
	if c.Total != w.Written() {
		t.Errorf("table %v, writer %v", c.Total, w.Written())
	}
	t.Logf("written %d bytes, rewritten %d (%.2fx)", written+commitSize, rewritten, float64(rewritten)/float64(written+commitSize))
}

func mustLoad(t *testing.T, cat catalog.Catalog, ident table.Identifier) *table.Table {
	t.Helper()
	tbl, err := cat.LoadTable(t.Context(), ident)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}
