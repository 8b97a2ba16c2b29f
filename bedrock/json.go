package bedrock

import (
	"slices"
	"strconv"
	"strings"
)

// object is a JSON object as Bedrock writes its responses (§1.4): members
// in case-insensitive order of their names, strings with "/" escaped too.
// Bedrock infers each value's JSON type from its text, so that a job named
// "123" comes out as the number 123; rota writes names as the strings
// they are (clients that read JSON see no difference but that one).
type object map[string][]byte

// str sets a string member.
func (o object) str(k, v string) { o[k] = quote(v) }

// num sets an integer member.
func (o object) num(k string, v int64) { o[k] = strconv.AppendInt(nil, v, 10) }

// raw sets a member to JSON text as it is (data, arrays).
func (o object) raw(k string, v []byte) { o[k] = v }

func (o object) encode() []byte {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if c := strings.Compare(strings.ToLower(a), strings.ToLower(b)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	b := []byte{'{'}
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, quote(k)...)
		b = append(b, ':')
		b = append(b, o[k]...)
	}
	return append(b, '}')
}

// quote writes s as a JSON string the way Bedrock's SToJSON does: control
// characters, quote, backslash and slash escaped.
func quote(s string) []byte {
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '/':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c < 0x20:
			b = append(b, `\u00`...)
			b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
