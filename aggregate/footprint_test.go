package aggregate

import (
	"math"
	"strings"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

// footprintRun is a one-host capture whose manifest says where the target was and how busy the
// machine was in stage 0 (usage nil: not recorded).
func footprintRun(local bool, usage *schemas.StageUsage) *runDir {
	m := &schemas.Manifest{Colocation: &schemas.Colocation{TargetLocal: local}}
	if usage != nil {
		m.StageUsage = []schemas.StageUsage{*usage}
	}
	return &runDir{dir: "run", manifest: m, shards: 1}
}

// usage2 is stage 0 on a 2-CPU host over 10 s, busy the given share, the coordinator using
// coordCPUs of a CPU.
func usage2(busy, coordCPUs float64) *schemas.StageUsage {
	const wall = 10e9
	return &schemas.StageUsage{Stage: 0, WallNs: wall, MachineCPUs: 2, MachineTotalNs: 2 * wall,
		MachineBusyNs: int64(busy * 2 * wall), CoordinatorCPUNs: int64(coordCPUs * wall)}
}

// TestServerDisturbed: the footprint verdict fires only for a co-located target, on a saturated
// machine, with the client over DisturbShare of its CPUs (workers' ρ plus the coordinator).
func TestServerDisturbed(t *testing.T) {
	heavy := []workerStats{{rho: 0.6}, {rho: 0.5}} // 1.1 CPUs
	light := []workerStats{{rho: 0.2}}
	tests := []struct {
		name    string
		run     *runDir
		workers []workerStats
		want    bool
		cpus    float64
	}{
		{"co-located, saturated, heavy client", footprintRun(true, usage2(0.99, 0.2)), heavy, true, 1.3},
		{"the same on another machine", footprintRun(false, usage2(0.99, 0.2)), heavy, false, 1.3},
		{"co-located, machine not saturated", footprintRun(true, usage2(0.7, 0.2)), heavy, false, 1.3},
		{"co-located, saturated, light client", footprintRun(true, usage2(1.0, 0.05)), light, false, 0.25},
		{"co-located, usage not recorded", footprintRun(true, nil), heavy, false, 1.1},
	}
	for _, tt := range tests {
		st := schemas.Stage{Stage: 0}
		setFootprint(&st, []*runDir{tt.run}, tt.workers)
		if st.ServerDisturbed != tt.want || math.Abs(st.ClientCPUs-tt.cpus) > 1e-9 {
			t.Errorf("%s: server_disturbed %v, client_cpus %.3f; want %v, %.3f", tt.name, st.ServerDisturbed, st.ClientCPUs, tt.want, tt.cpus)
		}
		if tt.want && !strings.Contains(st.ServerDisturbedReason, "wirebench used 1.30 of 2 CPUs while the machine was 99% busy") {
			t.Errorf("%s: reason %q; want the figures", tt.name, st.ServerDisturbedReason)
		}
	}
}

// TestFootprintPicksTheCoLocatedHost: of two hosts, the stage carries the co-located one.
func TestFootprintPicksTheCoLocatedHost(t *testing.T) {
	remote := footprintRun(false, usage2(1.0, 1.5))
	local := footprintRun(true, usage2(0.95, 0.1))
	local.shard, remote.shard, local.shards, remote.shards = 1, 0, 2, 2
	st := schemas.Stage{Stage: 0}
	setFootprint(&st, []*runDir{remote, local}, []workerStats{{shard: 0, rho: 0.9}, {shard: 1, rho: 0.6}})
	if !st.TargetLocal || math.Abs(st.ClientCPUs-0.7) > 1e-9 || !st.ServerDisturbed {
		t.Errorf("target_local %v, client_cpus %.3f, disturbed %v; want the co-located host's: true, 0.700, true", st.TargetLocal, st.ClientCPUs, st.ServerDisturbed)
	}
}

// TestConnectionSpiral: more connections opened than twice the in-flight peak plus the warm pools.
func TestConnectionSpiral(t *testing.T) {
	for _, tt := range []struct {
		opened, inflight, warm int64
		want                   bool
	}{
		{128, 40, 64, false}, // the warm pool topped up
		{144, 40, 64, false}, // at the limit
		{145, 40, 64, true},
		{5984, 900, 128, true}, // the run: one connection per five requests
	} {
		st := schemas.Stage{}
		setFootprint(&st, nil, []workerStats{{connsOpened: tt.opened, inflightPeak: tt.inflight, connsWarm: tt.warm, connsPeak: 70}})
		if st.ConnectionSpiral != tt.want || st.ConnectionsOpened != tt.opened || st.ConnectionsPeak != 70 {
			t.Errorf("opened %d, in flight %d, warm %d: spiral %v (opened %d, peak %d); want %v", tt.opened, tt.inflight, tt.warm, st.ConnectionSpiral, st.ConnectionsOpened, st.ConnectionsPeak, tt.want)
		}
	}
}

// TestBlameMachine: lateness before the worker began a request, or after its connection was
// ready, on a saturated machine the client took little of, names the machine; with the client
// taking much of it, the client.
func TestBlameMachine(t *testing.T) {
	tests := []struct {
		name             string
		pacer, conn      int64
		clientCPUs, busy float64
		who, want        string
	}{
		{"pacer late, machine saturated by others", 95, 0, 0.3, 0.98, schemas.BlameMachine, "the shared machine: it was 98% busy, wirebench using 0.30 of its 2 CPUs"},
		{"send late, machine saturated by others", 10, 0, 0.3, 0.98, schemas.BlameMachine, "came after a connection was ready"},
		{"pacer late, client took the machine", 95, 0, 1.5, 0.98, schemas.BlameClient, "the client: 95%"},
		{"pacer late, machine not saturated", 95, 0, 0.3, 0.6, schemas.BlameClient, "the client: 95%"},
		{"waiting for connections, server elsewhere", 10, 80, 0.3, 0.98, schemas.BlameServerBusy, "every open one"},
		{"waiting for connections, server co-located", 10, 80, 1.2, 0.98, schemas.BlameServerBusy, "the server shares this machine, which was 98% busy (wirebench using 1.20 of its 2 CPUs)"},
		{"waiting for connections, co-located, machine not saturated", 10, 80, 1.2, 0.6, schemas.BlameServerBusy, "every open one carried an unanswered request"},
	}
	for _, tt := range tests {
		a := &stageAcc{lateNs: 100, pacerLateNs: tt.pacer, connLateNs: tt.conn}
		st := &schemas.Stage{LateShareClient: ptr(float64(tt.pacer) / 100), WorkerRhoMax: ptr(0.3), MachineCPUs: 2, MachineBusy: tt.busy, ClientCPUs: tt.clientCPUs,
			TargetLocal: strings.Contains(tt.name, "co-located")}
		a.requests, st.SendLag = 2, schemas.Dist{Count: 2, P99: ptr[int64](5e6)}
		a.judgeLoad(st)
		if st.LoadBlame != tt.who || !strings.Contains(st.LoadReason, tt.want) {
			t.Errorf("%s: blame = %q, %q; want %q and a reason containing %q", tt.name, st.LoadBlame, st.LoadReason, tt.who, tt.want)
		}
	}
}
