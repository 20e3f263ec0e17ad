// Package wire is wirebench's measuring instrument: an HTTP/1.1 streaming client whose socket
// reads carry kernel receive timestamps, an HTTP/1.1 framing tracker and an SSE decoder that give
// every streamed event the time its last byte reached the machine.
//
// Why: a client that stamps an event when it processes it reports its own queueing delay (socket
// wakeup, netpoller, scheduler, GC) as server latency. Measured on a 2-vCPU machine, user-space
// stamps lagged the server's send by p99 9.3 ms at 1,000 streams; kernel stamps by p99 22 µs.
//
// How (see docs/design/wire-timestamps.md for the measurements behind each choice):
//
//   - Targets go through the package's own HTTP/1.1 path (plain.go): Send writes the
//     request with one non-blocking writev on the caller's goroutine, so a pacer's request leaves
//     at its planned time without waiting for another goroutine (net/http writes from a
//     per-connection goroutine: a thread handoff, milliseconds on a busy CPU); a reader goroutine
//     per connection, parked on the socket, reads the response; a watchdog enforces timeouts and
//     cancellation and keeps MinIdle spare connections dialed. https targets take the same path
//     with crypto/tls over the same socket (tls.go): each event gets the times of the socket read
//     that completed its TLS record, and the receive-stream offset just past that record.
//   - The dialer wraps each TCP connection in a stampedConn, enables SO_TIMESTAMPING
//     (SOF_TIMESTAMPING_RX_SOFTWARE|SOF_TIMESTAMPING_SOFTWARE) before the request is written, and
//     reads with recvmsg through SyscallConn().Read, so the netpoller, deadlines and Close keep
//     working. A read allocates nothing.
//   - Each read records its kernel time, the user time right after the syscall, its size, whether
//     it filled the buffer, and (from the framing tracker: chunked with extensions and trailers,
//     Content-Length, close-delimited, 1xx, keep-alive) the response-body offset it ends at.
//   - The decoder counts body bytes; each event gets the read that delivered its last byte (by
//     offset, never "the latest read": a reader may read ahead). JSON is parsed after that, by a
//     zero-allocation scanner (parsePayload).
//   - Quality per event: exact (the read ended with this event, under TLS with its record: the
//     kernel time is that of the segment carrying its last byte), upper_bound (a later segment
//     was coalesced into the same read, so the kernel time is that segment's), user (no kernel
//     time).
//   - Every response is checked: the read that delivered the last event must end exactly at the
//     decoder's body offset, else RawRequest.OffsetMismatch is set.
//
// Linux turns software receive timestamps on host-wide from a deferred work item when the first
// socket asks for them; NewClient holds them on with a socket of its own (and waits until a
// loopback datagram comes back stamped), so the first request of a run is stamped too.
package wire
