package scenarios

import (
	"testing"
	"time"

	"github.com/icereactor/reactor/streamwriter"
)

// Scenario 2. A table created while reactor runs is picked up from its
// first notification: the metadata.json the REST catalog writes when it
// creates the table. The writer commits exactly small_file_count times and
// then stops, so no later notification can rescue a reactor that dropped
// the first ones; it publishes no commit events.
//
// It found two bugs: notifications of a table created after start-up were
// dropped until the location index could be rebuilt (up to 30 s; fixed by
// holding them under watched prefixes), and a warehouse at a bucket's root
// (s3://warehouse/, the REST catalog's here) was watched as the key
// prefix "/", which no key has.
func TestTableCreatedWhileRunning(t *testing.T) {
	s := need(t)
	s.resetStreams(t)
	l := s.openLake(t, "s2", "fresh")
	jobs := s.watchJobs(t, l.name)
	r := s.newReactor(t, scenarioThresholds("s2", ""))
	r.start()
	diag := func() string { return jobs.summary() + r.p.tail(60) }

	l.createTable(nil) // after reactor started; the namespace is new too
	w := streamwriter.New(l.cat, l.ident, nil)
	rows := newIDs()
	for range 5 { // small_file_count: 5
		rows.commit(t, w, "p", 10)
	}
	eventually(t, "the new table compacted", 2*time.Minute, func() bool {
		return jobs.succeeded("compact") >= 1
	}, diag)
	l.checkRows(w.Written())
	if n := len(l.dataFiles()["p"]); n != 1 {
		t.Errorf("partition p has %d data files after compaction, want 1", n)
	}
	// Every notification of the table was attributed to it: the creation's
	// metadata.json and the five commits', and the five data files.
	commits := r.metric("reactor_objects_total", map[string]string{"outcome": "commit"})
	data := r.metric("reactor_objects_total", map[string]string{"outcome": "tracked"}) +
		r.metric("reactor_objects_total", map[string]string{"outcome": "confirmed"})
	if commits < 6 || data < 5 {
		t.Errorf("reactor attributed %v metadata.json and %v data-file notifications to the table; want at least 6 and 5 (outside any table: %v)\n%s",
			commits, data, r.metric("reactor_objects_total", map[string]string{"outcome": "outside"}), diag())
	}
	l.checkReferencedExist()
	if f := jobs.failures(); len(f) > 0 {
		t.Errorf("jobs failed:\n%s", jobs.summary())
	}
	r.stop()
}
