// Package colocate tells whether a benchmark's target shares this host with the client, and
// what is known of the process serving it: a server on the client's machine gets only the CPU
// the client leaves, so capture chooses gentler defaults there and aggregate judges whether the
// client disturbed it.
//
// The rule: a target is co-located when an address its host name resolves to is a loopback
// address (127.0.0.0/8, ::1) or an address of one of this host's network interfaces (as
// net.InterfaceAddrs lists them, e.g. 10.0.0.5 on eth0). A name that does not resolve is not
// co-located. Containers sharing a network namespace share these addresses, so a server in a
// sibling container of the same pod counts as co-located; a server on another machine behind a
// local proxy does not (the proxy is what shares the CPUs).
package colocate

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wirebench/wirebench/internal/cpuset"
)

// Place is where a target is, as far as this host can tell.
type Place struct {
	Local bool           // co-located: Addr is this host's
	Addr  netip.AddrPort // the address that decided (the first resolved one when not local)
	Rule  string         // why, in words: "127.0.0.1 is a loopback address", "10.0.0.5 is eth0's", ...
}

// Locate resolves a target base URL (http or https) and applies the package's rule.
func Locate(ctx context.Context, target string) (Place, error) {
	u, err := url.Parse(target)
	if err != nil {
		return Place{}, fmt.Errorf("target %q: %w", target, err)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return Place{}, fmt.Errorf("target %q: port %q", target, port)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", u.Hostname())
	if err != nil {
		return Place{}, fmt.Errorf("resolve %s: %w", u.Hostname(), err)
	}
	return judge(addrs, uint16(p), interfaceAddrs()), nil
}

// interfaceAddrs maps this host's interface addresses to their interface names.
func interfaceAddrs() map[netip.Addr]string {
	out := map[netip.Addr]string{}
	ifs, err := net.Interfaces()
	if err != nil {
		return out
	}
	for _, ifc := range ifs {
		as, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range as {
			if pfx, err := netip.ParsePrefix(a.String()); err == nil {
				out[pfx.Addr().Unmap()] = ifc.Name
			}
		}
	}
	return out
}

// judge applies the rule to the resolved addresses, given this host's interface addresses.
func judge(addrs []netip.Addr, port uint16, local map[netip.Addr]string) Place {
	for _, a := range addrs {
		a = a.Unmap()
		ap := netip.AddrPortFrom(a, port)
		if a.IsLoopback() {
			return Place{Local: true, Addr: ap, Rule: a.String() + " is a loopback address"}
		}
		if name, ok := local[a]; ok {
			return Place{Local: true, Addr: ap, Rule: fmt.Sprintf("%s is an address of this host's interface %s", a, name)}
		}
	}
	p := Place{Rule: "no address of the target is loopback or one of this host's interfaces'"}
	if len(addrs) > 0 {
		p.Addr = netip.AddrPortFrom(addrs[0].Unmap(), port)
	}
	return p
}

// Process is a process on this host listening on the target's port.
type Process struct {
	PID  int
	Comm string // its command name (/proc/PID/comm)
	CPUs []int  // its CPU affinity (Cpus_allowed_list)
	Nice int    // its nice value (of its main thread)
}

// Listener finds the process listening on the TCP address a (on a itself or on the wildcard
// address, IPv4 or IPv6) through /proc/net/tcp{,6} and the processes' open files. It returns
// nil when none can be found: the server runs as another user whose files this process may not
// read, in another network namespace, or not at all.
func Listener(a netip.AddrPort) *Process {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if b, err := os.ReadFile(f); err == nil {
			for _, ino := range listening(string(b), a) {
				inodes[ino] = true
			}
		}
	}
	if len(inodes) == 0 {
		return nil
	}
	pid := ownerOf(inodes)
	if pid <= 0 {
		return nil
	}
	return describe(pid)
}

// listening returns the socket inodes of the listening sockets (state 0A) of a /proc/net/tcp
// table that accept connections to a: bound to a's port on a's address or the wildcard.
func listening(table string, a netip.AddrPort) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(table))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != "0A" {
			continue
		}
		addr, port, ok := parseHexAddr(f[1])
		if !ok || port != a.Port() {
			continue
		}
		if addr.IsUnspecified() || addr.Unmap() == a.Addr().Unmap() {
			out = append(out, f[9])
		}
	}
	return out
}

// parseHexAddr parses /proc/net/tcp's "0100007F:4705": the address as the kernel stores it (32-bit
// words in host byte order, little-endian here) and the port in hex.
func parseHexAddr(s string) (netip.Addr, uint16, bool) {
	h, p, ok := strings.Cut(s, ":")
	b, err := hex.DecodeString(h)
	port, perr := strconv.ParseUint(p, 16, 16)
	if !ok || err != nil || perr != nil || (len(b) != 4 && len(b) != 16) {
		return netip.Addr{}, 0, false
	}
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	addr, _ := netip.AddrFromSlice(b)
	return addr, uint16(port), true
}

// ownerOf returns the first process holding one of the socket inodes, or 0.
func ownerOf(inodes map[string]bool) int {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	self := os.Getpid()
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		fds, err := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name()))
			if ino, ok := strings.CutPrefix(link, "socket:["); ok && err == nil && inodes[strings.TrimSuffix(ino, "]")] {
				return pid
			}
		}
	}
	return 0
}

// describe reads what is known of process pid.
func describe(pid int) *Process {
	p := &Process{PID: pid}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
		p.Comm = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				p.CPUs, _ = cpuset.ParseList(strings.TrimSpace(v))
			}
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		p.Nice = statNice(string(b))
	}
	return p
}

// statNice reads the nice value, field 19 of /proc/PID/stat (after the command in parentheses,
// which may hold spaces).
func statNice(stat string) int {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(stat[i+1:]) // field 3 (state) is f[0]
	if len(f) < 17 {
		return 0
	}
	n, _ := strconv.Atoi(f[16])
	return n
}
