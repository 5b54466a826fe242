// Package metric is the one place that knows units: it parses the sizes,
// durations and rates people type, formats figures for people, and keeps
// the latency histogram every probe records into. It measures nothing and
// touches no socket or file.
package metric
