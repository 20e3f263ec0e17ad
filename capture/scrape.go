package capture

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wirebench/wirebench/internal/tlsclient"
	"github.com/wirebench/wirebench/schemas"
)

// metricsClient is the scrape's HTTP client. The target's TLS settings (ca_file, client
// certificate, server_name, insecure_skip_verify) apply when metrics_url is on the target's
// host, as where vLLM and SGLang serve /metrics beside the API; another host is verified with
// the system's roots.
func metricsClient(t schemas.Target) (*http.Client, error) {
	client := &http.Client{Timeout: 900 * time.Millisecond}
	m, err := url.Parse(t.MetricsURL)
	if err != nil {
		return nil, fmt.Errorf("target.metrics_url: %w", err)
	}
	if u, err := url.Parse(t.URL); err != nil || m.Scheme != "https" || u.Hostname() != m.Hostname() {
		return client, nil
	}
	cfg, err := tlsclient.Config(t.TLS)
	if err != nil {
		return nil, err
	}
	client.Transport = &http.Transport{TLSClientConfig: cfg, Proxy: http.ProxyFromEnvironment}
	return client, nil
}

// scrape fetches the Prometheus text endpoint url with client once a second until ctx ends and
// returns every sample, stamped with stageAt(scrape time). A failed scrape is logged once and
// skipped: the server's metrics are a side channel and never stop a capture.
func scrape(ctx context.Context, client *http.Client, url string, stageAt func(int64) int32, warn func(error)) []schemas.ServerMetric {
	var rows []schemas.ServerMetric
	t := time.NewTicker(time.Second)
	defer t.Stop()
	warned := false
	for {
		now := time.Now().UnixNano()
		err := func() error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("status %s", resp.Status)
			}
			rows, err = parseProm(resp.Body, now, stageAt(now), rows)
			return err
		}()
		if err != nil && ctx.Err() == nil && !warned {
			warn(fmt.Errorf("scrape %s: %w", url, err))
			warned = true
		}
		select {
		case <-ctx.Done():
			return rows
		case <-t.C:
		}
	}
}

// parseProm appends the samples of a Prometheus text exposition (version 0.0.4) to rows. It is
// a small parser on purpose: names, optional {labels} with quoted, escaped values, a value and
// an optional timestamp; comments and blank lines are skipped. Labels are stored sorted.
func parseProm(r io.Reader, scrapeNs int64, stage int32, rows []schemas.ServerMetric) ([]schemas.ServerMetric, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, labels, rest, err := splitSample(line)
		if err != nil {
			return rows, fmt.Errorf("metrics line %d: %w", n, err)
		}
		f := strings.Fields(rest)
		if len(f) < 1 {
			return rows, fmt.Errorf("metrics line %d: no value in %q", n, line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return rows, fmt.Errorf("metrics line %d: value %q: %w", n, f[0], err)
		}
		rows = append(rows, schemas.ServerMetric{ScrapeNs: scrapeNs, Stage: stage, Name: name, Labels: labels, Value: v})
	}
	return rows, sc.Err()
}

// splitSample splits `name{a="x",b="y"} rest` into the name, the labels sorted in text form
// without braces, and the rest.
func splitSample(line string) (name, labels, rest string, err error) {
	i := strings.IndexAny(line, "{ \t")
	if i < 0 {
		return "", "", "", fmt.Errorf("no value in %q", line)
	}
	name = line[:i]
	if line[i] != '{' {
		return name, "", line[i:], nil
	}
	var pairs []string
	s := line[i+1:]
	for {
		s = strings.TrimLeft(s, " ,")
		if strings.HasPrefix(s, "}") {
			rest = s[1:]
			break
		}
		eq := strings.IndexByte(s, '=')
		if eq < 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return "", "", "", fmt.Errorf("bad labels in %q", line)
		}
		j := eq + 2
		for ; j < len(s) && s[j] != '"'; j++ {
			if s[j] == '\\' {
				j++
			}
		}
		if j >= len(s) {
			return "", "", "", fmt.Errorf("unterminated label value in %q", line)
		}
		pairs = append(pairs, strings.TrimSpace(s[:eq])+"="+s[eq+1:j+1])
		s = s[j+1:]
	}
	sort.Strings(pairs)
	return name, strings.Join(pairs, ","), rest, nil
}
