package compress

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/narrows/narrows/internal/metric"
	"github.com/narrows/narrows/internal/probe"
	"github.com/narrows/narrows/internal/result"
)

// The synthetic corpus is PostgreSQL's on-disk format filled with the rows
// of a small order-taking schema (doc.go says what and why). Everything is
// drawn from one seeded generator, so a seed gives the same bytes on every
// machine and in every version of narrows that keeps corpusVersion.

// corpusVersion changes whenever the bytes for a seed change.
const corpusVersion = 1

// DefaultSeed is the corpus's seed when none is given.
const DefaultSeed = 1

const (
	blockBytes   = 8192
	headerBytes  = 24 // PageHeaderData
	itemIDBytes  = 4  // ItemIdData
	tupleHdr     = 23 // HeapTupleHeaderData before the null bitmap
	btSpecial    = 16 // BTPageOpaqueData
	runPages     = 32 // pages of one relation in a row, as a segment file holds them
	rowsPerBlock = 80 // about how many orders a heap page holds, for index TIDs
	// PostgreSQL's epoch is 2000-01-01; the rows start in 2024.
	epoch2024 = int64(757382400) * 1e6
)

// relation kinds, and the share of pages each gets (in runs of runPages).
type relKind int

const (
	relOrders relKind = iota
	relCustomers
	relOrdersPkey
	relOrdersCustomer
	relDocuments
)

// mix is the corpus's share of pages per relation, in 32nds: heap tables
// most, their indexes a third, and a little already-compressed payload
// (bytea attachments, as most business databases hold some).
var mix = []relKind{
	relOrders, relOrders, relOrders, relOrders, relOrders, relOrders, relOrders, relOrders,
	relOrders, relOrders, relOrders, relOrders, relOrders, relOrders, relOrders,
	relCustomers, relCustomers, relCustomers, relCustomers, relCustomers,
	relOrdersPkey, relOrdersPkey, relOrdersPkey, relOrdersPkey, relOrdersPkey,
	relOrdersCustomer, relOrdersCustomer, relOrdersCustomer, relOrdersCustomer, relOrdersCustomer,
	relDocuments, relDocuments,
}

// Synthetic returns size bytes (whole pages, at least one) of the
// synthetic corpus for a seed. The same seed and size give the same bytes.
func Synthetic(size int64, seed uint64) (Sample, error) {
	if size <= 0 {
		size = DefaultSampleBytes
	}
	if size > MaxSampleBytes {
		return Sample{}, probe.UserErrorf(nil, "sample size %s is more than the most narrows holds (%s): ask for less",
			metric.FormatBytes(size), metric.FormatBytes(MaxSampleBytes))
	}
	pages := max(1, (size+blockBytes-1)/blockBytes)
	data := make([]byte, pages*blockBytes)
	g := newGenerator(seed)
	for p := int64(0); p < pages; p++ {
		kind := mix[(p/runPages)%int64(len(mix))]
		g.page(kind, data[p*blockBytes:(p+1)*blockBytes])
	}
	return Sample{Data: data, About: result.CompressionSample{Kind: result.SampleSynthetic, Bytes: int64(len(data)), Seed: seed,
		What: fmt.Sprintf("synthetic PostgreSQL pages, %s (corpus %d, seed %d)", metric.FormatBytes(int64(len(data))), corpusVersion, seed)}}, nil
}

// generator is the state that runs across pages: keys, transaction ids,
// the clock and the log position move forward as in a live database.
type generator struct {
	r        *rand.Rand
	xid      uint32 // the inserting transaction
	xidLeft  int    // rows left in it
	lsn      uint64
	ts       int64 // microseconds since 2000-01-01
	orderID  int64
	custID   int32
	pkeyNext int64 // next key of the orders primary key's leaf pages
	custKey  int32 // next key of the customer index's leaf pages
	docID    int32
	blocks   [5]uint32 // next block number per relation
	tuple    []byte
}

func newGenerator(seed uint64) *generator {
	return &generator{r: rand.New(rand.NewPCG(seed, seed^0x6e6172726f7773)), xid: 7_000_000, lsn: 0x1_6000_0000,
		ts: epoch2024, orderID: 1, custID: 1, pkeyNext: 1, custKey: 1, docID: 1, tuple: make([]byte, 0, blockBytes)}
}

