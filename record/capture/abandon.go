package capture

import "fmt"

// Abandon syncs the open segment's journal to disk and closes it without
// sealing, for a recorder told to stop at once: the next record into the
// folder, or any read of it, recovers the journal as after a crash. A
// compaction under way is not waited for; its temporary file is left to
// recovery too. The writer cannot be used afterwards.
func (w *Writer) Abandon() error {
	if w.j == nil {
		return nil
	}
	err := w.j.f.Sync()
	if cerr := w.j.close(); err == nil {
		err = cerr
	}
	w.j = nil
	if err != nil {
		return fmt.Errorf("sync journal: %w", err)
	}
	return nil
}
