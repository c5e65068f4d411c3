package expo

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// BenchmarkExpfmtAlone is the floor under BenchmarkParseVLLMV1: expfmt's
// parser on the same page, without flattening into samples.
func BenchmarkExpfmtAlone(b *testing.B) {
	body, err := os.ReadFile(filepath.Join(realDir, "vllm-v1-armandossrecife-vllm-server-api-chat.txt"))
	if err != nil {
		b.Skipf("real capture absent: %v", err)
	}
	body = append(body, '\n')
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		p := expfmt.NewTextParser(model.UTF8Validation)
		if _, err := p.TextToMetricFamilies(bytes.NewReader(body)); err != nil {
			b.Fatal(err)
		}
	}
}
