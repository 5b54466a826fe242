// Package dbtest holds the process-level tests of `narrows db` against real
// servers: a PostgreSQL primary with a streaming standby and a MariaDB
// source with a replica, started once for the package by
// internal/testbed/dbserver. Tests only.
package dbtest
