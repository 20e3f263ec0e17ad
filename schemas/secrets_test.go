package schemas

import (
	"strings"
	"testing"

	"github.com/wirebench/wirebench/internal/redact"
)

func TestTargetRedacted(t *testing.T) {
	tg := Target{
		URL: "http://u:pw@127.0.0.1:8000", MetricsURL: "http://127.0.0.1:9000/metrics",
		Headers: map[string]string{"Authorization": "Bearer sk-lit", "x-api-key": "${WB_K}", "Proxy-Authorization": "Basic ${WB_B}",
			"api-key": "sk-${WB_K}", "X-Team": "perf"},
	}
	got := tg.Redacted()
	want := map[string]string{"Authorization": redact.Mark, "x-api-key": "${WB_K}", "Proxy-Authorization": "Basic ${WB_B}",
		"api-key": redact.Mark, "X-Team": "perf"}
	for k, v := range want {
		if got.Headers[k] != v {
			t.Errorf("Redacted: headers[%s] = %q; want %q", k, got.Headers[k], v)
		}
	}
	if got.URL != "http://[REDACTED]@127.0.0.1:8000" || got.MetricsURL != tg.MetricsURL {
		t.Errorf("Redacted: url %q, metrics_url %q", got.URL, got.MetricsURL)
	}
	if tg.Headers["Authorization"] != "Bearer sk-lit" {
		t.Error("Redacted changed its receiver's headers")
	}
	if f := strings.Join(tg.SecretFields(), ","); f != "target.url,target.headers.Authorization,target.headers.api-key" {
		t.Errorf("SecretFields = %s", f)
	}
}
