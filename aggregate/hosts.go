package aggregate

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// The hosts of a distributed run: each RUN directory given to aggregate is one host's capture
// of its shard of one schedule (capture --shard i/n). A host that died, or never started, leaves
// its share of the planned load unsent: the merged manifest names it in missing and each stage
// it is short in says so (schemas.Stage.Missing) and fails the load verdict.

// hostShard returns the directory's shard: i/n from the manifest, 0/1 for a capture of the
// whole schedule, and shards 0 for a directory that holds no capture (only replay's output).
func hostShard(m *schemas.Manifest) (shard, shards int, err error) {
	if m.Shard != "" {
		return schemas.ParseShard(m.Shard)
	}
	for _, st := range m.Steps {
		if st.Name == schemas.StepCapture {
			return 0, 1, nil
		}
	}
	return 0, 0, nil
}

// checkShards refuses directories that are not distinct hosts of one split: two shard counts,
// or one shard twice (its requests would count twice).
func checkShards(runs []*runDir) error {
	seen := map[int]*runDir{}
	var first *runDir
	for _, r := range runs {
		if r.shards == 0 {
			continue
		}
		if first == nil {
			first = r
		}
		if r.shards != first.shards {
			return fmt.Errorf("%w: %s is shard %s but %s is shard %s: the hosts of one run split the schedule the same way", ErrInput, r.dir, r.shardName(), first.dir, first.shardName())
		}
		if o := seen[r.shard]; o != nil {
			return fmt.Errorf("%w: %s and %s are both shard %s: give each host's directory once", ErrInput, o.dir, r.dir, r.shardName())
		}
		seen[r.shard] = r
	}
	return nil
}

func (r *runDir) shardName() string { return fmt.Sprintf("%d/%d", r.shard, r.shards) }

// name is how messages name the host: its directory, with its shard when the run is split.
func (r *runDir) name() string {
	if r.shards > 1 {
		return fmt.Sprintf("%s (shard %s)", r.dir, r.shardName())
	}
	return r.dir
}

// incomplete says why the host's share may be short ("" when its capture finished whole): it
// never captured, its capture did not end complete, or its manifest lists what it lacks.
func (r *runDir) incomplete() string {
	m := r.manifest
	switch {
	case r.shards == 0:
		return fmt.Sprintf("never captured (status %s: only replay's output)", m.Status)
	case m.Status == schemas.StatusRunning:
		return "capture did not finish (status running: it was killed or its machine stopped)"
	case m.Status != schemas.StatusComplete:
		return "capture ended " + m.Status
	case len(m.Missing) > 0:
		return "its manifest lists what it lacks"
	}
	return ""
}

// shardSplit returns the run's shard count (0 when no directory holds a capture) and the shards no
// directory holds.
func shardSplit(runs []*runDir) (n int, missing []int) {
	have := map[int]bool{}
	for _, r := range runs {
		if r.shards > 0 {
			n = r.shards
			have[r.shard] = true
		}
	}
	for i := range n {
		if !have[i] {
			missing = append(missing, i)
		}
	}
	return n, missing
}

func shardList(missing []int, n int) string {
	s := make([]string, len(missing))
	for i, k := range missing {
		s[i] = fmt.Sprintf("%d/%d", k, n)
	}
	return strings.Join(s, ", ")
}

// stageGap says which hosts' planned requests of stage info are not all in the metrics: hosts
// that recorded fewer whole requests of the stage than their shard planned (shard_planned in
// their manifest), whatever their status (stageNote), and shards no directory holds, with the
// requests they planned (the stage's requests less the other shards'). "" when nothing is
// missing.
func stageGap(runs []*runDir, info schemas.StageInfo, startNs int64) string {
	var notes []string
	var others int64
	known := true
	end := startNs + info.OffsetNs + info.DurationNs
	for _, r := range runs {
		if r.shards == 0 {
			continue
		}
		if r.manifest.ShardPlanned == nil {
			known = false
		}
		others += r.manifest.ShardPlanned[info.Index]
		if note := r.stageNote(info, end); note != "" {
			notes = append(notes, note)
		}
	}
	n, missing := shardSplit(runs)
	switch {
	case len(missing) == 0:
	case known:
		if lost := info.Requests - others; lost > 0 {
			notes = append(notes, fmt.Sprintf("shard %s not captured by any host given: its %d planned requests are missing", shardList(missing, n), lost))
		}
	default:
		notes = append(notes, fmt.Sprintf("shard %s not captured by any host given: its requests are missing", shardList(missing, n)))
	}
	return strings.Join(notes, "; ")
}

