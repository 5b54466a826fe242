package disk

import "math/rand/v2"

// offsets generates where each I/O of one thread goes and whether it
// reads. Random offsets are uniform over whole blocks of the file;
// sequential ones walk the thread's own slice of the file and wrap. The
// generator is seeded, so a run can be repeated exactly.
type offsets struct {
	rng      *rand.Rand
	random   bool
	readPct  int
	block    int64
	base     int64 // first byte of this thread's region
	blocks   int64 // blocks in the region
	position int64 // sequential: next block index
}

// newOffsets returns the generator for thread of pattern number pattern,
// over a file of size bytes. size must hold at least one block per thread.
func newOffsets(p Pattern, size int64, seed uint64, pattern, thread int) *offsets {
	o := &offsets{
		rng:     rand.New(rand.NewPCG(seed, uint64(pattern)<<32|uint64(thread))),
		random:  p.Random(),
		readPct: p.readPercent(),
		block:   p.Block,
	}
	if o.random {
		o.blocks = size / p.Block
		return o
	}
	region := size / int64(p.Threads) / p.Block * p.Block
	o.base = int64(thread) * region
	o.blocks = region / p.Block
	return o
}

// next returns the offset of the next I/O and whether it is a read.
func (o *offsets) next() (off int64, read bool) {
	switch o.readPct {
	case 100:
		read = true
	case 0:
	default:
		read = o.rng.IntN(100) < o.readPct
	}
	if o.random {
		return o.base + o.rng.Int64N(o.blocks)*o.block, read
	}
	off = o.base + o.position*o.block
	o.position++
	if o.position == o.blocks {
		o.position = 0
	}
	return off, read
}
