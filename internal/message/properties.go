package message

import (
	"bytes"
	"sort"
	"strings"
	"unicode/utf8"
)

// Separators of the encoded properties string.
const (
	NameValueSeparator byte = 0x01
	PropertySeparator  byte = 0x02
)

// Property keys the broker reads or writes.
const (
	PropertyTags             = "TAGS"
	PropertyKeys             = "KEYS"
	PropertyUniqKey          = "UNIQ_KEY"
	PropertyWait             = "WAIT"
	PropertyDelayLevel       = "DELAY"
	PropertyTimerDeliverMS   = "TIMER_DELIVER_MS"
	PropertyRealTopic        = "REAL_TOPIC"
	PropertyRealQueueID      = "REAL_QID"
	PropertyRetryTopic       = "RETRY_TOPIC"
	PropertyOriginMessageID  = "ORIGIN_MESSAGE_ID"
	PropertyTransactionFlag  = "TRAN_MSG"
	PropertyProducerGroup    = "PGROUP"
	PropertyCluster          = "CLUSTER"
	PropertyMaxReconsumeTime = "MAX_RECONSUME_TIMES"
	PropertyShardingKey      = "SHARDING_KEY"
)

// Property lookups follow the clients, which split the string on
// PropertySeparator, keep the items with exactly one NameValueSeparator and
// put them in a map in order, so the last item with a key wins. The lookups
// scan backwards from the end and stop at the first well-formed item with
// the key.

// lookup scans encoded properties for key without allocating.
func lookup(props []byte, key string) ([]byte, bool) {
	for end := len(props); end > 0; {
		start := bytes.LastIndexByte(props[:end], PropertySeparator) + 1
		item := props[start:end]
		end = start - 1
		i := bytes.IndexByte(item, NameValueSeparator)
		if i < 0 || bytes.IndexByte(item[i+1:], NameValueSeparator) >= 0 {
			continue // not exactly two parts: clients skip such items
		}
		if string(item[:i]) == key {
			return item[i+1:], true
		}
	}
	return nil, false
}

// PropertyOf returns the value of key in an encoded properties string: the
// value of the last well-formed item with the key, as ParseProperties and
// the clients see it.
func PropertyOf(props, key string) (string, bool) {
	for end := len(props); end > 0; {
		start := strings.LastIndexByte(props[:end], PropertySeparator) + 1
		item := props[start:end]
		end = start - 1
		i := strings.IndexByte(item, NameValueSeparator)
		if i < 0 || strings.IndexByte(item[i+1:], NameValueSeparator) >= 0 {
			continue
		}
		if item[:i] == key {
			return item[i+1:], true
		}
	}
	return "", false
}

// ParseProperties decodes an encoded properties string. Items that are not
// exactly "key 0x01 value" are skipped and a later item replaces an earlier
// one with the same key, as clients do. Empty keys and values are kept.
func ParseProperties(s string) map[string]string {
	m := make(map[string]string, strings.Count(s, string(PropertySeparator))+1)
	for len(s) > 0 {
		item, rest, _ := strings.Cut(s, string(PropertySeparator))
		s = rest
		i := strings.IndexByte(item, NameValueSeparator)
		if i < 0 || strings.IndexByte(item[i+1:], NameValueSeparator) >= 0 {
			continue
		}
		m[item[:i]] = item[i+1:]
	}
	return m
}

// EncodeProperties encodes a map with keys in sorted order. Keys and values
// must not contain the separator bytes; ValidProperty checks that.
func EncodeProperties(m map[string]string) string {
	keys := make([]string, 0, len(m))
	n := 0
	for k, v := range m {
		keys = append(keys, k)
		n += len(k) + len(v) + 2
	}
	sort.Strings(keys)
	var b strings.Builder
	b.Grow(n)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(NameValueSeparator)
		b.WriteString(m[k])
		b.WriteByte(PropertySeparator)
	}
	return b.String()
}

// ValidProperty reports whether key and value can be encoded: key non-empty
// and neither containing a separator byte.
func ValidProperty(key, value string) bool {
	bad := string([]byte{NameValueSeparator, PropertySeparator})
	return key != "" && !strings.ContainsAny(key, bad) && !strings.ContainsAny(value, bad)
}

// Property returns the value of a property.
func (m *Message) Property(key string) string {
	v, _ := PropertyOf(m.Properties, key)
	return v
}

// SetProperty sets a property, replacing any earlier value. Both must pass
// ValidProperty.
func (m *Message) SetProperty(key, value string) {
	m.RemoveProperty(key)
	if n := len(m.Properties); n > 0 && m.Properties[n-1] != PropertySeparator {
		m.Properties += string(PropertySeparator) // end the last item first
	}
	m.Properties += key + string(NameValueSeparator) + value + string(PropertySeparator)
}

// RemoveProperty removes every item with the key.
func (m *Message) RemoveProperty(key string) {
	if _, ok := PropertyOf(m.Properties, key); !ok {
		return
	}
	var b strings.Builder
	rest := m.Properties
	for len(rest) > 0 {
		end := strings.IndexByte(rest, PropertySeparator)
		var pair string
		if end >= 0 {
			pair, rest = rest[:end], rest[end+1:]
		} else {
			pair, rest = rest, ""
		}
		if i := strings.IndexByte(pair, NameValueSeparator); i >= 0 && pair[:i] == key {
			continue
		}
		if pair == "" {
			continue
		}
		b.WriteString(pair)
		b.WriteByte(PropertySeparator)
	}
	m.Properties = b.String()
}

// Tags returns the TAGS property.
func (m *Message) Tags() string { return m.Property(PropertyTags) }

// TagHash is the tag code stored in consume-queue entries: Java's
// String.hashCode over the UTF-16 code units of the tag, sign-extended to 64
// bits; the empty tag hashes to 0. Subscriptions are matched against the same
// function, so Java and Go clients filter alike. The tag is read as UTF-8;
// each byte of an invalid sequence counts as U+FFFD, as in a Go range loop.
// It does not allocate.
func TagHash[T string | []byte](tag T) int64 {
	var h int32
	var buf [utf8.UTFMax]byte
	for i := 0; i < len(tag); {
		r := rune(tag[i])
		if r < utf8.RuneSelf {
			i++
		} else {
			// Copy at most one encoded rune so that both string and []byte
			// can be decoded without a conversion that might allocate.
			var size int
			r, size = utf8.DecodeRune(buf[:copy(buf[:], tag[i:])])
			i += size
		}
		if r >= 0x10000 { // a surrogate pair in UTF-16
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return int64(h)
}

// Keys calls fn for each space-separated key of a KEYS value.
func Keys[T string | []byte](keys T, fn func(key T)) {
	for len(keys) > 0 {
		i := 0
		for i < len(keys) && keys[i] != ' ' {
			i++
		}
		if i > 0 {
			fn(keys[:i])
		}
		if i < len(keys) {
			i++
		}
		keys = keys[i:]
	}
}
