package main

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"testing"
)

func TestWritePalettedPNG(t *testing.T) {
	white, blue, red := color.RGBA{255, 255, 255, 255}, color.RGBA{0x1f, 0x77, 0xb4, 255}, color.RGBA{0xd6, 0x27, 0x28, 255}
	tests := []struct {
		name string
		draw func(x, y int) color.RGBA
		// exact: every pixel comes back as it was drawn (at most 256 colours).
		exact bool
	}{
		{"lines on white", func(x, y int) color.RGBA {
			switch {
			case y == x:
				return blue
			case y == 2*x:
				return red
			}
			return white
		}, true},
		{"more colours than a palette holds", func(x, y int) color.RGBA {
			// 64 x 64 distinct greys and blues: 4,096 colours, most of them
			// seen once, beside a white background.
			if y < 32 {
				return white
			}
			return color.RGBA{uint8(x * 4), uint8(y * 4), 200, 255}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := image.NewRGBA(image.Rect(0, 0, 64, 64))
			for y := range 64 {
				for x := range 64 {
					src.SetRGBA(x, y, tt.draw(x, y))
				}
			}
			var buf bytes.Buffer
			if err := writePalettedPNG(&buf, src); err != nil {
				t.Fatal(err)
			}
			got, err := png.Decode(&buf)
			if err != nil {
				t.Fatal(err)
			}
			pal, ok := got.(*image.Paletted)
			if !ok {
				t.Fatalf("decoded a %T, want a paletted image", got)
			}
			if pal.Bounds() != src.Bounds() || len(pal.Palette) > 256 {
				t.Fatalf("bounds %v, %d colours; want %v, at most 256", pal.Bounds(), len(pal.Palette), src.Bounds())
			}
			for y := range 64 {
				for x := range 64 {
					want := src.RGBAAt(x, y)
					g := color.RGBAModel.Convert(pal.At(x, y)).(color.RGBA)
					if tt.exact && g != want {
						t.Fatalf("pixel (%d,%d) = %v, want %v", x, y, g, want)
					}
					// The most frequent colour (the background) is always kept exactly.
					if want == white && g != white {
						t.Fatalf("background pixel (%d,%d) = %v", x, y, g)
					}
				}
			}
		})
	}
}
