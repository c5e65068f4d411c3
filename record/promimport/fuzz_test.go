package promimport

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"testing"
)

// A store's answer is read without panicking whatever it holds, and a
// timestamp is taken only when it is decimal seconds: then it is the
// number a float reading gives, to the millisecond (truncated), and prints
// back as itself.
func FuzzPair(f *testing.F) {
	for _, s := range []string{`[1700000000.123, "12.5"]`, `[1700000000, "NaN"]`, `[-1.5, "+Inf"]`,
		`[1.-5, "1"]`, "1.-5", "1.+5", "--1", "9223372036854775.807", `[9223372036854775.807, "0"]`, `[99999999999999999, "1"]`, `[1e9, "1"]`, `[, ]`, `["1", 1]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var p pair
		_ = json.Unmarshal(b, &p)
		var ps []pair
		_ = json.Unmarshal(b, &ps)
		ms, err := parseMs(b)
		if err != nil {
			return
		}
		x, ferr := strconv.ParseFloat(string(b), 64)
		if ferr != nil {
			t.Fatalf("parseMs(%q) = %d, but it is no number (%v)", b, ms, ferr)
		}
		if math.Abs(x) < 1e12 && math.Abs(x*1000-float64(ms)) >= 1.001 {
			t.Fatalf("parseMs(%q) = %d, a float reads %v s", b, ms, x)
		}
		if back, err := parseMs([]byte(msText(ms))); err != nil || back != ms {
			t.Fatalf("msText(%d) = %s reads back as %d, %v", ms, msText(ms), back, err)
		}
	})
}

// A store's answer, whatever it holds, is read by the streaming decoder
// without panicking and within its budget: never more series or samples
// held than the budget allows, and an answer read whole holds what it
// counted.
func FuzzImportJSON(f *testing.F) {
	for _, s := range []string{
		matrix(2, 1796216000, 1796216003),
		`{"status":"error","errorType":"bad_data","error":"x"}`,
		`{"status":"success","data":{"resultType":"vector","result":[]}}`,
		`{"status":"success","data":{"resultType":"matrix","result":null,"histograms":[{"a":[1,{"b":2}]}]}}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"],[2,"NaN"]],"histograms":[]}]},"warnings":["w"]}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"values":[[1,1]]}]}}`,
		`{"data":{"result":[{"metric":{"a":"b"}}]}`,
		`[`, `{"status":1}`, `{"data":`,
	} {
		f.Add([]byte(s))
	}
	budget := Budget{Bytes: 1 << 16, Series: 3, Samples: 10}
	f.Fuzz(func(t *testing.T, b []byte) {
		tl := &tally{budget: budget}
		var out []series
		br := &budgetReader{r: bytes.NewReader(b), n: budget.Bytes, max: budget.Bytes, pending: 1 << 10}
		br.dec = json.NewDecoder(br)
		dec := br.dec
		_, err := readAnswer(dec, func(dec *json.Decoder) error {
			_, err := readMatrix(dec, tl, &out)
			return err
		})
		held := 0
		for _, s := range out {
			held += len(s.Values)
		}
		if len(out) > budget.Series || held > budget.Samples {
			t.Fatalf("held %d series, %d samples: over the budget %+v", len(out), held, budget)
		}
		if err == nil && (len(out) != tl.series || held != tl.samples) {
			t.Fatalf("read whole: %d series and %d samples held, %d and %d counted", len(out), held, tl.series, tl.samples)
		}
	})
}
