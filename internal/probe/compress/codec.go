package compress

import (
	"compress/gzip"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	kgzip "github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec names, as the plan and --codecs spell them.
const (
	Gzip1 = "gzip-1"
	Gzip6 = "gzip-6"
	Zstd1 = "zstd-1"
	Zstd3 = "zstd-3"
	LZ4   = "lz4"
)

// DefaultCodecs are measured when none are named: the defaults of the
// backup tools (gzip 6, zstd 3, lz4 fast) and the fast ends of gzip and zstd.
var DefaultCodecs = []string{Gzip1, Gzip6, Zstd1, Zstd3, LZ4}

// encoder is a streaming compressor that can be reused for the next stream.
type encoder interface {
	io.WriteCloser
	Reset(w io.Writer)
}

// decoder is a streaming decompressor that can be reused for the next stream.
type decoder interface {
	io.Reader
	Reset(r io.Reader) error
	Close()
}

type codec struct {
	name, algorithm string
	level           int
	impl            func() string // the library, its version and its setting, for the record
	newEncoder      func(io.Writer) (encoder, error)
	newDecoder      func(io.Reader) (decoder, error)
}

// withVersion is a module's path and its version, when the build
// records it (test binaries and builds outside a module may not).
func withVersion(path string) string {
	if v := moduleVersion(path); v != "" {
		return path + " " + v
	}
	return path
}

func moduleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, m := range bi.Deps {
		if m.Path == path {
			if m.Replace != nil {
				return m.Replace.Version
			}
			return m.Version
		}
	}
	return ""
}

// codecs are the implementations, each set as the backup tools set the C
// library it stands for (see doc.go): one thread each, no checksum where
// the tools write none.
var codecs = map[string]codec{
	Gzip1: gzipCodec(1),
	Gzip6: gzipCodec(6),
	Zstd1: zstdCodec(1, zstd.SpeedFastest),
	Zstd3: zstdCodec(3, zstd.SpeedDefault),
	LZ4: {name: LZ4, algorithm: "lz4", level: 1,
		impl: func() string {
			return withVersion("github.com/pierrec/lz4/v4") + ", CCompatFast (LZ4_compress_fast, acceleration 1), 64 KiB blocks, content checksum"
		},
		newEncoder: func(w io.Writer) (encoder, error) {
			e := lz4.NewWriter(w)
			// pgBackRest's lz4 frame: default (64 KiB) blocks, a content
			// checksum; one thread, as a backup process compresses.
			err := e.Apply(lz4.ConcurrencyOption(1), lz4.CompressionLevelOption(lz4.CCompatFast),
				lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(true))
			return e, err
		},
		newDecoder: func(r io.Reader) (decoder, error) {
			d := lz4.NewReader(r)
			if err := d.Apply(lz4.ConcurrencyOption(1)); err != nil {
				return nil, err
			}
			return lz4Decoder{d}, nil
		}},
}

// gzipCodec compresses with Go's compress/gzip, which is zlib's deflate
// (the same lazy matching and level parameters: the same ratio, and a
// speed near zlib's), and decompresses with klauspost's inflate, the
// nearer of Go's two to zlib's speed. klauspost's deflate levels are its
// own fast encoders: its level 6 compresses database pages 3.9 times as
// fast as zlib's level 6, which pgBackRest and pg_basebackup run.
func gzipCodec(level int) codec {
	return codec{name: fmt.Sprintf("gzip-%d", level), algorithm: "gzip", level: level,
		impl: func() string {
			return fmt.Sprintf("compress/gzip of %s level %d (zlib's deflate); inflate: %s", runtime.Version(), level,
				withVersion("github.com/klauspost/compress"))
		},
		newEncoder: func(w io.Writer) (encoder, error) {
			return gzip.NewWriterLevel(w, level)
		},
		newDecoder: func(r io.Reader) (decoder, error) {
			d, err := kgzip.NewReader(r)
			if err != nil {
				return nil, err
			}
			return gzipDecoder{d}, nil
		}}
}

func zstdCodec(level int, speed zstd.EncoderLevel) codec {
	return codec{name: fmt.Sprintf("zstd-%d", level), algorithm: "zstd", level: level,
		impl: func() string {
			return fmt.Sprintf("%s zstd, encoder level %q (its nearest to zstd's %d), no checksum", withVersion("github.com/klauspost/compress"), speed, level)
		},
		newEncoder: func(w io.Writer) (encoder, error) {
			// Concurrency 1: the stream is compressed on the caller's
			// thread, one core, as ZSTD_compressStream does.
			return zstd.NewWriter(w, zstd.WithEncoderLevel(speed), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false))
		},
		newDecoder: func(r io.Reader) (decoder, error) {
			d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
			if err != nil {
				return nil, err
			}
			return d, nil
		}}
}

type gzipDecoder struct{ *kgzip.Reader }

func (d gzipDecoder) Close() { _ = d.Reader.Close() }

type lz4Decoder struct{ *lz4.Reader }

func (d lz4Decoder) Reset(r io.Reader) error { d.Reader.Reset(r); return nil }
func (d lz4Decoder) Close()                  {}

// ParseCodecs reads a --codecs list: names separated by commas, or "all".
// Bare gzip and zstd mean the backup tools' default levels.
func ParseCodecs(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		name := strings.ToLower(strings.TrimSpace(f))
		switch name {
		case "":
			continue
		case "all":
			for _, c := range DefaultCodecs {
				if !slices.Contains(out, c) {
					out = append(out, c)
				}
			}
			continue
		case "gzip", "gz":
			name = Gzip6
		case "zstd", "zst":
			name = Zstd3
		case "lz4-1", "lz4-0":
			name = LZ4
		}
		if _, ok := codecs[name]; !ok {
			return nil, fmt.Errorf("unknown codec %q: choose from %s (or all)", strings.TrimSpace(f), strings.Join(DefaultCodecs, ", "))
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no codec named: choose from %s (or all)", strings.Join(DefaultCodecs, ", "))
	}
	return out, nil
}