func (g *generator) page(kind relKind, b []byte) {
	blk := g.blocks[kind]
	g.blocks[kind]++
	switch kind {
	case relOrders:
		g.heapPage(b, blk, 0.85+0.15*g.r.Float64(), g.orderRow)
	case relCustomers:
		g.heapPage(b, blk, 0.90+0.10*g.r.Float64(), g.customerRow)
	case relDocuments:
		g.heapPage(b, blk, 0.80+0.20*g.r.Float64(), g.documentRow)
	case relOrdersPkey:
		g.pkeyPage(b, blk)
	case relOrdersCustomer:
		g.customerIndexPage(b, blk)
	}
}

// pageBuilder lays out a slotted page: line pointers grow from the header,
// items from the end (or the special space) down; the hole stays zero.
type pageBuilder struct {
	b            []byte
	lower, upper int
	n            int
}

func newPage(b []byte, special int) *pageBuilder {
	clear(b)
	return &pageBuilder{b: b, lower: headerBytes, upper: special}
}

func maxAlign(n int) int { return (n + 7) &^ 7 }

// fits says whether an item of n bytes fits with the page kept under the
// fill share.
func (p *pageBuilder) fits(n int, fill float64) bool {
	used := p.lower + itemIDBytes + (len(p.b) - p.upper) + maxAlign(n)
	return used <= int(fill*float64(len(p.b))) && p.upper-maxAlign(n) >= p.lower+itemIDBytes
}

// add places an item and its line pointer (LP_NORMAL); it returns the
// item's offset number (from 1).
func (p *pageBuilder) add(item []byte) uint16 {
	p.upper -= maxAlign(len(item))
	copy(p.b[p.upper:], item)
	lp := uint32(p.upper) | 1<<15 | uint32(len(item))<<17
	binary.LittleEndian.PutUint32(p.b[p.lower:], lp)
	p.lower += itemIDBytes
	p.n++
	return uint16(p.n)
}

// finish writes PageHeaderData.
func (p *pageBuilder) finish(g *generator, flags uint16, special int) {
	b := p.b
	g.lsn += uint64(g.r.IntN(1 << 20))
	binary.LittleEndian.PutUint32(b[0:], uint32(g.lsn>>32)) // pd_lsn: xlogid, xrecoff
	binary.LittleEndian.PutUint32(b[4:], uint32(g.lsn))
	binary.LittleEndian.PutUint16(b[8:], uint16(g.r.Uint32())) // pd_checksum (data checksums on)
	binary.LittleEndian.PutUint16(b[10:], flags)
	binary.LittleEndian.PutUint16(b[12:], uint16(p.lower))
	binary.LittleEndian.PutUint16(b[14:], uint16(p.upper))
	binary.LittleEndian.PutUint16(b[16:], uint16(special))
	binary.LittleEndian.PutUint16(b[18:], blockBytes|4) // pd_pagesize_version: layout 4
	binary.LittleEndian.PutUint32(b[20:], 0)            // pd_prune_xid
}

// row appends one row's data (after the tuple header) to t and says which
// attributes are null (bit i set: attribute i+1 is null) and how many
// attributes the table has.
type rowFunc func(t []byte) ([]byte, uint8, int)

const (
	heapHasNull       = 0x0001
	heapHasVarWidth   = 0x0002
	heapXminCommitted = 0x0100
	heapXmaxInvalid   = 0x0800
	heapXmaxCommitted = 0x0400
	heapUpdated       = 0x2000
	pdAllVisible      = 0x0004
)

