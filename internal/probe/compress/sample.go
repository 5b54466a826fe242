package compress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/result"
)

// Sample is the bytes a run compresses and what they are. A client can
// send Data to the agent, which measures it with Measure and About as
// received.
type Sample struct {
	Data  []byte
	About result.CompressionSample
}

// Sample sizes.
const (
	// DefaultSampleBytes is read from a tree, or generated, when no size
	// is given: 64 MiB is past every CPU cache, so the codecs run from
	// memory as they do on a backup's buffers.
	DefaultSampleBytes = 64 << 20
	// MaxSampleBytes bounds a sample (read, generated or received): the
	// run holds it and one compressed copy in memory.
	MaxSampleBytes = 256 << 20
	// DefaultSampleChunk is the run read from one place in one file: 32
	// pages of 8 KiB, small enough that a 64 MiB sample of a large
	// database touches 256 places, large enough that a compressor sees
	// neighbouring pages of the same table, as it does in a backup.
	DefaultSampleChunk = 256 << 10
	// pageBytes aligns where a chunk starts, so it starts at a page.
	pageBytes = 8 << 10
)

// SampleConfig is where to read a sample and how much.
type SampleConfig struct {
	Path       string // a directory (a data directory) or one file
	Bytes      int64  // DefaultSampleBytes when 0, at most MaxSampleBytes
	ChunkBytes int64  // DefaultSampleChunk when 0
}

// errLink is a path that became a symbolic link between the walk and the
// open: it is skipped like the links the walk saw.
var errLink = errors.New("is a symbolic link")

// ReadSample reads a sample from the files under cfg.Path, read only: at
// most cfg.Bytes, in chunks spread evenly over all the bytes of all the
// regular files (systematic sampling: a file holding a tenth of the bytes
// gives about a tenth of the sample), so the ratio is the tree's, not that
// of its first file. It never follows a symbolic link (the tree's own
// files only: a tablespace linked from pg_tblspc is left out and counted),
// never writes, and skips files it cannot read. The same tree gives the
// same sample.
func ReadSample(ctx context.Context, cfg SampleConfig) (Sample, error) {
	budget, chunk := cfg.Bytes, cfg.ChunkBytes
	if budget <= 0 {
		budget = DefaultSampleBytes
	}
	if budget > MaxSampleBytes {
		return Sample{}, probe.UserErrorf(nil, "sample size %s is more than the most narrows holds (%s): ask for less",
			metric.FormatBytes(budget), metric.FormatBytes(MaxSampleBytes))
	}
	if chunk <= 0 {
		chunk = DefaultSampleChunk
	}
	chunk = max(chunk, pageBytes) &^ (pageBytes - 1)
	chunk = min(chunk, budget)
	if cfg.Path == "" {
		return Sample{}, probe.UserErrorf(nil, "no path to sample: give the database's data directory")
	}
	root, err := rootOf(cfg.Path)
	if err != nil {
		return Sample{}, err
	}
	// The first walk adds up the bytes, the second reads at the positions
	// spread over them: memory stays bounded whatever the number of files.
	var first walkCounts
	if err := walk(ctx, root, &first, func(string, int64) error { return nil }); err != nil {
		return Sample{}, err
	}
	if first.files == 0 {
		if first.dirs > 0 {
			return Sample{}, probe.UserErrorf(first.dirErr, "cannot list %d of the directories under %s (%v): run narrows as a user who can read them (the database's OS user)",
				first.dirs, root, reason(first.dirErr))
		}
		return Sample{}, probe.UserErrorf(nil, "nothing to sample under %s: no regular file holds any data%s", root, linksNote(first.links))
	}

	// n chunks, one every stride bytes of the tree, the first half a stride
	// in; everything when the tree fits in the budget.
	n := budget / chunk
	stride := first.bytes / n
	whole := first.bytes <= budget
	data := make([]byte, 0, min(budget, first.bytes))
	var second walkCounts
	var read, unreadable, linked int
	var firstErr error
	next, cum, picked := stride/2, int64(0), int64(0)
	err = walk(ctx, root, &second, func(path string, size int64) error {
		start := cum
		cum += size
		var offs []int64
		switch {
		case whole:
			for off := int64(0); off < size; off += chunk {
				offs = append(offs, off)
			}
		default:
			for next < cum && picked < n {
				off := (next - start) &^ (pageBytes - 1)
				if k := len(offs); k > 0 && off < offs[k-1]+chunk {
					off = offs[k-1] + chunk // a stride under a chunk and a page: keep chunks apart
				}
				if off < size {
					offs = append(offs, off)
				}
				next += stride
				picked++
			}
		}
		if len(offs) == 0 || int64(len(data)) >= budget {
			return nil
		}
		var err error
		data, err = readChunks(path, data, offs, chunk, budget)
		switch {
		case err == nil:
			read++
		case errors.Is(err, errLink):
			linked++
		default:
			unreadable++
			if firstErr == nil {
				firstErr = err
			}
		}
		return nil
	})
	if err != nil {
		return Sample{}, err
	}
	about := result.CompressionSample{Kind: result.SamplePath, Path: root, FilesFound: first.files, TreeBytes: first.bytes,
		FilesRead: read, FilesUnreadable: unreadable, DirsUnreadable: max(first.dirs, second.dirs),
		SymlinksSkipped: max(first.links, second.links) + linked}
	if len(data) == 0 {
		if about.FilesUnreadable > 0 {
			return Sample{}, probe.UserErrorf(firstErr, "cannot read any of the files sampled under %s (%v): run narrows as a user who can read them (the database's OS user)",
				root, reason(firstErr))
		}
		return Sample{}, probe.UserErrorf(nil, "nothing to sample under %s: the files hold no data%s", root, linksNote(about.SymlinksSkipped))
	}
	about.Bytes = int64(len(data))
	about.What = fmt.Sprintf("%s from %d of %d files (%s) under %s", metric.FormatBytes(about.Bytes), about.FilesRead,
		about.FilesFound, metric.FormatBytes(about.TreeBytes), root)
	if about.FilesUnreadable > 0 {
		about.What += fmt.Sprintf("; %d could not be read", about.FilesUnreadable)
	}
	if about.DirsUnreadable > 0 {
		about.What += fmt.Sprintf("; %d directories could not be listed", about.DirsUnreadable)
	}
	if about.SymlinksSkipped > 0 {
		about.What += fmt.Sprintf("; %d symbolic links not followed", about.SymlinksSkipped)
	}
	return Sample{Data: data, About: about}, nil
}

