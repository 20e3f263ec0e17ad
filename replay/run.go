package replay

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wirebench/wirebench/internal/hostclock"
	"github.com/wirebench/wirebench/internal/rundir"
	"github.com/wirebench/wirebench/internal/secret"
	"github.com/wirebench/wirebench/internal/tlsclient"
	"github.com/wirebench/wirebench/schemas"
	"github.com/wirebench/wirebench/tokenizer"
)

// Options are the inputs of Run and Plan besides the config.
type Options struct {
	ConfigPath  string    // Run: the config file to read; Plan: names the config in errors ("" = "config")
	Out         string    // run directory
	Target      string    // overrides target.url when set
	DryRun      bool      // plan and print the per-stage table to DryRunOut; write nothing
	Force       bool      // replace the run RUN holds (see Run)
	ToolVersion string    // written into the manifest
	Args        []string  // the command's arguments, for the manifest and file metadata
	DryRunOut   io.Writer // default os.Stdout
	// NeedEnv makes an environment variable the target reads (target.api_key_env, ${VAR} in
	// target.headers) that is unset or empty here an error (`wirebench run`: capture follows on
	// this host). Else it is one only when replay asks the server for the model; otherwise a
	// warning, since capture may run on another host (see docs/distributed.md).
	NeedEnv bool
	// Check, when set, is called with the loaded config (after --target) before anything is
	// written: `wirebench run` checks its capture options with it, so that a run it would not
	// capture never replaces the one in RUN.
	Check func(*schemas.Config) error
}

// Run plans the whole schedule of a config and writes RUN/schedule/requests.parquet,
// RUN/schedule/prompts.parquet and RUN/manifest.json (status "planned"). The config, datasets
// and traces are read and validated before anything is written; files are written under
// temporary names and renamed when complete, so on error nothing appears under RUN.
//
// A RUN that holds a run (a schedule, raw/, metrics/ or report/) is refused unless Force. With
// Force the run is replaced whole, once the new schedule is planned and written out under its
// temporary names: the old raw/, metrics/ and report/ are removed (an old capture must never be
// aggregated under the new config), then the new files take their final names. On any error
// before that the old run is left as it was.
func Run(ctx context.Context, opts Options, log *slog.Logger) error {
	cfg, unset, err := loadConfig(opts.ConfigPath, true)
	if err != nil {
		return err
	}
	return planRun(ctx, cfg, unset, opts, log)
}

// Plan is Run for a config passed as a value: one built in Go (calibrate, internal/construn)
// or one LoadConfig returned and the caller changed (`wirebench search` gives each step its own
// load). Like LoadConfig it fills in cfg's defaults, in cfg, validates it and checks that the
// files it names open (relative paths are taken from the working directory); errors name
// opts.ConfigPath ("config" when empty) and the field, with no line. --target and a discovered
// model change a copy only. Nothing writes the config out but the manifest, as for Run.
func Plan(ctx context.Context, cfg *schemas.Config, opts Options, log *slog.Logger) error {
	opts.ConfigPath = cmp.Or(opts.ConfigPath, "config")
	if len(cfg.Target.URLs) > 0 && cfg.Target.URL == cfg.Target.URLs[0].URL {
		cfg.Target.URL = "" // LoadConfig's copy of the first endpoint; check sets it again
	}
	v := &validator{path: opts.ConfigPath}
	if err := v.check(cfg, "", true); err != nil {
		return err
	}
	c := *cfg
	return planRun(ctx, &c, v.unsetEnv(&c), opts, log)
}

// planRun plans a valid config; unset are the errors for the environment variables its target
// reads that are unset here.
func planRun(ctx context.Context, cfg *schemas.Config, unset []error, opts Options, log *slog.Logger) error {
	started := time.Now()
	if err := prepare(ctx, cfg, unset, opts, log); err != nil {
		return err
	}
	tok, err := tokenizer.Load(cfg.Tokenizer)
	if err != nil {
		return fmt.Errorf("tokenizer: %w", err)
	}
	o := &output{ctx: ctx, traffic: newTraffic(cfg)}
	files := &scheduleFiles{o: o}
	if !opts.DryRun {
		if files, err = createSchedule(o, opts.Out, opts.Args); err != nil {
			return err
		}
	}
	o.start()
	stages, err := plan(ctx, cfg, tok, o)
	if err == nil {
		err = o.finish()
	}
	if err != nil {
		return files.abort(err)
	}
	if opts.DryRun {
		w := opts.DryRunOut
		if w == nil {
			w = os.Stdout
		}
		return printPlan(w, stages, o)
	}
	return files.commit(cfg, stages, opts, started, log)
}

