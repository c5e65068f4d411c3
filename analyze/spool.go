package analyze

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// spool holds one target's polls on disk, as WriteJSON writes them: each
// poll's JSON, comma-separated (see Options.Spool).
type spool struct {
	f *os.File
	w *bufio.Writer
	n int
}

func newSpool(dir string) (*spool, error) {
	f, err := os.CreateTemp(dir, "polls-*.json")
	if err != nil {
		return nil, fmt.Errorf("spool polls: %w", err)
	}
	return &spool{f: f, w: bufio.NewWriterSize(f, 1<<16)}, nil
}

// add encodes p; its cells need not outlive the call.
func (s *spool) add(p *Poll) error {
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("spool polls: %w", err)
	}
	if s.n > 0 {
		s.w.WriteByte(',')
	}
	s.n++
	if _, err := s.w.Write(b); err != nil {
		return fmt.Errorf("spool polls to %s: %w", s.f.Name(), err)
	}
	return nil
}

// flush writes out what add buffered.
func (s *spool) flush() error {
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("spool polls to %s: %w", s.f.Name(), err)
	}
	return nil
}

// copyTo writes the spooled polls to w, from the first.
func (s *spool) copyTo(w io.Writer) error {
	if err := s.flush(); err != nil {
		return err
	}
	if _, err := io.Copy(w, io.NewSectionReader(s.f, 0, 1<<62)); err != nil {
		return fmt.Errorf("read spooled polls %s: %w", s.f.Name(), err)
	}
	return nil
}

// close closes the file; the caller removes the folder.
func (s *spool) close() error { return s.f.Close() }
