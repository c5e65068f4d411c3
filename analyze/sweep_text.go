package analyze

import (
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/analyze/sweep"
)

// sweepHeads are the sweep table's column heads before the SLOs'.
var sweepHeads = []string{"level", "status", "offered", "running", "decode tok/s", "prompt tok/s", "TTFT p50", "TTFT p99",
	"ITL p50", "ITL p99", "e2e p50", "e2e p99", "waiting", "max KV", "preempt/s"}

// writeSweep writes the sweep: per curve a row per level in order of
// offered load, the knee with its evidence, and each SLO's boundary. A
// run of one level draws no curve and writes nothing.
func (r *Result) writeSweep(w io.Writer) {
	s := &r.Sweep
	// One level draws no curve.
	if !slices.ContainsFunc(s.Curves, func(c sweep.Curve) bool { return len(c.Points) > 1 }) {
		return
	}
	basis := "named phases, a warmup left out"
	if s.Basis == "found" {
		basis = "each target's steady phases found at its load edges"
	}
	fmt.Fprintf(w, "sweep (levels: %s; in order of offered load = the client's in flight, else mean running + waiting; latencies ms, * a mean where the quantile cannot be resolved; unknown is never 0):\n", basis)
	for _, c := range s.Curves {
		if len(c.Points) < 2 {
			continue
		}
		name := c.Target
		if name == "" {
			name = "fleet"
		}
		fmt.Fprintf(w, "  %s:\n", name)
		head := append([]string{}, sweepHeads...)
		if s.GPUs.Valid {
			head = append(head, "tok/s/GPU")
		}
		head = append(head, "tok/s/user")
		if s.GPUHourUSD.Valid {
			head = append(head, "$/M tok")
		}
		for _, o := range s.SLOs {
			head = append(head, o.Name)
		}
		rows := [][]string{append(head, "saturated")}
		for i := range c.Points {
			p := &c.Points[i]
			cells := []string{p.Phase, p.Status, valText(p.Offered, 1), valText(p.Running, 1), valText(p.Decode, 0), valText(p.Prompt, 0),
				msVal(p.TTFTp50), msVal(p.TTFTp99), msVal(p.ITLp50), msVal(p.ITLp99), msVal(p.E2Ep50), msVal(p.E2Ep99),
				valText(p.Waiting, 1), pctVal(p.KV), valText(p.Preemptions, 2)}
			if s.GPUs.Valid {
				cells = append(cells, valText(p.PerGPU, 0))
			}
			cells = append(cells, valText(p.PerUser, 1))
			if s.GPUHourUSD.Valid {
				cells = append(cells, valText(p.CostPerMTokens, 2))
			}
			for _, a := range p.SLOs {
				cells = append(cells, attainText(&a))
			}
			sat := "no"
			if p.Saturated {
				sat = "yes:"
			}
			for _, e := range p.Saturation {
				sat += " " + e.Kind
			}
			rows = append(rows, append(cells, sat))
		}
		writeColumns(w, rows, 2, nil)
		fmt.Fprintf(w, "    knee: %s\n", c.Knee.Text)
		if c.Knee.Fact != "" {
			fmt.Fprintf(w, "      the engine's own word: %s\n", c.Knee.Fact)
		}
		for _, b := range c.Boundaries {
			line := fmt.Sprintf("    SLO %s: %s", b.SLO, b.Text)
			if b.At.Valid {
				line += fmt.Sprintf("; crosses at offered %s", strconv.FormatFloat(b.At.V, 'g', 3, 64))
			}
			if b.Shape != "" {
				line += " (" + b.Shape + ")"
			}
			fmt.Fprintln(w, line)
		}
		for i := range c.Points {
			if g := c.Points[i].Goodput; g != nil && g.RequestsPerSecond.Valid {
				fmt.Fprintf(w, "    goodput %s: %d of %d requests met every SLO: %.3g requests/s, %.4g output tokens/s\n",
					c.Points[i].Phase, g.Good, g.Requests, g.RequestsPerSecond.V, g.TokensPerSecond.V)
			}
		}
	}
	fmt.Fprintln(w)
}

// valText is a value to digits decimals, "unknown" when null.
func valText(v sweep.Value, digits int) string {
	if !v.Value.Valid {
		return "unknown"
	}
	return strconv.FormatFloat(v.Value.V, 'f', digits, 64)
}

// msVal is a latency in ms as its bucket lets it, "*" marking a mean.
func msVal(v sweep.Value) string {
	if !v.Value.Valid {
		return "unknown"
	}
	s := v.Bucket.Text(v.Value.V, func(x float64) string { return strconv.FormatFloat(1000*x, 'f', 1, 64) })
	if v.Mean != "" {
		s += "*"
	}
	return s
}

// pctVal is a ratio in %.
func pctVal(v sweep.Value) string {
	if !v.Value.Valid {
		return "unknown"
	}
	return strconv.FormatFloat(100*v.Value.V, 'f', 0, 64) + " %"
}

// attainText is an SLO at a level: its verdict and the share under the
// threshold, a bracket where the threshold is no bucket bound.
func attainText(a *sweep.Attainment) string {
	if !a.Lo.Valid {
		return a.Verdict
	}
	if a.Exact {
		return a.Verdict + " " + share(a.Lo)
	}
	return a.Verdict + " [" + share(a.Lo) + "–" + share(a.Hi) + "]"
}

// share is a share in %, to 0.1.
func share(n rate.Num) string { return strconv.FormatFloat(100*n.V, 'f', 1, 64) + "%" }
