package aggregate

import (
	"fmt"

	"github.com/wirebench/wirebench/schemas"
)

// The client's footprint on a machine it shares with the server. Every timestamp is exact and
// the server really was slow: what bounds cannot show is that the client made it slow, by
// taking the CPUs the server needed. The capture coordinator records, per stage, how busy the
// host's CPUs were (/proc/stat) and its own CPU (manifest stage_usage); the workers record
// theirs (raw/workers.parquet). From those:
//
//   - client_cpus = the client's CPU (coordinator and workers, read with the machine's at the
//     stage boundaries) / wall, on the host; without that, Σ workers (user + sys) / wall +
//     coordinator CPU / wall;
//   - machine_busy = busy CPU time / all CPU time of the host over the stage;
//   - server_disturbed when the target was co-located, machine_busy >= MachineSaturated and
//     client_cpus > DisturbShare × machine_cpus (schemas.Stage);
//   - and the reverse: a load not delivered because the pacer or the send waited for a CPU, on
//     a saturated machine the client took little of (client_cpus <= DisturbShare ×
//     machine_cpus), is blamed on the machine, not the client (blame); one blamed on the server
//     that shared a saturated machine says the machine may be the limit (sharedClause).

// hostFootprint is one host's footprint in one stage.
type hostFootprint struct {
	local      bool
	clientCPUs float64
	cpus       int32
	busy       float64
	known      bool // the host recorded its stage usage
}

// share is the client's share of the host's CPUs (0 when unknown).
func (h hostFootprint) share() float64 {
	if h.cpus <= 0 {
		return 0
	}
	return h.clientCPUs / float64(h.cpus)
}

// footprintOf returns run r's footprint in stage from its manifest and its workers' rows.
func footprintOf(r *runDir, stage int32, workers []workerStats) hostFootprint {
	var h hostFootprint
	m := r.manifest
	h.local = m.Colocation != nil && m.Colocation.TargetLocal
	for _, w := range workers {
		if int(w.shard) == r.shard {
			h.clientCPUs += w.rho
		}
	}
	for _, u := range m.StageUsage {
		if u.Stage != stage || u.WallNs <= 0 || u.MachineTotalNs <= 0 {
			continue
		}
		h.known = true
		if u.ClientCPUNs > 0 { // read with the machine's: the same window
			h.clientCPUs = float64(u.ClientCPUNs) / float64(u.WallNs)
		} else {
			h.clientCPUs += float64(u.CoordinatorCPUNs) / float64(u.WallNs)
		}
		h.cpus = u.MachineCPUs
		h.busy = float64(u.MachineBusyNs) / float64(u.MachineTotalNs)
	}
	return h
}

// setFootprint fills the stage's footprint and connection columns and the footprint verdict:
// the figures of the co-located host where the client took the largest share of the CPUs, else
// of the host where it took the largest share.
func setFootprint(st *schemas.Stage, runs []*runDir, workers []workerStats) {
	var best hostFootprint
	found := false
	for _, r := range runs {
		if r.shards == 0 {
			continue
		}
		h := footprintOf(r, st.Stage, workers)
		if !found || h.local && !best.local || h.local == best.local && h.share() > best.share() {
			best, found = h, true
		}
	}
	st.TargetLocal, st.ClientCPUs, st.MachineCPUs, st.MachineBusy = best.local, best.clientCPUs, best.cpus, best.busy
	if best.known && best.local && best.busy >= schemas.MachineSaturated && best.share() > schemas.DisturbShare {
		st.ServerDisturbed = true
		st.ServerDisturbedReason = fmt.Sprintf("wirebench used %.2f of %d CPUs while the machine was %.0f%% busy; the server's latency may include that competition",
			best.clientCPUs, best.cpus, 100*best.busy)
	}
	for _, w := range workers {
		st.InflightPeak += w.inflightPeak
		st.ConnectionsOpened += w.connsOpened
		st.ConnectionsPeak += w.connsPeak
		st.ConnectionsWarm += w.connsWarm
	}
	st.ConnectionSpiral = st.ConnectionsOpened > 2*st.InflightPeak+st.ConnectionsWarm
}

// machineBusy reports whether the stage ran on a saturated machine the client took little of:
// its lateness was then other processes holding the CPUs.
func machineBusy(st *schemas.Stage) bool {
	return st.MachineCPUs > 0 && st.MachineBusy >= schemas.MachineSaturated &&
		st.ClientCPUs <= schemas.DisturbShare*float64(st.MachineCPUs)
}

// sharedSaturated reports whether the server shared the client's machine and the machine was
// saturated: whatever waited, waited for its CPUs.
func sharedSaturated(st *schemas.Stage) bool {
	return st.TargetLocal && st.MachineCPUs > 0 && st.MachineBusy >= schemas.MachineSaturated
}

// sharedClause adds to a verdict that blames the server that it shared a saturated machine: the
// limit may have been the CPU it got, not the server itself (whose CPU the client does not see).
func sharedClause(st *schemas.Stage) string {
	return fmt.Sprintf("; the server shares this machine, which was %.0f%% busy (wirebench using %.2f of its %d CPUs): its accepts and answers may have waited for a CPU, so the limit may be the machine",
		100*st.MachineBusy, st.ClientCPUs, st.MachineCPUs)
}

// machineBlame says that the CPUs of the shared machine were the limit.
func machineBlame(st *schemas.Stage, what string) string {
	return fmt.Sprintf("the shared machine: it was %.0f%% busy, wirebench using %.2f of its %d CPUs and other processes (the server's, when it shares the machine) the rest: %s",
		100*st.MachineBusy, st.ClientCPUs, st.MachineCPUs, what)
}
