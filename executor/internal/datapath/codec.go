package datapath

import (
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// codecNamed is the Parquet codec of an Iceberg codec name
// (write.parquet.compression-codec, write.delete.parquet.compression-codec)
// with the compression levels iceberg-go accepts for it ({0, 0}: no
// tunable level; -1, the default, always passes). It is the one list of
// the codecs reactor writes itself, for data and delete files alike.
func codecNamed(name string) (codec compress.Compression, levels [2]int, ok bool) {
	switch name {
	case "zstd":
		return compress.Codecs.Zstd, [2]int{-5, 22}, true
	case "snappy":
		return compress.Codecs.Snappy, [2]int{}, true
	case "gzip":
		return compress.Codecs.Gzip, [2]int{-3, 9}, true
	case "brotli":
		return compress.Codecs.Brotli, [2]int{0, 11}, true
	case "uncompressed":
		return compress.Codecs.Uncompressed, [2]int{}, true
	case "lz4raw":
		return compress.Codecs.Lz4Raw, [2]int{}, true
	}
	return 0, [2]int{}, false
}
