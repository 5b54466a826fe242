// Package systemd is narrows' agent under systemd: the unit
// (narrows.service), its system user (narrows.sysusers) and the drop-in
// that lets clients try settings (allow-try.conf). It holds no code; its
// tests check the files with systemd's own tools and run the unit's
// command line as written, as its user, and connect to it.
package systemd
