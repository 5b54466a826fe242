package sysinfo

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// processorPerformance is SYSTEM_PROCESSOR_PERFORMANCE_INFORMATION, in
// 100 ns ticks: KernelTime holds the idle time, and DPC and interrupt
// time are within it too.
type processorPerformance struct {
	Idle, Kernel, User, DPC, Interrupt int64
	InterruptCount                     uint32
	_                                  uint32
}

// systemProcessorPerformanceInformation is its information class.
const systemProcessorPerformanceInformation = 8

// coreTimes asks NtQuerySystemInformation for every processor's times,
// the figures Task Manager and the % DPC Time counter are made of.
func coreTimes() ([]coreTime, error) {
	n := 64
	for range 4 {
		buf := make([]processorPerformance, n)
		var got uint32
		size := uint32(len(buf)) * uint32(unsafe.Sizeof(buf[0]))
		err := windows.NtQuerySystemInformation(systemProcessorPerformanceInformation, unsafe.Pointer(&buf[0]), size, &got)
		if errors.Is(err, windows.STATUS_INFO_LENGTH_MISMATCH) {
			n *= 4
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("NtQuerySystemInformation(processor performance): %w", err)
		}
		k := int(got / uint32(unsafe.Sizeof(buf[0])))
		if k == 0 || k > len(buf) {
			return nil, fmt.Errorf("NtQuerySystemInformation(processor performance) gave %d bytes", got)
		}
		out := make([]coreTime, k)
		tick := func(v int64) time.Duration { return time.Duration(max(v, 0)) * 100 }
		for i, p := range buf[:k] {
			sys := p.Kernel - p.Idle - p.DPC - p.Interrupt
			out[i] = coreTime{ID: i, User: tick(p.User), System: tick(sys), Idle: tick(p.Idle), IRQ: tick(p.Interrupt), SoftIRQ: tick(p.DPC)}
		}
		return out, nil
	}
	return nil, errors.New("NtQuerySystemInformation(processor performance): more processors than narrows asked room for")
}
