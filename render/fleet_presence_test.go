package render

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/rate"
)

// The fleet line breaks where the engines summed change (discovery added
// or removed one), and the hover of a sum says who was absent: a sum over
// fewer engines is never joined to one over more, so it does not read as
// a fall in load.
func TestFleetLineBreaksAtLeave(t *testing.T) {
	fl := findings.Fleet{Targets: []string{"a", "b"}}
	for i, absent := range [][]string{nil, nil, {"b"}, {"b"}, nil} {
		total := 2 - len(absent)
		fl.Polls = append(fl.Polls, findings.FleetPoint{T: 1000 + float64(i), Live: total, Total: total,
			Decode: rate.Some(100 * float64(total)), DecodeOf: total, Absent: absent})
	}
	chs, err := fleetCharts(fl)
	if err != nil || len(chs) != 1 {
		t.Fatal(chs, err)
	}
	b, _ := json.Marshal(chs[0].Option)
	var opt struct {
		Series []struct {
			Name string
			Data [][]any
		}
	}
	if err := json.Unmarshal(b, &opt); err != nil {
		t.Fatal(err)
	}
	var xs []string
	for _, d := range opt.Series[0].Data {
		y := "null"
		if d[1] != nil {
			y = "v"
		}
		xs = append(xs, y)
	}
	// 5 polls, a null before the first without b and before b's return.
	if got := strings.Join(xs, " "); got != "v v null v v null v" {
		t.Errorf("fleet line %s: %s", opt.Series[0].Name, got)
	}
	if prov := strings.Join(chs[0].Prov, "\n"); !strings.Contains(prov, "the target set changed: every engine present → b absent") ||
		!strings.Contains(prov, "over 1 of 1 engines (b absent from the target set)") {
		t.Errorf("provenance:\n%s", prov)
	}
}