// heapPage fills a heap page with rows up to the fill share: tuple headers
// carry the inserting transaction (rows come in transactions of a few),
// and a few rows were since updated or deleted (xmax set), as in a table
// that lives.
func (g *generator) heapPage(b []byte, blk uint32, fill float64, row rowFunc) {
	p := newPage(b, blockBytes)
	allVisible := true
	for {
		t := g.tuple[:tupleHdr+1]
		clear(t)
		// The header is 24 bytes: 23, and the null bitmap (one byte for
		// up to 8 attributes) or the padding that aligns the data.
		t, nulls, natts := row(t)
		const hoff = 24
		if !p.fits(len(t), fill) {
			break
		}
		if g.xidLeft == 0 {
			g.xid++
			g.xidLeft = 1 + g.r.IntN(12)
		}
		g.xidLeft--
		infomask := uint16(heapXminCommitted | heapHasVarWidth)
		var xmax uint32
		if g.r.IntN(100) < 8 {
			xmax = g.xid + 1 + uint32(g.r.IntN(50_000))
			infomask |= heapXmaxCommitted | heapUpdated
			allVisible = false
		} else {
			infomask |= heapXmaxInvalid
		}
		if nulls != 0 {
			infomask |= heapHasNull
			t[tupleHdr] = ^nulls & (1<<natts - 1) // the bitmap marks attributes present
		}
		binary.LittleEndian.PutUint32(t[0:], g.xid)
		binary.LittleEndian.PutUint32(t[4:], xmax)
		binary.LittleEndian.PutUint32(t[8:], 0) // t_cid
		off := uint16(p.n + 1)
		binary.LittleEndian.PutUint16(t[12:], uint16(blk>>16)) // t_ctid: itself
		binary.LittleEndian.PutUint16(t[14:], uint16(blk))
		binary.LittleEndian.PutUint16(t[16:], off)
		binary.LittleEndian.PutUint16(t[18:], uint16(natts))
		binary.LittleEndian.PutUint16(t[20:], infomask)
		t[22] = uint8(hoff)
		p.add(t)
		g.tuple = t[:0]
	}
	var flags uint16
	if allVisible {
		flags = pdAllVisible
	}
	p.finish(g, flags, blockBytes)
}

// align pads t with zeros to a multiple of n from the row's start (the
// data begins at the 24-byte aligned header).
func align(t []byte, n int) []byte {
	for (len(t)-24)%n != 0 {
		t = append(t, 0)
	}
	return t
}

func putInt64(t []byte, v int64) []byte {
	return binary.LittleEndian.AppendUint64(align(t, 8), uint64(v))
}

func putInt32(t []byte, v int32) []byte {
	return binary.LittleEndian.AppendUint32(align(t, 4), uint32(v))
}

func putInt16(t []byte, v int16) []byte {
	return binary.LittleEndian.AppendUint16(align(t, 2), uint16(v))
}

// putText appends a short varlena (a one-byte header, no alignment): how
// PostgreSQL stores text and numeric values under 127 bytes.
func putText(t []byte, s string) []byte {
	t = append(t, byte((len(s)+1)<<1|1))
	return append(t, s...)
}

// putNumeric appends a numeric of cents in PostgreSQL's short format:
// base-10000 digits with a 2-byte header holding scale 2 and the weight.
func putNumeric(t []byte, cents int64) []byte {
	var digits [6]int16
	// cents = units.fraction; digits of the integer part in base 10000,
	// then the fraction as one digit (50 cents = 5000).
	units, frac := cents/100, int16(cents%100)*100
	n := 0
	for u := units; u > 0; u /= 10000 {
		n++
	}
	weight := n - 1
	for i, u := n-1, units; i >= 0; i-- {
		digits[i] = int16(u % 10000)
		u /= 10000
	}
	nd := n
	if frac != 0 {
		digits[nd] = frac
		nd++
	}
	if n == 0 { // under one: the weight is that of the fraction
		weight = -1
	}
	// Trailing zero digits are not stored.
	for nd > 0 && digits[nd-1] == 0 {
		nd--
	}
	size := 1 + 2 + 2*nd
	t = append(t, byte(size<<1|1))
	hdr := uint16(0x8000) | uint16(2)<<7 | uint16(weight)&0x3F // NUMERIC_SHORT, dscale 2, weight
	if weight < 0 {
		hdr |= 0x40 // the weight's sign
	}
	t = binary.LittleEndian.AppendUint16(t, hdr)
	for i := range nd {
		t = binary.LittleEndian.AppendUint16(t, uint16(digits[i]))
	}
	return t
}

// tick moves the clock on by up to a minute and a half, to the microsecond.
func (g *generator) tick() int64 {
	g.ts += int64(g.r.ExpFloat64() * 30e6)
	return g.ts
}

