package worker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// mountConfigMap lays out a thresholds file the way Kubernetes mounts a
// ConfigMap (dir/thresholds.yaml -> ..data/thresholds.yaml, ..data -> a
// timestamped directory) and returns a function that publishes a new
// version by swapping the ..data symlink atomically, as the kubelet does.
func mountConfigMap(t *testing.T, content string) (path string, update func(string)) {
	t.Helper()
	dir := t.TempDir()
	version := 0
	update = func(content string) {
		version++
		data := filepath.Join(dir, "..2026_11_29_v"+string(rune('0'+version)))
		if err := os.MkdirAll(data, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, "thresholds.yaml"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(filepath.Base(data), tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	update(content)
	path = filepath.Join(dir, "thresholds.yaml")
	if err := os.Symlink(filepath.Join("..data", "thresholds.yaml"), path); err != nil {
		t.Fatal(err)
	}
	return path, update
}

// A ConfigMap update is picked up without a restart; a broken one is
// rejected with the field path, counted, and the last good config stays.
func TestThresholdsHotReload(t *testing.T) {
	lazy := strings.Replace(testThresholds, "small_file_count: 5", "small_file_count: 1000", 1)
	path, update := mountConfigMap(t, lazy)
	h := newHarness(t, lazy, nil)
	h.workerCfg = func(c *Config) {
		c.ThresholdsFile = path
		c.ThresholdsReload = 20 * time.Millisecond
	}
	w := h.start()
	for range 6 {
		h.commit("a", 10)
	}
	h.eventually("events applied", func() bool {
		snap, _ := w.Planner.TableCounters("db.events")
		return snap == h.load().CurrentSnapshot().SnapshotID
	})
	if n := w.Pool.Stats().Jobs; n != 0 {
		t.Fatalf("%d jobs under small_file_count 1000", n)
	}

	update(testThresholds) // small_file_count: 5
	h.eventually("reload applied", func() bool {
		return testutil.ToFloat64(w.Metrics.ConfigReloads.WithLabelValues("applied")) == 1
	})
	h.commit("a", 10)
	h.eventually("compaction under the new config", func() bool { return w.Pool.Stats().Succeeded >= 1 })

	update(testThresholds + "  small_file_ratio: 1.5\n")
	h.eventually("broken reload rejected", func() bool {
		return testutil.ToFloat64(w.Metrics.ConfigReloads.WithLabelValues("error")) >= 1
	})
	if !strings.Contains(h.logs.String(), "defaults.small_file_ratio") {
		t.Errorf("the rejection does not name the field path")
	}
	for range 6 {
		h.commit("b", 10)
	}
	h.eventually("the last good config still compacts", func() bool { return w.Pool.Stats().Succeeded >= 2 })
	if got := h.contents().Total; got != h.writer.Written() {
		t.Errorf("table %v, written %v", got, h.writer.Written())
	}
}
