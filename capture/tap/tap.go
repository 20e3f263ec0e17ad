// Package tap records the TCP segments of a benchmark's connections as the kernel sees them: an
// AF_PACKET socket with a classic BPF filter on the target's address and port and a TPACKET_V3
// memory-mapped ring, headers only. Each segment gives (direction, local port, sequence number,
// payload length, flags, kernel timestamp), so an event's arrival can be read off the segment
// that carried its last byte however late the client read it, and a request's departure off the
// segment that carried its last byte.
//
// Which copy counts: a loopback packet passes the tap twice, once leaving (PACKET_OUTGOING) and
// once arriving (PACKET_HOST). The tap keeps, for segments the client sends (to the target's
// port), the outgoing copy: when they left this host; for segments the client receives (from the
// target's port), the incoming copy: when they arrived, stamped where SO_TIMESTAMPING stamps
// them. On a real NIC only those copies exist, so the rule is the same everywhere. The filter
// does this in the kernel.
package tap

import "errors"

// Direction of a segment, as the client sees it.
const (
	Tx = 0 // client to server: the outgoing copy
	Rx = 1 // server to client: the incoming copy
)

// TCP flags kept in Segment.Flags.
const (
	FlagFIN = 0x01
	FlagSYN = 0x02
	FlagRST = 0x04
	FlagACK = 0x10
)

// Segment is one TCP segment of the target's connections.
type Segment struct {
	TsNs      int64  // kernel timestamp, CLOCK_REALTIME ns
	Seq       uint32 // sequence number of the first payload byte (of the SYN for a SYN)
	Ack       uint32
	Len       uint32 // payload bytes
	LocalPort uint16 // the client's port
	Dir       uint8  // Tx or Rx
	Flags     uint8
}

// ErrUnsupported: the tap cannot run here (not Linux, no CAP_NET_RAW, an IPv6 target).
var ErrUnsupported = errors.New("packet tap unsupported")

// Stats are the ring's counters since the tap opened.
type Stats struct {
	Packets, Drops uint64
}