// cents draws a price: most are small, a few large (log-uniform from 1.00
// to 5,000.00, whole currency units a third of the time).
func (g *generator) cents() int64 {
	c := int64(math.Exp(g.r.Float64()*math.Log(5000)) * 100)
	if g.r.IntN(3) == 0 {
		c -= c % 100
	}
	return max(c, 100)
}

// orderRow: orders(id int8, customer_id int4, created_at timestamptz,
// quantity int2, status text, amount numeric(12,2), note text null,
// shipped bool).
func (g *generator) orderRow(t []byte) ([]byte, uint8, int) {
	var nulls uint8
	t = t[:24]
	t = putInt64(t, g.orderID)
	g.orderID++
	t = putInt32(t, 1+int32(g.r.IntN(int(max(g.custID, 1000)))))
	t = putInt64(t, g.tick())
	t = putInt16(t, int16(1+g.r.IntN(3)*g.r.IntN(4)))
	st := pick(g.r, statuses)
	t = putText(t, st)
	t = putNumeric(t, g.cents())
	if g.r.IntN(10) < 6 {
		nulls |= 1 << 6
	} else {
		t = putText(t, g.words(1+g.r.IntN(6), noteWords))
	}
	shipped := byte(0)
	if st == "delivered" || st == "shipped" {
		shipped = 1
	}
	t = append(t, shipped)
	return t, nulls, 8
}

// customerRow: customers(id int4, name text, email text, city text,
// created_at timestamptz, balance numeric(12,2), active bool).
func (g *generator) customerRow(t []byte) ([]byte, uint8, int) {
	t = t[:24]
	t = putInt32(t, g.custID)
	g.custID++
	first, last := pick(g.r, firstNames), pick(g.r, lastNames)
	t = putText(t, first+" "+last)
	t = putText(t, fmt.Sprintf("%s.%s%d@%s", strings.ToLower(first), strings.ToLower(last), g.r.IntN(100), pick(g.r, domains)))
	t = putText(t, pick(g.r, cities))
	t = putInt64(t, g.tick())
	t = putNumeric(t, g.cents()*int64(g.r.IntN(4)))
	t = append(t, byte(min(1, g.r.IntN(10))))
	return t, 0, 7
}

// documentRow: documents(id int4, created_at timestamptz, body bytea)
// with bodies already compressed (a PDF, an image): random bytes stored
// inline with a 4-byte varlena header.
func (g *generator) documentRow(t []byte) ([]byte, uint8, int) {
	t = t[:24]
	t = putInt32(t, g.docID)
	g.docID++
	t = putInt64(t, g.tick())
	n := (200 + g.r.IntN(1800)) &^ 7
	t = align(t, 4)
	t = binary.LittleEndian.AppendUint32(t, uint32(n+4)<<2)
	for range n / 8 {
		t = binary.LittleEndian.AppendUint64(t, g.r.Uint64())
	}
	return t, 0, 3
}

// indexTuple appends an IndexTupleData (a heap TID and the size) and the
// key, padded to 8 bytes.
func indexTuple(t []byte, blk uint32, off uint16, key []byte) []byte {
	size := maxAlign(8 + len(key))
	t = binary.LittleEndian.AppendUint16(t, uint16(blk>>16))
	t = binary.LittleEndian.AppendUint16(t, uint16(blk))
	t = binary.LittleEndian.AppendUint16(t, off)
	t = binary.LittleEndian.AppendUint16(t, uint16(size))
	t = append(t, key...)
	for len(t)%8 != 0 {
		t = append(t, 0)
	}
	return t
}

// btreeFinish writes the leaf's special space: siblings and BTP_LEAF.
func (g *generator) btreeFinish(p *pageBuilder, blk uint32) {
	s := p.b[blockBytes-btSpecial:]
	binary.LittleEndian.PutUint32(s[0:], max(blk, 1)-1) // btpo_prev
	binary.LittleEndian.PutUint32(s[4:], blk+1)         // btpo_next
	binary.LittleEndian.PutUint32(s[8:], 0)             // btpo_level: leaf
	binary.LittleEndian.PutUint16(s[12:], 1)            // btpo_flags: BTP_LEAF
	p.finish(g, 0, blockBytes-btSpecial)
}

