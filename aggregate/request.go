package aggregate

import (
	"github.com/wirebench/wirebench/schemas"
)

// Quality values of raw chunks, counted per request.
const (
	qExact = iota
	qUpper
	qUser
	qApprox
)

// reqState is what aggregate keeps per request while it streams the request's chunks: the
// request row's fields it needs and running sums over its events. Nothing per chunk is kept.
type reqState struct {
	seq          int64
	stage        int32
	worker       int32
	shard        int32
	warmup       bool
	conversation int64
	turn         int32
	model        string // the model field sent
	inputSched   int32
	docs         int32 // documents (ranking APIs) or inputs (embeddings) it carried
	plannedNs    int64
	sentNs       int64
	sentEndNs    int64 // end of the write that took the last byte; sentNs when unknown
	unsent       bool  // the request was never written (sentNs is then its send start)
	// S for the latencies and the interval [sNs, sEndNs] holding the request's departure: the
	// tap time of the segment that carried its last byte when there is one, else
	// [sentNs, sentEndNs].
	sNs, sEndNs int64
	txTapNs     int64    // 0 when none
	conn        *tapConn // the connection the tap saw the request on; nil when none
	tapChunks   int32    // events timed by the tap
	sendStartNs int64    // when the worker began the request
	connectNs   int64    // TCP connect duration; -1 when the connection was reused
	connWaitNs  int64    // waited for a connection (0: an idle one was there)
	synRetrans  int32    // SYN retransmissions of its fresh connection
	connCapped  bool     // waited at the connection cap
	doneNs      int64
	hasDone     bool
	headersNs   int64 // when the response headers arrived; 0 when none did
	endpoint    int32 // index into target.urls
	status      int32
	errorKind   string
	usagePrompt int32
	hasUPrompt  bool
	usageOut    int32
	hasUOut     bool
	usageReason int32
	hasUReason  bool
	textTokens  int32 // tokenizer count over output_text; -1 when not kept or not needed
	srvQueue    int64
	srvPrefill  int64
	srvDecode   int64
	hasSrv      bool
	wantEvents  int32 // the events its row says it received (raw chunks)
	events      int32 // its events read, in index order
	lost        bool  // its events are not all there: not a measurement (counted missing)

	// Running state over the request's events, in file (arrival) order.
	lastIndex  int32
	firstNs    int64 // t of the first content-bearing event
	answerNs   int64 // t of the first event carrying answer tokens (text or tool-call arguments)
	answered   bool
	lastNs     int64 // t of the latest content-bearing event
	lastEvNs   int64 // t of the latest event of any kind
	content    int32 // content-bearing events
	evTokens   int64 // sum of the events' tokens where the server says so
	evTokensOK bool  // every content event carried a token count
	credited   int64 // output tokens credited to timeseries buckets: the event's count, else 1
	gaps       int32
	gapSum     int64
	gapMax     int64
	readLagMax int64
	hasKernel  bool
	// Intervals holding the true arrival times (see eventSpan): of the first and the latest
	// content event, of the latest event of any kind (the final one once the stream ended),
	// and the largest gap ends.
	first, last, latest, answer span
	gapLoMax, gapHiMax          int64
	itlGaps                     []int64 // the gaps counted in ITL: (value, lower end, upper end) triples
	quality                     [4]int32
	acc                         *stageAcc // nil when the request is left out of stage metrics (warmup)
	// groups are its accumulators in each breakdown of the stage (aggregator.breakdowns, same
	// order); nil when left out
	groups [maxBreakdowns]*stageAcc
}

// ok reports a successful request: HTTP 200, no error kind and a stream that ended.
func (s *reqState) ok() bool { return s.status == 200 && s.errorKind == "" && s.hasDone }

// endNs is when the request stopped occupying the client: E, else its last event, else S.
func (s *reqState) endNs() int64 {
	switch {
	case s.hasDone:
		return s.doneNs
	case s.lastEvNs != 0:
		return s.lastEvNs
	}
	return s.sentNs
}

func ptr[T any](v T) *T { return &v }

// span is an interval [lo, hi] of CLOCK_REALTIME ns that surely holds a true time.
type span struct{ lo, hi int64 }

// eventSpan returns the interval holding the arrival of an event whose time is t (rx_kernel_ns
// when kernel, else rx_user_ns), quality q and rx_after_ns after (0 when null); allow is the
// stamp allowance. The arrival is when the segment carrying the event's last byte entered this
// host's network stack, where software receive timestamps are taken.
//
//   - Upper end: t. A kernel timestamp is taken on the segment's way in (exact), or on a later
//     segment coalesced into the same buffer, whose time overwrote the earlier one's
//     (tcp_try_coalesce: upper_bound); a user time is taken after the read returned.
//   - Lower end, the latest of: t − allow for an exact event (the stamp itself may trail the
//     arrival at the NIC by its interrupt moderation); rx_after_ns, when a read on the
//     connection found the socket empty, so the event's byte came later; S, since no answer
//     comes before the request's last byte left; and the lower end of the previous event of
//     the response, since a TCP stream is read in order.
func (s *reqState) eventSpan(t int64, q string, kernel bool, after, allow int64) span {
	lo := max(s.sNs, after, s.latest.lo)
	if q == schemas.QualityExact && kernel {
		lo = max(lo, t-allow)
	}
	return span{lo: min(lo, t), hi: t}
}

