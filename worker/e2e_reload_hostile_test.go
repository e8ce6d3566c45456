package worker

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icereactor/reactor/thresholds"
)

// Every thresholds file that crashed or exhausted reactor on hot reload,
// and a panic injected behind the reload guard, is rejected: the reason is
// logged and counted, the process stays up, and the last good configuration
// stays in force (a later burst of commits is compacted under it).
func TestHostileThresholdsReloadsKeepTheLastGoodConfig(t *testing.T) {
	path, update := mountConfigMap(t, testThresholds)
	h := newHarness(t, testThresholds, nil)
	h.workerCfg = func(c *Config) {
		c.ThresholdsFile = path
		c.ThresholdsReload = 20 * time.Millisecond
		c.parseThresholds = func(data []byte) (*thresholds.Config, error) {
			if bytes.Contains(data, []byte("# panic here")) {
				var m map[string]int
				m["boom"]++ // a real runtime panic: assignment to entry in nil map
			}
			return thresholds.Parse(data)
		}
	}
	w := h.start()
	bad := []struct {
		name, content, log, result string
	}{
		{"sort order ending in a backquote", testThresholds + "  strategy: sort\n  sort_order: \"a`\"\n",
			`defaults.sort_order: invalid sort order \"a`, reloadError},
		{"tag without a value", "tables: ! \n", "tables: YAML tags are not supported", reloadError},
		{"30,000 levels", "namespaces: " + strings.Repeat("[", 30_000) + strings.Repeat("]", 30_000),
			"nesting depth 30001 (first over the limit at line 1) exceeds the limit of 32 levels", reloadError},
		{"larger than a ConfigMap", testThresholds + strings.Repeat("# padding to over 1 MiB\n", 50_000),
			"file size 1200" /* 1,200,158 bytes */, reloadError},
		{"too many values", "namespaces: [" + strings.Repeat("db,", thresholds.MaxNodes) + "db]\n",
			"more than the limit of 100000", reloadError},
		{"a panic behind the guard", testThresholds + "# panic here\n",
			"internal error: assignment to entry in nil map", reloadInternalError},
	}
	rejected := func() float64 {
		return testutil.ToFloat64(w.Metrics.ConfigReloads.WithLabelValues(reloadError)) +
			testutil.ToFloat64(w.Metrics.ConfigReloads.WithLabelValues(reloadInternalError))
	}
	for i, b := range bad {
		update(b.content)
		h.eventually(b.name+" rejected", func() bool { return rejected() == float64(i+1) })
		if got := testutil.ToFloat64(w.Metrics.ConfigReloads.WithLabelValues(b.result)); got < 1 {
			t.Errorf("%s: not counted as %s", b.name, b.result)
		}
		if !strings.Contains(h.logs.String(), b.log) {
			t.Errorf("%s: the log does not say %q", b.name, b.log)
		}
	}
	for range 6 {
		h.commit("b", 10)
	}
	h.eventually("the last good config still compacts", func() bool { return w.Pool.Stats().Succeeded >= 1 })
	if got := testutil.ToFloat64(w.Metrics.ConfigReloads.WithLabelValues(reloadApplied)); got != 0 {
		t.Errorf("%v reloads applied", got)
	}
	logs := h.logs.String()
	if n := strings.Count(logs, "stack="); n != 1 {
		t.Errorf("the stack is logged %d times, want once", n)
	}
	if !strings.Contains(logs, "worker.(*Worker).reload") {
		t.Errorf("the logged stack does not show where the panic was recovered")
	}
	// Megabyte files, bounded log: every rejection quotes excerpts only.
	if n := len(logs); n > 256<<10 {
		t.Errorf("%d bytes of logs for %d rejected reloads", n, len(bad))
	}
	if got := h.contents().Total; got != h.writer.Written() {
		t.Errorf("table %v, written %v", got, h.writer.Written())
	}
}
