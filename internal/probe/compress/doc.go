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
// The implementations are Go's, not the C libraries the tools link:
// klauspost/compress for gzip and zstd, pierrec/lz4 for lz4. Their ratios
// are close to the C libraries' (lz4's CCompatFast produces the same bytes
// as LZ4_compress_fast; klauspost's zstd levels are its nearest to zstd's,
// SpeedFastest for 1 and SpeedDefault for 3; its deflate levels are its
// own), and their speeds differ by codec: bench/ and the issue notes hold
// the ratio to `zstd -b`, `gzip` and `lz4 -b` on the same bytes. Each is
// set as the tools set theirs: one thread per stream (zstd's
// WithEncoderConcurrency(1), as ZSTD_compressStream; lz4 and the
// decoders single-threaded too), no zstd checksum (pgBackRest and
// pg_basebackup write none), lz4 frames of 64 KiB blocks with a content
// checksum (pgBackRest's LZ4F preferences).
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
// On it, the reference tools give zstd -3 3.0×, gzip -6 3.0×, lz4 2.1×
// (zstd -1 2.8×, gzip -1 2.7×). The same orders and customers rows loaded
// into PostgreSQL 15 give 3.0× and 3.2× with zstd -3 (the corpus: 3.2 and
// 3.2), its primary key 6.6× (the corpus: 6.6). For scale: a fresh
// `pgbench -i -s 10` data directory gives 19× (its filler columns are
// blanks and its balances zero), real databases less — which is why a
// sample of the real data directory, when narrows can read it, is worth
// more than any corpus.
package compress
