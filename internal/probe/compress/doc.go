// Package compress is the compression probe: how many bytes one core
// compresses and decompresses per second with each codec a database backup
// uses, and how small the data gets — the figures `narrows plan backup`
// needs to say whether compression or the disk or the network sets the
// pace (result.Compression, turned into result.CodecRate by CodecRates).
//
// It owns three things and touches nothing else: reading a sample from a
// tree of files (ReadSample: read only, never through a symbolic link,
// O_NOATIME on Linux where allowed, at most MaxSampleBytes), generating a
// synthetic one (Synthetic), and measuring a sample it is given (Measure:
// CPU only, so the agent can run it on bytes a client sent). It never
// writes a file and never prints.
//
// # Codecs and levels
//
// The names are those the plan uses. Defaults verified in the tools' source:
//
//   - gzip-6: pgBackRest's compress-type default is gz and its gz level 6
//     (src/build/config/config.yaml, src/common/compress/helper.c);
//     pg_basebackup's gzip default is Z_DEFAULT_COMPRESSION, zlib's 6
//     (src/common/compression.c).
//   - gzip-1: the fast end, what people choose when gzip-6 is the limit.
//   - zstd-3: pgBackRest's zst level 3 (helper.c) and pg_basebackup's zstd
//     default ZSTD_CLEVEL_DEFAULT, 3 (compression.c). pg_basebackup does
//     not default to 1.
//   - zstd-1: the fast end.
//   - lz4: pgBackRest's lz4 level 1 and pg_basebackup's lz4 level 0 are
//     both LZ4's fast mode (below LZ4HC's levels), LZ4_compress_fast with
//     acceleration 1.
//
// SQL Server's backup compression is Microsoft's own (MS XPRESS, and
// Intel QAT offload since 2022): no implementation is available here, so
// a SQL Server plan takes its compression figures from --assume or from
// a measured backup.
//
// The implementations are Go's, not the C libraries the tools link, and
// each was chosen for being nearest to the C one on database pages:
//
//   - gzip compresses with Go's compress/gzip, which is zlib's deflate
//     (the same lazy matching and level parameters, so the same ratio),
//     and decompresses with klauspost/compress's inflate, the faster of
//     Go's two. klauspost's own deflate levels are faster encoders of its
//     own: its level 6 ran 3.9 times as fast as zlib's level 6 on the
//     synthetic corpus, which would make a gzip-6 backup look four times
//     as fast as pgBackRest or pg_basebackup run it.
//   - zstd is klauspost/compress's, SpeedFastest for level 1 and
//     SpeedDefault for level 3 (its nearest to zstd's), without the
//     checksum pgBackRest and pg_basebackup do not write, and with
//     WithEncoderConcurrency(1): one thread per stream, as
//     ZSTD_compressStream.
//   - lz4 is pierrec/lz4's CCompatFast, which writes the bytes
//     LZ4_compress_fast writes, in frames of 64 KiB blocks with a content
//     checksum (pgBackRest's LZ4F preferences), one thread.
//
// Against the C libraries on the same 64 MiB of synthetic pages, on a
// 2-core VM shared with other work, the best whole pass of each (as
// `zstd -b` and `lz4 -b` report; zlib 1.2.13 through Python's zlib per CPU
// second; zstd 1.5.4, lz4 1.9.4; the median of three interleaved runs),
// this package's speed over the C one, and the ratios:
//
//	          compress  decompress  ratio (this / C)
//	gzip-1      1.17      0.66      2.67 / 2.69
//	gzip-6      0.73      0.60      2.97 / 2.97
//	zstd-1      0.59      0.93      2.98 / 2.78
//	zstd-3      0.89      1.46      2.97 / 3.03
//	lz4         0.57      0.61      2.10 / 2.11
//
// So the rates are mostly conservative: a C backup tool compresses up to
// about 1.8 times as fast (lz4, zstd-1; klauspost's zstd level 1 also
// compresses more, nearer zstd's level 3). Against the command lines
// timed per CPU second, their file handling included, the same codecs
// came out at 0.84 to 1.27 (lz4's decompression 1.5). Runs on one
// machine vary by about a fifth when it is busy: the figures serve the
// plan (which stage limits a backup, and roughly how long it takes), they
// are not a benchmark of the libraries. On a PostgreSQL data directory
// (pgbench -s 10 and an orders table) the ratios were within 2% of the C
// tools' for every codec.
//
// # How it measures
//
// As a backup process compresses: one stream per file, fed a buffer at a
// time (1 MiB, pgBackRest's buffer-size default), on one core. So a codec
// streams the whole sample through one compressor in 1 MiB writes, pass
// after pass, for Config.Duration (the first pass always whole: it gives
// the ratio and the stream to decompress), then reads the stream back in
// 1 MiB reads for as long. A stream rather than one call per chunk keeps
// the codec's window across buffers, as a backup's does, so the ratio is a
// backup's and not that of independent 1 MiB blocks.
//
// The rate per core is uncompressed bytes over the CPU time of the thread
// that ran the codec (Linux: CLOCK_THREAD_CPUTIME_ID; Windows:
// GetThreadTimes), not over wall time: on a machine busy with other work
// the thread waits for a core, its CPU time does not grow meanwhile, and
// the figure stays what the codec costs. Wall time and the share of it the
// thread ran (cpu_percent_of_core) are kept beside it. Where a platform
// cannot give thread CPU time the rate is over wall time, and the result
// says so. Decompression is checked byte for byte once, untimed, and every
// timed pass must give back the sample's length.
//
// With Config.Threads above 1 it also runs that many compressors (then
// decompressors) at once, each on its own thread: the machine's total,
// and how it scales against the per-core figure.
//
// With the defaults (64 MiB, one second per codec and direction) a run
// takes about 15 s on a 2-core VM, most of it gzip-6's first pass (zlib's
// level 6 compresses about 20 MB/s per core).
//
// # The sample
//
// Database pages compress far better than random bytes and far worse than
// text, so what is compressed decides the ratio. With a path, ReadSample
// takes 256 KiB chunks (32 pages) at evenly spaced positions over all the
// bytes of all the regular files under it, so every large segment file
// contributes in proportion to its size; a tree smaller than the budget
// is read whole.
//
// Without one, Synthetic generates PostgreSQL pages from a seed (the same
// seed, the same bytes, on any machine): 8 KiB pages with their page
// headers, line pointers, tuple headers (transactions of a few rows, 8% of
// rows since updated), alignment padding and free space left zero, filled
// with the rows of an order-taking schema in runs of 32 pages per
// relation, of which:
//
//   - 15/32 orders (int8 id, int4 customer, timestamptz, int2, a status
//     from a few words, numeric(12,2) amount, a note of a few words from a
//     small vocabulary or NULL, bool), heap pages 85–100% full;
//   - 5/32 customers (names, e-mail addresses, cities, a timestamp, a
//     balance, a flag), 90–100% full;
//   - 5/32 the orders primary key (B-tree leaves, consecutive keys, 90%);
//   - 5/32 an index on orders(customer_id), deduplicated posting lists of
//     a dozen heap TIDs each, 50–100% full;
//   - 2/32 documents: rows holding already-compressed bytes (attachments).
//
// On 64 MiB of it the C tools give zstd -3 3.03×, gzip -6 2.97× (zlib),
// lz4 2.11× (zstd -1 2.78×, gzip -1 2.69×). Rows of the same schema and
// distributions, generated in SQL and loaded into PostgreSQL 15, give
// 2.97× (orders) and 3.24× (customers) with zstd -3, against 3.18× and
// 3.24× for the corpus's pages of them; the primary key 6.60× (the
// corpus: 6.61×); the customer_id index, built by CREATE INDEX at 90%
// fill, 2.05× (the corpus's, 50–100% full as inserts leave it: 2.73×).
// For scale, a fresh `pgbench -i -s 10` data directory gives 18.9×: its
// filler columns are blanks and its balances zero, so pgbench says little
// about a real database's ratio. A sample of the real data directory says
// most, when narrows can read it.
package compress
