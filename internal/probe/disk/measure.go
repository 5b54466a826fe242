package disk

import (
	"context"

	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/result"
)

// Hooks let a command see a local run's Target between Measure's steps;
// each may be nil.
type Hooks struct {
	// Opened: the test file is open, nothing written yet (the disk
	// command's notes and banner, before a layout that may take long).
	Opened func(*Target)
	// LaidOut: the file is laid out and the patterns start now (where a
	// report's start is taken).
	LaidOut func(*Target)
}

// Measure is the whole of a local disk run, the one sequence every
// command that measures a disk here goes through: check the Config, open
// the test file (Open), lay it out, run every pattern, and close it,
// removing the file; a failure to remove it is the run's error when
// nothing else went wrong. On error or interruption the result holds what
// was measured until then; it is nil when nothing was (the place, the
// file or its layout failed, or the run was stopped before it began).
func Measure(ctx context.Context, cfg Config, hooks Hooks, emit probe.Emit) (res *result.Disk, err error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	t, err := Open(cfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := t.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if hooks.Opened != nil {
		hooks.Opened(t)
	}
	if err := t.Layout(ctx); err != nil {
		return nil, err
	}
	if hooks.LaidOut != nil {
		hooks.LaidOut(t)
	}
	return t.Run(ctx, emit)
}
