package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The plot is drawn with gonum.org/v1/plot: a small, pure-Go, maintained
// library (its fonts and rasteriser add ~8 s to a cold build of this command
// only), which gives axes, ticks and legends that a hand-drawn chart would
// need a few hundred lines for.

var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
	color.RGBA{0xe3, 0x77, 0xc2, 0xff}, color.RGBA{0x7f, 0x7f, 0x7f, 0xff},
}

// series is one line of a panel.
type series struct {
	name   string
	value  func(sample) (float64, bool) // false: no value in this sample
	dashed bool
}

// panel is one chart of the figure.
type panel struct {
	title, y string
	log      bool // logarithmic y axis
	lines    []series
}

func always(f func(sample) float64) func(sample) (float64, bool) {
	return func(s sample) (float64, bool) { return f(s), true }
}

func constant(v float64) func(sample) (float64, bool) {
	return func(sample) (float64, bool) { return v, true }
}

// panels are the figure's charts, two per row.
func panels(samples []sample) []panel {
	scanned := func(f func(sample) float64) func(sample) (float64, bool) {
		return func(s sample) (float64, bool) { return f(s), s.ScanTables > 0 && f(s) > 0 }
	}
	committed := func(f func(sample) float64) func(sample) (float64, bool) {
		return func(s sample) (float64, bool) { return f(s), s.CommitN > 0 }
	}
	jobLines := func(outcomes ...string) []series {
		var out []series
		for _, kind := range jobKinds {
			any := false
			count := func(s sample) float64 {
				n := 0
				for _, o := range outcomes {
					n += jobCount(s.Jobs, kind, o)
				}
				return float64(n)
			}
			for _, s := range samples {
				any = any || count(s) > 0
			}
			if any {
				out = append(out, series{name: kind, value: always(count)})
			}
		}
		if len(out) == 0 {
			out = append(out, series{name: "none", value: constant(0)})
		}
		return out
	}
	return []panel{
		{"Live data files (all tables)", "files", false, []series{
			{name: "live", value: always(func(s sample) float64 { return float64(s.DataFiles) })},
			{name: "ideal", value: always(func(s sample) float64 { return float64(s.IdealFiles) })},
			{name: "allowed", value: always(func(s sample) float64 { return float64(s.AllowedFiles) }), dashed: true},
		}},
		{"Metadata (largest table)", "count", false, []series{
			{name: "snapshots", value: always(func(s sample) float64 { return float64(s.SnapshotsMax) })},
			{name: "data manifests", value: always(func(s sample) float64 { return float64(s.ManifestsMax) })},
			{name: "snapshot_count", value: always(func(s sample) float64 { return float64(s.SnapshotBound) }), dashed: true},
			{name: "manifest_count", value: always(func(s sample) float64 { return float64(s.ManifestBound) }), dashed: true},
		}},
		{"Read amplification: full scan / compacted copy", "x (log)", true, []series{
			{name: "worst table", value: scanned(func(s sample) float64 { return s.ScanRatio })},
			{name: "target 1.5x", value: constant(targetScanRatio), dashed: true},
		}},
		{"Write amplification: bytes rewritten / written", "x", false, []series{
			{name: "so far", value: always(sample.WriteAmp)},
			{name: "target 5x", value: constant(targetWriteAmp), dashed: true},
		}},
		{"Writer commit latency", "ms (log)", true, []series{
			{name: "p50", value: committed(func(s sample) float64 { return s.CommitP50.Seconds() * 1000 })},
			{name: "p99", value: committed(func(s sample) float64 { return s.CommitP99.Seconds() * 1000 })},
		}},
		{"Maintainer CPU (machine load1 " + loadRange(samples) + ")", "% of one core", false, []series{
			{name: "maintainer's processes", value: always(func(s sample) float64 { return s.ReactorCPUPct })},
		}},
		{"Jobs succeeded (cumulative)", "jobs", false, jobLines("succeeded")},
		{"Jobs gave up or failed (cumulative)", "jobs", false, jobLines("gave_up", "failed")},
	}
}

// loadRange is the lowest and highest load average the samples saw.
func loadRange(samples []sample) string {
	if len(samples) == 0 {
		return "unknown"
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range samples {
		lo, hi = min(lo, s.Load1), max(hi, s.Load1)
	}
	return fmt.Sprintf("%.1f-%.1f", lo, hi)
}

// plotSamples draws the figure to path as a PNG.
// warmup is marked on every chart.
func plotSamples(path string, samples []sample, warmup time.Duration, subtitle string) error {
	ps := panels(samples)
	const cols = 2
	rows := (len(ps) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, pn := range ps {
		p, err := panelPlot(pn, samples, warmup)
		if err != nil {
			return err
		}
		grid[i/cols][i%cols] = p
	}
	width, height := vg.Points(1100), vg.Points(float64(rows)*260+30)
	img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(80))
	dc := draw.New(img)
	title := draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, 11), Handler: plot.DefaultTextHandler,
		XAlign: draw.XCenter, YAlign: draw.YTop}
	dc.FillText(title, vg.Point{X: width / 2, Y: height - 6}, subtitle)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(12), PadY: vg.Points(10),
		PadTop: vg.Points(26), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	canvases := plot.Align(grid, tiles, dc)
	for r := range grid {
		for c := range grid[r] {
			if grid[r][c] != nil {
				grid[r][c].Draw(canvases[r][c])
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writePalettedPNG(f, img.Image()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func panelPlot(pn panel, samples []sample, warmup time.Duration) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = pn.title
	p.X.Label.Text = "minutes"
	p.Y.Label.Text = pn.y
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	lowest := math.Inf(1)
	for i, sr := range pn.lines {
		var xys plotter.XYs
		for _, s := range samples {
			if v, ok := sr.value(s); ok && (!pn.log || v > 0) {
				xys = append(xys, plotter.XY{X: s.Elapsed.Minutes(), Y: v})
				lowest = min(lowest, v)
			}
		}
		if len(xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.Color = palette[i%len(palette)]
		l.Width = vg.Points(1.5)
		if sr.dashed {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(l)
		p.Legend.Add(sr.name, l)
	}
	// Room above the highest line for the legend.
	if pn.log && !math.IsInf(lowest, 1) {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		p.Y.Min, p.Y.Max = lowest/1.5, max(p.Y.Max, lowest*2)*4
	} else {
		p.Y.Min, p.Y.Max = 0, max(p.Y.Max*1.4, 1)
	}
	if warmup > 0 && len(samples) > 0 && warmup < samples[len(samples)-1].Elapsed {
		x := warmup.Minutes()
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: p.Y.Min}, {X: x, Y: p.Y.Max}})
		if err != nil {
			return nil, err
		}
		l.Color = color.Gray{Y: 0x99}
		l.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(l)
		p.Legend.Add("warm-up ends", l)
	}
	return p, nil
}
