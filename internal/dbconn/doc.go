// Package dbconn is what the db probes share about a database connection:
// it reads a DSN (postgres://, mysql://, sqlserver://), redacts its
// password for every output, opens ONE session through the engine's real
// driver (pgx, go-sql-driver/mysql, go-mssqldb) while timing the TCP, TLS
// and login phases, and turns driver errors a person can fix (bad DSN,
// unreachable server, wrong credentials, missing permission) into one
// clear line. It never prints, and it never runs anything but the queries
// its callers hand it.
package dbconn
