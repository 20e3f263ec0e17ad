package worker

import "github.com/wirebench/wirebench/schemas"

// splitKey is the unit that must stay on one worker and one host: a closed-loop user of a stage
// (with all its conversations, which it holds one after another), a conversation, or a single
// request. Users are numbered per stage, so the stage is mixed in.
func splitKey(r *schemas.ScheduleRequest) int64 {
	switch {
	case r.User >= 0:
		return int64(r.Stage)<<32 | int64(r.User)
	case r.Conversation >= 0:
		return r.Conversation
	default:
		return r.Seq
	}
}

// Owner reports which host shard (key mod shards) and which worker of that host
// ((key / shards) mod workers) send r. Dividing before the worker split keeps both splits even:
// with 2 hosts of 2 workers, keys 0,2,4,6 go to host 0 and then alternate between its workers.
func Owner(r *schemas.ScheduleRequest, shards, workers int) (shard, worker int) {
	k := splitKey(r)
	if k < 0 {
		k = -k
	}
	if shards < 1 {
		shards = 1
	}
	if workers < 1 {
		workers = 1
	}
	return int(k % int64(shards)), int((k / int64(shards)) % int64(workers))
}
