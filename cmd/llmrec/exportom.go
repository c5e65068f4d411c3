package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/openmetrics"
)

// exportOpenMetrics writes the recording in dir as OpenMetrics text to
// out (stdout when ""), atomically: a file appears whole or not at all.
func exportOpenMetrics(stdout, stderr io.Writer, dir, out, run string, targets []string) error {
	r, err := capture.Open(dir)
	if err != nil {
		return err
	}
	opt := openmetrics.Options{Run: run, Targets: targets}
	w, finish := stdout, func(err error) error { return err }
	if out != "" {
		tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*.tmp")
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		opt.TempDir = filepath.Dir(out)
		w = tmp
		finish = func(err error) error {
			if err == nil {
				err = tmp.Sync()
			}
			if cerr := tmp.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = os.Rename(tmp.Name(), out)
			}
			if err != nil {
				os.Remove(tmp.Name())
			}
			return err
		}
	}
	st, err := openmetrics.Write(w, r, opt)
	if err = finish(err); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	where := out
	if where == "" {
		where = "stdout"
	}
	fmt.Fprintf(stderr, "wrote %d samples of %d series in %d families from %d scrapes to %s\n", st.Samples, st.Series, st.Families, st.Scrapes, where)
	if st.Unnamable > 0 {
		fmt.Fprintf(stderr, "left out: %d samples of series OpenMetrics cannot name\n", st.Unnamable)
	}
	if st.Duplicates > 0 {
		fmt.Fprintf(stderr, "left out: %d second samples of a series at one millisecond\n", st.Duplicates)
	}
	if len(st.TypeClashes) > 0 {
		fmt.Fprintf(stderr, "families declared with two types (the first is written): %s\n", strings.Join(st.TypeClashes, ", "))
	}
	for _, p := range st.Problems {
		fmt.Fprintf(stderr, "problem: %s\n", p)
	}
	if len(st.Problems) > 0 {
		return fmt.Errorf("export: %d file(s) could not be read whole; the rest was written", len(st.Problems))
	}
	if st.Scrapes == 0 {
		return fmt.Errorf("export: no ok scrape to export in %s", dir)
	}
	return nil
}
