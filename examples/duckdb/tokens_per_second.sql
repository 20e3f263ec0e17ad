-- Output tokens per second per stage from the raw shards, computed as stages.parquet output_tps
-- is (when the server sends usage): the steady completion rate (ok completions in the whole
-- 100 ms buckets, counted from the stage start, inside the middle 80% of the send window) times
-- the mean output tokens per ok request. For stages longer than a few hundred milliseconds.
-- Usage: duckdb -c "SET VARIABLE run = 'runs/smoke'; .read examples/duckdb/tokens_per_second.sql"
WITH m AS (SELECT start_ns, unnest(stages) AS s FROM read_json_auto(getvariable('run') || '/manifest.json')),
st AS (SELECT s.index AS stage, start_ns + s.offset_ns AS t0 FROM m),
req AS (
  SELECT stage, sent_ns, done_ns, usage_completion_tokens AS n,
         status = 200 AND error_kind = '' AND done_ns IS NOT NULL AS ok
  FROM read_parquet(getvariable('run') || '/raw/requests-*.parquet') WHERE NOT warmup
),
win AS (
  SELECT stage, min(sent_ns) AS f, max(sent_ns) AS l,
         count(*) FILTER (WHERE ok) AS ok_requests, sum(n) FILTER (WHERE ok) AS tokens
  FROM req GROUP BY stage
),
b AS (
  SELECT win.*, st.t0,
         ceil((f + (l - f) // 10 - t0) / 1e8)::BIGINT AS lo,           -- first whole bucket
         floor((l - (l - f) // 10 - t0) / 1e8)::BIGINT - 1 AS hi       -- last whole bucket
  FROM win JOIN st USING (stage)
)
SELECT b.stage,
       any_value(b.tokens) AS output_tokens,
       count(*) FILTER (WHERE req.ok AND req.done_ns >= b.t0 + b.lo * 100000000
                                     AND req.done_ns < b.t0 + (b.hi + 1) * 100000000)
         / ((any_value(b.hi) - any_value(b.lo) + 1) * 100000000 / 1e9)
         / any_value(b.ok_requests) * any_value(b.tokens) AS output_tps
FROM b JOIN req USING (stage)
GROUP BY b.stage ORDER BY b.stage;
