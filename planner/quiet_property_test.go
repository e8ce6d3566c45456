package planner

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
)

// quietSim drives a planner with a fake clock over a model table: writes
// add small files to partitions at chosen times, every job the planner
// dispatches is "run" at once on the model (the tier rule's pick, or every
// small file for a quiet merge, outputs rolled at the target) and reported
// back through Finished. Timers fire on the fake clock, so a partition
// that receives no more writes is looked at only through the planner's own
// wake-up, as in production.
type quietSim struct {
	t      *testing.T
	set    thresholds.Effective
	clk    *fakeClock
	p      *Planner
	st     *tableState
	start  time.Time
	files  [][]int64
	last   []time.Time // last write per partition (zero: none yet)
	writes []simWrite  // pending, by time
	queue  []jobs.Job
	// quiet merges per partition, by the write that began their spell;
	// spells ends the spells (last write, whether a merge would still
	// reduce the files when the next write came, or at the end).
	quiet  []map[time.Time]int
	spells [][]simSpell
	jobs   int
}

type simWrite struct {
	part int
	at   time.Time
	size int64
}

type simSpell struct {
	from, to time.Time
	reduces  bool // at its end
}

func newQuietSim(t *testing.T, set thresholds.Effective, parts int) *quietSim {
	t.Helper()
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := &quietSim{t: t, set: set, clk: newFakeClock(start), start: start,
		files: make([][]int64, parts), last: make([]time.Time, parts), quiet: make([]map[time.Time]int, parts), spells: make([][]simSpell, parts)}
	for i := range s.quiet {
		s.quiet[i] = map[time.Time]int{}
	}
	s.p = New(Options{Now: s.clk.Now, AfterFunc: s.clk.AfterFunc, Dispatch: func(j jobs.Job) { s.queue = append(s.queue, j) },
		Config: thresholds.Default(), Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(s.p.Close)
	s.st = s.p.state(tablename.MustParseName("db.t"))
	s.st.settings = set
	s.st.counters.sizes = sizesOf(set)
	s.st.counters.partitions = map[string]*partitionState{}
	for i := range parts {
		s.st.counters.partitions[s.key(i)] = &partitionState{Key: s.key(i)}
	}
	return s
}

func (s *quietSim) key(i int) string { return fmt.Sprintf("category=p%d", i) }

// write schedules a commit of one file to part at start+at.
func (s *quietSim) write(part int, at time.Duration, size int64) {
	s.writes = append(s.writes, simWrite{part: part, at: s.start.Add(at), size: size})
	sort.SliceStable(s.writes, func(i, j int) bool { return s.writes[i].at.Before(s.writes[j].at) })
}

// counters are what the planner would count for part's files.
func (s *quietSim) counters(part int) Counters {
	c := Counters{LastWrite: s.last[part]}
	for _, size := range s.files[part] {
		c.DataFiles++
		c.Bytes += size
		if size < s.set.SmallFileSize {
			c.SmallFiles++
			c.SmallBytes += size
			c.Tiers[jobs.TiersOf(s.set).Of(size)]++
		}
	}
	return c
}

// sync copies the model into the planner's state and looks again, as an
// observed commit does.
func (s *quietSim) sync(evaluate bool) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	for i := range s.files {
		s.st.counters.partitions[s.key(i)].Counters = s.counters(i)
	}
	if evaluate {
		s.p.evaluateLocked(s.st)
	}
}

func (s *quietSim) reduces(part int) bool {
	_, _, r := QuietMerge(s.counters(part), s.set)
	return r
}

// runUntil plays the writes and timers up to start+end.
func (s *quietSim) runUntil(end time.Duration) {
	s.t.Helper()
	stop := s.start.Add(end)
	for {
		s.drain()
		next, timer := s.clk.next()
		if len(s.writes) > 0 && !s.writes[0].at.After(stop) && (!timer || s.writes[0].at.Before(next)) {
			w := s.writes[0]
			s.writes = s.writes[1:]
			s.clk.Advance(w.at.Sub(s.clk.Now()))
			if !s.last[w.part].IsZero() {
				s.spells[w.part] = append(s.spells[w.part], simSpell{from: s.last[w.part], to: w.at, reduces: s.reduces(w.part)})
			}
			s.files[w.part] = append(s.files[w.part], w.size)
			s.last[w.part] = w.at
			s.sync(true)
			continue
		}
		if timer && !next.After(stop) {
			s.clk.Advance(next.Sub(s.clk.Now()))
			continue
		}
		s.clk.Advance(stop.Sub(s.clk.Now()))
		s.drain()
		return
	}
}

// drain runs every dispatched job on the model, reporting each back.
func (s *quietSim) drain() {
	s.t.Helper()
	for len(s.queue) > 0 {
		job := s.queue[0]
		s.queue = s.queue[1:]
		s.jobs++
		now := s.clk.Now()
		res := jobs.Result{Outcome: jobs.Noop}
		if job.Kind == jobkind.Compact {
			res.Outcome = jobs.Succeeded
			for _, part := range job.Partitions {
				var i int
				if _, err := fmt.Sscanf(part.Key, "category=p%d", &i); err != nil {
					s.t.Fatalf("job for %q: %v", part.Key, err)
				}
				if part.Quiet {
					if quiet := now.Sub(s.last[i]); quiet < s.set.CompactWhenQuietAfter {
						s.t.Fatalf("%s: quiet merge %s after its last write, while compact_when_quiet_after is %s",
							part.Key, quiet, s.set.CompactWhenQuietAfter)
					}
					s.quiet[i][s.last[i]]++
				}
				if !s.merge(i, part.Quiet) {
					if res.NothingToDo == nil {
						res.NothingToDo = map[string]string{}
					}
					res.NothingToDo[part.Key] = "nothing selected"
				}
				if part.Quiet && s.reduces(i) {
					s.t.Fatalf("%s: a merge would still reduce its files after the quiet merge: %v", part.Key, s.files[i])
				}
			}
		}
		s.sync(false)
		s.p.Finished(s.t.Context(), job, res)
		// A second look at once (a commit event of reactor's own
		// snapshot) schedules nothing more for a merged partition: the
		// spell count above would show it.
		s.sync(true)
	}
}

// merge rewrites part's small files as the executor would: the tier
// rule's pick, or all of them in quiet; outputs rolled at the target.
func (s *quietSim) merge(part int, quiet bool) bool {
	var small, rest []int64
	for _, size := range s.files[part] {
		if size < s.set.SmallFileSize {
			small = append(small, size)
		} else {
			rest = append(rest, size)
		}
	}
	sel, _ := jobs.TiersOf(s.set).Select(small)
	if quiet && len(small) >= 2 {
		sel = sel[:0]
		for i := range small {
			sel = append(sel, i)
		}
	}
	if len(sel) < 2 {
		return false
	}
	var total int64
	for i, size := range small {
		if slices.Contains(sel, i) {
			total += size
		} else {
			rest = append(rest, size)
		}
	}
	for ; total > s.set.TargetFileSize; total -= s.set.TargetFileSize {
		rest = append(rest, s.set.TargetFileSize)
	}
	s.files[part] = append(rest, total)
	return true
}

func (s *quietSim) quietJobs(part int) int {
	n := 0
	for _, c := range s.quiet[part] {
		n += c
	}
	return n
}

// check: at most one quiet merge per spell; a spell long enough for one
// (the quiet wait plus a margin for cool-downs) that got none ended with
// nothing a merge would reduce.
func (s *quietSim) check() {
	s.t.Helper()
	margin := 10 * time.Second
	for i := range s.files {
		spells := s.spells[i]
		if !s.last[i].IsZero() {
			spells = append(spells, simSpell{from: s.last[i], to: s.clk.Now(), reduces: s.reduces(i)})
		}
		for _, sp := range spells {
			n := s.quiet[i][sp.from]
			switch {
			case n > 1:
				s.t.Errorf("p%d: %d quiet merges in the spell from %s, want at most 1", i, n, sp.from.Sub(s.start))
			case n == 0 && sp.reduces && sp.to.Sub(sp.from) >= s.set.CompactWhenQuietAfter+margin:
				s.t.Errorf("p%d: quiet for %s from %s with files a merge would reduce (%v), and no quiet merge",
					i, sp.to.Sub(sp.from), sp.from.Sub(s.start), s.files[i])
			}
		}
	}
}

// Random write schedules: bursts of commits per partition separated by
// gaps shorter or longer than compact_when_quiet_after. Every spell long
// enough with files to merge gets exactly one quiet merge, none comes
// while a partition is written (runUntil checks each against its last
// write), and after one nothing is left to merge; once every writer has
// stopped and the last spells have run out, no job at all is scheduled.
func TestQuietMergeProperty(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 0x9e3779b9))
		set := quietSettings(t, fmt.Sprintf("  compact_when_quiet_after: %ds\n", 30+rng.IntN(90)))
		parts := 1 + rng.IntN(4)
		sim := newQuietSim(t, set, parts)
		horizon := 40 * time.Minute
		writes := 0
		for p := range parts {
			at := time.Duration(rng.Int64N(int64(2 * time.Minute)))
			for at < horizon-10*time.Minute {
				for range 1 + rng.IntN(30) {
					sim.write(p, at, int64(2<<10+rng.IntN(80<<10)))
					writes++
					at += time.Duration(200+rng.IntN(3000)) * time.Millisecond
				}
				if rng.IntN(2) == 0 {
					at += time.Duration(5+rng.IntN(int(set.CompactWhenQuietAfter/time.Second)-5)) * time.Second // shorter than the wait
				} else {
					at += set.CompactWhenQuietAfter + time.Duration(rng.IntN(300))*time.Second
				}
			}
		}
		sim.runUntil(horizon)
		sim.check()
		before := sim.jobs
		sim.runUntil(horizon + 2*time.Hour)
		if sim.jobs != before {
			t.Errorf("seed %d: %d jobs after every spell had run out, want none", seed, sim.jobs-before)
		}
		if t.Failed() {
			t.Fatalf("seed %d (%d partitions, %d writes, compact_when_quiet_after %s)", seed, parts, writes, set.CompactWhenQuietAfter)
		}
	}
}
