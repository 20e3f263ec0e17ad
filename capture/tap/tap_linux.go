package tap

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Ring geometry: a block is handed to the reader when full or after retireMs, so the ring
// holds blockNr × retireMs of traffic at rates that do not fill a block in that time, and 16 MiB
// of packets at rates that do. By arithmetic (about 160 bytes of ring a header-only packet:
// the TPACKET_V3 header, the address and 52 bytes of IPv4 and TCP headers), 64 blocks of
// 256 KiB at 50 ms hold about 2.3 s of the 44,000 packets/s of 2,000 req/s × 16 tokens. 16
// blocks of 1 MiB at 20 ms held 0.32 s and, once in a quiet make test, lost a packet.
const (
	blockSize = 256 << 10
	blockNr   = 64
	frameSize = 2048
	retireMs  = 50
	snapLen   = 128 // IPv4 header (at most 60) + TCP header (at most 60)
)

// Tap is an open packet tap on one target address and port (IPv4).
type Tap struct {
	fd     int
	target netip.AddrPort
	ring   []byte
	block  int // next block to read
	stats  Stats
}

// Open starts recording the TCP segments to and from target. It needs CAP_NET_RAW; without it,
// or for an IPv6 target, the error wraps ErrUnsupported.
func Open(target netip.AddrPort) (*Tap, error) {
	if !target.Addr().Unmap().Is4() {
		return nil, fmt.Errorf("%w: target %s is not IPv4", ErrUnsupported, target)
	}
	prog, err := filter(target, false)
	if err != nil {
		return nil, err
	}
	// ETH_P_ALL: outgoing copies are handed only to taps of every protocol.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		if err == unix.EPERM || err == unix.EACCES {
			return nil, fmt.Errorf("%w: AF_PACKET socket: %v (needs CAP_NET_RAW)", ErrUnsupported, err)
		}
		return nil, fmt.Errorf("tap: AF_PACKET socket: %w", err)
	}
	t := &Tap{fd: fd, target: target}
	if err := t.setup(prog); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return t, nil
}

func (t *Tap) setup(prog []unix.SockFilter) error {
	fp := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.SetsockoptSockFprog(t.fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fp); err != nil {
		return fmt.Errorf("tap: attach filter: %w", err)
	}
	if err := unix.SetsockoptInt(t.fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
		return fmt.Errorf("tap: TPACKET_V3: %w", err)
	}
	req := unix.TpacketReq3{Block_size: blockSize, Block_nr: blockNr, Frame_size: frameSize,
		Frame_nr: blockSize / frameSize * blockNr, Retire_blk_tov: retireMs}
	if err := unix.SetsockoptTpacketReq3(t.fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return fmt.Errorf("tap: ring: %w", err)
	}
	ring, err := unix.Mmap(t.fd, 0, blockSize*blockNr, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_LOCKED)
	if err != nil {
		if ring, err = unix.Mmap(t.fd, 0, blockSize*blockNr, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
			return fmt.Errorf("tap: mmap ring: %w", err)
		}
	}
	t.ring = ring
	return nil
}

