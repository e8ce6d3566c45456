package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/icereactor/reactor/embedded"
)

// contender is one program timed against the others.
type contender struct {
	name string
	role string
	args roleArgs
}

// runResult is one timed run of a contender.
type runResult struct {
	Size      int64        `json:"size"`
	Contender string       `json:"contender"`
	Run       int          `json:"run"`
	Wall      float64      `json:"wall_s"`
	CPU       float64      `json:"cpu_s"`
	MaxRSS    int64        `json:"max_rss_bytes"`
	InBytes   int64        `json:"in_bytes"`
	OutBytes  int64        `json:"out_bytes"`
	OutFiles  int          `json:"out_files"`
	Report    *childReport `json:"report"`
	LoadAvg   string       `json:"loadavg"`
	StartedAt time.Time    `json:"started_at"`
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func run(ctx context.Context, cfg config) error {
	work := cfg.work
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "reactor-bench-compact-"); err != nil {
			return err
		}
	}
	if !cfg.keep {
		defer os.RemoveAll(work)
	}
	var all []runResult
	for _, size := range cfg.sizes {
		dir := filepath.Join(work, fmt.Sprintf("in-%d", size))
		res, err := runSize(ctx, cfg, dir, size)
		all = append(all, res...)
		if err != nil {
			return err
		}
	}
	summarise(os.Stdout, cfg, all)
	if cfg.jsonOut != "" {
		data, err := json.MarshalIndent(all, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(cfg.jsonOut, data, 0o644)
	}
	return nil
}

// pristine is the generated table as it was before any run: the catalog
// files' bytes and the set of files under the warehouse.
type pristine struct {
	dir     string
	catalog map[string][]byte
	files   map[string]bool
	inputs  []string
	inBytes int64
}

func runSize(ctx context.Context, cfg config, dir string, size int64) ([]runResult, error) {
	if _, err := os.Stat(filepath.Join(dir, "catalog.db")); err != nil {
		if err := generate(ctx, dir, size, logf); err != nil {
			return nil, err
		}
	}
	p, err := snapshot(ctx, dir)
	if err != nil {
		return nil, err
	}
	// Warm the page cache: every contender reads warm files.
	for _, in := range p.inputs {
		f, err := os.Open(in)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, f)
		f.Close()
	}
	out := filepath.Join(dir, "limit-out")
	spill := filepath.Join(dir, "spill")
	contenders := []contender{{name: "pqarrow rewrite (1 writer)", role: "limit",
		args: roleArgs{Inputs: p.inputs, OutDir: out, Target: cfg.target}}}
	for _, c := range cfg.concurrency {
		contenders = append(contenders, contender{name: fmt.Sprintf("reactor compact, concurrency %d", c), role: "reactor",
			args: roleArgs{Dir: dir, Target: cfg.target, Concurrency: c}})
	}
	if cfg.sortOrder != "" {
		for _, c := range cfg.concurrency {
			contenders = append(contenders, contender{name: fmt.Sprintf("reactor sort %s, concurrency %d", cfg.sortOrder, c),
				role: "reactor", args: roleArgs{Dir: dir, Target: cfg.target, SortOrder: cfg.sortOrder, Concurrency: c,
					SortMemory: cfg.sortMemory, SpillDir: spill}})
		}
	}
	var results []runResult
	for r := range cfg.runs {
		for i := range contenders {
			c := contenders[(i+r)%len(contenders)] // rotate who goes first
			if err := p.restore(); err != nil {
				return results, err
			}
			for _, d := range []string{out, spill} {
				if err := os.RemoveAll(d); err != nil {
					return results, err
				}
				if err := os.MkdirAll(d, 0o755); err != nil {
					return results, err
				}
			}
			res, err := runChild(ctx, c)
			res.Size, res.Run = size, r+1
			if err != nil {
				return results, fmt.Errorf("%s, run %d: %w", c.name, r+1, err)
			}
			res.InBytes = p.inBytes
			logf("%s, %.0f MB, run %d: wall %.2fs cpu %.2fs rss %d MiB alloc %.0f MB out %d files %.1f MB (load %s)",
				c.name, float64(p.inBytes)/1e6, r+1, res.Wall, res.CPU, res.MaxRSS>>20, float64(res.Report.AllocBytes)/1e6,
				res.OutFiles, float64(res.OutBytes)/1e6, res.LoadAvg)
			results = append(results, res)
		}
	}
	return results, p.restore()
}

// snapshot records the generated table so every run starts from it.
func snapshot(ctx context.Context, dir string) (*pristine, error) {
	p := &pristine{dir: dir, catalog: map[string][]byte{}, files: map[string]bool{}}
	// Opening and closing the catalog once checkpoints SQLite's WAL.
	cat, err := embedded.OpenCatalog(ctx, dir)
	if err != nil {
		return nil, err
	}
	tbl, err := cat.LoadTable(ctx, benchTable)
	if err != nil {
		return nil, err
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range tasks {
		path := strings.TrimPrefix(t.File.FilePath(), "file://")
		p.inputs = append(p.inputs, path)
		p.inBytes += t.File.FileSizeBytes()
	}
	sort.Strings(p.inputs)
	if c, ok := cat.(io.Closer); ok {
		c.Close()
	}
	for _, name := range []string{"catalog.db", "catalog.db-wal", "catalog.db-shm"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			p.catalog[name] = data
		}
	}
	err = filepath.WalkDir(filepath.Join(dir, "warehouse"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			p.files[path] = true
		}
		return err
	})
	return p, err
}

