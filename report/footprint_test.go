package report

import (
	"strings"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

// TestServerDisturbedVerdict: a stage whose client disturbed a co-located server is amber, the
// trust sentence quotes the figures, the summary line and the quality table mark it, and the
// advice says what to do; a connection spiral is amber too.
func TestServerDisturbedVerdict(t *testing.T) {
	const why = "wirebench used 1.30 of 2 CPUs while the machine was 100% busy"
	st := verdictStages(func(s *schemas.Stage) {
		s.TargetLocal, s.ServerDisturbed, s.ServerDisturbedReason = true, true, why
		s.ClientCPUs, s.MachineCPUs, s.MachineBusy = 1.3, 2, 1
	})
	level, sentence := Trust(st)
	if level != schemas.TrustAmber || !strings.Contains(sentence, `server disturbed in stage b (`+why) {
		t.Errorf("Trust = %s, %q; want amber naming the stage and the figures", level, sentence)
	}
	if n := stageNotes(&st[1]); !strings.Contains(n, "SERVER DISTURBED") {
		t.Errorf("stage notes %q; want SERVER DISTURBED", n)
	}
	if a := advice(&st[1], "1", 2); !strings.Contains(a, why) || !strings.Contains(a, "another machine") {
		t.Errorf("advice %q; want the figures and what to do", a)
	}
	rp := schemas.ProfileRun{}
	for i := range st {
		rp.Stages = append(rp.Stages, stageProfile(&st[i], "", 2))
	}
	if q := rp.Stages[1].Quality; q.Trust != schemas.TrustAmber || !q.Footprint.ServerDisturbed || q.Footprint.ServerDisturbedReason != why {
		t.Errorf("profile quality %+v; want amber with the footprint verdict", q)
	}
	row := qualityTable(rp).Rows[1].Cells
	if !strings.Contains(row[10], "1.30 of 2 CPUs, machine 100.0% busy (server co-located)") || !strings.Contains(row[11], "server disturbed: "+why) {
		t.Errorf("quality row footprint %q, why %q; want the figures", row[10], row[11])
	}

	spiral := verdictStages(func(s *schemas.Stage) {
		s.ConnectionSpiral, s.ConnectionsOpened, s.InflightPeak, s.ConnectionsWarm = true, 5984, 900, 128
	})
	if level, sentence := Trust(spiral); level != schemas.TrustAmber || !strings.Contains(sentence, "opened 5984 connections for at most 900 requests in flight and 128 warm") {
		t.Errorf("Trust with a spiral = %s, %q; want amber with the counts", level, sentence)
	}
	if level, _ := Trust(verdictStages(nil)); level != schemas.TrustGreen {
		t.Errorf("Trust without either = %s; want green", level)
	}
}
