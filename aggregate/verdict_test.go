package aggregate

import (
	"strings"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

// TestBlame: who waited, from the split of a stage's lateness.
func TestBlame(t *testing.T) {
	tests := []struct {
		name                      string
		late, pacer, conn, capped int64
		synRetrans                int64
		connectP99                int64
		rho                       float64
		who, want                 string
	}{
		{"the pacer", 100, 80, 10, 0, 0, 0, 0.2, schemas.BlameClient, "the client: 80% of the lateness"},
		{"the pacer on a busy worker: advice", 100, 80, 0, 0, 0, 0, 0.9, schemas.BlameClientCPU, "workers would bring it under"},
		{"the client's cap", 100, 10, 0, 70, 0, 0, 0.2, schemas.BlameClientCap, "the client's connection cap: 70%"},
		{"SYNs dropped", 100, 10, 80, 0, 12, 3e9, 0.2, schemas.BlameServerAccept, "not accepting connections fast enough: 80%"},
		{"slow connects without retransmissions", 100, 10, 80, 0, 0, 5e6, 0.2, schemas.BlameServerAccept, "not accepting connections fast enough"},
		{"busy connections", 100, 10, 80, 0, 0, 100e3, 0.2, schemas.BlameServerBusy, "every open one carried an unanswered request"},
		{"after the connection", 100, 10, 20, 10, 0, 0, 0.2, schemas.BlameSend, "60% of the lateness came after a connection was ready"},
	}
	for _, tt := range tests {
		a := &stageAcc{lateNs: tt.late, pacerLateNs: tt.pacer, connLateNs: tt.conn, capLateNs: tt.capped}
		st := &schemas.Stage{LateShareClient: ptr(float64(tt.pacer) / float64(tt.late)), SynRetrans: tt.synRetrans,
			WorkerRhoMax: &tt.rho, WorkersForRhoHalf: 4, Connect: schemas.Dist{Count: 5, P99: &tt.connectP99}}
		who, got := a.blame(st)
		if who != tt.who || !strings.Contains(got, tt.want) {
			t.Errorf("%s: blame = %q, %q; want %q and a reason containing %q", tt.name, who, got, tt.who, tt.want)
		}
		if tt.rho < schemas.AdviceRho && strings.Contains(got, "workers would") {
			t.Errorf("%s: blame = %q; advice without a busy worker", tt.name, got)
		}
	}
}
