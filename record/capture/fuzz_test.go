package capture

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// frame is a record as the journal writes it: length, CRC-32C, payload.
func frame(s *Scrape) []byte {
	p := encodeScrape(nil, s)
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(p)))
	b = binary.LittleEndian.AppendUint32(b, crc32Sum(p))
	return append(b, p...)
}

// Whatever bytes a crash or damage leaves in a journal, reading it never
// panics; every row it returns is a whole record whose length and CRC check
// out, present in the file as written; the records before the first changed
// byte all come back, first and in order; and the bytes skipped or torn are
// bytes of the file. Seeded with a journal the writer wrote. (The data is
// parsed as read, without a file: a run does a few hundred thousand.)
func FuzzReadJournal(f *testing.F) {
	status, wire, ct := int32(503), int64(12), "text/plain"
	rows := rowsN(5)
	why := "previous scrape (seq 5) still running"
	rows = append(rows,
		Scrape{RunID: runR, Target: "b", Endpoint: EndpointMetrics, Seq: 6, Outcome: OutcomeMissed, ScheduledNs: 9, Error: &why},
		Scrape{RunID: runR, Target: "b", Endpoint: "/slots", Seq: 7, Outcome: OutcomeHTTPError, Status: &status, WireBytes: &wire,
			ContentType: &ct, Body: []byte{}})
	dir := f.TempDir()
	w, err := NewWriter(dir, runR, 1<<62)
	if err != nil {
		f.Fatal(err)
	}
	for _, r := range rows {
		if err := w.Append(r); err != nil {
			f.Fatal(err)
		}
	}
	good, err := os.ReadFile(filepath.Join(dir, runR+"-000001.journal"))
	if err != nil {
		f.Fatal(err)
	}
	w.Close()
	ends := make([]int, len(rows)) // where each record ends in good
	end := len(journalMagic)
	for i := range rows {
		end += len(frame(&rows[i]))
		ends[i] = end
	}
	if end != len(good) {
		f.Fatalf("the writer's journal is %d bytes, its records %d", len(good), end)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	flipped := slices.Clone(good)
	flipped[ends[1]+20] ^= 4
	f.Add(flipped)
	f.Add(slices.Concat(good[:ends[2]], good[ends[1]:])) // a record twice
	f.Add([]byte(journalMagic[:3]))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, st, err := parseJournal(filepath.Join("dir", runR+"-000001.journal"), data)
		if err != nil {
			if bytes.HasPrefix(data, []byte(journalMagic)) {
				t.Fatalf("a journal with the magic: %v", err)
			}
			return
		}
		var used int64
		for i := range got {
			fr := frame(&got[i])
			if !bytes.Contains(data, fr) {
				t.Fatalf("row %d (seq %d) is no record of the file", i, got[i].Seq)
			}
			used += int64(len(fr))
		}
		if st.Torn < 0 || st.Skipped < 0 || used+st.Torn+st.Skipped > int64(max(len(data)-len(journalMagic), 0)) {
			t.Fatalf("%d bytes of rows, %d torn, %d skipped of %d", used, st.Torn, st.Skipped, len(data))
		}
		same := 0
		for same < min(len(data), len(good)) && data[same] == good[same] {
			same++
		}
		for i, e := range ends {
			if e > same {
				break
			}
			if i >= len(got) || !bytes.Equal(frame(&got[i]), frame(&rows[i])) {
				t.Fatalf("record %d is intact (ends at %d, first change at %d) but did not come back first", i, e, same)
			}
		}
	})
}
