package main

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The fleet scenario (-fleet): many tables, each written slowly, as a
// platform team's reactor sees them: 1,000 tables at one commit per 10 s
// by default. What it adds to the soak's figures: reactor's CPU per writer
// commit and per table, and the catalog calls per second
// (reactor_catalog_calls_total, scraped from reactor's /metrics when the
// writers start and stop).

// Fleet targets (issue 38): 1,000 tables at one commit per 10 s each in at
// most half a core and 1 GiB.
const (
	fleetTargetCores = 0.5
	fleetTargetRSS   = 1 << 30
)

// fleetDefaults are the -fleet preset's values of the flags not given.
var fleetDefaults = map[string]string{
	"tables": "1000", "rate": "0.1", "partitions": "4", "rows": "20", "duration": "10m",
	"interval": "1m", "warmup": "3m", "window": "2m", "scan-tables": "2", "scan-every": "2",
}

// metricsAddr is implemented by maintainers with a /metrics endpoint.
type metricsAddr interface{ MetricsAddr() string }

// catalogCalls reads reactor_catalog_calls_total by call kind from the
// maintainer's /metrics (nil when it has none).
func catalogCalls(ctx context.Context, mx maintainer) (map[string]float64, error) {
	m, ok := mx.(metricsAddr)
	if !ok || m.MetricsAddr() == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.MetricsAddr()+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape reactor's metrics: %w", err)
	}
	defer resp.Body.Close()
	return parseCatalogCalls(bufio.NewScanner(resp.Body))
}

// parseCatalogCalls picks the reactor_catalog_calls_total series out of
// Prometheus' text format.
func parseCatalogCalls(sc *bufio.Scanner) (map[string]float64, error) {
	const prefix = `reactor_catalog_calls_total{call="`
	out := map[string]float64{}
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		call, value, ok := strings.Cut(rest, `"} `)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return nil, fmt.Errorf("reactor_catalog_calls_total{call=%q}: %w", call, err)
		}
		out[call] = v
	}
	return out, sc.Err()
}

// fleetText is the summary's fleet block: CPU per commit and per table,
// memory and catalog calls against the fleet targets.
func (s *soak) fleetText(cpu time.Duration, commits int) string {
	var b strings.Builder
	written := s.writersEnd.Sub(s.start).Seconds()
	if written <= 0 || commits == 0 {
		return ""
	}
	cores := cpu.Seconds() / written
	fmt.Fprintf(&b, "fleet: %d tables, %d writer commits; %s used %.2f cores: %.1f ms per writer commit, %.2f ms/s per table; peak memory %s\n",
		s.cfg.tables, commits, s.cfg.maintainer, cores, 1000*cpu.Seconds()/float64(commits),
		1000*cores/float64(s.cfg.tables), bytesText(s.peakRSS))
	if s.callsStart != nil && s.callsEnd != nil {
		var total float64
		var parts []string
		for _, call := range slices.Sorted(maps.Keys(s.callsEnd)) {
			n := s.callsEnd[call] - s.callsStart[call]
			total += n
			parts = append(parts, fmt.Sprintf("%s %.1f/s", call, n/written))
		}
		fmt.Fprintf(&b, "fleet: catalog calls %.1f/s (%s), %.2f per writer commit\n", total/written,
			strings.Join(parts, ", "), total/float64(commits))
	}
	if s.cfg.fleet {
		verdict := func(met bool) string {
			if met {
				return "met"
			}
			return "MISSED"
		}
		fmt.Fprintf(&b, "fleet targets (1,000 tables at one commit per 10 s): CPU %.2f cores <= %.1f: %s; peak memory %s <= %s: %s\n",
			cores, fleetTargetCores, verdict(cores <= fleetTargetCores), bytesText(s.peakRSS), bytesText(fleetTargetRSS),
			verdict(s.peakRSS <= fleetTargetRSS))
	}
	return b.String()
}