// rootOf resolves the path the person named (it may itself be a link,
// e.g. a data directory linked to its disk) to the real tree to walk.
func rootOf(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", probe.UserErrorf(err, "cannot sample %s: %v", path, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if w, ok := probe.PathWords(abs, err); ok {
			return "", probe.UserErrorf(err, "cannot sample %s%s", abs, w)
		}
		return "", probe.UserErrorf(err, "cannot sample %s: %v", abs, err)
	}
	return real, nil
}

// walkCounts is what a walk found.
type walkCounts struct {
	files, dirs, links int // regular files with data, directories unreadable, links skipped
	bytes              int64
	dirErr             error // the first directory that could not be listed
}

// walk visits the regular files under root in lexical order, never
// through a link; a directory it cannot list is counted and skipped, and
// so is everything that is not a regular file with data.
func walk(ctx context.Context, root string, c *walkCounts, file func(path string, size int64) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if path == root {
				if w, ok := probe.PathWords(root, err); ok {
					return probe.UserErrorf(err, "cannot sample %s%s", root, w)
				}
				return probe.UserErrorf(err, "cannot sample %s: %v", root, err)
			}
			c.dirs++
			if c.dirErr == nil {
				c.dirErr = err
			}
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch t := d.Type(); {
		case t&(fs.ModeSymlink|fs.ModeIrregular) != 0: // Windows reports junctions as irregular
			c.links++
			return nil
		case d.IsDir(), !t.IsRegular():
			return nil
		}
		info, err := d.Info()
		if err != nil || info.Size() == 0 {
			return nil // gone since listed, or empty
		}
		c.files++
		c.bytes += info.Size()
		return file(path, info.Size())
	})
}

// readChunks appends the chunks of one file at offs to data, never past
// budget bytes in all.
func readChunks(path string, data []byte, offs []int64, chunk, budget int64) ([]byte, error) {
	f, err := openRead(path)
	if err != nil {
		return data, err
	}
	defer f.Close()
	// The handle must be the regular file the walk found: on Windows a
	// link put in its place would have been followed.
	fi, err := f.Stat()
	if err != nil {
		return data, err
	}
	li, err := os.Lstat(path)
	if err != nil {
		return data, err
	}
	if !os.SameFile(fi, li) {
		return data, errLink
	}
	if !fi.Mode().IsRegular() {
		return data, fmt.Errorf("%s: not a regular file", path)
	}
	for _, off := range offs {
		k := min(chunk, budget-int64(len(data)))
		if k <= 0 {
			break
		}
		at := len(data)
		data = slices.Grow(data, int(k))[:at+int(k)] // a file may have grown since the first walk
		got, err := f.ReadAt(data[at:], off)
		data = data[:at+got]
		if err == io.EOF {
			continue // the file shrank since the walk: keep what was there
		}
		if err != nil {
			return data, err
		}
	}
	return data, nil
}

// reason is an error without the path a PathError repeats.
func reason(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
}

func linksNote(links int) string {
	if links == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d symbolic links were not followed)", links)
}