// doneSpan is the interval of E: the final event's; a response without events ended at a user
// time.
func (s *reqState) doneSpan() span {
	if s.lastIndex < 0 {
		return span{lo: s.sNs, hi: s.doneNs}
	}
	return s.latest
}

// addEvent records the interval of the request's next event; content events also update the
// first and last content spans and the gap bounds, and return the gap's interval; the first
// answer event (content without reasoning only) sets the answer span.
func (s *reqState) addEvent(sp span, content, answer bool) (gap span, hasGap bool) {
	s.latest = sp
	if !content {
		return span{}, false
	}
	if answer && !s.answered {
		s.answer = sp
	}
	if s.content == 0 {
		s.first = sp
	} else {
		// The true gap b − a with a in [a.lo, a.hi], b in [b.lo, b.hi], b >= a (in order).
		gap = span{lo: max(sp.lo-s.last.hi, 0), hi: sp.hi - s.last.lo}
		hasGap = true
		s.gapLoMax, s.gapHiMax = max(s.gapLoMax, gap.lo), max(s.gapHiMax, gap.hi)
	}
	s.last = sp
	return gap, hasGap
}

// metric derives the request's row of metrics/requests.parquet from its state. Definitions
// (S = sent_ns, P = planned_ns, E = done_ns, t_j = rx_kernel_ns of event j when present, else
// rx_user_ns):
//
//   - N (output_tokens): usage completion_tokens when the server sent usage ("usage"); else the
//     configured tokenizer over output_text when capture kept the text ("tokenizer"); else the sum
//     of the events' token counts when every content event carries one, or the number of content
//     events ("chunks"). I (input_tokens): usage prompt_tokens, else the scheduled count.
//   - TTFT = t(first content-bearing event, reasoning included) − S; E2E = E − S.
//   - TTFC = t(first event carrying answer tokens: text or tool-call arguments) − S, so
//     TTFC − TTFT is the time spent reasoning before the answer. reasoning_tokens: usage's;
//     answer_tokens = N − reasoning_tokens when both come from usage.
//   - TPOT = (t_last − t_first)/(N − 1) for N > 1 over at least two content events, integer
//     division; null otherwise (one event carrying every token, as a whole answer does, has no
//     time between tokens to divide: its TPOT is unknown, not 0).
//   - ITL: gaps between consecutive content events; the row keeps their mean and maximum.
//   - NTPOT = E2E/N for N > 0, integer division; null when N = 0 (never 0).
//   - *_from_planned: the same from P instead of S. send_lag = S − P.
//   - read_lag_max = max(rx_user_ns − rx_kernel_ns) over events with a kernel time.
//   - slo_met: ok, and every SLO of the config that applies holds. A null TTFT fails a TTFT SLO;
//     a null TPOT, ITL or NTPOT (too few tokens to measure) does not fail theirs.
//
// The decomposition is filled here only from server-reported timings; see decompose for the
// other sources.
func (s *reqState) metric(slo schemas.SLO) schemas.MetricRequest {
	m := schemas.MetricRequest{
		Seq: s.seq, Stage: s.stage, Worker: s.worker, Shard: s.shard, Endpoint: s.endpoint, Warmup: s.warmup,
		Conversation: s.conversation, Turn: s.turn, Model: s.model, PlannedNs: s.plannedNs, SentNs: s.sentNs,
		Status: s.status, ErrorKind: s.errorKind, OK: s.ok(), Chunks: s.content, Documents: s.docs,
		SendLagNs:        s.sentNs - s.plannedNs,
		ExactChunks:      s.quality[qExact],
		UpperBoundChunks: s.quality[qUpper],
		UserChunks:       s.quality[qUser],
		ApproxChunks:     s.quality[qApprox],
	}
	if s.hasDone {
		m.DoneNs = ptr(s.doneNs)
	}
	n := s.tokens(&m)
	s.latencies(&m, n)
	m.PacerLagNs = s.sendStartNs - s.plannedNs
	m.TapChunks = s.tapChunks
	if s.txTapNs != 0 {
		m.TxTapNs = ptr(s.txTapNs)
	}
	m.ConnWaitNs, m.SynRetrans, m.ConnCapped = s.connWaitNs, s.synRetrans, s.connCapped
	if s.connectNs >= 0 {
		m.ConnectNs = ptr(s.connectNs)
	}
	if s.hasKernel {
		m.ReadLagMaxNs = ptr(s.readLagMax)
	}
	if s.hasSrv {
		split(&m, s.srvPrefill, 0, schemas.DecompositionServer)
	}
	m.SLOMet = m.OK && sloMet(&m, slo)
	return m
}

