package tap

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"
)

// BenchmarkTap measures the tap's cost per packet on loopback: "tap-read-ns/pkt" is the
// recorder's own work (draining the ring and parsing headers), "cpu-ns/write" the process's CPU
// time (user + system, which on loopback includes the kernel's delivery of each packet, and with
// the tap open the filter and the copy into the ring) per small write: compare the two
// sub-benchmarks for the kernel's share.
func BenchmarkTap(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) { benchTap(b, on) })
	}
}

func benchTap(b *testing.B, on bool) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	var tp *Tap
	if on {
		tp, err = Open(netip.MustParseAddrPort(ln.Addr().String()))
		if errors.Is(err, ErrUnsupported) {
			b.Skipf("no packet tap here: %v", err)
		}
		if err != nil {
			b.Fatal(err)
		}
		defer tp.Close()
	}
	go func() {
		c, err := ln.Accept()
		if err == nil {
			io.Copy(io.Discard, c)
		}
	}()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetNoDelay(true)
	msg := make([]byte, 200)
	var segs []Segment
	var readNs time.Duration
	var packets int
	var before syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	for b.Loop() {
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		if tp != nil {
			t0 := time.Now()
			segs, _ = tp.Read(segs[:0], 0)
			readNs += time.Since(t0)
			packets += len(segs)
		}
	}
	var after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/write")
	if packets > 0 {
		b.ReportMetric(float64(readNs.Nanoseconds())/float64(packets), "tap-read-ns/pkt")
	}
}
