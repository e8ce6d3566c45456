package worker

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icereactor/reactor/sizelimit"
)

// A table whose Parquet footers are over reactor's limit: the compaction
// fails with an error naming the file, its footer and the limit, the
// refusal is counted, the table is untouched and reactor stays ready. A
// table whose manifests are over the limit cannot even be read: its
// refresh fails, is counted and retried, and reactor stays ready.
func TestFilesOverTheSizeLimits(t *testing.T) {
	t.Run("parquet footer", func(t *testing.T) {
		h := newHarness(t, testThresholds, nil)
		h.workerCfg = func(c *Config) {
			c.Catalog.Props = withProps(h.props, map[string]string{sizelimit.ParquetFooterProperty: "64"})
			c.DisableNotifications = true
		}
		w := h.start()
		for range 6 {
			h.commit("a", 10)
		}
		before := h.load().MetadataLocation()
		h.eventually("the compaction failed", func() bool { return len(w.Status().Jobs().Failures) > 0 })
		failed := w.Status().Jobs().Failures[0]
		t.Logf("the job's error: %s", failed.Error)
		for _, want := range []string{"Parquet file", ".parquet has a footer of", "over reactor's limit of 64 bytes", "--max-parquet-footer-bytes"} {
			if !strings.Contains(failed.Error, want) {
				t.Errorf("the job's error lacks %q: %s", want, failed.Error)
			}
		}
		if got := testutil.ToFloat64(w.Metrics.SizeLimitRefusals.WithLabelValues("parquet_footer")); got < 1 {
			t.Errorf("reactor_size_limit_refusals_total{kind=parquet_footer} = %v", got)
		}
		if after := h.load().MetadataLocation(); after != before {
			t.Errorf("the table changed: %s -> %s", before, after)
		}
		if err := w.Ready(h.ctx); err != nil {
			t.Errorf("not ready: %v", err)
		}
	})
	t.Run("manifest", func(t *testing.T) {
		h := newHarness(t, testThresholds, nil)
		h.commit("a", 10) // the table has a manifest before reactor starts
		h.workerCfg = func(c *Config) {
			c.Catalog.Props = withProps(h.props, map[string]string{sizelimit.ManifestProperty: "100"})
			c.DisableNotifications = true
		}
		w := h.start()
		h.commit("a", 10)
		h.eventually("the refresh refused", func() bool {
			return testutil.ToFloat64(w.Metrics.SizeLimitRefusals.WithLabelValues("manifest")) >= 1 &&
				strings.Contains(h.logs.String(), "over reactor's limit of 100 bytes (--max-manifest-bytes")
		})
		if err := w.Ready(h.ctx); err != nil {
			t.Errorf("not ready: %v", err)
		}
	})
}
