package itest

import (
	"bufio"
	"io"
	"strings"
	"sync"
)

// Output is what a running command prints, read as it comes.
type Output struct {
	mu   sync.Mutex
	b    strings.Builder
	rows chan struct{}
	done chan struct{}
}

// Follow reads r line by line until it ends; each line that starts with
// prefix is also signalled on Rows (a run's interval rows, say).
func Follow(r io.Reader, prefix string) *Output {
	o := &Output{rows: make(chan struct{}, 1<<16), done: make(chan struct{})}
	go func() {
		defer close(o.done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			o.mu.Lock()
			o.b.WriteString(sc.Text() + "\n")
			o.mu.Unlock()
			if strings.HasPrefix(sc.Text(), prefix) {
				select {
				case o.rows <- struct{}{}:
				default:
				}
			}
		}
	}()
	return o
}

// Rows signals each line that starts with the prefix.
func (o *Output) Rows() <-chan struct{} { return o.rows }

// Wait waits until the reader has ended.
func (o *Output) Wait() { <-o.done }

// String is what was read so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}
