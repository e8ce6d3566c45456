package planner

import (
	"testing"
	"time"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/thresholds"
)

// equality_delete_file_count: at the count a partition's equality deletes
// are converted, unless small files or deleted rows call for a compaction
// (which applies them); 0 leaves the old remedy (a compaction) alone, and
// a conversion that found nothing falls back to a compaction.
func TestEqualityDeleteConversionChosen(t *testing.T) {
	set := func(yaml string) thresholds.Effective {
		cfg, err := thresholds.Parse([]byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		return cfg.For("db.t", nil)
	}
	cdc := Counters{DataFiles: 4, Bytes: 4 << 30, Rows: 4_000_000, EqualityDeleteFiles: 12, EqualityDeleteRows: 1200}
	for _, tc := range []struct {
		name    string
		yaml    string
		c       Counters
		settled []jobkind.Kind
		kind    jobkind.Kind
		apply   bool
	}{
		{"off by default: compaction applies them", "", cdc, nil, jobkind.Compact, true},
		{"at the count: converted", "defaults: {equality_delete_file_count: 10}", cdc, nil, jobkind.ConvertEqualityDeletes, false},
		{"below the count: as before", "defaults: {equality_delete_file_count: 20}", cdc, nil, jobkind.Compact, true},
		{"small files call for a compaction", "defaults: {equality_delete_file_count: 10, small_file_count: 3, min_input_files: 2}",
			Counters{DataFiles: 4, SmallFiles: 4, Bytes: 4 << 20, Rows: 40_000, EqualityDeleteFiles: 12, EqualityDeleteRows: 1200}, nil, jobkind.Compact, true},
		{"most rows deleted: a compaction drops them", "defaults: {equality_delete_file_count: 10}",
			Counters{DataFiles: 4, Bytes: 4 << 30, Rows: 1000, EqualityDeleteFiles: 12, EqualityDeleteRows: 900}, nil, jobkind.Compact, true},
		{"conversion found nothing: compaction", "defaults: {equality_delete_file_count: 10}", cdc,
			[]jobkind.Kind{jobkind.ConvertEqualityDeletes}, jobkind.Compact, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checks, kind, reason, apply, due := dueOf(partitionDue(tc.c, set(tc.yaml), time.Unix(1_800_000_000, 0), tc.settled...))
			if !due || kind != tc.kind || apply != tc.apply {
				t.Fatalf("due %v, kind %q, apply deletes %v (%s: %s); want %q, %v; checks %+v", due, kind, apply,
					reason.Threshold, reason.Note, tc.kind, tc.apply, checks)
			}
			if kind == jobkind.ConvertEqualityDeletes && reason.Threshold != "equality_delete_file_count" {
				t.Errorf("reason %+v", reason)
			}
		})
	}
	if got := jobs.PriorityOf(jobkind.ConvertEqualityDeletes, nil); got != jobkind.PriorityUrgent {
		t.Errorf("conversion priority %v", got)
	}
}