// prepare readies a valid config for planning: it applies --target; for a run (not a dry run)
// it checks the target's environment variables, its URL and the run directory; it calls
// opts.Check; and for a run it asks the server for the model when the config names none.
func prepare(ctx context.Context, cfg *schemas.Config, unset []error, opts Options, log *slog.Logger) error {
	if searchOnly(cfg) {
		return fmt.Errorf("%s: load: no stages or sweep; a config with only a search section is for `wirebench search`", opts.ConfigPath)
	}
	if opts.Target != "" {
		if err := checkURL(opts.Target); err != nil {
			return fmt.Errorf("--target: %w", err)
		}
		cfg.Target.URL = opts.Target
		cfg.Target.URLs, cfg.Target.Pick = nil, "" // --target replaces every endpoint
	}
	if len(unset) > 0 && !opts.DryRun {
		if opts.NeedEnv || len(cfg.Target.Mix()) == 0 {
			return errors.Join(unset...)
		}
		for _, err := range unset {
			log.Warn("capture needs this variable set where it runs", "err", err)
		}
	}
	if cfg.Target.URL == "" && !opts.DryRun {
		return fmt.Errorf("%s: target.url: required (set it in the config or with --target)", opts.ConfigPath)
	}
	if !opts.DryRun {
		if opts.Out == "" {
			return errors.New("no run directory given (-o RUN)")
		}
		if err := checkRunDir(opts.Out, opts.Force); err != nil {
			return err
		}
	}
	if opts.Check != nil {
		if err := opts.Check(cfg); err != nil {
			return fmt.Errorf("%s: %w", opts.ConfigPath, err)
		}
	}
	if !opts.DryRun && len(cfg.Target.Mix()) == 0 {
		var err error
		if cfg.Target.Model, err = discoverModel(ctx, &cfg.Target); err != nil {
			return err
		}
		log.Info("discovered model", "model", cfg.Target.Model, "url", cfg.Target.URL)
	}
	return nil
}

// scheduleFiles are the schedule files of a run being planned: written under temporary names
// until commit; abort leaves RUN as it was. Its output has no writers in a dry run.
type scheduleFiles struct {
	o       *output
	out     string // RUN
	created bool   // RUN did not exist: abort removes it
}

// createSchedule opens the writers of RUN/schedule/prompts.parquet and requests.parquet into o.
func createSchedule(o *output, out string, args []string) (*scheduleFiles, error) {
	f := &scheduleFiles{o: o, out: out}
	if _, err := os.Stat(out); errors.Is(err, os.ErrNotExist) {
		f.created = true
	}
	p := schemas.Producer{Command: "replay", Args: scheduleArgs(args)}
	var err error
	if o.promptW, err = schemas.Create[schemas.Prompt](schemas.FileOf[schemas.Prompt](out), p); err != nil {
		return nil, err
	}
	if o.reqW, err = schemas.Create[schemas.ScheduleRequest](schemas.FileOf[schemas.ScheduleRequest](out), p); err != nil {
		o.promptW.Abort()
		return nil, err
	}
	return f, nil
}

// abort drops the files being written (and RUN, when it was made for them) and returns err, or
// the writer's own error when err only says that a writer failed.
func (f *scheduleFiles) abort(err error) error {
	o := f.o
	if o.reqW == nil {
		return err
	}
	if ferr := o.finish(); ferr != nil && errors.Is(err, errWriterFailed) {
		err = ferr
	}
	o.reqW.Abort()
	o.promptW.Abort()
	if f.created {
		os.RemoveAll(f.out)
	} else {
		os.Remove(filepath.Dir(schemas.FileOf[schemas.Prompt](f.out))) // schedule/, only if empty
	}
	return err
}

// commit seals the schedule files, removes the results of the run RUN held (opts.Force), gives
// the files their final names and writes the manifest.
func (f *scheduleFiles) commit(cfg *schemas.Config, stages []schemas.StageInfo, opts Options, started time.Time, log *slog.Logger) error {
	o := f.o
	if err := o.promptW.Seal(); err != nil {
		return f.abort(err)
	}
	if err := o.reqW.Seal(); err != nil {
		return f.abort(err)
	}
	m, err := newManifest(cfg, stages, o, opts, started)
	if err != nil {
		return f.abort(err)
	}
	// Everything is checked and written out: from here the run in RUN is replaced.
	if opts.Force {
		removed, err := rundir.RemoveData(opts.Out, "raw", "metrics", "report")
		if len(removed) > 0 {
			log.Warn("--force: removed the earlier run's results", "run", opts.Out, "removed", removed)
		}
		if err != nil {
			return f.abort(err)
		}
	}
	if err := o.promptW.Close(); err != nil {
		return f.abort(err)
	}
	if err := o.reqW.Close(); err != nil {
		return f.abort(err)
	}
	m.Steps = []schemas.Step{{Name: schemas.StepReplay, Args: opts.Args, Started: started.UTC(), Ended: time.Now().UTC(), Status: schemas.StepOK}}
	if err := m.Write(filepath.Join(opts.Out, schemas.ManifestName)); err != nil {
		return err
	}
	log.Info("planned", "run", opts.Out, "stages", len(stages), "requests", o.nReq, "prompts", o.nPrompt, "elapsed", time.Since(started).Round(time.Millisecond))
	if len(o.perModel) > 1 {
		log.Info("planned models", "requests", o.perModel)
	}
	return nil
}

