package executor_test

import (
	"sync"
	"testing"
	"time"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobs"
)

// progressLog records what a job told its Progress.
type progressLog struct {
	mu     sync.Mutex
	phases []progressStep
}

type progressStep struct {
	name                   string
	files, bytes           int64
	doneFiles, doneBytes   int64
	advancesBeforeAnyPhase int
}

func (p *progressLog) Phase(name string, files, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phases = append(p.phases, progressStep{name: name, files: files, bytes: bytes})
}

func (p *progressLog) Advance(files, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.phases) == 0 {
		p.phases = append(p.phases, progressStep{advancesBeforeAnyPhase: 1})
	}
	last := &p.phases[len(p.phases)-1]
	last.doneFiles += files
	last.doneBytes += bytes
}

func (p *progressLog) step(t *testing.T, name string) progressStep {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.phases {
		if s.advancesBeforeAnyPhase > 0 {
			t.Fatalf("Advance before any Phase: %+v", p.phases)
		}
		if s.name == name {
			return s
		}
	}
	t.Fatalf("no %q step in %+v", name, p.phases)
	return progressStep{}
}

// A compaction's progress ends where its report does: every input file and
// byte announced is advanced once, on both data paths, and an expiry's
// deletion step counts the files it goes through.
func TestProgressCountsWhatTheJobDid(t *testing.T) {
	for _, path := range []string{"reactor", "iceberg-go"} {
		t.Run(path, func(t *testing.T) {
			f := newFixture(t, nil)
			for i := range 7 {
				f.commit("a", 20+i)
				f.commit("b", 5)
			}
			p := &progressLog{}
			e := newExecutor(t, executor.Options{Catalog: f.cat, Metrics: f.met, Concurrency: 2, Progress: p})
			if path == "iceberg-go" {
				executor.UseIcebergWriter(e)
			}
			res, rep := e.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a", "b"))
			if res.Outcome != jobs.Succeeded {
				t.Fatalf("outcome %v, err %v", res.Outcome, res.Err)
			}
			s := p.step(t, "rewrite")
			if s.files != int64(rep.RewrittenDataFiles) || s.bytes != rep.RewrittenBytes {
				t.Errorf("announced %d files, %d bytes; report rewrote %d files, %d bytes", s.files, s.bytes, rep.RewrittenDataFiles, rep.RewrittenBytes)
			}
			if s.doneFiles != s.files || s.doneBytes != s.bytes {
				t.Errorf("advanced %d of %d files, %d of %d bytes", s.doneFiles, s.files, s.doneBytes, s.bytes)
			}

			time.Sleep(5 * time.Millisecond) // every snapshot is older than the 1ms horizon
			p = &progressLog{}
			e = newExecutor(t, executor.Options{Catalog: f.cat, Metrics: f.met, Progress: p})
			res, rep = e.Run(f.ctx, f.expireJob("defaults: {snapshot_max_age: 1ms, min_reader_margin: 0s, retain_last: 1}", time.Millisecond))
			if res.Outcome != jobs.Succeeded {
				t.Fatalf("expiry: %v %v", res.Outcome, res.Err)
			}
			p.step(t, "read history")
			if rep.Expiry.Deferred {
				return // nothing deleted in this job: no deletion step
			}
			d := p.step(t, "delete")
			if d.files == 0 || d.doneFiles != d.files {
				t.Errorf("deletion step advanced %d of %d files", d.doneFiles, d.files)
			}
		})
	}
}
