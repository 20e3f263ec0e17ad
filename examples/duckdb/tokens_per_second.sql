-- Output tokens per second per stage from the raw shards, computed as stages.parquet output_tps
-- is (when the server sends usage): the output tokens of every ok request, of any stage, that
-- completed inside the stage's send window [first sent_ns, last sent_ns), over that window.
-- Usage: duckdb -c "SET VARIABLE run = 'runs/smoke'; .read examples/duckdb/tokens_per_second.sql"
WITH req AS (
  SELECT stage, warmup, sent_ns, done_ns, usage_completion_tokens AS n,
         status = 200 AND error_kind = '' AND done_ns IS NOT NULL AS ok
  FROM read_parquet(getvariable('run') || '/raw/requests-*.parquet')
),
win AS (
  SELECT stage, min(sent_ns) AS f, max(sent_ns) AS l FROM req WHERE NOT warmup GROUP BY stage
)
SELECT win.stage,
       coalesce(sum(req.n), 0) AS output_tokens,
       coalesce(sum(req.n), 0) / ((win.l - win.f) / 1e9) AS output_tps
FROM win LEFT JOIN req ON req.ok AND req.done_ns >= win.f AND req.done_ns < win.l
GROUP BY win.stage, win.f, win.l ORDER BY win.stage;
