package aggregate

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sort"

	"github.com/wirebench/wirebench/schemas"
)

// tapIndex is one run directory's packet-tap segments (raw/segments-PPPP.parquet), arranged
// for the join: by local port, each connection (from its handshake) with its data segments in
// each direction as byte ranges of the stream. Memory: about 24 bytes a data segment.
type tapIndex struct {
	ports map[int32][]*tapConn // connections of each local port, by handshake time
}

// tapConn is one connection seen by the tap.
type tapConn struct {
	synNs        int64 // the client's SYN
	isnTx, isnRx uint32
	hasRx        bool
	tx, rx       []tapSeg
}

// tapSeg is a data segment: stream bytes [start, end) at time ns.
type tapSeg struct{ start, end, ns int64 }

// maxTapScan bounds how many earlier segments a lookup looks back over for retransmissions.
const maxTapScan = 64

var segmentCols = []string{"ts_ns", "dir", "local_port", "seq", "len", "flags"}

type rawSeg struct {
	ns       int64
	tx       bool
	port     int32
	seq      uint32
	len      int32
	syn, ack bool
}

// loadTap reads a run directory's segment parts; nil when it has none.
func loadTap(ctx context.Context, r *runDir, w *warner) (*tapIndex, error) {
	paths := schemas.KindOf[schemas.RawSegment]().Glob(r.dir)
	if len(paths) == 0 {
		return nil, nil
	}
	var segs []rawSeg
	for _, p := range paths {
		n := len(segs)
		_, err := forBatches(ctx, p, schemas.KindOf[schemas.RawSegment](), segmentCols, func(b *batch) error {
			ts, dir, port, seq, ln, fl := b.i64("ts_ns"), b.str("dir"), b.i32("local_port"), b.i64("seq"), b.i32("len"), b.i32("flags")
			if b.err != nil {
				return b.err
			}
			for i := range b.n {
				f := fl.Value(i)
				segs = append(segs, rawSeg{ns: ts.Value(i), tx: dir(i) == schemas.SegmentTx, port: port.Value(i),
					seq: uint32(seq.Value(i)), len: ln.Value(i), syn: f&2 != 0, ack: f&16 != 0})
			}
			return nil
		})
		if errors.Is(err, schemas.ErrCorrupt) {
			segs = segs[:n]
			if werr := w.warn(p, "%s; its segments are left out of the tap join", whyCorrupt(p, err)); werr != nil {
				return nil, werr
			}
			continue
		}
		if err != nil {
			return nil, err
		}
	}
	return buildTap(segs), nil
}

// buildTap splits each port's segments, in time order, into connections at each SYN and turns
// data segments into stream byte ranges: offset = seq − (ISN + 1) mod 2^32. Data before any
// handshake (the tap started late) is left out.
func buildTap(segs []rawSeg) *tapIndex {
	slices.SortStableFunc(segs, func(a, b rawSeg) int { return cmp.Or(cmp.Compare(a.port, b.port), cmp.Compare(a.ns, b.ns)) })
	ix := &tapIndex{ports: map[int32][]*tapConn{}}
	var cur *tapConn
	for i := range segs {
		s := &segs[i]
		if i == 0 || s.port != segs[i-1].port {
			cur = nil
		}
		switch {
		case s.syn && s.tx && !s.ack:
			cur = &tapConn{synNs: s.ns, isnTx: s.seq}
			ix.ports[s.port] = append(ix.ports[s.port], cur)
		case s.syn && !s.tx && cur != nil:
			cur.isnRx, cur.hasRx = s.seq, true
		case s.len > 0 && cur != nil:
			if s.tx {
				off := int64(s.seq - cur.isnTx - 1)
				cur.tx = append(cur.tx, tapSeg{off, off + int64(s.len), s.ns})
			} else if cur.hasRx {
				off := int64(s.seq - cur.isnRx - 1)
				cur.rx = append(cur.rx, tapSeg{off, off + int64(s.len), s.ns})
			}
		}
	}
	for _, conns := range ix.ports {
		for _, c := range conns {
			for _, l := range [][]tapSeg{c.tx, c.rx} {
				slices.SortStableFunc(l, func(a, b tapSeg) int { return cmp.Compare(a.start, b.start) })
			}
		}
	}
	return ix
}

// conn returns the connection on port whose handshake was the latest at or before ns: the one a
// request sent at ns used (a port holds one connection to the target at a time).
func (ix *tapIndex) conn(port int32, ns int64) *tapConn {
	conns := ix.ports[port]
	i := sort.Search(len(conns), func(i int) bool { return conns[i].synNs > ns })
	if i == 0 {
		return nil
	}
	return conns[i-1]
}

// at returns the time of the earliest segment in segs that carried stream byte end − 1.
func at(segs []tapSeg, end int64) (int64, bool) {
	b := end - 1
	j := sort.Search(len(segs), func(j int) bool { return segs[j].start > b })
	best, ok := int64(0), false
	for k := j - 1; k >= 0 && k >= j-maxTapScan; k-- {
		if s := segs[k]; s.end > b && (!ok || s.ns < best) {
			best, ok = s.ns, true
		}
	}
	return best, ok
}

// TapTimes are the packet tap's times of one run directory's events and requests, from the join
// aggregate uses, in the run's own clock: for calibration, tests and offline checks.
type TapTimes struct {
	Rx map[[2]int64]int64 // (seq, event index) -> arrival of the segment that carried the event's last byte
	Tx map[int64]int64    // seq -> departure of the segment that carried the request's last byte
}

// LoadTapTimes joins dir's raw segments to its raw requests and chunks (read whole: for runs
// that fit in memory). Without segments both maps are empty.
func LoadTapTimes(ctx context.Context, dir string) (*TapTimes, error) {
	out := &TapTimes{Rx: map[[2]int64]int64{}, Tx: map[int64]int64{}}
	ix, err := loadTap(ctx, &runDir{dir: dir}, &warner{log: slog.New(slog.DiscardHandler), strict: true})
	if err != nil || ix == nil {
		return out, err
	}
	conns := map[int64]*tapConn{}
	reqs := schemas.KindOf[schemas.RawRequest]().Glob(dir)
	for _, p := range reqs {
		rows, err := schemas.ReadFile[schemas.RawRequest](p)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if r.LocalPort == nil || r.SentNs == 0 {
				continue
			}
			c := ix.conn(*r.LocalPort, r.SentNs)
			if c == nil {
				continue
			}
			conns[r.Seq] = c
			if r.TxStreamEnd != nil {
				if ns, ok := at(c.tx, *r.TxStreamEnd); ok {
					out.Tx[r.Seq] = ns
				}
			}
		}
	}
	chunks := schemas.KindOf[schemas.RawChunk]().Glob(dir)
	for _, p := range chunks {
		rows, err := schemas.ReadFile[schemas.RawChunk](p)
		if err != nil {
			return nil, err
		}
		for _, ch := range rows {
			if c := conns[ch.Seq]; c != nil && ch.RxStreamEnd != 0 {
				if ns, ok := at(c.rx, ch.RxStreamEnd); ok {
					out.Rx[[2]int64{ch.Seq, int64(ch.Index)}] = ns
				}
			}
		}
	}
	return out, nil
}
