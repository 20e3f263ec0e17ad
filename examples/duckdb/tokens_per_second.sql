-- Output tokens per second per stage from the raw shards, computed as stages.parquet output_tps
-- is (when the server sends usage): the stage's completion rate, (ok requests - 1) / (last ok
-- completion - first ok completion), times the mean output tokens per ok request.
-- Usage: duckdb -c "SET VARIABLE run = 'runs/smoke'; .read examples/duckdb/tokens_per_second.sql"
WITH req AS (
  SELECT stage, done_ns, usage_completion_tokens AS n,
         status = 200 AND error_kind = '' AND done_ns IS NOT NULL AS ok
  FROM read_parquet(getvariable('run') || '/raw/requests-*.parquet') WHERE NOT warmup
)
SELECT stage,
       sum(n) FILTER (WHERE ok) AS output_tokens,
       (count(*) FILTER (WHERE ok) - 1) / ((max(done_ns) FILTER (WHERE ok) - min(done_ns) FILTER (WHERE ok)) / 1e9)
         / count(*) FILTER (WHERE ok) * sum(n) FILTER (WHERE ok) AS output_tps
FROM req
GROUP BY stage ORDER BY stage;