// newManifest is the manifest of a planned run (status planned), its replay step to be added.
func newManifest(cfg *schemas.Config, stages []schemas.StageInfo, o *output, opts Options, started time.Time) (*schemas.Manifest, error) {
	m := &schemas.Manifest{
		RunID: newRunID(), ToolVersion: opts.ToolVersion, CPUs: runtime.NumCPU(),
		ClockSource: "CLOCK_REALTIME", Created: started.UTC(), Stages: stages, Status: schemas.StatusPlanned,
	}
	m.Host, _ = os.Hostname()
	clock := hostclock.Read()
	m.Clock = &clock
	kept := *cfg
	kept.Target = cfg.Target.Redacted()
	var err error
	if m.Config, err = json.Marshal(kept); err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	m.AddFile(schemas.EntryOf[schemas.ScheduleRequest](o.reqW.Rows()))
	m.AddFile(schemas.EntryOf[schemas.Prompt](o.promptW.Rows()))
	return m, nil
}

// scheduleArgs drops the arguments that do not shape the schedule (output directory, --force,
// --target, logging) from the args recorded in the schedule files, so the same config and seed
// give byte-identical files wherever they are written. The manifest keeps every argument.
func scheduleArgs(args []string) []string {
	out := []string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(a, "=")
		switch name {
		case "-o", "--out", "--target", "--log-level", "--log-format":
			if !hasValue {
				i++ // the value is the next argument
			}
			continue
		case "--force":
			continue
		}
		if strings.HasPrefix(a, "-o") && len(a) > 2 { // -oRUN
			continue
		}
		out = append(out, a)
	}
	return out
}

// checkRunDir refuses a RUN that holds a run (schedule/, raw/, metrics/ or report/ with files)
// unless force.
func checkRunDir(out string, force bool) error {
	held := rundir.Data(out)
	if len(held) == 0 || force {
		return nil
	}
	return fmt.Errorf("%s already holds a run (%s); use --force to replace it (its results are removed) or choose another run directory", out, strings.Join(held, ", "))
}

// discoverModel asks GET {url}/v1/models for the first model id.
func discoverModel(ctx context.Context, t *schemas.Target) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	u := strings.TrimSuffix(t.URL, "/") + "/v1/models"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", fmt.Errorf("discover model: %w", err)
	}
	if req.Header, err = secret.Resolve(*t); err != nil {
		return "", fmt.Errorf("discover model (set target.model to skip): %w", err)
	}
	tcfg, err := tlsclient.Config(t.TLS)
	if err != nil {
		return "", fmt.Errorf("discover model: %w", err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tcfg, Proxy: http.ProxyFromEnvironment}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("discover model (set target.model to skip): %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("discover model (set target.model to skip): GET %s: %s", u, resp.Status)
	}
	var body struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil {
		return "", fmt.Errorf("discover model: GET %s: %w", u, err)
	}
	if len(body.Data) == 0 || body.Data[0].ID == "" {
		return "", fmt.Errorf("discover model: GET %s lists no model; set target.model", u)
	}
	return body.Data[0].ID, nil
}

func newRunID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// printPlan writes the --dry-run table: one line per stage.
func printPlan(w io.Writer, stages []schemas.StageInfo, o *output) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\tname\tmode\trequests\trate/s\tstart\tduration\tin p50\tin p90\tin p99\tin max\tout p50\tout p90\tout p99\tout max\t")
	var total int64
	for i, s := range stages {
		st := o.stats[i]
		total += st.requests
		rate := "-"
		if s.Mode == schemas.ModeOpen {
			rate = fmt.Sprintf("%.4g", s.Rate)
		} else {
			rate = fmt.Sprintf("c=%d", s.Concurrency)
		}
		dur := "until done"
		if s.DurationNs > 0 {
			dur = time.Duration(s.DurationNs).String()
		}
		name := s.Name
		if s.Warmup {
			name += " (warmup)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%v\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", s.Index, name, s.Mode, st.requests, rate,
			time.Duration(s.OffsetNs), dur,
			st.in.ValueAtQuantile(50), st.in.ValueAtQuantile(90), st.in.ValueAtQuantile(99), st.in.Max(),
			st.out.ValueAtQuantile(50), st.out.ValueAtQuantile(90), st.out.ValueAtQuantile(99), st.out.Max())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "total: %d requests, %d prompts (token percentiles are exact below 32768)\n", total, o.nPrompt); err != nil {
		return err
	}
	if len(o.perModel) > 1 {
		var parts []string
		for _, m := range slices.Sorted(maps.Keys(o.perModel)) {
			parts = append(parts, fmt.Sprintf("%s %d", m, o.perModel[m]))
		}
		_, err := fmt.Fprintf(w, "requests by model: %s\n", strings.Join(parts, ", "))
		return err
	}
	return nil
}