// pkeyPage is a leaf of orders' primary key: consecutive ids, each
// pointing at its row, the page filled to 90% as sequential inserts leave
// it; the first item is the high key.
func (g *generator) pkeyPage(b []byte, blk uint32) {
	p := newPage(b, blockBytes-btSpecial)
	var key [8]byte
	per := (blockBytes*9/10 - headerBytes - btSpecial) / (16 + itemIDBytes)
	binary.LittleEndian.PutUint64(key[:], uint64(g.pkeyNext+int64(per)-1))
	p.add(indexTuple(g.tuple[:0], 0, 0, key[:])) // high key
	for range per - 1 {
		k := g.pkeyNext
		g.pkeyNext++
		binary.LittleEndian.PutUint64(key[:], uint64(k))
		p.add(indexTuple(g.tuple[:0], uint32(k/rowsPerBlock), uint16(k%rowsPerBlock+1), key[:]))
	}
	g.btreeFinish(p, blk)
}

// customerIndexPage is a leaf of the index on orders(customer_id): each
// customer's orders (about a dozen) in one deduplicated tuple, the key and
// a posting list of heap TIDs in order (PostgreSQL 13 and later), pointing
// all over the table; filled 50–100% as random inserts leave a B-tree.
func (g *generator) customerIndexPage(b []byte, blk uint32) {
	p := newPage(b, blockBytes-btSpecial)
	fill := 0.5 + 0.5*g.r.Float64()
	rows := max(uint32(g.orderID/rowsPerBlock), 1000)
	var tids [24]uint64
	for {
		n := 1 + g.r.IntN(len(tids)-1)
		for i := range n {
			tids[i] = uint64(g.r.IntN(int(rows)))<<16 | uint64(1+g.r.IntN(rowsPerBlock))
		}
		slices.Sort(tids[:n])
		t := postingTuple(g.tuple[:0], uint32(g.custKey), tids[:n])
		if !p.fits(len(t), fill) {
			break
		}
		p.add(t)
		g.tuple = t[:0]
		g.custKey++
	}
	g.btreeFinish(p, blk)
}

// postingTuple appends an int4 key with its heap TIDs (block<<16 |
// offset): a plain index tuple for one, else a posting list tuple, whose
// t_tid holds the list's offset and length (BT_IS_POSTING) and whose
// t_info has INDEX_ALT_TID_MASK.
func postingTuple(t []byte, key uint32, tids []uint64) []byte {
	var k [4]byte
	binary.LittleEndian.PutUint32(k[:], key)
	if len(tids) == 1 {
		return indexTuple(t, uint32(tids[0]>>16), uint16(tids[0]), k[:])
	}
	const postingOff = 16 // after the 8-byte header and the key, aligned
	size := maxAlign(postingOff + 6*len(tids))
	t = binary.LittleEndian.AppendUint16(t, 0)
	t = binary.LittleEndian.AppendUint16(t, postingOff)
	t = binary.LittleEndian.AppendUint16(t, uint16(len(tids))|0x2000) // BT_IS_POSTING
	t = binary.LittleEndian.AppendUint16(t, uint16(size)|0x2000)      // INDEX_ALT_TID_MASK
	t = append(t, k[:]...)
	t = append(t, 0, 0, 0, 0)
	for _, tid := range tids {
		blk := uint32(tid >> 16)
		t = binary.LittleEndian.AppendUint16(t, uint16(blk>>16))
		t = binary.LittleEndian.AppendUint16(t, uint16(blk))
		t = binary.LittleEndian.AppendUint16(t, uint16(tid))
	}
	for len(t)%8 != 0 {
		t = append(t, 0)
	}
	return t
}

func (g *generator) words(n int, from []string) string {
	b := make([]byte, 0, 64)
	for i := range n {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, pick(g.r, from)...)
	}
	return string(b)
}

func pick(r *rand.Rand, from []string) string { return from[r.IntN(len(from))] }

