//go:build !linux

package tap

import (
	"fmt"
	"net/netip"
	"runtime"
)

// Tap is a packet tap; on this platform Open always fails.
type Tap struct{}

// Open fails with ErrUnsupported outside Linux.
func Open(target netip.AddrPort) (*Tap, error) {
	return nil, fmt.Errorf("%w: AF_PACKET needs Linux, this is %s", ErrUnsupported, runtime.GOOS)
}

func (t *Tap) Read(buf []Segment, timeoutMs int) ([]Segment, error) { return buf, nil }
func (t *Tap) Stats() (Stats, error)                                { return Stats{}, nil }
func (t *Tap) Close() error                                         { return nil }
func (t *Tap) BindInterface(name string) error                      { return nil }
