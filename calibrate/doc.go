// Package calibrate measures this machine's own error as a client: it runs a constant-rate
// sweep (replay, capture, aggregate) against the built-in simulator, whose own send times are
// ground truth, and finds the faithful rate (the highest rate sent on time with TTFT within
// FaithfulTTFTErr of the truth), the client's CPU per request and how well the error bounds
// cover the truth. It writes DIR/calibration.json beside an ordinary run directory, and plans
// how many hosts a target rate needs (PlanHosts).
//
// It imports replay, capture, aggregate, schemas, internal/cpuset, internal/simproc and
// internal/construn; only the command imports it.
package calibrate
