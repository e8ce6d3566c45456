package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
)

// loopFiles are a commit's own files for the loop test.
type loopFiles struct {
	tbl        *table.Table
	fs         iceio.IO
	owned, old []string
}

func (f *loopFiles) where() (*table.Table, iceio.IO) { return f.tbl, f.fs }
func (f *loopFiles) own() []string                   { return f.owned }
func (f *loopFiles) superseded() []string            { return f.old }

// The commit loop's rules, case by case, with attempt bodies that lose
// the way a catalog makes them lose: a lost race is retried and its own
// files go at once; an unknown outcome is looked up and, when not found,
// nothing the commit may reference is deleted; any other error ends the
// loop at once and the commit's own files go.
func TestCommitLoopRules(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	cat, err := embedded.OpenCatalog(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"db", "loop"}
	tbl, err := streamwriter.CreateTable(ctx, cat, ident, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streamwriter.New(cat, ident, nil).Commit(ctx, "a", 10); err != nil {
		t.Fatal(err)
	}
	if tbl, err = cat.LoadTable(ctx, ident); err != nil {
		t.Fatal(err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Options{Catalog: cat, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	job := jobs.Job{ID: "loop-test", Table: tablename.Of(ident), ScheduledAt: time.Now(),
		Settings: thresholds.Effective{CommitRetryTime: 5 * time.Second}}
	metaDir := strings.TrimPrefix(tbl.Location(), "file://") + "/metadata"
	file := func(name string) string {
		p := filepath.Join(metaDir, name)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		return "file://" + p
	}
	exists := func(loc string) bool {
		_, err := os.Stat(strings.TrimPrefix(loc, "file://"))
		return err == nil
	}
	race := fmt.Errorf("commit: %w", table.ErrCommitFailed)
	unknown := errors.New("connection reset after the request was sent")
	head := tbl.CurrentSnapshot().SnapshotID

	for _, tc := range []struct {
		name string
		// lose says how attempt n ends: nil commits (the table as it
		// is), else the catalog's error.
		lose         func(n int) error
		how          lookup
		snapshotID   int64
		commitsOnly  bool
		nothingToDo  bool
		wantErr      error // nil: committed
		wantAttempts int
		wantConflict int
		staleGone    bool // every lost attempt's own list deleted
		ownGone      bool // the commit's files written once deleted
		oldGone      bool // the superseded ones deleted
	}{
		{name: "two lost races, then committed", lose: func(n int) error {
			if n < 3 {
				return race
			}
			return nil
		}, wantAttempts: 3, wantConflict: 2, staleGone: true, oldGone: true},
		{name: "unknown outcome found by snapshot id", lose: func(int) error { return unknown },
			how: bySnapshotID, snapshotID: head, wantAttempts: 1, oldGone: true},
		{name: "unknown outcome not found: files stay", lose: func(int) error { return unknown },
			how: bySnapshotID, snapshotID: head + 1, wantErr: errUnknownCommitState, wantAttempts: 1},
		{name: "unknown outcome of a commit with no snapshot", lose: func(int) error { return unknown },
			how: noLookup, wantErr: errUnknownCommitState, wantAttempts: 1},
		{name: "refused by the guard: nothing committed, files go", lose: func(int) error { return ErrCommitRefused },
			how: bySnapshotID, snapshotID: head + 1, wantErr: ErrCommitRefused, wantAttempts: 1, ownGone: true, oldGone: true},
		{name: "nothing to commit, counted only on commit", nothingToDo: true, commitsOnly: true, wantAttempts: 0, oldGone: true},
		{name: "lost race, counted only on commit", lose: func(n int) error {
			if n < 2 {
				return race
			}
			return nil
		}, commitsOnly: true, wantAttempts: 2, wantConflict: 1, staleGone: true, oldGone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := &loopFiles{tbl: tbl, fs: fs, owned: []string{file("own.avro")}, old: []string{file("old.avro")}}
			var rep Report
			var stale []string
			loop := commitLoop{e: e, log: e.log, job: job, rep: &rep, files: files, countCommitsOnly: tc.commitsOnly}
			committed, err := loop.run(ctx, func(ctx context.Context, cur *table.Table) (*table.Table, error) {
				if tc.nothingToDo {
					return nil, nil
				}
				list := file(fmt.Sprintf("snap-%d.avro", loop.n))
				stale = append(stale, list)
				if lerr := tc.lose(loop.n); lerr != nil {
					return nil, lost(lerr, cur, fs, []string{list}, tc.how, tc.snapshotID)
				}
				stale = stale[:len(stale)-1]
				return cur, nil
			})
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("run: %v", err)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("run: %v, want %v", err, tc.wantErr)
			case tc.wantErr == nil && !tc.nothingToDo && committed == nil:
				t.Fatal("no committed table")
			}
			if rep.Attempts != tc.wantAttempts || rep.Conflicts != tc.wantConflict {
				t.Errorf("attempts %d, conflicts %d; want %d, %d", rep.Attempts, rep.Conflicts, tc.wantAttempts, tc.wantConflict)
			}
			for _, f := range stale {
				if exists(f) == tc.staleGone {
					t.Errorf("lost attempt's list %s: exists %v, want deleted %v", f, exists(f), tc.staleGone)
				}
			}
			if exists(files.owned[0]) == tc.ownGone {
				t.Errorf("own file: exists %v, want deleted %v", exists(files.owned[0]), tc.ownGone)
			}
			if exists(files.old[0]) == tc.oldGone {
				t.Errorf("superseded file: exists %v, want deleted %v", exists(files.old[0]), tc.oldGone)
			}
		})
	}
}
