package sysinfo

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/narrows/narrows/internal/result"
)

// irqLine is one numbered interrupt of /proc/interrupts: its actions'
// names and its count on each CPU, by the CPU's number.
type irqLine struct {
	name   string
	counts map[int]uint64
}

// readInterrupts reads /proc/interrupts' numbered lines (a device's;
// the architecture's own, LOC and the like, are not a NIC's).
func readInterrupts() (map[int]irqLine, error) {
	b, err := os.ReadFile("/proc/interrupts")
	if err != nil {
		return nil, err
	}
	return parseInterrupts(b)
}

func parseInterrupts(b []byte) (map[int]irqLine, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	if !sc.Scan() {
		return nil, fmt.Errorf("/proc/interrupts is empty")
	}
	var cpus []int
	for _, h := range strings.Fields(sc.Text()) {
		id, err := strconv.Atoi(strings.TrimPrefix(h, "CPU"))
		if !strings.HasPrefix(h, "CPU") || err != nil || id < 0 {
			return nil, fmt.Errorf("/proc/interrupts: a column named %.20q", h)
		}
		cpus = append(cpus, id)
	}
	if len(cpus) == 0 {
		return nil, fmt.Errorf("/proc/interrupts names no CPU")
	}
	out := map[int]irqLine{}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		irq, err := strconv.Atoi(strings.TrimSuffix(f[0], ":"))
		if err != nil || !strings.HasSuffix(f[0], ":") {
			continue // LOC:, NMI: and the other per-CPU counters
		}
		if len(f) < 1+len(cpus) {
			return nil, fmt.Errorf("/proc/interrupts: IRQ %d has %d counts for %d CPUs", irq, len(f)-1, len(cpus))
		}
		l := irqLine{counts: make(map[int]uint64, len(cpus))}
		for i, id := range cpus {
			n, err := strconv.ParseUint(f[1+i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("/proc/interrupts: IRQ %d: %w", irq, err)
			}
			l.counts[id] = n
		}
		// After the counts: the chip, the hardware IRQ and its trigger,
		// then the actions' names.
		if rest := f[1+len(cpus):]; len(rest) > 2 {
			l.name = strings.Join(rest[2:], " ")
		}
		out[irq] = l
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("/proc/interrupts: %w", err)
	}
	return out, nil
}

// nicIRQs are the interrupt numbers of the network interface dev: its
// PCI device's MSI vectors, or its one legacy interrupt (for a virtio
// NIC, its virtio PCI device's vectors); none for a virtual one (veth, a
// bridge, a TUN device, loopback).
func nicIRQs(dev string) []int {
	if dev == "" || strings.ContainsAny(dev, "/\x00") || dev == "." || dev == ".." {
		return nil
	}
	device, err := filepath.EvalSymlinks(filepath.Join("/sys/class/net", dev, "device"))
	if err != nil {
		return nil // no device: a virtual interface
	}
	if strings.HasPrefix(filepath.Base(device), "virtio") {
		device = filepath.Dir(device) // the virtio PCI device holds the vectors
	}
	var out []int
	if entries, err := os.ReadDir(filepath.Join(device, "msi_irqs")); err == nil {
		for _, e := range entries {
			if n, err := strconv.Atoi(e.Name()); err == nil {
				out = append(out, n)
			}
		}
	}
	if len(out) == 0 {
		if b, err := os.ReadFile(filepath.Join(device, "irq")); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 {
				out = append(out, n)
			}
		}
	}
	return out
}

// nicInterrupts reads dev's interrupts on every CPU now, and returns what
// reads them again and gives those that fired on core since, most first,
// as a second's worth over seconds: nil where dev has none (a virtual
// interface) or they cannot be read.
func nicInterrupts(dev string) func(core int, seconds float64) []result.CoreIRQ {
	irqs := nicIRQs(dev)
	if len(irqs) == 0 {
		return func(int, float64) []result.CoreIRQ { return nil }
	}
	before, err := readInterrupts()
	return func(core int, seconds float64) []result.CoreIRQ {
		after, err2 := readInterrupts()
		if err != nil || err2 != nil || seconds <= 0 {
			return nil
		}
		var out []result.CoreIRQ
		for _, irq := range irqs {
			a, ok1 := after[irq]
			b, ok2 := before[irq]
			if !ok1 || !ok2 || a.counts[core] <= b.counts[core] {
				continue
			}
			out = append(out, result.CoreIRQ{IRQ: irq, Name: cut(a.name, 64), PerSecond: float64(a.counts[core]-b.counts[core]) / seconds})
		}
		slices.SortFunc(out, func(x, y result.CoreIRQ) int { return cmp.Compare(y.PerSecond, x.PerSecond) })
		return out[:min(len(out), result.MaxCoreIRQs)]
	}
}

// cut is s in at most n bytes, cut at a character's start.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