// stageNote says how host r's share of stage info (ending at end) falls short of its plan, and
// why: its capture did not finish, some requests lack their events, parts are missing, short or
// damaged, or, with none of these, its manifest says complete while rows are missing. "" when
// its share is whole.
//
// A closed-loop stage bounded by a duration plans more rows than it sends (capture stops it at
// the duration): a host that sent past the stage's planned end, with nothing lost or damaged,
// did not lose any of it.
func (r *runDir) stageNote(info schemas.StageInfo, end int64) string {
	planned, ok := r.manifest.ShardPlanned[info.Index]
	got, lost := r.recorded[info.Index], r.lost[info.Index]
	var why []string
	if w := r.incomplete(); w != "" {
		why = append(why, w)
	}
	if lost > 0 {
		why = append(why, fmt.Sprintf("%d requests recorded without all their events", lost))
	}
	if d := r.damageNote(); d != "" {
		why = append(why, "missing or damaged files: "+d)
	}
	switch {
	case !ok && r.manifest.ShardPlanned == nil:
		if len(why) == 0 {
			return ""
		}
		return fmt.Sprintf("%s: %s, %d requests recorded, its plan unknown (no shard_planned in its manifest)", r.name(), strings.Join(why, ", "), got)
	case got >= planned && lost == 0:
		return ""
	case info.Mode == schemas.ModeClosed && info.DurationNs > 0 && r.lastSentNs >= end && lost == 0 && len(r.damage) == 0:
		return ""
	case len(why) == 0:
		why = append(why, "its manifest says complete and no file is damaged, yet rows are missing")
	}
	return fmt.Sprintf("%s: %s, %d of its %d planned requests recorded", r.name(), strings.Join(why, ", "), got, planned)
}

// flagGap records a stage's gap: some of the requests the stage planned are not in its figures,
// so the load verdict fails whatever the sends that were made say, blamed on the gap, which
// comes first among its reasons; it warns (with Strict: fails).
func (a *aggregator) flagGap(st *schemas.Stage, gap string) error {
	st.Missing = gap
	if gap == "" {
		return nil
	}
	reason := "part of the planned load is missing: " + gap
	if st.LoadReason != "" {
		reason += "; " + st.LoadReason
	}
	st.LoadDelivered, st.LoadReason, st.LoadBlame = false, reason, schemas.BlameMissing
	return a.w.warn(a.manifestPath, "stage %d %q: %s", st.Stage, st.Name, reason)
}

// mergedMissing is the merged manifest's missing list: each host's own missing entries, hosts
// that never captured or did not finish, the files aggregate found missing or damaged, and
// shards no directory holds.
func mergedMissing(runs []*runDir) []string {
	var out []string
	for _, r := range runs {
		for _, d := range r.damage {
			out = append(out, fmt.Sprintf("host %s: %s", r.name(), d))
		}
		why := r.incomplete()
		if why == "" {
			continue
		}
		if r.shards == 0 || len(r.manifest.Missing) == 0 {
			out = append(out, fmt.Sprintf("host %s: %s", r.name(), why))
		}
		for _, miss := range r.manifest.Missing {
			out = append(out, fmt.Sprintf("host %s: %s", r.name(), miss))
		}
	}
	if n, missing := shardSplit(runs); len(missing) > 0 {
		out = append(out, fmt.Sprintf("shard %s: no host directory given holds its capture; its share of every stage is missing", shardList(missing, n)))
	}
	return out
}

