package aggregate

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/wirebench/wirebench/schemas"
)

// Integrity: a verdict never rests on missing, duplicated or damaged data (design:
// docs/design/integrity.md). Whatever a run's status, aggregate reconciles what it reads with
// the manifest and the plan:
//
//   - every part the manifest lists is there, with the rows it lists; a part that is missing,
//     short, unreadable or damaged is named (runDir.damage) and its requests count as missing;
//   - each planned seq is recorded at most once over every part and host (ledger): a duplicate
//     is an error naming both files, whatever Strict says;
//   - each request's events are all there: the rows of its chunks file for its seq are the
//     number its row recorded (raw-requests chunks); a request without them is not a
//     measurement: it counts as missing, never as ok or failed;
//   - every value wirebench measured is possible (bounds): times inside the run's window,
//     durations and counts not negative, seqs of the plan; a part holding an impossible value
//     is damaged.
//
// A host's share of a stage that is short (runDir.stageNote) fails the stage's load verdict,
// blamed on missing (schemas.BlameMissing), which the trust line shows red.

// windowSlack widens a run's window on both sides: a clock step or a slow coordinator moves
// real times by far less; a damaged value (a flipped byte) misses it by days or centuries.
const windowSlack = time.Minute

// bounds are what a host's raw rows can hold.
type bounds struct {
	lo, hi int64 // times: the host's start − windowSlack to the end of its capture + windowSlack
	seqs   int64 // planned requests: seq in [0, seqs)
}

// runBounds returns host r's bounds: its capture's start to the end its manifest records
// (now, for a capture that did not record one), and the run's planned requests.
func runBounds(r *runDir, seqs int64, now time.Time) bounds {
	end := now
	for _, st := range r.manifest.Steps {
		if st.Name == schemas.StepCapture && !st.Ended.IsZero() {
			end = st.Ended
		}
	}
	slack := int64(windowSlack)
	return bounds{lo: max(r.manifest.StartNs-slack, 0), hi: end.UnixNano() + slack, seqs: seqs}
}

// plannedRequests is the run's planned requests: replay numbers them 0 to n − 1.
func plannedRequests(m *schemas.Manifest) int64 {
	var n int64
	for _, st := range m.Stages {
		n += st.Requests
	}
	if n == 0 {
		return math.MaxInt32 // no plan to check against (a hand-made manifest)
	}
	return n
}

func (b bounds) String() string { return fmtTime(b.lo) + " to " + fmtTime(b.hi) }