// filter is the kernel's half of the tap: IPv4 TCP, not a fragment, a segment of a connection to
// target in the chosen copy, and a SYN, FIN, RST or data (pure ACKs are not needed for the join
// and are half the packets); it keeps snapLen bytes (the headers). Which copy: on any interface,
// an outgoing segment to target (the client's send, as it leaves) or an incoming one from it
// (the answer, as it arrives); on loopback only (BindLoopback, outgoing copies ignored), the
// incoming copy of both, since there every packet arrives on this host in the sender's write.
func filter(target netip.AddrPort, loopback bool) ([]unix.SockFilter, error) {
	ip := binary.BigEndian.Uint32(target.Addr().Unmap().AsSlice())
	port := uint32(target.Port())
	const toTarget, fromTarget, payload, reject, accept = 9, 14, 18, 31, 32
	to := func(from, target int) uint8 { return uint8(target - from - 1) } // skip count
	prog := []bpf.Instruction{
		/* 0 */ bpf.LoadExtension{Num: bpf.ExtProto},
		/* 1 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.ETH_P_IP, SkipFalse: to(1, reject)},
		/* 2 */ bpf.LoadAbsolute{Off: 9, Size: 1}, // IP protocol
		/* 3 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.IPPROTO_TCP, SkipFalse: to(3, reject)},
		/* 4 */ bpf.LoadAbsolute{Off: 6, Size: 2}, // flags and fragment offset
		/* 5 */ bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: 0x1fff, SkipTrue: to(5, reject)},
		/* 6 */ bpf.LoadMemShift{Off: 0}, // X = IP header length
		/* 7 */ bpf.LoadExtension{Num: bpf.ExtType},
		/* 8 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.PACKET_OUTGOING, SkipTrue: to(8, toTarget), SkipFalse: to(8, 13)},
		/* 9 */ bpf.LoadAbsolute{Off: 16, Size: 4}, // destination address
		/* 10 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: ip, SkipFalse: to(10, reject)},
		/* 11 */ bpf.LoadIndirect{Off: 2, Size: 2}, // destination port
		/* 12 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: port, SkipTrue: to(12, payload), SkipFalse: to(12, reject)},
		/* 13 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.PACKET_HOST, SkipTrue: to(13, fromTarget), SkipFalse: to(13, reject)},
		/* 14 */ bpf.LoadAbsolute{Off: 12, Size: 4}, // source address
		/* 15 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: ip, SkipFalse: to(15, reject)},
		/* 16 */ bpf.LoadIndirect{Off: 0, Size: 2}, // source port
		/* 17 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: port, SkipFalse: to(17, reject)},
		// payload: keep SYN, FIN and RST, and segments that carry data; drop pure ACKs.
		/* 18 */ bpf.LoadIndirect{Off: 13, Size: 1}, // TCP flags
		/* 19 */ bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: FlagFIN | FlagSYN | FlagRST, SkipTrue: to(19, accept)},
		/* 20 */ bpf.LoadAbsolute{Off: 2, Size: 2}, // IP total length
		/* 21 */ bpf.StoreScratch{Src: bpf.RegA, N: 0},
		/* 22 */ bpf.LoadIndirect{Off: 12, Size: 1}, // TCP data offset, in 32-bit words, high nibble
		/* 23 */ bpf.ALUOpConstant{Op: bpf.ALUOpShiftRight, Val: 2},
		/* 24 */ bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0x3c}, // TCP header length
		/* 25 */ bpf.StoreScratch{Src: bpf.RegA, N: 1},
		/* 26 */ bpf.LoadScratch{Dst: bpf.RegA, N: 0},
		/* 27 */ bpf.ALUOpX{Op: bpf.ALUOpSub}, // − IP header length
		/* 28 */ bpf.LoadScratch{Dst: bpf.RegX, N: 1},
		/* 29 */ bpf.ALUOpX{Op: bpf.ALUOpSub}, // − TCP header length = payload
		/* 30 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipTrue: to(30, reject), SkipFalse: to(30, accept)},
		/* 31 */ bpf.RetConstant{Val: 0},
		/* 32 */ bpf.RetConstant{Val: snapLen},
	}
	if loopback {
		// Only incoming copies: one to target is the client's send, one from it the answer.
		prog[8] = bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.PACKET_HOST, SkipTrue: to(8, toTarget), SkipFalse: to(8, reject)}
		prog[10] = bpf.JumpIf{Cond: bpf.JumpEqual, Val: ip, SkipFalse: to(10, fromTarget)}
		prog[12] = bpf.JumpIf{Cond: bpf.JumpEqual, Val: port, SkipTrue: to(12, payload), SkipFalse: to(12, fromTarget)}
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("tap: assemble filter: %w", err)
	}
	out := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		out[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return out, nil
}

// BindInterface makes the tap see only the packets of the named interface: the kernel then runs
// its filter on no other interface's traffic. A target on this host is reached over the
// loopback interface, whatever its address.
func (t *Tap) BindInterface(name string) error {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return fmt.Errorf("tap: interface %s: %w", name, err)
	}
	if err := unix.Bind(t.fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifc.Index}); err != nil {
		return fmt.Errorf("tap: bind to %s: %w", name, err)
	}
	return nil
}

