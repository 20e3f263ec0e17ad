-- The packet tap's time of every event (rx_tap_ns: the arrival of the segment that carried the
-- event's last byte) and of every request (tx_tap_ns: the departure of its last segment), joined
-- from the raw shards the way aggregate does it (aggregate/tapjoin.go):
--   * a connection starts at each client SYN on its local port; its ISNs come from that SYN and
--     the SYN-ACK that follows;
--   * a data segment's bytes are [seq - (ISN + 1) mod 2^32, + len) of its stream;
--   * a request is on the latest connection of its local port opened at or before sent_ns; an
--     event's last byte is rx_stream_end - 1, a request's tx_stream_end - 1; the earliest segment
--     that carried it counts (a retransmission does not move an arrival later).
-- Usage: duckdb -c "SET VARIABLE run = 'runs/smoke'; .read examples/duckdb/tap_join.sql"
WITH seg AS (
  SELECT * FROM read_parquet(getvariable('run') || '/raw/segments-*.parquet')
), conn AS (
  SELECT s.local_port, s.ts_ns AS syn_ns, s.seq AS isn_tx,
         (SELECT a.seq FROM seg a
          WHERE a.dir = 'rx' AND a.local_port = s.local_port AND a.flags & 2 = 2 AND a.ts_ns >= s.ts_ns
          ORDER BY a.ts_ns LIMIT 1) AS isn_rx
  FROM seg s WHERE s.dir = 'tx' AND s.flags & 2 = 2 AND s.flags & 16 = 0
), data AS (
  SELECT d.dir, d.local_port, c.syn_ns, d.ts_ns, d.len,
         ((d.seq - CASE d.dir WHEN 'tx' THEN c.isn_tx ELSE c.isn_rx END - 1) % 4294967296 + 4294967296)
           % 4294967296 AS start
  FROM seg d ASOF JOIN conn c ON d.local_port = c.local_port AND d.ts_ns >= c.syn_ns
  WHERE d.len > 0
), req AS (
  SELECT r.seq, r.tx_stream_end, c.local_port, c.syn_ns
  FROM read_parquet(getvariable('run') || '/raw/requests-*.parquet') r
  ASOF JOIN conn c ON r.local_port = c.local_port AND r.sent_ns >= c.syn_ns
  WHERE r.sent_ns > 0
)
SELECT ch.seq, ch.index,
       (SELECT min(d.ts_ns) FROM data d
        WHERE d.dir = 'rx' AND d.local_port = req.local_port AND d.syn_ns = req.syn_ns
          AND d.start < ch.rx_stream_end AND d.start + d.len >= ch.rx_stream_end) AS rx_tap_ns,
       (SELECT min(d.ts_ns) FROM data d
        WHERE d.dir = 'tx' AND d.local_port = req.local_port AND d.syn_ns = req.syn_ns
          AND d.start < req.tx_stream_end AND d.start + d.len >= req.tx_stream_end) AS tx_tap_ns
FROM read_parquet(getvariable('run') || '/raw/chunks-*.parquet') ch JOIN req USING (seq)
ORDER BY ch.seq, ch.index;
