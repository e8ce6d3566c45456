package worker

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/objectio"
)

// stallAtJobStart is the executor's catalog: the first table it loads
// (the first job's start) stalls the object store behind proxy.
type stallAtJobStart struct {
	catalog.Catalog
	proxy *stallProxy
	once  atomic.Bool
}

func (s *stallAtJobStart) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	tbl, err := s.Catalog.LoadTable(ctx, id)
	if err == nil && s.once.CompareAndSwap(false, true) {
		s.proxy.stall(true)
	}
	return tbl, err
}

// An object store that accepts connections and never answers, through the
// real S3 client path (objectio's FileIO and the AWS SDK, to a TCP proxy
// in front of the embedded gateway that stops moving bytes): the job that
// reads from it fails once its requests time out (1 s read timeout, 2
// attempts), frees its slot and leaves the table as it was; when the store
// answers again the next job compacts the table.
func TestHungStoreFailsTheJobAndTheNextRuns(t *testing.T) {
	h := newS3Harness(t, testThresholds)
	gateway := sharedGateway.IcebergProperties()["s3.endpoint"]
	proxy := newStallProxy(t, strings.TrimPrefix(strings.TrimPrefix(gateway, "http://"), "https://"))
	base := h.workerCfg
	stall := &stallAtJobStart{proxy: proxy}
	h.workerCfg = func(c *Config) {
		base(c)
		c.Concurrency = 1
		c.Catalog.Props = withProps(h.props, map[string]string{"s3.endpoint": proxy.endpoint(gateway),
			objectio.ReadTimeoutProperty: "1s", objectio.MaxAttemptsProperty: "2"})
		c.executorCatalog = func(cat catalog.Catalog) catalog.Catalog { stall.Catalog = cat; return stall }
	}
	w := h.start()
	for range 6 {
		h.commit("a", 10)
	}
	before, rows := h.load(), h.contents().Total
	var failed events.JobEvent
	h.eventually("the job on the hung store failed", func() bool {
		if f := w.Status().Jobs().Failures; len(f) > 0 {
			failed = f[0].JobEvent
			return true
		}
		return false
	})
	took := failed.DurationSeconds
	t.Logf("the job failed after %.1fs: %s", took, failed.Error)
	if !strings.Contains(failed.Error, "timeout") {
		t.Errorf("the failed job's error does not say it timed out: %s", failed.Error)
	}
	if took > 60 {
		t.Errorf("the job took %.0fs to fail against a 1 s timeout and 2 attempts", took)
	}
	if after := h.load(); after.MetadataLocation() != before.MetadataLocation() {
		t.Errorf("the failed job changed the table: %s -> %s", before.MetadataLocation(), after.MetadataLocation())
	}
	proxy.stall(false)
	h.commit("a", 10) // news for the partition after its cool-down
	h.eventually("the next job compacts the table", func() bool { return w.Pool.Stats().Succeeded >= 1 })
	h.eventually("partition a compacted", func() bool { return len(h.files()["a"]) < 7 })
	if got := h.contents().Total; got.Rows != rows.Rows+10 {
		t.Errorf("rows after the compaction: %d, want %d", got.Rows, rows.Rows+10)
	}
}

func withProps(base map[string]string, over map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}