func fmtTime(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

// timeCol is a column of times that must lie in the window when set (zero: 0 means unset).
type timeCol struct {
	name string
	c    *array.Int64
	zero bool
}

// badTime returns what is wrong with row i's times, "" when nothing.
func (b bounds) badTime(cols []timeCol, i int) string {
	for _, t := range cols {
		v, ok := optI64(t.c, i)
		if !ok || (v == 0 && t.zero) {
			continue
		}
		if v < b.lo || v > b.hi {
			return fmt.Sprintf("%s %d (%s) is outside the run's window, %s", t.name, v, fmtTime(v), b)
		}
	}
	return ""
}

// badDuration returns what is wrong with a duration (a null one is unknown, not wrong).
func (b bounds) badDuration(name string, c *array.Int64, i int) string {
	if v, ok := optI64(c, i); ok && (v < 0 || v > b.hi-b.lo) {
		return fmt.Sprintf("%s %d is a negative or impossible duration (the run's window is %s long)", name, v, time.Duration(b.hi-b.lo))
	}
	return ""
}

// badCount returns what is wrong with a count that cannot be negative.
func badCount(name string, c *array.Int32, i int) string {
	if v, ok := optI32(c, i); ok && v < 0 {
		return fmt.Sprintf("%s %d is negative", name, v)
	}
	return ""
}

// badRequest returns what is impossible in row i of a raw-requests batch, "" when nothing.
func (b bounds) badRequest(c *requestColumns, i int) string {
	if s := c.seq.Value(i); s < 0 || s >= b.seqs {
		return fmt.Sprintf("seq %d is not a request of the plan (0 to %d)", s, b.seqs-1)
	}
	for _, bad := range [...]string{
		b.badTime(c.times, i),
		b.badDuration("connect_ns", c.connect, i), b.badDuration("conn_wait_ns", c.connWait, i),
		badCount("chunks", c.chunks, i), badCount("input_tokens", c.inTok, i), badCount("syn_retrans", c.synRe, i),
	} {
		if bad != "" {
			return bad
		}
	}
	return ""
}

// badChunk returns what is impossible in row i of a raw-chunks batch, "" when nothing.
func (b bounds) badChunk(c *chunkColumns, i int) string {
	for _, bad := range [...]string{
		b.badTime(c.times, i),
		badCount("index", c.index, i), badCount("tokens", c.tokens, i), badCount("content_bytes", c.cBytes, i),
		badCount("reasoning_bytes", c.rBytes, i), badCount("tool_calls", c.tools, i),
	} {
		if bad != "" {
			return bad
		}
	}
	return ""
}

// corruptRow is the error of a row holding an impossible value: the file is damaged.
func corruptRow(path string, row int64, what string) error {
	return fmt.Errorf("%s: %w: row %d: %s", path, schemas.ErrCorrupt, row+1, what)
}

// ledger remembers which file recorded each planned seq, so that a seq recorded twice (a part
// copied under another name, the parts of two captures mixed, a host given twice under another
// shard) is found and both files named. Memory: 4 bytes a planned request.
type ledger struct {
	owner []uint32 // by seq: 1 + the index in files of the file that recorded it; 0 = not yet
	files []string
}

func newLedger(seqs int64) *ledger {
	if seqs >= math.MaxInt32 {
		seqs = 0 // no plan: grown as seqs come
	}
	return &ledger{owner: make([]uint32, seqs)}
}

// record marks the seqs of file's request rows; a seq already recorded, by another file or by
// this one, is an error naming both files and how many seqs they share.
func (l *ledger) record(file string, states []reqState) error {
	l.files = append(l.files, file)
	id := uint32(len(l.files))
	var dups int
	var first int64
	var other uint32
	for i := range states {
		seq := states[i].seq
		if seq >= int64(len(l.owner)) {
			l.owner = append(l.owner, make([]uint32, seq+1-int64(len(l.owner)))...)
		}
		if prev := l.owner[seq]; prev != 0 {
			if dups == 0 {
				first, other = seq, prev
			}
			dups++
			continue
		}
		l.owner[seq] = id
	}
	switch {
	case dups == 0:
		return nil
	case other == id:
		return fmt.Errorf("%s: %w: seq %d is recorded twice in it (%d duplicate rows): each request is sent and recorded once", file, ErrInput, first, dups)
	}
	return fmt.Errorf("%w: seq %d is recorded in both %s and %s (%d duplicate seqs in all): a part copied under another name, or the parts of two captures mixed; remove the copy",
		ErrInput, first, l.files[other-1], file, dups)
}

// damaged records that file of the run is missing, short or damaged (why), so its requests
// count as missing, and warns (with Strict: fails). The stage notes name it relative to the
// run directory, which they name first.
func (r *runDir) damaged(w *warner, file, why string) error {
	rel, err := filepath.Rel(r.dir, file)
	if err != nil {
		rel = file
	}
	r.damage = append(r.damage, filepath.ToSlash(rel)+": "+why)
	return w.warn(file, "%s", why)
}

// damageNote names the run's damaged files, at most maxNamed of them; "" when none.
func (r *runDir) damageNote() string {
	const maxNamed = 3
	if len(r.damage) <= maxNamed {
		return strings.Join(r.damage, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(r.damage[:maxNamed], "; "), len(r.damage)-maxNamed)
}

// whyCorrupt is the cause of a damaged file's error, without the file's name it starts with.
func whyCorrupt(path string, err error) string {
	return strings.TrimPrefix(err.Error(), path+": ")
}

// nothingRead fails when no whole request could be read from any host although a capture
// recorded some (its parts missing, emptied or all damaged): metrics of nothing would replace
// those of an earlier aggregate. The error names what is missing.
func nothingRead(runs []*runDir) error {
	var why []string
	for _, r := range runs {
		for _, n := range r.recorded {
			if n > 0 {
				return nil
			}
		}
		switch {
		case len(r.damage) > 0:
			why = append(why, r.dir+": "+r.damageNote())
		case r.shards > 0 && r.manifest.Status == schemas.StatusComplete && plannedOf(r) > 0:
			why = append(why, fmt.Sprintf("%s: no raw request part, though its capture is complete with %d requests planned", filepath.Join(r.dir, "raw"), plannedOf(r)))
		}
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%w: no request could be read whole, so nothing is aggregated (metrics/ is left as it was): %s", ErrInput, strings.Join(why, "; "))
}

// plannedOf is the requests host r planned to send (its shard_planned), 0 when unknown.
func plannedOf(r *runDir) int64 {
	var n int64
	for _, v := range r.manifest.ShardPlanned {
		n += v
	}
	return n
}
