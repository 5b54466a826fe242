package compress

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// roundTrip streams in through the codec as the probe does (chunked
// writes, chunked reads) and returns what came back and the stream.
func roundTrip(t *testing.T, c codec, in []byte, chunk int) (out, stream []byte) {
	t.Helper()
	var buf bytes.Buffer
	if _, err := compressLoop(context.Background(), c, in, chunk, 0, &buf, nil); err != nil {
		t.Fatalf("compress: %v", err)
	}
	if len(in) > 0 {
		// The probe's own check, byte for byte.
		if _, err := decompressLoop(context.Background(), c, buf.Bytes(), in, chunk, 0, nil); err != nil {
			t.Fatalf("verify: %v", err)
		}
	}
	d, err := c.newDecoder(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("decoder: %v", err)
	}
	defer d.Close()
	var got bytes.Buffer
	if _, err := got.ReadFrom(d); err != nil {
		t.Fatalf("decompress: %v", err)
	}
	return got.Bytes(), buf.Bytes()
}

func TestRoundTripEveryCodec(t *testing.T) {
	syn, err := Synthetic(3<<20+5000, 7) // not a whole number of chunks
	if err != nil {
		t.Fatal(err)
	}
	random := make([]byte, 1<<20+3)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	inputs := []struct {
		name string
		data []byte
	}{
		{"synthetic pages", syn.Data},
		{"random bytes", random},
		{"zeros", make([]byte, 2<<20)},
		{"one byte", []byte{42}},
	}
	for _, name := range DefaultCodecs {
		c := codecs[name]
		for _, in := range inputs {
			t.Run(name+"/"+in.name, func(t *testing.T) {
				out, stream := roundTrip(t, c, in.data, 256<<10)
				if !bytes.Equal(out, in.data) {
					t.Fatalf("round trip changed the data: %d bytes in, %d out", len(in.data), len(out))
				}
				if in.name == "zeros" && len(stream)*50 > len(in.data) {
					t.Errorf("zeros compressed to %d bytes of %d: the codec is not compressing", len(stream), len(in.data))
				}
			})
		}
	}
}

// Several passes of one encoder and decoder (Reset between streams) give
// the same stream and the same bytes back each time.
func TestCodecsReuse(t *testing.T) {
	syn, err := Synthetic(1<<20, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range DefaultCodecs {
		t.Run(name, func(t *testing.T) {
			c := codecs[name]
			var first bytes.Buffer
			st, err := compressLoop(context.Background(), c, syn.Data, 64<<10, 0, &first, nil)
			if err != nil {
				t.Fatal(err)
			}
			if st.bytes != int64(len(syn.Data)) {
				t.Errorf("compressed %d bytes, the sample has %d", st.bytes, len(syn.Data))
			}
			_, again := roundTrip(t, c, syn.Data, 64<<10)
			if !bytes.Equal(first.Bytes(), again) {
				t.Errorf("a second stream of the same bytes differs: %d bytes, then %d", first.Len(), len(again))
			}
		})
	}
}

func TestParseCodecs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{in: "zstd-3", want: []string{Zstd3}},
		{in: "gzip-6, lz4,zstd-1", want: []string{Gzip6, LZ4, Zstd1}},
		{in: "zstd,gzip", want: []string{Zstd3, Gzip6}},
		{in: "ZSTD-3,zstd", want: []string{Zstd3}},
		{in: "all", want: DefaultCodecs},
		{in: "zstd-9", err: `unknown codec "zstd-9": choose from gzip-1, gzip-6, zstd-1, zstd-3, lz4 (or all)`},
		{in: "xpress", err: "unknown codec"},
		{in: " , ", err: "no codec named"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseCodecs(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseCodecs(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("ParseCodecs(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}
