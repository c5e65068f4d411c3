package phases

import (
	"fmt"
	"math"
	"strings"

	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/rate"
)

// Blocks are one figure measured over non-overlapping blocks of its phase:
// independent-enough values of one quantity, the sample a diff compares
// (analyze/diff/stat). Polls are autocorrelated (each published window
// overlaps the last, and load drifts slowly), so they are never the
// sample; blocks are.
//
// The rule (docs/analysis-format.md, docs/diff-method.md):
//   - A block runs from one good poll to a later one of the same process,
//     and its value is computed exactly as the phase's figure is, over the
//     block: the counters' Δ/Δt through the engine's reader, the histogram
//     quantiles of the bucket Δs across the block, the gauges' mean or max
//     over the polls inside it.
//   - Base blocks are at least MinBlockIntervals poll intervals long, and
//     longer when the phase has more than MaxBlocks of them: the base
//     length is max(MinBlockIntervals, ⌈intervals/MaxBlocks⌉) intervals. A
//     phase too short for MinBlocks base blocks has none (Method says so).
//   - Per figure, blocks are doubled (adjacent pairs of one process merged)
//     while the lag-1 autocorrelation of their values is clearly positive,
//     above 1/√n for n values (one standard error of a white-noise
//     autocorrelation: a block length that leaves the values correlated
//     makes the test too ready to call a difference, so doubt doubles), and
//     doubling leaves at least MinBlocks values.
//   - Blocks break at a restart (the interval across it is left out, as
//     the phase figure leaves it out); a block ends at the first good poll
//     at or past its length, and a shorter remainder at a restart or the
//     phase's end is left out. A block over a hole in the polls (a gap of
//     more than findings.HoleFactor cadences) is kept and counted. Method
//     says all of these.
type Blocks struct {
	// Seconds is the blocks' nominal length.
	Seconds float64 `json:"seconds"`
	// Values are one per block, in time order; null where the block has no
	// value (no observation for a quantile, a gauge never published).
	Values []rate.Num `json:"values"`
	// Method says how the blocks were cut, and what broke or left them out.
	Method string `json:"method"`
	// NeedSeconds, when the phase was too short for blocks, is the length
	// between good polls it would need at its cadence: MinBlocks ×
	// MinBlockIntervals poll intervals (more where restarts or holes cut
	// it); 0 otherwise.
	NeedSeconds float64 `json:"need_seconds,omitempty"`
}

// The block rule's constants.
const (
	MinBlockIntervals = 10
	MaxBlocks         = 40
	MinBlocks         = 5
)

// block is one block: from good poll from to good poll to, the counters'
// Δ the difference of snapshots a and b.
type block struct {
	from, to int
	a, b     int // snapshot indices
	hole     bool
}

// blocker marks the blocks' boundaries while a window is summed.
type blocker struct {
	in   *Input
	need float64 // a block's length in seconds, less half a cadence
	// needSeconds is the phase length blocks would need, when too short.
	needSeconds float64
	seconds     float64
	ivs         int // intervals a base block is meant to hold
	short       string
	snaps       [][]float64
	blocks      []block
	segs        []int // by base block: its process segment
	seg         int
	from        int // the open block's first poll; -1 none
	snap        int
	hole        bool
	partial     int
	holes       int
	restarts    int
}

// newBlocker sizes the blocks of a window whose first and last good polls
// are a and z (a < 0: none).
func newBlocker(in *Input, a, z int) *blocker {
	bl := &blocker{in: in, from: -1, seg: -1}
	n := z - a // poll intervals from the first good poll to the last
	if a < 0 || n < MinBlocks*MinBlockIntervals {
		bl.needSeconds = MinBlocks * MinBlockIntervals * in.cadence
		bl.short = fmt.Sprintf("no blocks: the phase holds %d poll intervals between good polls, %d needed for %d blocks of %d",
			max(n, 0), MinBlocks*MinBlockIntervals, MinBlocks, MinBlockIntervals)
		return bl
	}
	bl.ivs = max(MinBlockIntervals, (n+MaxBlocks-1)/MaxBlocks)
	bl.seconds = float64(bl.ivs) * in.cadence
	bl.need = bl.seconds - in.cadence/2
	return bl
}