// mergedStatus is complete when every shard's capture is here and complete, interrupted when
// the only trouble is an interrupt, else failed (a host died, never started, or is absent).
func mergedStatus(runs []*runDir) string {
	n, missing := shardSplit(runs)
	if n == 0 {
		return schemas.StatusPlanned
	}
	st := schemas.StatusComplete
	for _, r := range runs {
		switch r.manifest.Status {
		case schemas.StatusComplete:
		case schemas.StatusInterrupted:
			if st == schemas.StatusComplete {
				st = schemas.StatusInterrupted
			}
		default:
			st = schemas.StatusFailed
		}
	}
	if len(missing) > 0 {
		st = schemas.StatusFailed
	}
	return st
}

// hostEntries lists the hosts for the merged manifest.
func hostEntries(runs []*runDir) []schemas.Host {
	out := make([]schemas.Host, len(runs))
	for i, r := range runs {
		h := schemas.Host{Dir: r.dir, Host: r.manifest.Host, Status: r.manifest.Status, Clock: r.manifest.Clock, Colocation: r.manifest.Colocation}
		if r.shards > 0 {
			h.Shard = r.shardName()
		}
		for _, n := range r.recorded {
			h.Requests += n
		}
		for _, n := range r.lost {
			h.Requests += n
		}
		out[i] = h
	}
	return out
}

// mergeManifest turns m, a copy of the first host's manifest, into the merged run's: its hosts,
// their clocks' uncertainty, what is missing and the status over every host.
func mergeManifest(m *schemas.Manifest, runs []*runDir, clockNs int64) {
	m.Hosts = hostEntries(runs)
	m.ClockUncertaintyNs = clockNs
	m.Missing = mergedMissing(runs)
	m.Status = mergedStatus(runs)
	m.Shard, m.ShardPlanned, m.Workers = "", nil, nil
	// The clock is each host's own (hosts[].clock); the merged run has none of its own.
	m.Clock = nil
	if len(runs) > 1 { // so are its place and its CPU use (hosts[].colocation, each host's manifest)
		m.Colocation, m.StageUsage = nil, nil
	}
	var names []string
	for _, r := range runs {
		if !slices.Contains(names, r.manifest.Host) {
			names = append(names, r.manifest.Host)
		}
	}
	m.Host = strings.Join(names, ", ")
	if len(runs) > 1 {
		m.Host += " (" + strconv.Itoa(len(runs)) + " hosts)"
	}
	for i := range m.Hosts {
		m.Hosts[i].Dir = filepath.Clean(m.Hosts[i].Dir)
	}
}

// reference is the host whose manifest gives the run's start and stages: the first that
// captured (a directory with only replay's output has no start time).
func reference(runs []*runDir) *runDir {
	for _, r := range runs {
		if r.shards > 0 {
			return r
		}
	}
	return runs[0]
}

// checkHosts warns about what the hosts lack as a whole (a directory that never captured, a
// shard no directory holds, hosts that did not start together) and checks their clocks.
func checkHosts(runs []*runDir, clockTol time.Duration, w *warner) error {
	ref := reference(runs)
	for _, r := range runs {
		mpath := filepath.Join(r.dir, schemas.ManifestName)
		var err error
		switch {
		case r.shards == 0:
			err = w.warn(mpath, "host %s never captured (status %s: only replay's output)", r.dir, r.manifest.Status)
		case r.shards > 0 && r.manifest.StartNs != ref.manifest.StartNs:
			err = w.warn(mpath, "host %s started at %v but %s at %v: stage windows compare them as if together (give every host the same capture --start-at)",
				r.name(), time.Unix(0, r.manifest.StartNs).UTC(), ref.name(), time.Unix(0, ref.manifest.StartNs).UTC())
		}
		if err != nil {
			return err
		}
	}
	if n, missing := shardSplit(runs); len(missing) > 0 {
		if err := w.warn(filepath.Join(ref.dir, schemas.ManifestName), "shard %s: no host directory given holds its capture; its share of the load is missing", shardList(missing, n)); err != nil {
			return err
		}
	}
	return checkClocks(runs, clockTol, w)
}
