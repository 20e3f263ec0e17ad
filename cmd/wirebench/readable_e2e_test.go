package main

// What a person reads of `make demo`'s run: figures rounded for people, one label per stage,
// the load sentence naming offered, planned and sent together.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// floatNoise matches a number printed with float noise (20.000000000000004, 39.99999999999999)
// or with more digits than a person reads in a reason (271.417 ms).
var floatNoise = regexp.MustCompile(`\d\.\d*(0000|9999)\d*|\d{2,}\.\d{3} ms`)

// TestDemoReadsForPeople runs the quickstart sweep (1 s stages) against the demo's simulator
// and reads what a person reads: the terminal, summary.md, index.html and the sentences of
// profile.json.
func TestDemoReadsForPeople(t *testing.T) {
	url := startSim(t, "--config", "../../examples/sim-demo.yaml")
	text, err := os.ReadFile("../../examples/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(text), "duration: 10s", "duration: 1s", 1)
	if cfg == string(text) {
		t.Fatal("examples/quickstart.yaml no longer holds \"duration: 10s\": update this test")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "quickstart.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "demo")
	stdout, stderr, err := wirebench(t, 3*time.Minute, "run", path, "-o", run, "--target", url)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(run, "report", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	md, page := read("summary.md"), read("index.html")
	texts := map[string]string{"stdout": stdout, "stderr": stderr, "summary.md": md, "index.html": page,
		"profile.json's sentences": strings.Join(profileStrings(t, read("profile.json")), "\n")}
	for name, s := range texts {
		if m := floatNoise.FindString(s); m != "" {
			t.Errorf("%s shows %q; want figures rounded for people", name, m)
		}
		// One label per stage: the sweep's names are unique, so no index beside them.
		if m := regexp.MustCompile(`\d "sweep-\d\d"|\d \\"sweep-\d\d\\"`).FindString(s); m != "" {
			t.Errorf("%s labels a stage %q; want its name alone (sweep-00)", name, m)
		}
	}
	// The stage column holds the name alone, marked (🟠 **sweep-00**) when a verdict is not green.
	if !regexp.MustCompile(`(?m)^\| (?:\S+ )?(?:\*\*)?sweep-00(?:\*\*)? \|`).MatchString(md) {
		t.Errorf("summary.md has no stage row labelled sweep-00:\n%s", md)
	}
	if want := "offered 5.00/s; this seed's plan "; !strings.Contains(md, want) {
		t.Errorf("summary.md lacks %q", want)
	}
	// Progress lines name the stage and give TTFTs to three significant digits (not 6.258687s).
	if !strings.Contains(stderr, "name=sweep-05") {
		t.Errorf("progress lines do not name the stage (name=sweep-05):\n%s", stderr)
	}
	if m := regexp.MustCompile(`ttft_p\d\d=\d+\.\d{4,}`).FindString(stderr); m != "" {
		t.Errorf("a progress line shows %q; want three significant digits", m)
	}
	if !strings.Contains(stdout, "\nsweep-00 ") {
		t.Errorf("run's stage table does not start a line with sweep-00:\n%s", stdout)
	}
	// The charts' stage axes say sweep-00, not 00.
	if !strings.Contains(page, ">sweep-00</text>") || strings.Contains(page, ">00</text>") {
		t.Errorf("index.html's stage axes do not read sweep-00 (or still read 00)")
	}
	if strings.Contains(page, "saturation at stage ") && !regexp.MustCompile(`saturation at stage sweep-0\d \(`).MatchString(page) {
		t.Errorf("index.html's saturation mark does not name the stage by its name")
	}
}

// profileStrings returns every string value of profile.json (its sentences and reasons).
func profileStrings(t *testing.T, js string) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatalf("profile.json: %v", err)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// TestReadmeOwnServerPath: the README's own-server commands work as written from a fresh clone:
// the config it copies exists, and the simulator it starts by hand listens where `run` sends
// (--target) and where the copied config points.
func TestReadmeOwnServerPath(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var block string // the code block that copies examples/my-server.yaml
	for _, b := range strings.Split(string(readme), "```sh\n")[1:] {
		if b, _, _ = strings.Cut(b, "```"); strings.Contains(b, "cp examples/my-server.yaml") {
			block = b
		}
	}
	var cp, sim, run []string
	for _, l := range strings.Split(block, "\n") {
		f := strings.Fields(strings.SplitN(l, "#", 2)[0])
		switch {
		case len(f) > 2 && f[0] == "cp":
			cp = f
		case len(f) > 2 && f[0] == "bin/wirebench" && f[1] == "sim":
			sim = f
		case len(f) > 2 && f[0] == "bin/wirebench" && f[1] == "run":
			run = f
		}
	}
	if cp == nil || sim == nil || run == nil {
		t.Fatalf("README's own-server block lacks a cp, a bin/wirebench sim or a bin/wirebench run line:\n%s", block)
	}
	cfg, err := os.ReadFile(filepath.Join("../..", cp[1]))
	if err != nil {
		t.Fatalf("README copies %s: %v", cp[1], err)
	}
	listen := flagValue(sim, "--listen")
	if listen == "" || flagValue(run, "--target") != "http://"+listen || run[2] != cp[2] {
		t.Errorf("README starts the simulator with %q and runs %q: want run on the copied config %s with --target http://<the sim's --listen>", sim, run, cp[2])
	}
	if !strings.Contains(string(cfg), "url: http://"+listen) {
		t.Errorf("%s does not point at http://%s, where README's simulator listens", cp[1], listen)
	}
}

// flagValue returns the value after flag in args, "" when absent.
func flagValue(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}