// begin opens a process segment at good poll g.
func (bl *blocker) begin(g int, acc []float64) {
	if bl == nil || bl.short != "" {
		return
	}
	bl.seg++
	if bl.seg > 0 {
		bl.restarts++
	}
	bl.from, bl.hole = g, false
	bl.snaps = append(bl.snaps, append([]float64(nil), acc...))
	bl.snap = len(bl.snaps) - 1
}

// step records poll i's interval, just added to acc.
func (bl *blocker) step(i int, good bool, acc []float64) {
	if bl == nil || bl.short != "" {
		return
	}
	ps := &bl.in.Target.Polls
	// Polls further apart than findings' hole factor leave a hole.
	if ps.T(i)-ps.T(i-1) > findings.HoleFactor*bl.in.cadence {
		bl.hole = true
	}
	if !good || ps.T(i)-ps.T(bl.from) < bl.need {
		return
	}
	bl.snaps = append(bl.snaps, append([]float64(nil), acc...))
	bl.blocks = append(bl.blocks, block{from: bl.from, to: i, a: bl.snap, b: len(bl.snaps) - 1, hole: bl.hole})
	bl.segs = append(bl.segs, bl.seg)
	if bl.hole {
		bl.holes++
	}
	bl.from, bl.snap, bl.hole = i, len(bl.snaps)-1, false
}

// end closes a process segment at good poll g: a remainder shorter than a
// block is left out.
func (bl *blocker) end(g int) {
	if bl == nil || bl.short != "" {
		return
	}
	if bl.from >= 0 && bl.from < g {
		bl.partial++
	}
	bl.from = -1
}

// merged are the blocks of one level up: adjacent pairs of one segment.
func (bl *blocker) merged(bs []block, segs []int) ([]block, []int, int) {
	var out []block
	var outSegs []int
	left := 0
	for j := 0; j < len(bs); {
		if j+1 < len(bs) && segs[j] == segs[j+1] && bs[j].to == bs[j+1].from {
			out = append(out, block{from: bs[j].from, to: bs[j+1].to, a: bs[j].a, b: bs[j+1].b, hole: bs[j].hole || bs[j+1].hole})
			outSegs = append(outSegs, segs[j])
			j += 2
			continue
		}
		left++
		j++
	}
	return out, outSegs, left
}

// level is one block length's blocks and, once measured, every figure's
// values over them.
type level struct {
	blocks []block
	segs   []int
	left   int          // base blocks left out by the pairing so far
	vals   [][]rate.Num // by figure, by block
}

// blockFigures sets each figure's Blocks.
func (in *Input) blockFigures(s *sums, figs []Figure) {
	bl := s.bl
	if bl.short != "" || len(bl.blocks) < MinBlocks {
		why := bl.short
		if why == "" {
			why = fmt.Sprintf("no blocks: %s of %s between good polls, %d needed%s", plural(len(bl.blocks), "block"), blockSecs(bl.seconds), MinBlocks, bl.breaks())
		}
		need := bl.needSeconds
		if need == 0 {
			// Long enough but cut by restarts or remainders: at least
			// MinBlocks blocks of their length, uncut.
			need = MinBlocks * bl.seconds
		}
		for k := range figs {
			figs[k].Blocks = &Blocks{Seconds: bl.seconds, Values: []rate.Num{}, Method: why, NeedSeconds: need}
		}
		return
	}
	levels := []*level{{blocks: bl.blocks, segs: bl.segs}}
	for k := range figs {
		lv := 0
		r := 0.0
		for {
			vals := in.levelValues(s, levels[lv], len(figs))[k]
			var n int
			r, n = lag1(vals, levels[lv])
			if lv+1 == len(levels) {
				up, segs, left := bl.merged(levels[lv].blocks, levels[lv].segs)
				levels = append(levels, &level{blocks: up, segs: segs, left: levels[lv].left*2 + left})
			}
			// Clearly positive: above the white-noise bound, and room to double.
			if n < MinBlocks || r <= 1/math.Sqrt(float64(n)) || len(levels[lv+1].blocks) < MinBlocks {
				break
			}
			lv++
		}
		L := levels[lv]
		f := 1 << lv
		var m strings.Builder
		fmt.Fprintf(&m, "%s of %s (%d poll intervals) from good poll to good poll, %d with a value",
			plural(len(L.blocks), "non-overlapping block"), blockSecs(bl.seconds*float64(f)), bl.ivs*f, count(L.vals[k]))
		if c := count(L.vals[k]); c >= 2 {
			fmt.Fprintf(&m, "; lag-1 autocorrelation of the values %.2f (limit 1/√n %.2f)", r, 1/math.Sqrt(float64(c)))
		}
		if lv > 0 {
			fmt.Fprintf(&m, "; doubled %d× from %s blocks while it was above the limit", lv, blockSecs(bl.seconds))
			if L.left > 0 {
				fmt.Fprintf(&m, ", %s left out", plural(L.left, "unpaired base block"))
			}
		}
		m.WriteString(bl.breaks())
		if h := holesIn(L.blocks); h > 0 {
			fmt.Fprintf(&m, "; %s a hole in the polls", plural(h, "block")+map[bool]string{true: " spans", false: " span"}[h == 1])
		}
		figs[k].Blocks = &Blocks{Seconds: bl.seconds * float64(f), Values: L.vals[k], Method: m.String()}
	}
}

