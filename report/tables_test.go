package report

import (
	"bytes"
	"encoding/csv"
	"slices"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

// TestStagesCSVMachineUnknown: a stage whose capture did not record the machine's CPUs has
// empty machine_cpus and machine_busy cells (unknown), not 0; one that did has its figures.
func TestStagesCSVMachineUnknown(t *testing.T) {
	stage := func(cpus int32, busy float64) schemas.ProfileStage {
		var s schemas.ProfileStage
		s.Quality.Footprint = schemas.ProfileFootprint{ClientCPUs: 0.5, MachineCPUs: cpus, MachineBusy: busy}
		return s
	}
	p := schemas.Profile{Runs: []schemas.ProfileRun{{Label: "r", Stages: []schemas.ProfileStage{stage(0, 0), stage(2, 0.75)}}}}
	b, err := stagesCSV(p)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(recs) != 3 {
		t.Fatalf("stages.csv: %d records, %v; want 3", len(recs), err)
	}
	ci, bi := slices.Index(recs[0], "machine_cpus"), slices.Index(recs[0], "machine_busy")
	if ci < 0 || bi < 0 {
		t.Fatalf("header lacks machine_cpus or machine_busy: %v", recs[0])
	}
	for i, want := range [][2]string{{"", ""}, {"2", "0.75"}} {
		if got := [2]string{recs[i+1][ci], recs[i+1][bi]}; got != want {
			t.Errorf("stage %d: machine_cpus, machine_busy = %q; want %q", i, got, want)
		}
	}
}
