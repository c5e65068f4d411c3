package main

import (
	"encoding/json"
	"errors"
	"maps"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/promtest"
	"github.com/llmrec/llmrec/record/sim"
)

// An exported recording loads with a real promtool, and a real
// prometheus over the blocks answers every recorded sample of every ok
// scrape, with its value and its first-byte millisecond, under the
// engine's name and labels plus llmrec_run and llmrec_target.
func TestExportOpenMetricsIntoPrometheus(t *testing.T) {
	promtool := promtest.Tool(t, "promtool")
	promtest.Tool(t, "prometheus")
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := record.WriteGenerated(dir, sim.DefaultScenario(), sim.GenerateOptions{Interval: time.Second}, 0, nil); err != nil {
		t.Fatal(err)
	}
	om := filepath.Join(t.TempDir(), "run.om")
	_, stderr, err := runCLI("export", dir, "--openmetrics", "-o", om)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stderr, "wrote ") {
		t.Errorf("stderr %q", stderr)
	}
	blocks := t.TempDir()
	if out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", om, blocks).CombinedOutput(); err != nil {
		t.Fatalf("promtool: %v\n%s", err, out)
	}

	// What the recording holds, keyed as Prometheus names a series.
	want := map[string][]promtest.Sample{}
	var last int64
	for _, seg := range mustOpen(t, dir).Segments {
		err := capture.ReadSegment(seg, func(s *capture.Scrape) error {
			if s.Outcome != capture.OutcomeOK || s.Endpoint != capture.EndpointMetrics {
				return nil
			}
			ms := s.FirstByteNs / 1e6
			last = max(last, ms)
			for _, x := range s.Samples {
				labels := map[string]string{}
				if err := json.Unmarshal([]byte(x.Labels), &labels); err != nil {
					return err
				}
				labels["__name__"], labels["llmrec_run"], labels["llmrec_target"] = x.Name, s.RunID, s.Target
				k := seriesKey(labels)
				want[k] = append(want[k], promtest.Sample{Ms: ms, Value: strconv.FormatFloat(x.Value, 'g', -1, 64)})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(want) < 100 {
		t.Fatalf("only %d series recorded", len(want))
	}

	srv := promtest.Start(t, blocks)
	got := srv.Raw(t, `{llmrec_run=~".+"}[1h]`, time.UnixMilli(last+1000))
	if len(got) != len(want) {
		t.Errorf("prometheus holds %d series, the recording %d", len(got), len(want))
	}
	var n int
	for _, s := range got {
		k := seriesKey(s.Labels)
		w, ok := want[k]
		if !ok {
			t.Errorf("prometheus holds %s, not recorded", k)
			continue
		}
		if len(s.Samples) != len(w) {
			t.Errorf("%s: %d samples in prometheus, %d recorded", k, len(s.Samples), len(w))
			continue
		}
		for i := range w {
			if s.Samples[i].Ms != w[i].Ms || !sameValue(s.Samples[i].Value, w[i].Value) {
				t.Fatalf("%s sample %d: prometheus %v, recorded %v", k, i, s.Samples[i], w[i])
			}
			n++
		}
	}
	t.Logf("%d series, %d samples compared", len(got), n)
}

func mustOpen(t *testing.T, dir string) *capture.Run {
	t.Helper()
	r, err := capture.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func seriesKey(labels map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		b.WriteString(k + "=" + strconv.Quote(labels[k]) + ",")
	}
	return b.String()
}

// sameValue compares two values as text, NaN equal to NaN.
func sameValue(a, b string) bool {
	x, errx := strconv.ParseFloat(a, 64)
	y, erry := strconv.ParseFloat(b, 64)
	return errx == nil && erry == nil && (x == y || math.IsNaN(x) && math.IsNaN(y))
}

// export's --openmetrics mode refuses the one-body flags, and -o is for
// it alone.
func TestExportOpenMetricsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"export", "d", "--openmetrics", "--seq", "3"},
		{"export", "d", "--target", "a", "--seq", "3", "-o", "x"},
	} {
		if _, _, err := runCLI(args...); !errors.Is(err, errUsage) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v", args, err)
		}
	}
}
