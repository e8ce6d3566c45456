package main

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// phaseResult is one phase's figures.
type phaseResult struct {
	replicas int
	killed   bool
	window   time.Duration
	// jobs started in the measured window; all: the whole phase, kill
	// included (jobs running when a replica died end at its death).
	jobs, all          jobStats
	cpu                map[string]time.Duration // per replica, over the window
	loadStart, loadEnd [3]float64
	commitsInWindow    int
	commits            int
	writerConflicts    int
	writerErrors       int
	kill               killResult
	tablesChecked      int
	tablesExact        int
	rows               int64
	rowMismatches      []string
	strayFiles         int
	straySamples       []string
	start              time.Time
}

func header(cfg config) string {
	return fmt.Sprintf("replicas benchmark: replicas %v, %d tables x %g commits/s (%g commits/s in all), %d partitions, %d rows per commit, %s per phase, lease TTL %s, %d shards, concurrency %d per replica\nthresholds: %v\n",
		cfg.replicas, cfg.tables, cfg.rate, cfg.rate*float64(cfg.tables), cfg.partitions, cfg.rows, cfg.duration,
		cfg.leaseTTL, cfg.leaseShards, cfg.concurrency, cfg.thresholds)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func perReplicaText(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

func (r phaseResult) totalCPU() time.Duration {
	var t time.Duration
	for _, d := range r.cpu {
		t += d
	}
	return t
}

func (r phaseResult) jobsPerSecond() float64 {
	if r.window <= 0 {
		return 0
	}
	return float64(r.jobs.finished) / r.window.Seconds()
}

// text is the phase's report.
func (r phaseResult) text(cfg config) string {
	var b strings.Builder
	j := r.jobs
	w := r.window.Seconds()
	fmt.Fprintf(&b, "-- %d replica(s), window %s (load %.2f %.2f %.2f at start, %.2f %.2f %.2f at end) --\n",
		r.replicas, r.window.Round(time.Second), r.loadStart[0], r.loadStart[1], r.loadStart[2], r.loadEnd[0], r.loadEnd[1], r.loadEnd[2])
	fmt.Fprintf(&b, "   writers: %d commits in the window (%.1f/s), %d in the phase, %d writer conflicts, %d writers stopped on an error\n",
		r.commitsInWindow, float64(r.commitsInWindow)/w, r.commits, r.writerConflicts, r.writerErrors)
	fmt.Fprintf(&b, "   jobs started in the window: %d finished (%.2f/s): %s; outcomes %v; %d still running at its end\n",
		j.finished, r.jobsPerSecond(), perReplicaText(j.perReplica), j.outcomes, j.unfinished)
	var cpuParts []string
	for _, name := range sortedKeys(r.cpu) {
		cpuParts = append(cpuParts, fmt.Sprintf("%s %.1fs (%.0f%%)", name, r.cpu[name].Seconds(), 100*r.cpu[name].Seconds()/w))
	}
	perJob := "-"
	if j.finished > 0 {
		perJob = fmt.Sprintf("%.0fms", float64(r.totalCPU().Milliseconds())/float64(j.finished))
	}
	fmt.Fprintf(&b, "   reactor CPU in the window: %s; total %.1fs (%.0f%% of one core), %s per finished job\n",
		strings.Join(cpuParts, ", "), r.totalCPU().Seconds(), 100*r.totalCPU().Seconds()/w, perJob)
	a := r.all
	fmt.Fprintf(&b, "   whole phase: %d jobs started (%s finished by replica)\n", a.finished+a.unfinished, perReplicaText(a.perReplica))
	fmt.Fprintf(&b, "   target: jobs that ran twice = 0: %s (%d job ids started twice; %d pairs of jobs of one table overlapping across replicas, %d within one)\n",
		verdict(a.ranTwice == 0 && a.overlapsAcross == 0), a.ranTwice, a.overlapsAcross, a.overlapsWithin)
	for _, s := range a.overlapSamples {
		fmt.Fprintf(&b, "      overlap: %s\n", s)
	}
	fmt.Fprintf(&b, "   target: jobs failed from replica races = 0: %s (%d failed or gave up on a lease/ownership error; %d other failures or give-ups)\n",
		verdict(a.raceFailures == 0), a.raceFailures, a.otherFailures)
	for _, s := range a.failureSamples {
		fmt.Fprintf(&b, "      %s\n", s)
	}
	if r.killed {
		b.WriteString(r.kill.text(cfg))
	}
	fmt.Fprintf(&b, "   rows: %d of %d tables exact (rows and checksum, no duplicate id; %d rows written); %d unreferenced data files on disk in all tables\n",
		r.tablesExact, r.tablesChecked, r.rows, r.strayFiles)
	for _, s := range r.straySamples {
		fmt.Fprintf(&b, "      unreferenced: %s\n", s)
	}
	for _, m := range r.rowMismatches {
		fmt.Fprintf(&b, "      DIFFERS: %s\n", m)
	}
	return b.String()
}

func (k killResult) text(cfg config) string {
	var b strings.Builder
	if k.victim == "" {
		return "   kill: not run\n"
	}
	fmt.Fprintf(&b, "   kill: SIGKILL %s %s into the phase (aimed at %s into a job: half the median job time), %d job(s) running on it",
		k.victim, k.sinceStart.Round(time.Second), k.aim.Round(time.Millisecond), len(k.deadJobs))
	for _, j := range k.deadJobs {
		fmt.Fprintf(&b, "; %s %s on %s started %s before", j.kind, j.id, j.table, k.at.Sub(j.started).Round(time.Millisecond))
	}
	b.WriteString("\n")
	ratio := k.takenMax.Seconds() / cfg.leaseTTL.Seconds()
	fmt.Fprintf(&b, "   target: its tables owned again within the lease time: %s (%d shards held by %s; %d taken by survivors %s, %.1fs-%.1fs after the kill, the last %.2fx the TTL of %s; %d not taken; %d seen expire)\n",
		verdict(k.untaken == 0 && len(k.shards) > 0 && ratio <= 1.5), len(k.shards), k.victim, len(k.shards)-k.untaken,
		perReplicaText(k.takenBy), k.takenMin.Seconds(), k.takenMax.Seconds(), ratio, cfg.leaseTTL, k.untaken, k.expiredSeen)
	first := "-"
	if k.survivorJobs > 0 {
		first = fmt.Sprintf("%.1fs", k.firstSurvivorJob.Seconds())
	}
	fmt.Fprintf(&b, "   survivors ran %d jobs on %s's tables after the kill (%d succeeded or noop), the first %s after it; %d on the killed job's table\n",
		k.survivorJobs, k.victim, k.survivorOK, first, k.deadJobTableJobs)
	if k.leftErr != nil {
		fmt.Fprintf(&b, "   killed job's output: could not be listed: %v\n", k.leftErr)
	} else if len(k.deadJobs) > 0 {
		fmt.Fprintf(&b, "   target: the killed job leaves no output files once cleaned: %d data file(s) of its (%d bytes, %d of them cut off mid-write) left unreferenced, no snapshot names them; no replica removes them (the killed one cannot, the survivors do not know them): orphan cleanup does, once they are older than orphan_margin (24h floor); plus %d writer file(s) of lost commit attempts in that window\n",
			k.leftFiles, k.leftBytes, k.leftTruncated, k.leftWriterFiles)
		switch {
		case k.cleanErr != nil:
			fmt.Fprintf(&b, "   orphan cleanup of the killed job's table: failed: %v\n", k.cleanErr)
		case k.leftFiles > 0:
			fmt.Fprintf(&b, "   orphan cleanup (remove_orphans, deleting; leftovers aged past the 24h floor first) of the killed job's table(s): %s: %d of %d leftover file(s) deleted, rows exact after it: %v\n",
				verdict(k.cleanDeleted == k.leftFiles && k.cleanedRowsExact), k.cleanDeleted, k.leftFiles, k.cleanedRowsExact)
		}
	}
	return b.String()
}

// scalingText compares the phases.
func scalingText(rs []phaseResult) string {
	if len(rs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("== scaling (jobs started in each window) ==\n")
	b.WriteString("   replicas  jobs/s  vs first  reactor CPU total  max per replica  CPU per job  load1 start-end\n")
	base := rs[0].jobsPerSecond()
	for _, r := range rs {
		var maxCPU time.Duration
		for _, d := range r.cpu {
			maxCPU = max(maxCPU, d)
		}
		rel, perJob := "-", "-"
		if base > 0 {
			rel = fmt.Sprintf("%.2fx", r.jobsPerSecond()/base)
		}
		if r.jobs.finished > 0 {
			perJob = fmt.Sprintf("%.0fms", float64(r.totalCPU().Milliseconds())/float64(r.jobs.finished))
		}
		w := r.window.Seconds()
		fmt.Fprintf(&b, "   %8d  %6.2f  %8s  %8.1fs (%3.0f%%)  %7.1fs (%3.0f%%)  %11s  %.1f-%.1f\n", r.replicas, r.jobsPerSecond(), rel,
			r.totalCPU().Seconds(), 100*r.totalCPU().Seconds()/w, maxCPU.Seconds(), 100*maxCPU.Seconds()/w, perJob, r.loadStart[0], r.loadEnd[0])
	}
	return b.String()
}
