package wire

import "time"

// DefaultConnectTimeout bounds a dial (TCP connect and, on https, the TLS handshake) when
// ClientConfig.ConnectTimeout is zero: long enough for three SYN retransmissions (sent 1 s,
// 3 s and 7 s after the first SYN), so a server whose accept queue overflows is still reached.
const DefaultConnectTimeout = 10 * time.Second

// maxRTO caps the retransmission timeout of every connection once it is connected. A server
// whose accept queue is full drops the client's last handshake ACK: the client's connect
// succeeds, the server's does not, and the request the client then writes is dropped too until
// the server has room. The kernel retransmits it after 0.2 s, 0.6 s, 1.4 s, 3 s, ..., doubling
// up to 120 s, so a request can wait a minute after the server has room: the wait measures
// the client's backoff, not the server. Capped at 1 s (the kernel's lowest), the request goes
// in within a second of the server's having room. A retransmission timeout reaches 1 s only
// after repeated losses or on a path with round trips near a second; there the cap makes the
// client retransmit sooner, never later.
const maxRTO = time.Second

// giveUp is how long the kernel retransmits unacknowledged data before it gives a connection up
// (ETIMEDOUT) after retries retransmissions (tcp_retries2) with its default timeouts, from
// 200 ms doubling to 120 s: for 15, 0.2 s × (2^10 - 1) + 6 × 120 s = 924.6 s.
func giveUp(retries int) time.Duration {
	const base, top, doublings = 200 * time.Millisecond, 120 * time.Second, 9 // 0.2 s × 2^9 < 120 s
	if retries <= doublings {
		return time.Duration(2<<retries-1) * base
	}
	return time.Duration(2<<doublings-1)*base + time.Duration(retries-doublings)*top
}

// synRetries is the TCP_SYNCNT that fits d: the kernel retransmits an unanswered SYN 1 s, 3 s,
// 7 s, ... (2^k - 1 s) after the first, so the k-th retransmission is useful only when
// 2^k - 1 s < d. At least 1, at most 30 (the kernel allows 127).
func synRetries(d time.Duration) int {
	n := 1
	for n < 30 && time.Duration(1<<(n+1)-1)*time.Second < d {
		n++
	}
	return n
}
