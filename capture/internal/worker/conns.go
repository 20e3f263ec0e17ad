package worker

import "golang.org/x/sys/unix"

// reservedFiles are the file descriptors a worker keeps for everything but connections (parts,
// the runtime, pipes).
const reservedFiles = 64

// ConnCap is a worker's connection cap: the smallest of maxConns and maxInflight that is set,
// and what the open-files limit allows.
func ConnCap(maxConns, maxInflight int, nofile int64) int {
	n := int(max(nofile-reservedFiles, 1))
	for _, c := range []int{maxConns, maxInflight} {
		if c > 0 {
			n = min(n, c)
		}
	}
	return n
}

// OpenFilesLimit returns this process's RLIMIT_NOFILE soft limit (Go raises it to the hard limit
// at start), or 1024 when unknown.
func OpenFilesLimit() int64 {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<30 {
		return 1024
	}
	return int64(r.Cur)
}
