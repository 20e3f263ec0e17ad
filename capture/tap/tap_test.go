package tap

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"
)

// TestTapSeesLoopbackConversation opens the tap on a loopback listener, exchanges known bytes
// and checks the segments: the handshake, each direction's payload once (the right copy of each
// loopback packet), sequence numbers that add up, and timestamps in order and around the
// exchange.
func TestTapSeesLoopbackConversation(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	target := netip.MustParseAddrPort(ln.Addr().String())
	tp, err := Open(target)
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("no packet tap here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	other, err := net.Listen("tcp4", "127.0.0.1:0") // traffic the filter must drop
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	go func() {
		for _, l := range []net.Listener{ln, other} {
			c, err := l.Accept()
			if err != nil {
				return
			}
			b := make([]byte, 5)
			if _, err := io.ReadFull(c, b); err == nil {
				c.Write([]byte("answer one"))
				time.Sleep(5 * time.Millisecond)
				c.Write([]byte("two"))
			}
			c.Close()
		}
	}()
	before := time.Now().UnixNano()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	local := uint16(c.LocalAddr().(*net.TCPAddr).Port)
	c.Write([]byte("hello"))
	got, _ := io.ReadAll(c)
	c.Close()
	if string(got) != "answer onetwo" {
		t.Fatalf("read %q", got)
	}
	if c2, err := net.Dial("tcp4", other.Addr().String()); err == nil {
		c2.Write([]byte("xxxxx"))
		io.ReadAll(c2)
		c2.Close()
	}
	after := time.Now().UnixNano()
	var segs []Segment
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		if segs, err = tp.Read(segs, 50); err != nil {
			t.Fatal(err)
		}
		if rx(segs, local) >= 13 {
			break
		}
	}
	var synTx, synRx *Segment
	for i := range segs {
		s := &segs[i]
		if s.LocalPort != local {
			t.Errorf("segment of another connection kept: %+v", *s)
		}
		if s.TsNs < before || s.TsNs > after+int64(time.Second) {
			t.Errorf("segment time %d outside [%d, %d]", s.TsNs, before, after)
		}
		if s.Len == 0 && s.Flags&(FlagSYN|FlagFIN|FlagRST) == 0 {
			t.Errorf("pure ACK kept: %+v", *s)
		}
		if s.Flags&FlagSYN != 0 && s.Dir == Tx {
			synTx = s
		}
		if s.Flags&FlagSYN != 0 && s.Dir == Rx {
			synRx = s
		}
	}
	if synTx == nil || synRx == nil {
		t.Fatalf("handshake not seen: %+v", segs)
	}
	if tx(segs, local) != 5 || rx(segs, local) != 13 {
		t.Errorf("payload bytes: %d sent, %d received; want 5, 13 (each loopback packet counted once)", tx(segs, local), rx(segs, local))
	}
	for _, s := range segs {
		switch {
		case s.Dir == Tx && s.Len > 0 && s.Seq != synTx.Seq+1:
			t.Errorf("request at seq %d; want the client's ISN + 1 = %d", s.Seq, synTx.Seq+1)
		case s.Dir == Rx && s.Len == 3 && s.Seq != synRx.Seq+1+10:
			t.Errorf("second answer at seq %d; want the server's ISN + 11 = %d", s.Seq, synRx.Seq+11)
		}
	}
	st, err := tp.Stats()
	if err != nil || st.Packets != uint64(len(segs)) || st.Drops != 0 {
		t.Errorf("stats %+v, %v; want %d packets, no drops", st, err, len(segs))
	}
}

func rx(segs []Segment, port uint16) (n uint32) { return bytesOf(segs, port, Rx) }
func tx(segs []Segment, port uint16) (n uint32) { return bytesOf(segs, port, Tx) }

func bytesOf(segs []Segment, port uint16, dir uint8) (n uint32) {
	for _, s := range segs {
		if s.LocalPort == port && s.Dir == dir {
			n += s.Len
		}
	}
	return n
}

// TestTapBoundToLoopback binds the tap to the loopback interface (what capture does for a
// co-located target) and still sees the conversation; an interface that does not exist is an
// error.
func TestTapBoundToLoopback(t *testing.T) {
	ln, tp := listenerAndTap(t)
	if err := tp.BindInterface("no-such-interface0"); err == nil {
		t.Errorf("BindInterface(no-such-interface0): no error")
	}
	if err := tp.BindInterface("lo"); err != nil {
		t.Fatalf("BindInterface(lo): %v", err)
	}
	loopbackConversation(t, ln, tp)
}

// TestTapLoopbackOnly records a conversation with the tap bound to loopback and blind to
// outgoing copies (what capture does for a co-located target): each direction is still seen
// once, from its incoming copy, and the client's send is told from the answer by its address.
func TestTapLoopbackOnly(t *testing.T) {
	ln, tp := listenerAndTap(t)
	if err := tp.BindLoopback("lo"); err != nil {
		t.Fatalf("BindLoopback(lo): %v", err)
	}
	loopbackConversation(t, ln, tp)
}

// listenerAndTap opens a loopback listener and a tap on it, both closed with the test; it skips
// where the tap cannot run.
func listenerAndTap(t *testing.T) (net.Listener, *Tap) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	tp, err := Open(netip.MustParseAddrPort(ln.Addr().String()))
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("no packet tap here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Close() })
	return ln, tp
}

// loopbackConversation sends "hello" to ln and reads "answer": the tap must see 5 bytes sent
// and 6 received on the client's port, each once, the send before the answer.
func loopbackConversation(t *testing.T, ln net.Listener, tp *Tap) {
	t.Helper()
	go func() {
		if c, err := ln.Accept(); err == nil {
			b := make([]byte, 5)
			io.ReadFull(c, b)
			c.Write([]byte("answer"))
			c.Close()
		}
	}()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	local := uint16(c.LocalAddr().(*net.TCPAddr).Port)
	c.Write([]byte("hello"))
	io.ReadAll(c)
	c.Close()
	var segs []Segment
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && rx(segs, local) < 6; {
		if segs, err = tp.Read(segs, 50); err != nil {
			t.Fatal(err)
		}
	}
	if n, m := tx(segs, local), rx(segs, local); n != 5 || m != 6 {
		t.Errorf("%d payload bytes sent and %d received on port %d; want 5 and 6, each once", n, m, local)
	}
	var sent, answered int64
	for _, s := range segs {
		if s.LocalPort == local && s.Len > 0 && s.Dir == Tx {
			sent = s.TsNs
		}
		if s.LocalPort == local && s.Len > 0 && s.Dir == Rx && answered == 0 {
			answered = s.TsNs
		}
	}
	if sent == 0 || answered < sent {
		t.Errorf("send at %d, answer at %d: want the send first", sent, answered)
	}
}
