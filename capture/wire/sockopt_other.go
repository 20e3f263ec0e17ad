//go:build !linux

package wire

import "syscall"

// capRetransmit is Linux only: elsewhere the kernel's retransmission timeouts stand.
func capRetransmit(syscall.RawConn) {}

// synCountControl is Linux only: elsewhere the connect timeout alone bounds a dial.
func synCountControl(int) func(network, address string, c syscall.RawConn) error { return nil }
