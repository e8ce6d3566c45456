package scenarios

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/catalogs"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/streamwriter"
)

// glueProps are the Glue catalog's properties on moto (a stand-in: real
// AWS Glue is not reachable here), with moto's dummy credentials.
func (s *suite) glueProps() iceberg.Properties {
	return iceberg.Properties{"type": "glue", "glue.endpoint": s.motoURL, "glue.region": "us-east-1",
		"glue.access-key-id": "testing", "glue.secret-access-key": "testing",
		"warehouse": "file://" + filepath.Join(s.work, "warehouse-glue")}
}

// TestGlueOnMoto: a table in a Glue catalog (moto's server, the only
// stand-in for AWS Glue that runs here) written by a Go writer: reactor
// run discovers it at start, compacts it and expires its snapshots, no
// job fails, and the rows are exact. moto does not check Glue's VersionId,
// so nothing commits beside reactor (see below): concurrency through
// Glue's optimistic check is not proven here.
func TestGlueOnMoto(t *testing.T) {
	s := need(t)
	t.Parallel()
	ctx := context.Background()
	props := s.glueProps()
	cat, err := catalogs.Open(ctx, catalogs.Config{Name: "glue", Props: props, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	ident := table.Identifier{"gdb", "events"}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, nil); err != nil {
		t.Fatal(err)
	}
	var flags []string
	for k, v := range props {
		if k == "warehouse" {
			flags = append(flags, "--warehouse", v)
			continue
		}
		flags = append(flags, "--catalog-prop", k+"="+v)
	}
	r := s.startReactor(t, "glue", "glue", flags, true)
	// Discovery brought the table in before any event named it.
	r.waitLog(t, discovered, 2*time.Minute, "discovery of the Glue table")
	// moto's UpdateTable ignores the VersionId that real Glue checks (its
	// optimistic concurrency): two commits at once both succeed and the
	// later one drops the other's snapshot. So the writer commits first
	// and reactor hears of the commits after: nothing commits beside
	// reactor here, which real Glue would make safe and moto does not.
	var pending []events.CommitEvent
	w := streamwriter.AppendOnly(cat, ident, func(_ context.Context, ev events.CommitEvent) error {
		pending = append(pending, ev)
		return nil
	})
	for i := range 48 {
		if _, err := w.Commit(ctx, fmt.Sprintf("c%d", i%4), 10); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	for _, ev := range pending {
		if err := r.publish(ctx, ev.Namespace, ev.Table, ev.SnapshotID); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(3 * time.Minute)
	for r.jobs(t, "compact", "succeeded") < 1 || r.jobs(t, "expire_snapshots", "succeeded") < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("reactor did not compact and expire the Glue table: %.0f compactions, %.0f expiries\n%s",
				r.jobs(t, "compact", "succeeded"), r.jobs(t, "expire_snapshots", "succeeded"), r.proc.tail(40))
		}
		time.Sleep(time.Second)
	}
	if failed := r.jobs(t, "", "failed"); failed != 0 {
		t.Errorf("%.0f reactor jobs failed\n%s", failed, r.proc.tail(40))
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	contents, err := streamwriter.Read(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if contents.Total != w.Written() {
		t.Errorf("the Glue table holds %v, the writer wrote %v", contents.Total, w.Written())
	}
	t.Logf("Glue (moto): %v; %d snapshots left; reactor: %.0f compactions, %.0f expiries", contents.Total,
		len(tbl.Metadata().Snapshots()), r.jobs(t, "compact", "succeeded"), r.jobs(t, "expire_snapshots", "succeeded"))
	r.stop(t)
}
