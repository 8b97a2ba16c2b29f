package backend

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
)

// NewToken returns a random 128-bit fencing token as 32 hex characters.
func NewToken() string {
	const hex = "0123456789abcdef"
	var b [32]byte
	a, c := rand.Uint64(), rand.Uint64()
	for i := 0; i < 16; i++ {
		b[i] = hex[a>>(4*i)&0xf]
		b[16+i] = hex[c>>(4*i)&0xf]
	}
	return string(b[:])
}

// NewBedrockID returns a random positive 63-bit integer.
func NewBedrockID() int64 {
	for {
		if v := int64(rand.Uint64() >> 1); v > 0 {
			return v
		}
	}
}

// MetaJSON is metadata as stores keep it: a JSON object, nil for nil.
func MetaJSON(m map[string]string) []byte {
	if m == nil {
		return nil
	}
	b, _ := json.Marshal(m) // a map of strings always encodes
	return b
}

// ParseMetaJSON reads what MetaJSON wrote; nil or empty gives nil.
func ParseMetaJSON(b []byte) (map[string]string, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("meta: %w", err)
	}
	return m, nil
}
