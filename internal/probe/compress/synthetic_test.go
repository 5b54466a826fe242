package compress

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func TestSyntheticDeterministic(t *testing.T) {
	a, err := Synthetic(2<<20, 11)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Synthetic(2<<20, 11)
	c, _ := Synthetic(2<<20, 12)
	if !bytes.Equal(a.Data, b.Data) {
		t.Error("the same seed gave different bytes")
	}
	if bytes.Equal(a.Data, c.Data) {
		t.Error("different seeds gave the same bytes")
	}
	// A shorter corpus is the start of a longer one: the size only says
	// where to stop.
	short, _ := Synthetic(1<<20, 11)
	if !bytes.Equal(short.Data, a.Data[:len(short.Data)]) {
		t.Error("a 1 MiB corpus is not the first 1 MiB of a 2 MiB one")
	}
	if a.About.Kind != "synthetic" || a.About.Seed != 11 || a.About.Bytes != 2<<20 || a.About.What == "" {
		t.Errorf("the sample does not say it is synthetic: %+v", a.About)
	}
}

func TestSyntheticSizes(t *testing.T) {
	for _, tc := range []struct {
		ask, want int64
	}{{1, blockBytes}, {blockBytes, blockBytes}, {blockBytes + 1, 2 * blockBytes}, {0, DefaultSampleBytes}} {
		s, err := Synthetic(tc.ask, 1)
		if err != nil || int64(len(s.Data)) != tc.want {
			t.Errorf("Synthetic(%d) = %d bytes, %v; want %d", tc.ask, len(s.Data), err, tc.want)
		}
	}
	if _, err := Synthetic(MaxSampleBytes+1, 1); err == nil {
		t.Error("a corpus over MaxSampleBytes was generated")
	}
}

// Every page is a well-formed slotted page: PostgreSQL's page size and
// layout version, the line pointers between the header and pd_lower, each
// pointing at an item inside the page above pd_upper.
func TestSyntheticPagesAreWellFormed(t *testing.T) {
	s, err := Synthetic(4<<20, 5)
	if err != nil {
		t.Fatal(err)
	}
	for p := 0; p < len(s.Data)/blockBytes; p++ {
		b := s.Data[p*blockBytes : (p+1)*blockBytes]
		lower, upper := int(binary.LittleEndian.Uint16(b[12:])), int(binary.LittleEndian.Uint16(b[14:]))
		special := int(binary.LittleEndian.Uint16(b[16:]))
		if v := binary.LittleEndian.Uint16(b[18:]); v != blockBytes|4 {
			t.Fatalf("page %d: pd_pagesize_version %#x", p, v)
		}
		if lower < headerBytes+itemIDBytes || lower > upper || upper > special || special > blockBytes {
			t.Fatalf("page %d: pd_lower %d, pd_upper %d, pd_special %d", p, lower, upper, special)
		}
		for _, c := range b[lower:upper] {
			if c != 0 {
				t.Fatalf("page %d: the free space between pd_lower and pd_upper is not zero", p)
			}
		}
		for off := headerBytes; off < lower; off += itemIDBytes {
			lp := binary.LittleEndian.Uint32(b[off:])
			itemOff, flags, n := int(lp&0x7fff), lp>>15&3, int(lp>>17)
			if flags != 1 || itemOff < upper || itemOff+n > special || n == 0 {
				t.Fatalf("page %d: line pointer %d: offset %d, length %d, flags %d", p, (off-headerBytes)/itemIDBytes+1, itemOff, n, flags)
			}
		}
	}
}

// The corpus compresses as the package documents (ratios are the same on
// every machine: they depend on the bytes and the codec, not on speed).
func TestSyntheticRatios(t *testing.T) {
	s, err := Synthetic(8<<20, DefaultSeed)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		codec    string
		min, max float64
	}{
		{Zstd3, 2.6, 3.6},
		{Gzip6, 2.5, 3.5},
		{LZ4, 1.8, 2.5},
	} {
		_, stream := roundTrip(t, codecs[tc.codec], s.Data, DefaultChunk)
		ratio := float64(len(s.Data)) / float64(len(stream))
		t.Logf("%s: %.3f×", tc.codec, ratio)
		if ratio < tc.min || ratio > tc.max {
			t.Errorf("%s compresses the corpus %.2f×, want %.1f–%.1f×", tc.codec, ratio, tc.min, tc.max)
		}
	}
}