// tokens sets the request's input and output token counts and says where the output count came
// from; it returns the output count N.
func (s *reqState) tokens(m *schemas.MetricRequest) int32 {
	in := s.inputSched
	if s.hasUPrompt {
		in = s.usagePrompt
	}
	m.InputTokens = ptr(in)
	var n int32
	switch {
	case s.hasUOut:
		n, m.TokensSource = s.usageOut, schemas.TokensUsage
	case s.textTokens >= 0:
		n, m.TokensSource = s.textTokens, schemas.TokensTokenizer
	case s.evTokensOK && s.content > 0:
		n, m.TokensSource = int32(s.evTokens), schemas.TokensChunks
	default:
		n, m.TokensSource = s.content, schemas.TokensChunks
	}
	m.OutputTokens = ptr(n)
	return n
}

// latencies sets the request's latencies with their intervals; n is its output tokens.
func (s *reqState) latencies(m *schemas.MetricRequest, n int32) {
	// Intervals: a difference b − a lies in [b.lo − a.hi, b.hi − a.lo], the request's send time
	// in [S, sent_end]; integer division by N is monotone, so it keeps the ends in order.
	if s.content > 0 {
		m.TTFTNs = ptr(s.firstNs - s.sNs)
		m.TTFTLoNs, m.TTFTHiNs = ptr(max(s.first.lo-s.sEndNs, 0)), ptr(s.first.hi-s.sNs)
		m.TTFTFromPlannedNs = ptr(s.firstNs - s.plannedNs)
		if n > 1 && s.content > 1 {
			d := int64(n - 1)
			m.TPOTNs = ptr((s.lastNs - s.firstNs) / d)
			m.TPOTLoNs, m.TPOTHiNs = ptr(max(s.last.lo-s.first.hi, 0)/d), ptr((s.last.hi-s.first.lo)/d)
		}
	}
	if s.answered {
		m.TTFCNs = ptr(s.answerNs - s.sNs)
		m.TTFCLoNs, m.TTFCHiNs = ptr(max(s.answer.lo-s.sEndNs, 0)), ptr(s.answer.hi-s.sNs)
	}
	if s.hasUReason {
		m.ReasoningTokens = ptr(s.usageReason)
		if s.hasUOut {
			m.AnswerTokens = ptr(max(s.usageOut-s.usageReason, 0))
		}
	}
	if s.gaps > 0 {
		m.ITLMeanNs = ptr(s.gapSum / int64(s.gaps))
		m.ITLMaxNs = ptr(s.gapMax)
		m.ITLMaxLoNs, m.ITLMaxHiNs = ptr(s.gapLoMax), ptr(s.gapHiMax)
	}
	if s.hasDone {
		done := s.doneSpan()
		m.E2ENs = ptr(s.doneNs - s.sNs)
		m.E2ELoNs, m.E2EHiNs = ptr(max(done.lo-s.sEndNs, 0)), ptr(done.hi-s.sNs)
		m.E2EFromPlannedNs = ptr(s.doneNs - s.plannedNs)
		if n > 0 {
			m.NTPOTNs = ptr(*m.E2ENs / int64(n))
			m.NTPOTLoNs, m.NTPOTHiNs = ptr(*m.E2ELoNs/int64(n)), ptr(*m.E2EHiNs/int64(n))
			m.NTPOTFromPlannedNs = ptr(*m.E2EFromPlannedNs / int64(n))
		}
	}
}

// split fills queue, prefill and decode so that queue + prefill + decode = E2E exactly:
// decode = E − t_first (first token to the end of the stream), prefill = the source's prefill
// estimate plus overhead, capped at TTFT, and queue = TTFT − prefill. It needs TTFT and E2E.
func split(m *schemas.MetricRequest, prefill, overhead int64, source string) {
	if m.TTFTNs == nil || m.E2ENs == nil {
		return
	}
	ttft := *m.TTFTNs
	p := min(max(prefill+overhead, 0), max(ttft, 0))
	m.PrefillNs = ptr(p)
	m.QueueNs = ptr(ttft - p)
	m.DecodeNs = ptr(*m.E2ENs - ttft)
	m.DecompositionSource = source
}

func sloMet(m *schemas.MetricRequest, slo schemas.SLO) bool {
	within := func(v *int64, limit schemas.Duration, nullOK bool) bool {
		if limit <= 0 {
			return true
		}
		if v == nil {
			return nullOK
		}
		return *v <= int64(limit)
	}
	return within(m.TTFTNs, slo.TTFT, false) &&
		within(m.TPOTNs, slo.TPOT, true) &&
		within(m.ITLMaxNs, slo.ITL, true) &&
		within(m.NTPOTNs, slo.NTPOT, true) &&
		within(m.E2ENs, slo.E2E, false)
}
