package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The SLOs come from the config's [slo] table and --slo, a flag naming
// the config's objective replacing it; --gpus and --gpu-hour-usd win over
// the config's; a malformed objective is a usage error naming it, and a
// malformed one in the config names the file and line.
func TestSLOFlagsAndConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "a.toml")
	if err := os.WriteFile(cfg, []byte("gpus = 2\ngpu_hour_usd = 3.5\n[slo]\nttft_p99 = \"800ms\"\ne2e_p50 = \"2s\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	build := func(args ...string) (func() error, *[]string) {
		fs := newFlags("analyze", "", io.Discard)
		b := analysisFlags(fs, io.Discard)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		var names []string
		return func() error {
			o, err := b("analyze", []string{"run"})
			if err != nil {
				return err
			}
			for _, s := range o.SLOs {
				names = append(names, s.Name+"="+strconv.FormatFloat(s.Threshold, 'g', -1, 64))
			}
			if o.GPUs != 4 || o.GPUHourUSD != 3.5 {
				t.Errorf("gpus %d, usd %v: want 4 (the flag) and 3.5 (the config)", o.GPUs, o.GPUHourUSD)
			}
			return nil
		}, &names
	}
	run, names := build("--config", cfg, "--slo", "ttft_p99=500ms,itl_p90=40ms", "--gpus", "4")
	if err := run(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(*names, " "); got != "e2e_p50=2 ttft_p99=0.5 itl_p90=0.04" {
		t.Errorf("SLOs %q", got)
	}
	run, _ = build("--slo", "ttft_p99=fast")
	if err := run(); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "ttft_p99") {
		t.Errorf("a bad --slo: %v", err)
	}
	if err := os.WriteFile(cfg, []byte("[slo]\ntpot_p99 = \"1s\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run, _ = build("--config", cfg)
	if err := run(); err == nil || !strings.Contains(err.Error(), "a.toml:2") {
		t.Errorf("a bad [slo] in the config: %v", err)
	}
}
