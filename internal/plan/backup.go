package plan

import (
	"slices"
	"strconv"
	"strings"

	"github.com/narrows/narrows/internal/errext"
	"github.com/narrows/narrows/internal/result"
)

// BackupAssumeNames are the figures plan backup takes by hand (@N: for N
// streams; CODEC: lz4, zstd or gzip, with a level: zstd-3).
var BackupAssumeNames = []string{"network", "network@N", "network-out", "network-out@N", "network-in", "network-in@N",
	"disk", "source-disk", "target-disk", "source-read", "source-write", "target-read", "target-write",
	"cores", "source-cores", "target-cores", "CODEC.compress", "CODEC.decompress", "CODEC.ratio", "CODEC.side"}

// DatabaseSizeNote begins the note of a backup plan that says where the
// database's size came from.
const DatabaseSizeNote = "The database's size: "

// KnownCodec says whether c names a codec a backup plan knows: lz4, zstd
// or gzip, with a level from 1 to 22 if given (zstd-3, gzip-6).
func KnownCodec(c string) bool {
	name, level, ok := strings.Cut(c, "-")
	if ok {
		if n, err := strconv.Atoi(level); err != nil || n < 1 || n > 22 {
			return false
		}
	}
	return name == "lz4" || name == "zstd" || name == "gzip"
}

// ApplyBackup sets the stages the assumptions give, over what was
// measured or read. A figure it cannot read is a user error, as the
// command line says it.
func ApplyBackup(s *result.BackupStages, as []Assumption) error {
	assumed := func(bps float64) *result.Rate { return &result.Rate{BytesPerSecond: bps, Source: "assumed"} }
	codecs := map[string]*result.CodecRate{}
	sides := map[string][]string{}
	var order []string
	for _, a := range as {
		if codec, part, ok := strings.Cut(a.Name, "."); ok {
			if name, _, _ := strings.Cut(codec, "-"); !KnownCodec(codec) || (name != "lz4" && name != "zstd" && name != "gzip") {
				return errext.Userf(nil, "--assume %q: unknown codec %q: use lz4, zstd or gzip, with a level for zstd and gzip (zstd-3, gzip-6)", a.Flag, codec)
			}
			c := codecs[codec]
			if c == nil {
				c = &result.CodecRate{Codec: codec, Source: "assumed"}
				codecs[codec], sides[codec] = c, []string{result.SideSource, result.SideTarget}
				order = append(order, codec)
			}
			var err error
			switch part {
			case "compress":
				c.CompressPerCore, err = a.Rate()
			case "decompress":
				c.DecompressPerCore, err = a.Rate()
			case "ratio":
				c.Ratio, err = a.Ratio(1)
			case "side":
				var side string
				side, err = a.Word(result.SideSource, result.SideTarget)
				sides[codec] = []string{side}
			}
			if err != nil {
				return errext.Userf(nil, "%v", err)
			}
			continue
		}
		switch a.Name {
		case "cores", "source-cores", "target-cores":
			n, err := a.Count(1, 4096)
			if err != nil {
				return errext.Userf(nil, "%v", err)
			}
			if a.Name != "target-cores" {
				s.SourceCores = n
			}
			if a.Name != "source-cores" {
				s.TargetCores = n
			}
			continue
		}
		bps, err := a.Rate()
		if err != nil {
			return errext.Userf(nil, "%v", err)
		}
		key, streams := a.Name, 1
		if base, n, ok := strings.Cut(key, "@"); ok {
			if streams, err = strconv.Atoi(n); err != nil || streams < 1 || streams > 128 {
				return errext.Userf(nil, "--assume %q: streams after @ must be 1 to 128, e.g. network@4=450MB/s", a.Flag)
			}
			key = base
		}
		setNet := func(rates *[]result.StreamRate) {
			*rates = slices.DeleteFunc(*rates, func(r result.StreamRate) bool { return r.Streams == streams })
			*rates = append(*rates, result.StreamRate{Streams: streams, Rate: *assumed(bps)})
			slices.SortFunc(*rates, func(x, y result.StreamRate) int { return x.Streams - y.Streams })
		}
		switch key {
		case "network":
			setNet(&s.NetworkOut)
			setNet(&s.NetworkIn)
		case "network-out":
			setNet(&s.NetworkOut)
		case "network-in":
			setNet(&s.NetworkIn)
		case "disk":
			s.SourceRead, s.SourceWrite, s.TargetWrite, s.TargetRead = assumed(bps), assumed(bps), assumed(bps), assumed(bps)
		case "source-disk":
			s.SourceRead, s.SourceWrite = assumed(bps), assumed(bps)
		case "target-disk":
			s.TargetWrite, s.TargetRead = assumed(bps), assumed(bps)
		case "source-read":
			s.SourceRead = assumed(bps)
		case "source-write":
			s.SourceWrite = assumed(bps)
		case "target-read":
			s.TargetRead = assumed(bps)
		case "target-write":
			s.TargetWrite = assumed(bps)
		}
	}
	for _, codec := range order {
		c := codecs[codec]
		if c.CompressPerCore <= 0 || c.DecompressPerCore <= 0 || c.Ratio < 1 {
			return errext.Userf(nil, "--assume: give %[1]s's compress, decompress and ratio, e.g. %[1]s.compress=400MB/s,%[1]s.decompress=1.2GB/s,%[1]s.ratio=4", codec)
		}
		for _, side := range sides[codec] {
			c.Side = side
			s.Codecs = slices.DeleteFunc(s.Codecs, func(o result.CodecRate) bool { return o.Codec == codec && o.Side == side })
			s.Codecs = append(s.Codecs, *c)
		}
	}
	return nil
}

// BackupFrom is the last backup plan in a saved run, its stages' figures
// measured then citing the run ("measured (NAME)"). It is a copy: the
// stages are the caller's to change, the saved Reports stay as they were
// (doctor's are in memory, and written after).
func BackupFrom(s Saved) (*result.BackupPlan, error) {
	r := s.Last(func(r *result.Report) bool { return r.BackupPlan != nil })
	if r == nil {
		return nil, errext.Userf(nil, "--from %s: no backup plan in it: save one with `narrows plan backup --json > FILE`", s.Name)
	}
	p := *r.BackupPlan
	st := &p.Stages
	st.NetworkOut, st.NetworkIn, st.Codecs = slices.Clone(st.NetworkOut), slices.Clone(st.NetworkIn), slices.Clone(st.Codecs)
	for _, set := range [][]result.StreamRate{st.NetworkOut, st.NetworkIn} {
		for i := range set {
			if set[i].Source == "measured" {
				set[i].Source = s.Measured()
			}
		}
	}
	for _, r := range []**result.Rate{&st.SourceRead, &st.SourceWrite, &st.TargetRead, &st.TargetWrite} {
		if *r == nil {
			continue
		}
		c := **r
		if c.Source == "measured" {
			c.Source = s.Measured()
		}
		*r = &c
	}
	return &p, nil
}

// SavedSizes are a saved plan's sizes in its order, and the note that
// said where the database's own came from ("" if none did).
func SavedSizes(p *result.BackupPlan) ([]int64, string) {
	var sizes []int64
	for _, c := range p.Cells {
		if !slices.Contains(sizes, c.SizeBytes) {
			sizes = append(sizes, c.SizeBytes)
		}
	}
	note := ""
	for _, n := range p.Notes {
		if strings.HasPrefix(n, DatabaseSizeNote) {
			note = n
		}
	}
	return sizes, note
}