// breaks says what cut the blocks short: restarts and remainders.
func (bl *blocker) breaks() string {
	var b strings.Builder
	if bl.restarts > 0 {
		fmt.Fprintf(&b, "; blocks break at %s", plural(bl.restarts, "restart"))
	}
	if bl.partial > 0 {
		fmt.Fprintf(&b, "; %s shorter than a block left out (at a restart or the phase's end)", plural(bl.partial, "remainder"))
	}
	return b.String()
}

func holesIn(bs []block) int {
	n := 0
	for _, b := range bs {
		if b.hole {
			n++
		}
	}
	return n
}

func count(vs []rate.Num) int {
	n := 0
	for _, v := range vs {
		if v.Valid {
			n++
		}
	}
	return n
}

// levelValues measures every figure over a level's blocks, once.
func (in *Input) levelValues(s *sums, L *level, nfigs int) [][]rate.Num {
	if L.vals != nil {
		return L.vals
	}
	bl := s.bl
	l, ps := in.Log, &in.Target.Polls
	L.vals = make([][]rate.Num, nfigs)
	for k := range L.vals {
		L.vals[k] = make([]rate.Num, len(L.blocks))
	}
	acc := make([]float64, len(l.Series))
	var figs []Figure
	for j, b := range L.blocks {
		sa, sb := bl.snaps[b.a], bl.snaps[b.b]
		for x := range acc {
			acc[x] = sb[x] - sa[x]
		}
		cells := in.evaluate(ps.T(b.to)-ps.T(b.from), acc)
		figs = counted(figs[:0], l, ps, cells, acc, runs{{b.from, max(b.from, b.to)}}, false)
		for k := range min(nfigs, len(figs)) {
			L.vals[k][j] = figs[k].Value
		}
	}
	return L.vals
}

// lag1 is the lag-1 autocorrelation of a level's values over the pairs of
// adjacent blocks (one process, no gap) that both have one, about the mean
// of all, and the number of values; 0 when they do not vary.
func lag1(vals []rate.Num, L *level) (float64, int) {
	sum, n := 0.0, 0
	for _, v := range vals {
		if v.Valid {
			sum += v.V
			n++
		}
	}
	if n < 2 {
		return 0, n
	}
	mean := sum / float64(n)
	den, num := 0.0, 0.0
	for j, v := range vals {
		if !v.Valid {
			continue
		}
		d := v.V - mean
		den += d * d
		if j+1 < len(vals) && vals[j+1].Valid && L.segs[j] == L.segs[j+1] && L.blocks[j].to == L.blocks[j+1].from {
			num += d * (vals[j+1].V - mean)
		}
	}
	// Values that do not vary carry no correlation.
	if den <= 1e-12*mean*mean*float64(n) || den == 0 {
		return 0, n
	}
	return num / den, n
}

// blockSecs formats a block length.
func blockSecs(s float64) string {
	return fmt.Sprintf("%g s", math.Round(s*1000)/1000)
}

// plural is "1 block", "2 blocks".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