// restore puts the catalog back and removes every file a run added (a
// compaction deletes and changes no file, it only adds).
func (p *pristine) restore() error {
	for _, name := range []string{"catalog.db", "catalog.db-wal", "catalog.db-shm"} {
		path := filepath.Join(p.dir, name)
		if data, ok := p.catalog[name]; ok {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				return err
			}
		} else if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return filepath.WalkDir(filepath.Join(p.dir, "warehouse"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p.files[path] {
			return err
		}
		return os.Remove(path)
	})
}

func runChild(ctx context.Context, c contender) (runResult, error) {
	res := runResult{Contender: c.name, StartedAt: time.Now()}
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		res.LoadAvg = strings.Join(strings.Fields(string(load))[:3], " ")
	}
	args, err := json.Marshal(c.args)
	if err != nil {
		return res, err
	}
	exe, err := os.Executable()
	if err != nil {
		return res, err
	}
	cmd := exec.CommandContext(ctx, exe)
	// The arguments go on stdin: a large partition's input list is longer
	// than one environment variable may be (128 KiB on Linux).
	cmd.Env = append(os.Environ(), roleEnv+"="+c.role)
	cmd.Stdin = bytes.NewReader(args)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return res, err
	}
	res.Wall = time.Since(start).Seconds()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.CPU = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
		res.MaxRSS = ru.Maxrss << 10
	}
	var rep childReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return res, fmt.Errorf("child report %q: %w", stdout.String(), err)
	}
	res.Report = &rep
	switch {
	case rep.Limit != nil:
		res.OutBytes, res.OutFiles = rep.Limit.BytesOut, rep.Limit.Files
	case rep.Job != nil:
		if rep.Job.Outcome != "succeeded" {
			return res, fmt.Errorf("job %s: %s", rep.Job.Outcome, rep.Job.Error)
		}
		res.OutBytes, res.OutFiles = rep.Job.BytesOut, rep.Job.Files
	}
	return res, nil
}

// summarise prints, per size and contender, the medians of the runs and
// the ratios against the limit of the same runs.
func summarise(w io.Writer, cfg config, all []runResult) {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	defer tw.Flush()
	fmt.Fprintln(tw, "input\tcontender\twall s\tcpu s\tcores\tMB/cpu-s\tMB/wall-s\tpeak RSS MiB\talloc/input\tout files\tout MB\tvs limit: cpu eff\twall thrpt\tRSS\tloadavg")
	for _, size := range cfg.sizes {
		byContender := map[string][]runResult{}
		var names []string
		var limitRuns []runResult
		for _, r := range all {
			if r.Size != size {
				continue
			}
			if _, ok := byContender[r.Contender]; !ok {
				names = append(names, r.Contender)
			}
			byContender[r.Contender] = append(byContender[r.Contender], r)
			if r.Report.Limit != nil {
				limitRuns = append(limitRuns, r)
			}
		}
		sort.SliceStable(names, func(i, j int) bool { return strings.HasPrefix(names[i], "pqarrow") })
		for _, name := range names {
			runs := byContender[name]
			in := float64(runs[0].InBytes) / 1e6
			wall := median(runs, func(r runResult) float64 { return r.Wall })
			cpu := median(runs, func(r runResult) float64 { return r.CPU })
			rss := median(runs, func(r runResult) float64 { return float64(r.MaxRSS) })
			alloc := median(runs, func(r runResult) float64 { return float64(r.Report.AllocBytes) / float64(r.InBytes) })
			out := median(runs, func(r runResult) float64 { return float64(r.OutBytes) / 1e6 })
			files := median(runs, func(r runResult) float64 { return float64(r.OutFiles) })
			// Ratios pair each run with the limit's run of the same round.
			eff := pairRatio(runs, limitRuns, func(r, l runResult) float64 { return l.CPU / r.CPU })
			thr := pairRatio(runs, limitRuns, func(r, l runResult) float64 { return l.Wall / r.Wall })
			mem := pairRatio(runs, limitRuns, func(r, l runResult) float64 { return float64(r.MaxRSS) / float64(l.MaxRSS) })
			var loads []string
			for _, r := range runs {
				loads = append(loads, strings.Fields(r.LoadAvg)[0])
			}
			fmt.Fprintf(tw, "%.0f MB\t%s\t%.2f\t%.2f\t%.2f\t%.1f\t%.1f\t%.0f\t%.2f\t%.0f\t%.1f\t%s\t%s\t%s\t%s\n",
				in, name, wall, cpu, cpu/wall, in/cpu, in/wall, rss/(1<<20), alloc, files, out, eff, thr, mem, strings.Join(loads, ","))
		}
	}
}

func median(runs []runResult, f func(runResult) float64) float64 {
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// pairRatio is the median and range of f over each run paired with the
// limit's run of the same round.
func pairRatio(runs, limit []runResult, f func(r, l runResult) float64) string {
	var v []float64
	for _, r := range runs {
		for _, l := range limit {
			if l.Run == r.Run {
				v = append(v, f(r, l))
			}
		}
	}
	if len(v) == 0 {
		return "-"
	}
	sort.Float64s(v)
	med := v[len(v)/2]
	if len(v)%2 == 0 {
		med = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return fmt.Sprintf("%.2fx (%.2f-%.2f)", med, v[0], v[len(v)-1])
}
