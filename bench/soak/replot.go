package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/icereactor/reactor/probe"
)

// replot redraws dir/soak.png from dir/samples.csv: for results taken with
// an older plot, or to change the warm-up mark.
func replot(dir string, warmup time.Duration) error {
	samples, err := readSamples(filepath.Join(dir, "samples.csv"))
	if err != nil {
		return err
	}
	subtitle := "replotted from samples.csv"
	if data, err := os.ReadFile(filepath.Join(dir, "summary.txt")); err == nil {
		if first, _, ok := strings.Cut(string(data), "\n"); ok {
			subtitle = first
		}
	}
	return plotSamples(filepath.Join(dir, "soak.png"), samples, warmup, subtitle)
}

// readSamples reads back what the plot needs of samples.csv. Columns a
// file lacks read as zero.
func readSamples(path string) ([]sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(recs) < 1 {
		return nil, fmt.Errorf("%s: no header", path)
	}
	col := map[string]int{}
	for i, name := range recs[0] {
		col[name] = i
	}
	var out []sample
	for _, rec := range recs[1:] {
		f := func(name string) float64 {
			i, ok := col[name]
			if !ok || rec[i] == "" {
				return 0
			}
			v, _ := strconv.ParseFloat(rec[i], 64)
			return v
		}
		n := func(name string) int { return int(f(name)) }
		d := func(name string, unit time.Duration) time.Duration { return time.Duration(f(name) * float64(unit)) }
		s := sample{
			Elapsed: d("elapsed_s", time.Second), DataFiles: n("data_files"), IdealFiles: n("ideal_files"),
			AllowedFiles: n("allowed_files"), SnapshotsMax: n("snapshots_max"), SnapshotBound: n("snapshot_bound"),
			ManifestsMax: n("data_manifests_max"), ManifestBound: n("manifest_bound"), ScanTables: n("scan_tables"),
			ScanRatio: f("scan_ratio"), BytesWritten: int64(f("bytes_written")), BytesRewritten: int64(f("bytes_rewritten")),
			CommitP50: d("commit_p50_ms", time.Millisecond), CommitP99: d("commit_p99_ms", time.Millisecond),
			CommitN: n("commits_in_interval"), ReactorCPUPct: f("reactor_cpu_pct"), Load1: f("load1"),
			Jobs: probe.JobTally{Finished: map[probe.JobOutcome]int{}},
		}
		for name := range col {
			rest, ok := strings.CutPrefix(name, "jobs_")
			if !ok {
				continue
			}
			for _, outcome := range jobOutcomes {
				if kind, ok := strings.CutSuffix(rest, "_"+outcome); ok && kind != "other" {
					s.Jobs.Finished[probe.JobOutcome{Kind: kind, Outcome: outcome}] = n(name)
				}
			}
		}
		out = append(out, s)
	}
	return out, nil
}
