package capture

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirebench/wirebench/internal/colocate"
	"github.com/wirebench/wirebench/schemas"
)

// usageClock reads the machine's CPU times (/proc/stat), the coordinator's CPU and the whole
// client's at each stage boundary of the plan, for the manifest's stage_usage: from them
// aggregate tells how much of the machine the client took while the server shared it, and how
// busy the machine was.
type usageClock struct {
	order   []schemas.StageInfo // by offset
	startNs int64
	spinPID int          // the keep-awake process; 0 = none
	workers func() []int // the worker processes' pids

	mu    sync.Mutex
	cur   int32 // running stage; -1 before the first
	begin usageSample
	out   []schemas.StageUsage
	stop  chan struct{}
	done  chan struct{}
}

// usageSample is one reading.
type usageSample struct {
	wallNs, selfNs, clientNs, spinNs int64
	m                                colocate.CPUTimes
	ok                               bool // /proc/stat was read
}

// read reads the machine's CPU times, the coordinator's CPU and the whole client's: the
// coordinator's, its workers' that have ended (RUSAGE_CHILDREN: reaped), and its running
// workers' (/proc/PID/stat; read after, so a worker reaped in between is missed once, never
// counted twice).
func (u *usageClock) read() usageSample {
	s := usageSample{wallNs: time.Now().UnixNano()}
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) == nil {
		s.selfNs = ru.Utime.Nano() + ru.Stime.Nano()
	}
	s.clientNs = s.selfNs
	if unix.Getrusage(unix.RUSAGE_CHILDREN, &ru) == nil {
		s.clientNs += ru.Utime.Nano() + ru.Stime.Nano()
	}
	for _, pid := range u.workers() {
		if ns, err := colocate.ProcessCPU(pid); err == nil {
			s.clientNs += ns
		}
	}
	var err error
	s.m, err = colocate.ReadCPUTimes()
	s.ok = err == nil
	if u.spinPID > 0 {
		s.spinNs, _ = colocate.ProcessCPU(u.spinPID)
	}
	return s
}

// startUsage starts reading at each stage's start from startNs on; finish ends the last stage.
func startUsage(stages []schemas.StageInfo, startNs int64, spinPID int, workers func() []int) *usageClock {
	order := slices.Clone(stages)
	slices.SortStableFunc(order, func(a, b schemas.StageInfo) int { return cmp.Compare(a.OffsetNs, b.OffsetNs) })
	u := &usageClock{order: order, startNs: startNs, spinPID: spinPID, workers: workers, cur: -1, stop: make(chan struct{}), done: make(chan struct{})}
	go u.run()
	return u
}

func (u *usageClock) run() {
	defer close(u.done)
	for _, st := range u.order {
		t := time.NewTimer(time.Until(time.Unix(0, u.startNs+st.OffsetNs)))
		select {
		case <-u.stop:
			t.Stop()
			return
		case <-t.C:
		}
		u.mu.Lock()
		u.closeStage(u.read())
		u.cur = st.Index
		u.mu.Unlock()
	}
}

// closeStage records the running stage up to now and starts the next window at now.
func (u *usageClock) closeStage(now usageSample) {
	b := u.begin
	u.begin = now
	if u.cur < 0 || !b.ok || !now.ok {
		return
	}
	spin, client := now.spinNs-b.spinNs, now.clientNs-b.clientNs
	busy, total := now.m.BusySince(b.m)
	// Idle time and the spinner's CPU are counted in 10 ms units, so on a light stage beside a
	// keep-awake spinner their difference can fall below what the client alone used; the machine
	// was at least that busy.
	busy = min(max(busy-spin, client, 0), total)
	u.out = append(u.out, schemas.StageUsage{Stage: u.cur, WallNs: now.wallNs - b.wallNs, MachineCPUs: int32(now.m.CPUs),
		MachineBusyNs: busy, MachineTotalNs: total,
		CoordinatorCPUNs: now.selfNs - b.selfNs, ClientCPUNs: client, IdleSpinNs: spin})
}

// finish ends the running stage's window now and returns every stage's usage.
func (u *usageClock) finish() []schemas.StageUsage {
	close(u.stop)
	<-u.done
	u.mu.Lock()
	defer u.mu.Unlock()
	u.closeStage(u.read())
	u.cur = -1
	return u.out
}

// pid returns a keep-awake process's pid, 0 when there is none.
func (a *awake) pid() int {
	if a == nil || a.cmd == nil || a.cmd.Process == nil {
		return 0
	}
	return a.cmd.Process.Pid
}
