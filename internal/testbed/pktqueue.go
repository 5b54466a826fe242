package testbed

import "time"

// heldPacket is a packet waiting in a delay line for its departure time.
type heldPacket struct {
	dep time.Duration // departure, as an offset from the line's start
	seq uint64        // arrival order: ties leave in the order they came
	buf []byte        // the packet (len is its size)
}

// pktQueue is a min-heap of held packets by (departure, arrival order).
// Without reordering departures never decrease, so a push stops after one
// comparison; with reordering it is an ordinary O(log n) heap.
type pktQueue struct{ h []heldPacket }

func (q *pktQueue) Len() int { return len(q.h) }

func (q *pktQueue) less(i, j int) bool {
	a, b := &q.h[i], &q.h[j]
	return a.dep < b.dep || (a.dep == b.dep && a.seq < b.seq)
}

// Head returns the next packet to leave; the queue must not be empty.
func (q *pktQueue) Head() *heldPacket { return &q.h[0] }

func (q *pktQueue) Push(p heldPacket) {
	q.h = append(q.h, p)
	for i := len(q.h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !q.less(i, parent) {
			break
		}
		q.h[i], q.h[parent] = q.h[parent], q.h[i]
		i = parent
	}
}

// Pop removes and returns the head; the queue must not be empty.
func (q *pktQueue) Pop() heldPacket {
	top := q.h[0]
	last := len(q.h) - 1
	q.h[0] = q.h[last]
	q.h[last] = heldPacket{} // drop the reference to the buffer
	q.h = q.h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(q.h) && q.less(l, m) {
			m = l
		}
		if r < len(q.h) && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
	return top
}
