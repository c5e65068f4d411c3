// Package damagetest damages files for tests of the readers: the same
// seeded flips in every package, so a seed that once broke a reader names
// the same damage everywhere.
package damagetest

import (
	"bytes"
	"math/rand/v2"
)

// Flip returns a copy of data with n bytes XORed with nonzero values, at
// positions drawn from seed: half anywhere, half in the last 8 KiB, where a
// Parquet file's footer and structure are.
func Flip(data []byte, seed uint64, n int) []byte {
	out := bytes.Clone(data)
	rng := rand.New(rand.NewPCG(seed, 0x11))
	for range n {
		i := rng.IntN(len(out))
		if rng.IntN(2) == 0 {
			i = len(out) - 1 - rng.IntN(min(len(out), 8192))
		}
		out[i] ^= byte(1 + rng.IntN(255))
	}
	return out
}