// BindLoopback makes the tap see only the loopback interface (as BindInterface) and only the
// incoming copy of each packet: the kernel then skips the tap on every send (no clone, no filter
// in the sender's write, the server's included), which halves what the tap costs a server on the
// same machine. On loopback both directions arrive on this host, in the sender's write, so the
// client's sends are taken as they arrive, a microsecond or so after they leave. Call it before
// the traffic to record starts.
func (t *Tap) BindLoopback(name string) error {
	if err := t.BindInterface(name); err != nil {
		return err
	}
	prog, err := filter(t.target, true)
	if err != nil {
		return err
	}
	fp := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.SetsockoptSockFprog(t.fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fp); err != nil {
		return fmt.Errorf("tap: attach the loopback filter: %w", err)
	}
	if err := unix.SetsockoptInt(t.fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		return fmt.Errorf("tap: ignore outgoing copies: %w", err)
	}
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// blockHdr returns block i's header.
func (t *Tap) blockHdr(i int) *unix.TpacketHdrV1 {
	return (*unix.TpacketHdrV1)(unsafe.Pointer(&t.ring[i*blockSize+int(unsafe.Offsetof(unix.TpacketBlockDesc{}.Hdr))]))
}

// Read appends the segments of every block the kernel has handed over to buf, waiting up to
// timeoutMs for the first one (0: do not wait).
func (t *Tap) Read(buf []Segment, timeoutMs int) ([]Segment, error) {
	for {
		h := t.blockHdr(t.block)
		if atomic.LoadUint32(&h.Block_status)&unix.TP_STATUS_USER == 0 {
			if timeoutMs == 0 {
				return buf, nil
			}
			fds := []unix.PollFd{{Fd: int32(t.fd), Events: unix.POLLIN | unix.POLLERR}}
			if _, err := unix.Poll(fds, timeoutMs); err != nil && err != unix.EINTR {
				return buf, fmt.Errorf("tap: poll: %w", err)
			}
			timeoutMs = 0
			continue
		}
		buf = t.parseBlock(buf, h)
		atomic.StoreUint32(&h.Block_status, unix.TP_STATUS_KERNEL)
		t.block = (t.block + 1) % blockNr
	}
}

// parseBlock appends the block's segments.
func (t *Tap) parseBlock(buf []Segment, h *unix.TpacketHdrV1) []Segment {
	base := t.block * blockSize
	off := int(h.Offset_to_first_pkt)
	for range h.Num_pkts {
		p := (*unix.Tpacket3Hdr)(unsafe.Pointer(&t.ring[base+off]))
		frame := t.ring[base+off:]
		if s, ok := parse(frame[p.Net:int(p.Net)+int(p.Snaplen)], t.target); ok {
			s.TsNs = int64(p.Sec)*1e9 + int64(p.Nsec)
			buf = append(buf, s)
			t.stats.Packets++
		}
		off += int(p.Next_offset)
	}
	return buf
}

// parse reads an IPv4 TCP packet's headers. The filter passed only segments to or from target:
// one to target is the client's (Tx), any other the server's (Rx).
func parse(b []byte, target netip.AddrPort) (Segment, bool) {
	if len(b) < 20 || b[0]>>4 != 4 {
		return Segment{}, false
	}
	ihl := int(b[0]&0xf) * 4
	total := int(binary.BigEndian.Uint16(b[2:4]))
	if len(b) < ihl+20 {
		return Segment{}, false
	}
	tcp := b[ihl:]
	doff := int(tcp[12]>>4) * 4
	s := Segment{
		Seq: binary.BigEndian.Uint32(tcp[4:8]), Ack: binary.BigEndian.Uint32(tcp[8:12]),
		Len: uint32(max(total-ihl-doff, 0)), Flags: tcp[13],
	}
	if netip.AddrFrom4([4]byte(b[16:20])) == target.Addr().Unmap() && binary.BigEndian.Uint16(tcp[2:4]) == target.Port() {
		s.Dir, s.LocalPort = Tx, binary.BigEndian.Uint16(tcp[0:2])
	} else {
		s.Dir, s.LocalPort = Rx, binary.BigEndian.Uint16(tcp[2:4])
	}
	return s, true
}

// Stats returns the packets parsed and the packets the kernel dropped (ring full) so far.
func (t *Tap) Stats() (Stats, error) {
	st, err := unix.GetsockoptTpacketStatsV3(t.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return t.stats, fmt.Errorf("tap: statistics: %w", err)
	}
	t.stats.Drops += uint64(st.Drops) // the kernel resets its counters on each read
	return t.stats, nil
}

// Close stops the tap.
func (t *Tap) Close() error {
	if t.ring != nil {
		_ = unix.Munmap(t.ring)
		t.ring = nil
	}
	return unix.Close(t.fd)
}
