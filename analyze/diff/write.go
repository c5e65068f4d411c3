package diff

import (
	"encoding/json"
	"fmt"
	"io"
)

// WriteJSON writes the report as indented JSON (docs/diff-format.md).
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("diff: write JSON: %w", err)
	}
	return nil
}