// The vocabularies are small on purpose: a business table's text columns
// repeat (statuses, cities, names), which is what compressors feed on.
var (
	statuses   = []string{"delivered", "delivered", "delivered", "delivered", "delivered", "delivered", "shipped", "shipped", "pending", "cancelled", "returned"}
	firstNames = []string{"Anna", "Maria", "Olga", "Elena", "Irina", "Julia", "Sofia", "Laura", "Emma", "Clara", "Sara", "Nina", "Eva", "Lena", "Marta", "Alice",
		"Ivan", "Peter", "Paul", "John", "James", "David", "Michael", "Alex", "Sergey", "Dmitry", "Andrew", "Thomas", "Martin", "Lucas", "Hugo", "Leon",
		"Oscar", "Victor", "Felix", "Max", "Daniel", "Simon", "Adam", "Mark"}
	lastNames = []string{"Smith", "Johnson", "Brown", "Taylor", "Miller", "Wilson", "Moore", "Anderson", "Thomas", "Jackson", "White", "Harris", "Martin",
		"Thompson", "Garcia", "Martinez", "Robinson", "Clark", "Lewis", "Lee", "Walker", "Hall", "Allen", "Young", "King", "Wright", "Scott", "Green",
		"Baker", "Adams", "Nelson", "Hill", "Campbell", "Mitchell", "Roberts", "Carter", "Phillips", "Evans", "Turner", "Torres", "Parker", "Collins",
		"Edwards", "Stewart", "Morris", "Murphy", "Cook", "Rogers", "Morgan", "Peterson", "Cooper", "Reed", "Bailey", "Bell", "Kelly", "Howard", "Ward",
		"Cox", "Diaz", "Richardson", "Wood", "Watson", "Brooks", "Bennett", "Gray", "James", "Reyes", "Cruz", "Hughes", "Price", "Myers", "Long",
		"Foster", "Sanders", "Ross", "Morales", "Powell", "Sullivan", "Russell", "Ortiz", "Jenkins", "Gutierrez", "Perry", "Butler", "Barnes",
		"Fisher", "Henderson", "Coleman", "Simmons", "Patterson", "Jordan", "Reynolds", "Hamilton", "Graham", "Kim", "Gonzales", "Alexander",
		"Ramos", "Wallace", "Griffin", "West", "Cole", "Hayes", "Chavez", "Gibson", "Bryant", "Ellis", "Stevens", "Murray", "Ford", "Marshall",
		"Owens", "McDonald", "Harrison", "Ruiz", "Kennedy", "Wells", "Alvarez", "Woods", "Mendoza", "Castillo"}
	cities = []string{"London", "Paris", "Berlin", "Madrid", "Rome", "Vienna", "Prague", "Warsaw", "Lisbon", "Dublin", "Amsterdam", "Brussels",
		"Copenhagen", "Stockholm", "Oslo", "Helsinki", "Athens", "Budapest", "Zurich", "Geneva", "Munich", "Hamburg", "Milan", "Barcelona",
		"Lyon", "Porto", "Krakow", "Riga", "Vilnius", "Tallinn", "New York", "Chicago", "Boston", "Toronto", "Montreal", "Seattle", "Denver",
		"Austin", "Atlanta", "Miami"}
	domains   = []string{"example.com", "mail.example.org", "corp.example.net", "example.co.uk", "shop.example.de", "example.fr"}
	noteWords = []string{"please", "deliver", "before", "after", "noon", "morning", "evening", "call", "on", "arrival", "leave", "at", "the", "door",
		"gate", "reception", "office", "back", "front", "entrance", "fragile", "handle", "with", "care", "gift", "wrap", "no", "invoice", "in", "box",
		"urgent", "express", "standard", "pickup", "store", "customer", "requested", "partial", "shipment", "replace", "damaged", "item", "refund",
		"issued", "exchange", "size", "colour", "red", "blue", "black", "white", "green", "large", "small", "medium", "extra", "pack", "of", "two",
		"three", "six", "twelve", "order", "number", "ref", "see", "email", "phone", "confirmed", "pending", "payment", "received", "via", "card",
		"transfer", "cash", "discount", "code", "applied", "loyalty", "points", "used", "second", "attempt", "address", "changed", "floor",
		"apartment", "building", "ring", "bell", "twice", "do", "not", "bend", "keep", "dry", "signature", "required", "weekend", "monday",
		"friday", "holiday", "closed", "until", "next", "week", "thanks", "regards"}
)
