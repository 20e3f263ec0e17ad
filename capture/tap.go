package capture

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirebench/wirebench/capture/tap"
	"github.com/wirebench/wirebench/schemas"
)

// Tap modes (Config.Tap).
const (
	TapAuto = "auto" // on where the process may open a packet socket (CAP_NET_RAW), else off with a note
	TapOn   = "on"   // on, or the capture fails
	TapOff  = "off"
)

// tapPoll is how long the recorder waits for the kernel's next block of segments.
const tapPoll = 100 * time.Millisecond

// tapRecorder writes the packet tap's segments to raw/segments-PPPP.parquet parts while the
// capture runs. The segments are joined to events offline by aggregate (their byte offsets,
// raw-chunks.rx_stream_end): the join never runs on the measured path, and the raw segments let
// it be redone.
type tapRecorder struct {
	t        *tap.Tap
	run      string
	producer schemas.Producer
	maxRows  int64
	log      *slog.Logger
	low      bool // run the recorder's thread as a batch thread (SCHED_BATCH)

	stop chan struct{}
	done sync.WaitGroup

	// Written by the recorder goroutine, read after done.
	part   int32
	w      *schemas.Writer[schemas.RawSegment]
	files  []schemas.FileEntry
	status schemas.TapStatus
	err    error
}

// startTap opens the packet tap for cfg's target as cfg.Tap says. With auto, a tap that cannot
// run here is off, and the returned status says why; with on, that is an error. Beside the
// server (local) the tap listens on the loopback interface only and to incoming copies only
// (tap.BindLoopback), so neither another interface's packets nor any send runs its filter, and
// its recorder runs as a batch thread (SCHED_BATCH: it never
// preempts the server on waking, yet keeps its share of the CPU, so the ring does not fill: at
// nice 10 it lost 7% of the packets at 5,000 req/s on a loaded machine).
func startTap(cfg Config, local bool, log *slog.Logger) (*tapRecorder, *schemas.TapStatus, error) {
	mode := cfg.Tap
	if mode == "" {
		mode = TapAuto
	}
	switch mode {
	case TapOff:
		return nil, &schemas.TapStatus{Reason: "off (--tap off)"}, nil
	case TapAuto, TapOn:
	default:
		return nil, nil, fmt.Errorf("--tap %q: want auto, on or off", mode)
	}
	ap, err := tapTarget(cfg.Target)
	var t *tap.Tap
	if err == nil {
		t, err = tap.Open(ap)
	}
	if err == nil && local {
		if berr := t.BindLoopback(loopback()); berr != nil {
			log.Warn("packet tap: cannot bind to the loopback interface; it sees every interface", "err", berr)
		}
	}
	if err != nil {
		if mode == TapOn {
			return nil, nil, fmt.Errorf("--tap on: %w", err)
		}
		log.Warn("packet tap off: event times come from socket reads only (coalesced events get wider bounds)", "reason", err)
		return nil, &schemas.TapStatus{Reason: "off: " + err.Error()}, nil
	}
	r := &tapRecorder{t: t, run: cfg.Run, producer: schemas.Producer{Command: "capture", Args: cfg.Args},
		maxRows: int64(cfg.PartRows), log: log, stop: make(chan struct{}), low: local}
	r.status = schemas.TapStatus{On: true, Reason: "recording the TCP segments to and from " + ap.String()}
	log.Info("packet tap on", "target", ap.String())
	st := r.status // the manifest's copy: the recorder goroutine updates its own until finish
	r.done.Add(1)
	go r.loop()
	return r, &st, nil
}

// loopback returns the name of this host's loopback interface ("lo" when none is flagged).
func loopback() string {
	ifs, _ := net.Interfaces()
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagLoopback != 0 {
			return ifc.Name
		}
	}
	return "lo"
}

// tapTarget resolves the target URL to the IPv4 address and port the tap filters on.
func tapTarget(target string) (netip.AddrPort, error) {
	u, err := url.Parse(target)
	if err != nil {
		return netip.AddrPort{}, err
	}
	port := u.Port()
	switch {
	case port != "":
	case u.Scheme == "https":
		port = "443"
	default:
		port = "80"
	}
	a, err := net.ResolveTCPAddr("tcp4", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: resolve %s: %v", tap.ErrUnsupported, u.Host, err)
	}
	return netip.AddrPortFrom(a.AddrPort().Addr().Unmap(), a.AddrPort().Port()), nil
}

func (r *tapRecorder) loop() {
	defer r.done.Done()
	if r.low {
		runtime.LockOSThread() // the thread dies with the goroutine: its policy goes with it
		_ = unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_BATCH}, 0)
	}
	var buf []tap.Segment
	for {
		select {
		case <-r.stop:
			// The last segments: the kernel hands a partly filled block over after its
			// retire timeout.
			time.Sleep(2 * tapPoll)
			buf, _ = r.t.Read(buf[:0], 0)
			r.write(buf)
			return
		default:
		}
		var err error
		if buf, err = r.t.Read(buf[:0], int(tapPoll/time.Millisecond)); err != nil {
			r.fail(err)
			return
		}
		r.write(buf)
	}
}

func (r *tapRecorder) fail(err error) {
	if r.err == nil {
		r.err = err
		r.log.Error("packet tap", "err", err)
	}
}

// write appends segments to the open part, rolling parts at maxRows.
func (r *tapRecorder) write(segs []tap.Segment) {
	if len(segs) == 0 || r.err != nil {
		return
	}
	rows := make([]schemas.RawSegment, len(segs))
	for i, s := range segs {
		dir := schemas.SegmentTx
		if s.Dir == tap.Rx {
			dir = schemas.SegmentRx
		}
		rows[i] = schemas.RawSegment{TsNs: s.TsNs, Dir: dir, LocalPort: int32(s.LocalPort), Seq: int64(s.Seq),
			Ack: int64(s.Ack), Len: int32(s.Len), Flags: int32(s.Flags)}
	}
	if r.w == nil {
		w, err := schemas.Create[schemas.RawSegment](r.path(), r.producer)
		if err != nil {
			r.fail(err)
			return
		}
		r.w = w
	}
	if err := r.w.Write(rows); err != nil {
		r.fail(err)
		return
	}
	r.status.Packets += int64(len(rows))
	if r.w.Rows() >= r.maxRows {
		r.closePart()
	}
}

func (r *tapRecorder) path() string {
	return filepath.Join(r.run, filepath.FromSlash(schemas.KindOf[schemas.RawSegment]().PartPath(0, int(r.part))))
}

func (r *tapRecorder) closePart() {
	if r.w == nil {
		return
	}
	rows := r.w.Rows()
	if err := r.w.Close(); err != nil {
		r.fail(err)
	} else {
		r.files = append(r.files, schemas.FileEntry{Path: schemas.KindOf[schemas.RawSegment]().PartPath(0, int(r.part)), Kind: schemas.KindOf[schemas.RawSegment]().Name, Rows: rows, Part: r.part})
	}
	r.w = nil
	r.part++
}

// finish stops the recorder, closes its last part, records its files and status in m, and
// reports the kernel's drops.
func (r *tapRecorder) finish(m *schemas.Manifest) error {
	close(r.stop)
	r.done.Wait()
	r.closePart()
	st, err := r.t.Stats()
	r.status.Drops = int64(st.Drops)
	err = errors.Join(r.err, err, r.t.Close())
	for _, f := range r.files {
		m.AddFile(f)
	}
	if r.status.Drops > 0 {
		r.log.Warn("packet tap: the kernel dropped packets (ring full): some events have no tap time", "drops", r.status.Drops)
	}
	s := r.status
	m.Tap = &s
	return err
}
