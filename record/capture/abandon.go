package capture

import "fmt"

// Abandon syncs the open group's journals to disk and closes it without
// sealing, for a recorder told to stop at once: the next record into the
// folder, or any read of it, recovers the journal as after a crash. A
// compaction under way is not waited for; its temporary file is left to
// recovery too. The writer cannot be used afterwards.
func (w *Writer) Abandon() error {
	if w.j == nil {
		return nil
	}
	var err error
	for _, j := range append(w.group, w.j) { // the open group's minutes
		if serr := j.f.Sync(); err == nil {
			err = serr
		}
		if cerr := j.close(); err == nil {
			err = cerr
		}
	}
	w.j, w.group = nil, nil
	if err != nil {
		return fmt.Errorf("sync journal: %w", err)
	}
	return nil
}
