// Package output holds the renderers of a run, one folder per format
// (table, jsonl, prom). Each is a pure function of result records: it measures
// nothing and advises nothing.
package output
