package main

import (
	"bufio"
	"cmp"
	"image"
	"image/color"
	"image/png"
	"io"
	"slices"
)

// writePalettedPNG writes img as a PNG of at most 256 colours. A plot is a
// few line colours on white; the rest of its couple of thousand colours are
// the anti-aliased edges, which the nearest of the 256 most frequent colours
// draws indistinguishably. The file is about a third of the RGBA PNG's size
// (206 KB to 76 KB for a 2x4-panel soak plot), which is what keeps
// bench/soak/results small enough to commit a plot with every run.
func writePalettedPNG(w io.Writer, img image.Image) error {
	b := img.Bounds()
	counts := make(map[color.RGBA]int)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			counts[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	colors := make([]color.RGBA, 0, len(counts))
	for c := range counts {
		colors = append(colors, c)
	}
	// Most frequent first; ties in a fixed order, so one image always gets
	// one palette.
	slices.SortFunc(colors, func(a, b color.RGBA) int {
		if c := cmp.Compare(counts[b], counts[a]); c != 0 {
			return c
		}
		return cmp.Compare(uint32(a.R)<<24|uint32(a.G)<<16|uint32(a.B)<<8|uint32(a.A),
			uint32(b.R)<<24|uint32(b.G)<<16|uint32(b.B)<<8|uint32(b.A))
	})
	palette := make(color.Palette, 0, 256)
	for _, c := range colors[:min(len(colors), 256)] {
		palette = append(palette, c)
	}
	out := image.NewPaletted(b, palette)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			out.Set(x, y, img.At(x, y))
		}
	}
	bw := bufio.NewWriter(w)
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(bw, out); err != nil {
		return err
	}
	return bw.Flush()
}
